/* server — `g4 serve` from start to exit: loads the model, starts the engine thread (scheduler) and the prep
 * thread, creates the lws context (one vhost, one port, protocols[0] = "g4", the mounts of static.c), runs
 * the service loop on the calling thread, and shuts down on SIGINT/SIGTERM: new requests are refused, every
 * running and waiting request ends with a "shutdown" error that its client receives, then every socket
 * closes, the threads stop, everything is freed, and the process exits 0.
 *
 * Threads: the caller becomes the lws service thread; SIGINT, SIGTERM and SIGPIPE are blocked in every
 * thread and taken by a small signal thread with sigwait, which only sets a flag and calls
 * lws_cancel_service() (the one lws call that is thread-safe). */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/gen_defaults.h"
#include "model/tokenizer.h"
#include "server/srv.h"

void srv_opts_init(struct srv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 8080;
    o->device_auto = 1;
    o->max_streams = SRV_DEFAULT_MAX_STREAMS;
    o->max_queue = SRV_DEFAULT_MAX_QUEUE;
    o->context = SRV_DEFAULT_CONTEXT;
    o->max_conns_per_addr = SRV_DEFAULT_CONNS_PER_ADDR;
    o->webui_dir = "webui";
    o->kiosk_idle_s = SRV_DEFAULT_KIOSK_IDLE_S;
    o->shutdown_grace_ms = SRV_SHUTDOWN_GRACE_MS;
}

static void wake(void *ctx);

/* ---- signals ------------------------------------------------------------------------------------------- */

struct sig_thread {
    struct srv *s;
    sigset_t set;
    pthread_t thread;
    atomic_int done; /* the service loop has ended */
};

/* Waits for SIGINT/SIGTERM, then keeps waking the service loop every 50 ms so that it can watch its
 * shutdown deadline, until the loop is done. */
static void *sig_main(void *arg)
{
    struct sig_thread *t = arg;
    int sig = 0;
    struct timespec ts = {0, 50 * 1000 * 1000};
    while (!t->done) {
        struct timespec poll = {0, 100 * 1000 * 1000};
        sig = sigtimedwait(&t->set, NULL, &poll);
        if (sig == SIGINT || sig == SIGTERM) break;
    }
    if (t->done) return NULL;
    t->s->signalled = sig;
    while (!t->done) {
        wake(t->s);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- startup ------------------------------------------------------------------------------------------- */

/* Request defaults from the checkpoint's generation_config (as `g4 generate` reads them). */
static void defaults_from_model(struct srv *s)
{
    gen_defaults_params(&s->m->gen, &s->defaults.params);
    s->defaults.vocab = s->m->cfg.text.vocab;
    s->budget = 0;
    if (s->m->cfg.vision.kind == CFG_VISION_EMBEDDER) {
        s->budget = s->m->cfg.vision.emb.num_soft_tokens > 0 ? s->m->cfg.vision.emb.num_soft_tokens : 280;
        if (!img_budget_ok(s->budget)) s->budget = 280;
        s->posemb = s->m->cfg.vision.emb.mm_posemb_size;
    }
    s->defaults.max_soft_tokens = s->budget;
}

/* Engine: CUDA when asked (or, by default, when this g4 has it and a device answers), else the CPU. */
static int start_engine(struct srv *s, char *err)
{
    struct engine_opts eo = {.device = ENGINE_CPU, .max_streams = s->o.max_streams, .max_context = s->o.context,
                             .n_threads = s->o.n_threads, .image_mask = ENGINE_IMAGE_MASK_SLIDING_ONLY};
    if (s->o.device_auto || s->o.device == ENGINE_CUDA) {
        eo.device = ENGINE_CUDA;
        s->e = engine_create(s->m, &eo, err);
        if (!s->e && !s->o.device_auto) return -1;
        if (!s->e) fprintf(stderr, "g4 serve: CPU engine (no CUDA engine: %s)\n", err);
    }
    if (!s->e) {
        eo.device = ENGINE_CPU;
        if (!(s->e = engine_create(s->m, &eo, err))) return -1;
    }
    s->on_gpu = eo.device == ENGINE_CUDA;
    {
        struct engine_memory mem;
        engine_memory(s->e, &mem);
        s->engine_bytes = (double)mem.weights + (double)mem.kv_per_stream * s->o.max_streams + (double)mem.scratch;
    }
    return 0;
}

/* Wakes the service loop from another thread (the scheduler's wake hook). */
static void wake(void *ctx)
{
    struct srv *s = ctx;
    pthread_mutex_lock(&s->wake_lock);
    if (s->ctx) lws_cancel_service(s->ctx);
    pthread_mutex_unlock(&s->wake_lock);
}

static const struct lws_protocols protocols[] = {
    {"g4", srv_callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Prints where to connect: the bound address, or every IPv4 address of this machine for 0.0.0.0. */
static void print_urls(struct srv *s)
{
    printf("g4 serve: %s on http://%s:%d/ (WebSocket /ws, OpenAI /v1, /metrics, /health)\n", s->model_name,
           !strcmp(s->o.host, "0.0.0.0") ? "127.0.0.1" : s->o.host, s->port);
    if (!strcmp(s->o.host, "0.0.0.0")) {
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) == 0) {
            for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                char a[INET_ADDRSTRLEN];
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof a);
                if (strncmp(a, "127.", 4)) {
                    printf("g4 serve: on the LAN: http://%s:%d/\n", a, s->port);
                    if (!s->lan_url[0]) snprintf(s->lan_url, sizeof s->lan_url, "http://%s:%d/", a, s->port);
                }
            }
            freeifaddrs(ifs);
        }
    }
    fflush(stdout);
}

