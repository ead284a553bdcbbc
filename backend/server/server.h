/* server — `g4 serve`: one process, one port, the web client's static files, the WebSocket protocol and the
 * OpenAI-compatible HTTP API (docs/protocol.md). This header is what the command line needs; the rooms of
 * the server share srv.h. */
#ifndef G4_SERVER_H
#define G4_SERVER_H

#include "engine/engine.h"

#define SRV_MAX_ALLOW_ORIGINS 16

struct srv_opts {
    const char *model_dir;
    const char *host;            /* address to bind: "127.0.0.1" (default) or "0.0.0.0" for the LAN */
    int port;                    /* 0: any free port (printed) */
    int device_auto;             /* 1: CUDA when this g4 has it and a GPU answers, else CPU */
    enum engine_device device;   /* when !device_auto */
    const char *api_key;         /* NULL: no key */
    int kiosk;                   /* serve the kiosk page at / */
    int kiosk_idle_s;            /* the kiosk page starts over after this many idle seconds (ready message) */
    int max_streams;             /* engine streams */
    int max_queue;               /* waiting requests */
    int context;                 /* positions per stream */
    int max_conns_per_addr;
    int slow_reader_ms;          /* 0: the scheduler's default (30 s) */
    int slow_reader_bytes;       /* unread reply bytes per request before its stream pauses; 0: the scheduler's
                                    default (64 KiB) */
    int shutdown_grace_ms;       /* after SIGINT/SIGTERM, how long clients get to read their last messages */
    int n_threads;               /* CPU engine threads; 0 = one per core */
    const char *allow_origins[SRV_MAX_ALLOW_ORIGINS];
    int n_allow_origins;
    const char *webui_dir;       /* static files */
};

/* Sets the defaults of limits.h (127.0.0.1:8080, 16 streams, queue 64, ...). */
void srv_opts_init(struct srv_opts *o);

/* Serves until SIGINT or SIGTERM. Returns the process exit code: 0 after a clean shutdown, 1 when the
 * server could not start (the reason printed on stderr). */
int srv_run(const struct srv_opts *o);

#endif
