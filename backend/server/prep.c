/* prep — the prep thread: turns a parsed chat request into a tokenized prompt and submits it to the
 * scheduler. Images given as files (data: URIs) are decoded, resized and cut into patches here
 * (shared/img.h), the conversation is rendered in Gemma 4's chat format with each image's soft-token count,
 * tokenized, and checked against the prompt and context limits.
 *
 * Why a thread of its own: decoding a 50-megapixel JPEG takes about a second; on the service thread it would
 * stall every socket, on the engine thread every stream. One FIFO, one thread; a request that fails here
 * ends with an error result through its outbox like any other.
 *
 * Must not touch sockets or the engine. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "server/srv.h"

struct prep_job {
    struct sched_req *r;  /* a reference */
    struct proto_chat chat;
    struct prep_job *next;
};

struct prep {
    struct srv *s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct prep_job *head, *tail;
    int pending; /* jobs queued or being prepared */
    int quit;
};

/* The patches of image k: decoded from its data: URI, or already uploaded. budget: the model's default soft
 * tokens per image, 0 when it has no vision embedder. */
static int image_patches(struct proto_image *im, int k, int budget, struct sched_image *out, char *msg)
{
    char err[G4_ERR_MAX];
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct img_patches p = {0};
    if (!budget) return g4_errf(msg, "image %d: this model has no vision embedder; it takes no images", k);
    if (im->kind == PROTO_IMAGE_UPLOAD) {
        *out = im->patches;
        memset(&im->patches, 0, sizeof im->patches);
        return 0;
    }
    if (dataurl_decode(im->uri, &bytes, &len, IMG_MAX_INPUT_BYTES, err))
        return g4_errf(msg, "image %d: %s", k, err);
    if (img_process(bytes, len, im->budget, &p, err) != IMG_OK) {
        free(bytes);
        return g4_errf(msg, "image %d: %s", k, err);
    }
    free(bytes);
    out->patches = p.rows;
    out->positions = p.pos;
    out->n = p.n;
    return 0;
}

/* Builds the prompt of chat into pr. 0, or -1 with code and msg for the client. */
static int build(struct prep *P, struct proto_chat *chat, struct sched_prompt *pr, char *code, char *msg)
{
    struct srv *s = P->s;
    struct chat_opts opts = {chat->thinking, 1};
    struct sbuf text = {0};
    struct tok_ids ids = {0};
    int k = 0, rc = -1, context = s->o.context;
    snprintf(code, SCHED_CODE_MAX, "image_error");
    if (chat->n_images) pr->images = g4_calloc((size_t)chat->n_images, sizeof *pr->images);
    for (int i = 0; i < chat->n_images; i++) {
        if (image_patches(&chat->images[i], i, s->budget, &pr->images[i], msg)) goto done;
        pr->n_images++;
    }
    for (int m = 0; m < chat->conv.n_msgs; m++)
        for (int p = 0; p < chat->conv.msgs[m].n_parts; p++)
            if (chat->conv.msgs[m].parts[p].kind == CHAT_PART_IMAGE)
                chat->conv.msgs[m].parts[p].image_tokens = pr->images[k++].n;
    snprintf(code, SCHED_CODE_MAX, "bad_request");
    if (chat_render(&chat->conv, &opts, &text, msg)) goto done;
    if (tok_encode(s->m->tok, text.p, text.n, 0, &ids, msg)) goto done;
    pr->ids = ids.ids;
    pr->n = (int)ids.n;
    ids.ids = NULL;
    snprintf(code, SCHED_CODE_MAX, "prompt_too_long");
    if (pr->n > SRV_MAX_PROMPT_TOKENS) {
        g4_errf(msg, "the prompt has %d tokens, over the limit of %d", pr->n, SRV_MAX_PROMPT_TOKENS);
        goto done;
    }
    if (!chat->has_max_tokens && chat->params.max_tokens > context - pr->n)
        chat->params.max_tokens = context - pr->n; /* the default cut to what the context leaves */
    if (chat->params.max_tokens < 1 || pr->n + chat->params.max_tokens > context) {
        g4_errf(msg, "the prompt (%d tokens) plus max_tokens (%d) exceeds the context of %d positions", pr->n,
                chat->has_max_tokens ? chat->params.max_tokens : 1, context);
        goto done;
    }
    rc = 0;
done:
    tok_ids_free(&ids);
    sbuf_free(&text);
    return rc;
}

static void *prep_main(void *arg)
{
    struct prep *P = arg;
    pthread_mutex_lock(&P->lock);
    for (;;) {
        struct prep_job *j;
        char code[SCHED_CODE_MAX], msg[G4_ERR_MAX];
        struct sched_prompt pr = {0};
        int quit;
        while (!P->head && !P->quit) pthread_cond_wait(&P->cond, &P->lock);
        if (!P->head) break;
        j = P->head;
        P->head = j->next;
        if (!P->head) P->tail = NULL;
        quit = P->quit;
        pthread_mutex_unlock(&P->lock);
        if (quit) {
            sched_req_fail(P->s->sched, j->r, "shutdown", "the server is shutting down");
        } else if (sched_req_cancelled(P->s->sched, j->r)) {
            sched_submit(P->s->sched, j->r, &pr, &j->chat.params); /* ends as cancelled at the next step */
        } else if (build(P, &j->chat, &pr, code, msg)) {
            sched_prompt_free(&pr);
            sched_req_fail(P->s->sched, j->r, code, msg);
        } else {
            sched_submit(P->s->sched, j->r, &pr, &j->chat.params);
        }
        sched_req_unref(P->s->sched, j->r);
        proto_chat_free(&j->chat);
        free(j);
        pthread_mutex_lock(&P->lock);
        P->pending--;
    }
    pthread_mutex_unlock(&P->lock);
    return NULL;
}

struct prep *prep_create(struct srv *s)
{
    struct prep *P = g4_calloc(1, sizeof *P);
    P->s = s;
    pthread_mutex_init(&P->lock, NULL);
    pthread_cond_init(&P->cond, NULL);
    G4_CHECK(pthread_create(&P->thread, NULL, prep_main, P) == 0, "cannot start the prep thread");
    return P;
}

/* Stops the thread; jobs still queued end with the error "shutdown". */
void prep_destroy(struct prep *P)
{
    if (!P) return;
    pthread_mutex_lock(&P->lock);
    P->quit = 1;
    pthread_cond_signal(&P->cond);
    pthread_mutex_unlock(&P->lock);
    pthread_join(P->thread, NULL);
    pthread_mutex_destroy(&P->lock);
    pthread_cond_destroy(&P->cond);
    free(P);
}

void prep_submit(struct prep *P, struct sched_req *r, struct proto_chat *chat)
{
    struct prep_job *j = g4_calloc(1, sizeof *j);
    sched_req_ref(P->s->sched, r);
    j->r = r;
    j->chat = *chat;
    memset(chat, 0, sizeof *chat);
    pthread_mutex_lock(&P->lock);
    if (P->tail) P->tail->next = j;
    else P->head = j;
    P->tail = j;
    P->pending++;
    pthread_cond_signal(&P->cond);
    pthread_mutex_unlock(&P->lock);
}

int prep_pending(struct prep *P)
{
    int n;
    pthread_mutex_lock(&P->lock);
    n = P->pending;
    pthread_mutex_unlock(&P->lock);
    return n;
}
