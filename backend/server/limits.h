/* limits — every bound the server puts on what a client can send or hold, in one place (docs/protocol.md,
 * "Limits", lists them; tests/scripts/test_server_*.sh cross each one). A client past a limit gets an error
 * that names the limit; the server keeps serving everyone else. */
#ifndef G4_SERVER_LIMITS_H
#define G4_SERVER_LIMITS_H

#include "img.h"
#include "model/chat.h"

/* Sizes of what arrives. */
#define SRV_MAX_MESSAGE_BYTES (8u << 20)  /* one WebSocket message after reassembly: a whole 1120-patch image
                                             frame (24 + 1120 * 6912 = 7.7 MB) fits */
#define SRV_MAX_BODY_BYTES (32u << 20)    /* one HTTP request body: a data-URI image of 20 MB and its text */
#define SRV_MAX_ID_BYTES 64               /* a request id */
#define SRV_MAX_PATH_BYTES 512            /* an HTTP path we route */

/* Images. */
#define SRV_MAX_IMAGES_PER_REQUEST CHAT_MAX_IMAGES /* 16 */
#define SRV_MAX_IMAGE_PIXELS IMG_MAX_PIXELS        /* a decoded file (also IMG_MAX_SIDE per side, IMG_MAX_INPUT_BYTES) */
#define SRV_MAX_UPLOADS_PER_CONN 16                /* uploaded patch images waiting for a chat, per connection */
#define SRV_MAX_UPLOAD_BYTES (64u << 20)           /* their patch bytes, per connection */

/* Prompts and replies. */
#define SRV_MAX_PROMPT_TOKENS 32768      /* rendered prompt, images' soft tokens included */
#define SRV_DEFAULT_CONTEXT 8192         /* positions per stream (prompt + reply) unless --context */
#define SRV_MAX_CONTEXT 262144           /* --context at most (Gemma 4's max_position_embeddings) */

/* Concurrency. */
#define SRV_DEFAULT_MAX_STREAMS 16       /* --max-streams: engine streams */
#define SRV_MAX_STREAMS_LIMIT 256
#define SRV_DEFAULT_MAX_QUEUE 64         /* --max-queue: waiting requests (being prepared or queued) */
#define SRV_MAX_QUEUE_LIMIT 4096
#define SRV_DEFAULT_CONNS_PER_ADDR 64    /* --max-conns-per-addr: open connections from one client address */
#define SRV_DEFAULT_KIOSK_IDLE_S 120     /* --kiosk-idle: seconds before the kiosk page starts over */
#define SRV_MAX_REQUESTS_PER_CONN 8      /* running requests on one WebSocket connection */
#define SRV_MAX_SLOW_READER_BYTES (64 << 20) /* --slow-reader-bytes at most (default: the scheduler's 64 KiB) */
#define SRV_STREAM_SNDBUF (32 << 10)     /* kernel send buffer of a WebSocket or SSE socket (SO_SNDBUF; Linux
                                            doubles it): with the unread-reply bound it caps what a client that
                                            stops reading leaves in the server (else the kernel grows it to MBs) */
#define SRV_MAX_CTL_QUEUE 64             /* service replies (errors, acks) waiting on one WebSocket; past it the
                                            connection, which sends without reading, is closed */

/* Timing. */
#define SRV_METRICS_PERIOD_MS 400        /* `metrics` messages to subscribers: 2.5 Hz */
#define SRV_SHUTDOWN_GRACE_MS 2000       /* --shutdown-grace-ms: after SIGINT/SIGTERM, how long clients get to read
                                            their last message */
#define SRV_MAX_SHUTDOWN_GRACE_MS 3600000
#define SRV_HTTP_WRITE_CHUNK (64u << 10) /* bytes of a fixed HTTP body per write */
#define SRV_BODY_IDLE_S 30               /* a request body that stops arriving for this long: the connection
                                            closes (a POST without Content-Length waits for the close) */

#endif
