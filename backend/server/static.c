/* static — the web client's files on the server's one port: lws file mounts for / (index.html, or kiosk.html
 * with --kiosk, when a callback mount also answers /index.html with kiosk.html: every path to the chat page
 * gets the kiosk, and the web client itself goes to /kiosk/ when ready says kiosk), /kiosk and /dashboard
 * over the --webui directory, the MIME types lws 4.1 lacks (.wasm,
 * .webp, .mjs, .map), and callback mounts that route /v1, /health and /metrics to http.c.
 *
 * lws collapses "/../" and "%2e%2e" in request paths before a file mount sees them, so a path cannot leave
 * the directory; tests/scripts/test_server_http.sh checks that. Our security headers (CSP with
 * 'wasm-unsafe-eval', nosniff, no-referrer) reach every file through LWS_CALLBACK_ADD_HEADERS, which lws only
 * issues when a mount names a protocol, hence .protocol = "g4" below. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/srv.h"

/* One mount. */
static void mount(struct lws_http_mount *m, const char *point, const char *origin, const char *def,
                  unsigned char origin_protocol, const struct lws_protocol_vhost_options *mimes)
{
    memset(m, 0, sizeof *m);
    m->mountpoint = point;
    m->mountpoint_len = (unsigned char)strlen(point);
    m->origin = origin;
    m->def = def;
    m->protocol = "g4";
    m->origin_protocol = origin_protocol;
    m->extra_mimetypes = mimes;
}

/* The default document of /: kiosk.html when --kiosk and the file exists, else index.html. */
static const char *root_document(struct srv *s)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/kiosk.html", s->o.webui_dir);
    if (s->o.kiosk && access(path, R_OK) == 0) return "kiosk.html";
    return "index.html";
}

int static_serve_kiosk(struct srv *s, struct lws *wsi)
{
    char path[1024];
    unsigned char hdr[1024], *p = hdr;
    snprintf(path, sizeof path, "%s/kiosk.html", s->o.webui_dir);
    if (http_add_security_headers(wsi, &p, hdr + sizeof hdr)) return -1;
    return lws_serve_http_file(wsi, path, "text/html", (const char *)hdr, (int)(p - hdr)) < 0 ? -1 : 0;
}

const struct lws_http_mount *static_mounts(struct srv *s)
{
    static const char *const types[][2] = {
        {".wasm", "application/wasm"}, {".webp", "image/webp"},       {".mjs", "text/javascript"},
        {".map", "application/json"},  {".webmanifest", "application/manifest+json"},
    };
    struct lws_protocol_vhost_options *mt = s->mimes;
    struct lws_http_mount *m = s->mounts;
    int n = (int)(sizeof types / sizeof types[0]);
    G4_CHECK(n <= (int)(sizeof s->mimes / sizeof s->mimes[0]), "mime table");
    for (int i = 0; i < n; i++) {
        memset(&mt[i], 0, sizeof mt[i]);
        mt[i].name = types[i][0];
        mt[i].value = types[i][1];
        mt[i].next = i + 1 < n ? &mt[i + 1] : NULL;
    }
    snprintf(s->kiosk_def, sizeof s->kiosk_def, "%s", root_document(s));
    mount(&m[0], "/", s->o.webui_dir, s->kiosk_def, LWSMPRO_FILE, mt);
    mount(&m[1], "/kiosk", s->o.webui_dir, "kiosk.html", LWSMPRO_FILE, mt);
    mount(&m[2], "/dashboard", s->o.webui_dir, "dashboard.html", LWSMPRO_FILE, mt);
    mount(&m[3], "/v1", "g4", NULL, LWSMPRO_CALLBACK, NULL);
    mount(&m[4], "/health", "g4", NULL, LWSMPRO_CALLBACK, NULL);
    mount(&m[5], "/metrics", "g4", NULL, LWSMPRO_CALLBACK, NULL);
    n = 6;
    if (!strcmp(s->kiosk_def, "kiosk.html")) mount(&m[n++], "/index.html", "g4", NULL, LWSMPRO_CALLBACK, NULL);
    G4_CHECK(n <= (int)(sizeof s->mounts / sizeof s->mounts[0]), "mount table");
    for (int i = 0; i + 1 < n; i++) m[i].mount_next = &m[i + 1];
    return m;
}
