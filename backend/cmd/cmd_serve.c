/* cmd_serve — `g4 serve`: parses the flags into struct srv_opts and runs the server (backend/server/). No
 * serving logic here. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "server/limits.h"
#include "server/server.h"

/* The web client's folder when --webui is not given: `web` beside this executable when it holds index.html
 * (make builds build/g4 and build/web/ side by side: the pages with their wasm modules), else webui/ (the
 * pages alone, without the modules). */
static const char *default_webui(char *buf, size_t cap)
{
    char probe[1100];
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) return "webui";
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash || (size_t)(slash - buf) + 5 > cap) return "webui";
    strcpy(slash + 1, "web");
    snprintf(probe, sizeof probe, "%s/index.html", buf);
    return access(probe, R_OK) == 0 ? buf : "webui";
}

int cmd_serve(int argc, char **argv)
{
    const char *name = "serve";
    struct srv_opts o;
    long v;
    int webui_set = 0;
    char exe_web[1024];
    srv_opts_init(&o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--kiosk")) {
            o.kiosk = 1;
            continue;
        }
        if (!val) return cmd_usage_error(name, "%s needs a value", a);
        i++;
        if (!strcmp(a, "--model")) {
            o.model_dir = val;
        } else if (!strcmp(a, "--host")) {
            o.host = val;
        } else if (!strcmp(a, "--port")) {
            if (cmd_parse_int(name, a, val, 0, 65535, &v)) return 2;
            o.port = (int)v;
        } else if (!strcmp(a, "--device")) {
            o.device_auto = 0;
            if (!strcmp(val, "cpu")) o.device = ENGINE_CPU;
            else if (!strcmp(val, "cuda")) o.device = ENGINE_CUDA;
            else if (!strcmp(val, "auto")) o.device_auto = 1;
            else return cmd_usage_error(name, "--device must be cpu, cuda or auto, got '%s'", val);
        } else if (!strcmp(a, "--api-key")) {
            if (!val[0]) return cmd_usage_error(name, "--api-key must not be empty");
            o.api_key = val;
        } else if (!strcmp(a, "--max-streams")) {
            if (cmd_parse_int(name, a, val, 1, SRV_MAX_STREAMS_LIMIT, &v)) return 2;
            o.max_streams = (int)v;
        } else if (!strcmp(a, "--max-queue")) {
            if (cmd_parse_int(name, a, val, 0, SRV_MAX_QUEUE_LIMIT, &v)) return 2;
            o.max_queue = (int)v;
        } else if (!strcmp(a, "--context")) {
            if (cmd_parse_int(name, a, val, 16, SRV_MAX_CONTEXT, &v)) return 2;
            o.context = (int)v;
        } else if (!strcmp(a, "--max-conns-per-addr")) {
            if (cmd_parse_int(name, a, val, 1, 100000, &v)) return 2;
            o.max_conns_per_addr = (int)v;
        } else if (!strcmp(a, "--slow-reader-ms")) {
            if (cmd_parse_int(name, a, val, 1, 3600000, &v)) return 2;
            o.slow_reader_ms = (int)v;
        } else if (!strcmp(a, "--slow-reader-bytes")) {
            if (cmd_parse_int(name, a, val, 1, SRV_MAX_SLOW_READER_BYTES, &v)) return 2;
            o.slow_reader_bytes = (int)v;
        } else if (!strcmp(a, "--shutdown-grace-ms")) {
            if (cmd_parse_int(name, a, val, 0, SRV_MAX_SHUTDOWN_GRACE_MS, &v)) return 2;
            o.shutdown_grace_ms = (int)v;
        } else if (!strcmp(a, "--threads")) {
            if (cmd_parse_int(name, a, val, 0, 1024, &v)) return 2;
            o.n_threads = (int)v;
        } else if (!strcmp(a, "--allow-origin")) {
            if (o.n_allow_origins == SRV_MAX_ALLOW_ORIGINS)
                return cmd_usage_error(name, "at most %d --allow-origin", SRV_MAX_ALLOW_ORIGINS);
            o.allow_origins[o.n_allow_origins++] = val;
        } else if (!strcmp(a, "--kiosk-idle")) {
            if (cmd_parse_int(name, a, val, 1, 86400, &v)) return 2;
            o.kiosk_idle_s = (int)v;
        } else if (!strcmp(a, "--webui")) {
            o.webui_dir = val;
            webui_set = 1;
        } else {
            return cmd_usage_error(name, "unknown argument %s", a);
        }
    }
    if (!o.model_dir) return cmd_usage_error(name, "--model DIR is required");
    if (!webui_set) o.webui_dir = default_webui(exe_web, sizeof exe_web);
    return srv_run(&o);
}