/* ---- shutdown ------------------------------------------------------------------------------------------ */

static void begin_shutdown(struct srv *s)
{
    s->stopping = 1;
    s->stop_deadline = util_now() + s->o.shutdown_grace_ms / 1000.0;
    fprintf(stderr, "g4 serve: %s: ending streams and stopping\n", s->signalled == SIGTERM ? "SIGTERM" : "SIGINT");
    sched_shutdown(s->sched, "the server is shutting down");
    for (struct srv_conn *c = s->conns; c; c = c->next)
        if (c->is_ws) ws_shutdown(s, c);
}

/* 1 when no connection has a request in flight or a reply waiting. */
static int quiet(struct srv *s)
{
    for (struct srv_conn *c = s->conns; c; c = c->next) {
        if (c->is_ws && (c->n_reqs || c->n_ctl)) return 0;
        if (!c->is_ws && (c->http.r || c->http.resp_ready)) return 0;
    }
    return 1;
}

/* ---- run ----------------------------------------------------------------------------------------------- */

int srv_run(const struct srv_opts *o)
{
    struct srv *s = g4_calloc(1, sizeof *s);
    struct sig_thread st = {0};
    struct lws_context_creation_info info;
    char err[G4_ERR_MAX] = "";
    const char *base;
    int rc = 1, sig_started = 0;
    s->o = *o;
    pthread_mutex_init(&s->wake_lock, NULL);
    s->t_start = util_now();
    s->created = (long long)time(NULL);
    sigemptyset(&st.set);
    sigaddset(&st.set, SIGINT);
    sigaddset(&st.set, SIGTERM);
    sigaddset(&st.set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &st.set, NULL); /* before any thread starts: they all inherit it */

    if (!(s->m = model_load(o->model_dir, MODEL_CHECK_TENSORS | MODEL_LOAD_TOKENIZER, err))) goto fail;
    base = strrchr(s->m->dir, '/');
    snprintf(s->model_name, sizeof s->model_name, "%.100s", base && base[1] ? base + 1 : s->m->dir);
    if (s->o.context > s->m->cfg.text.max_pos) s->o.context = s->m->cfg.text.max_pos;
    defaults_from_model(s);
    if (start_engine(s, err)) goto fail;
    {
        struct sched_opts so = {s->o.max_streams,       s->o.max_queue,
                                s->o.context,           (size_t)s->o.slow_reader_bytes,
                                s->o.slow_reader_ms,    s->m->tok,
                                wake,                   s};
        if (!(s->sched = sched_create(s->e, &so, err))) goto fail;
    }
    s->prep = prep_create(s);

    memset(&info, 0, sizeof info);
    info.port = o->port;
    info.iface = o->host;
    info.protocols = protocols;
    info.mounts = static_mounts(s);
    info.user = s;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    lws_set_log_level(LLL_ERR, NULL);
    pthread_mutex_lock(&s->wake_lock);
    s->ctx = lws_create_context(&info);
    pthread_mutex_unlock(&s->wake_lock);
    if (!s->ctx) {
        g4_errf(err, "cannot listen on %s:%d (address in use, or not an address of this machine?)", o->host, o->port);
        goto fail;
    }
    s->vh = lws_get_vhost_by_name(s->ctx, "default");
    s->port = s->vh ? lws_get_vhost_listen_port(s->vh) : o->port;
    st.s = s;
    G4_CHECK(pthread_create(&st.thread, NULL, sig_main, &st) == 0, "cannot start the signal thread");
    sig_started = 1;
    print_urls(s);

    for (;;) {
        if (lws_service(s->ctx, 0) < 0) break;
        if (s->signalled && !s->stopping) begin_shutdown(s);
        if (s->stopping && (quiet(s) || util_now() > s->stop_deadline)) break;
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "g4 serve: %s\n", err);
done:
    if (sig_started) {
        st.done = 1;
        pthread_join(st.thread, NULL);
    }
    if (s->ctx) {
        struct lws_context *ctx = s->ctx;
        pthread_mutex_lock(&s->wake_lock);
        s->ctx = NULL;
        pthread_mutex_unlock(&s->wake_lock);
        lws_context_destroy(ctx); /* closes every connection: they cancel and release their requests */
    }
    prep_destroy(s->prep);
    sched_destroy(s->sched);
    engine_destroy(s->e);
    model_free(s->m);
    while (s->addrs) {
        struct srv_addr *a = s->addrs;
        s->addrs = a->next;
        free(a);
    }
    if (rc == 0) fprintf(stderr, "g4 serve: stopped\n");
    pthread_mutex_destroy(&s->wake_lock);
    free(s);
    return rc;
}
