/* metrics — the server's counters in two forms: Prometheus text (GET /metrics) and the JSON snapshot that
 * WebSocket subscribers get every SRV_METRICS_PERIOD_MS. Names and meanings are in docs/protocol.md
 * ("Prometheus metrics"); the numbers come from the scheduler (sched_stats) and the service thread's own
 * counts. Service thread only; formats, never measures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/srv.h"

static void help(struct sbuf *b, const char *name, const char *type, const char *text)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void counter(struct sbuf *b, const char *name, const char *text, unsigned long long v)
{
    help(b, name, "counter", text);
    sbuf_printf(b, "%s %llu\n", name, v);
}

static void gauge(struct sbuf *b, const char *name, const char *text, double v)
{
    help(b, name, "gauge", text);
    sbuf_printf(b, "%s %.17g\n", name, v);
}

static void histogram(struct sbuf *b, const char *name, const char *text, const struct sched_hist *h)
{
    unsigned long long cum = 0;
    help(b, name, "histogram", text);
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        sbuf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], cum);
    }
    cum += h->counts[h->n_bounds];
    sbuf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", name, cum, name, h->sum, name,
                (unsigned long long)h->total);
}

void metrics_prometheus(struct srv *s, struct sbuf *b)
{
    struct sched_stats st;
    sched_stats(s->sched, &st);
    counter(b, "g4_prompt_tokens_total", "Prompt tokens of requests that started.", st.prompt_tokens);
    counter(b, "g4_generation_tokens_total", "Tokens generated.", st.generated_tokens);
    help(b, "g4_requests_total", "counter", "Requests ended, by how they ended.");
    sbuf_printf(b, "g4_requests_total{finish=\"stop\"} %llu\n", (unsigned long long)st.ended_stop);
    sbuf_printf(b, "g4_requests_total{finish=\"length\"} %llu\n", (unsigned long long)st.ended_length);
    sbuf_printf(b, "g4_requests_total{finish=\"cancelled\"} %llu\n", (unsigned long long)st.ended_cancelled);
    sbuf_printf(b, "g4_requests_total{finish=\"error\"} %llu\n", (unsigned long long)st.ended_error);
    gauge(b, "g4_requests_running", "Requests holding an engine stream.", st.running);
    gauge(b, "g4_requests_waiting", "Requests queued or being prepared.", st.waiting + prep_pending(s->prep));
    gauge(b, "g4_requests_paused", "Running requests paused because their client left too much reply unread.",
          st.paused);
    gauge(b, "g4_streams_max", "Engine streams.", st.max_streams);
    histogram(b, "g4_time_to_first_token_seconds", "Submission to first token, queue included.", &st.ttft);
    histogram(b, "g4_inter_token_latency_seconds", "Time between consecutive tokens of a stream.", &st.itl);
    gauge(b, "g4_prefill_tokens_per_second", "Prompt rows per second over the last 2 s.", st.prefill_tps);
    gauge(b, "g4_decode_tokens_per_second", "Decode rows per second over the last 2 s.", st.decode_tps);
    counter(b, "g4_engine_steps_total", "Engine steps run.", st.steps);
    gauge(b, "g4_kv_cache_usage_ratio", "Positions held by all streams over streams times context.", st.kv_usage);
    counter(b, "g4_draft_tokens_proposed_total", "Draft tokens proposed (no drafter yet).", st.draft_proposed);
    counter(b, "g4_draft_tokens_accepted_total", "Draft tokens accepted (no drafter yet).", st.draft_accepted);
    counter(b, "g4_prompt_cache_hits_total", "Prompt-cache hits (no prompt cache yet).", st.cache_hits);
    gauge(b, "g4_gpu_memory_used_bytes", "Device memory held by the engine (0 on the CPU engine).",
          s->on_gpu ? s->engine_bytes : 0);
    gauge(b, "g4_engine_memory_bytes", "Memory the engine holds on its device: weights, KV caches, scratch.",
          s->engine_bytes);
    gauge(b, "g4_connections", "Open HTTP and WebSocket connections.", s->n_conns);
    counter(b, "g4_bad_requests_total", "Messages and HTTP requests refused as bad input.", s->bad_requests);
}

/* The upper bound of the bucket that holds quantile q (ms); 0 with no observations. */
static double quantile_ms(const struct sched_hist *h, double q)
{
    uint64_t want, cum = 0;
    if (!h->total) return 0;
    want = (uint64_t)ceil(q * (double)h->total);
    for (int i = 0; i <= h->n_bounds; i++) {
        cum += h->counts[i];
        if (cum >= want) return (i < h->n_bounds ? h->bounds[i] : h->bounds[h->n_bounds - 1]) * 1e3;
    }
    return h->bounds[h->n_bounds - 1] * 1e3;
}

char *metrics_snapshot_json(struct srv *s)
{
    struct sched_stats st;
    cJSON *o = cJSON_CreateObject();
    char *j;
    sched_stats(s->sched, &st);
    cJSON_AddStringToObject(o, "type", "metrics");
    cJSON_AddNumberToObject(o, "time", round((util_now() - s->t_start) * 1000) / 1000);
    cJSON_AddNumberToObject(o, "running", st.running);
    cJSON_AddNumberToObject(o, "waiting", st.waiting + prep_pending(s->prep));
    cJSON_AddNumberToObject(o, "streams_max", st.max_streams);
    cJSON_AddNumberToObject(o, "prefill_tokens_per_s", round(st.prefill_tps * 10) / 10);
    cJSON_AddNumberToObject(o, "decode_tokens_per_s", round(st.decode_tps * 10) / 10);
    cJSON_AddNumberToObject(o, "kv_usage", st.kv_usage);
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)st.prompt_tokens);
    cJSON_AddNumberToObject(o, "generated_tokens", (double)st.generated_tokens);
    cJSON_AddNumberToObject(o, "requests",
                            (double)(st.ended_stop + st.ended_length + st.ended_cancelled + st.ended_error));
    cJSON_AddNumberToObject(o, "ttft_ms_p50", quantile_ms(&st.ttft, 0.5));
    cJSON_AddNumberToObject(o, "ttft_ms_p95", quantile_ms(&st.ttft, 0.95));
    cJSON_AddNumberToObject(o, "drafts_proposed", (double)st.draft_proposed);
    cJSON_AddNumberToObject(o, "drafts_accepted", (double)st.draft_accepted);
    cJSON_AddNumberToObject(o, "prompt_cache_hits", (double)st.cache_hits);
    cJSON_AddNumberToObject(o, "gpu_memory_bytes", s->on_gpu ? s->engine_bytes : 0);
    cJSON_AddNumberToObject(o, "engine_memory_bytes", s->engine_bytes);
    cJSON_AddNumberToObject(o, "connections", s->n_conns);
    j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return j;
}
