/* app_internal — the client's state, shared by app.c (events, protocol), app_view.c (HTML) and dash.c.
 * Not for the glue: it sees only app.h. */
#ifndef G4_WEB_APP_INTERNAL_H
#define G4_WEB_APP_INTERNAL_H

#include <stdint.h>

#include "app.h"
#include "conv.h"
#include "dash.h"
#include "wbuf.h"

#define APP_MAX_FILE_BYTES (64.0 * 1024 * 1024) /* the server's per-file limit (limits.h) */
#define APP_DEFAULT_IDLE_S 120

enum app_conn { CONN_CONNECTING, CONN_OPEN, CONN_READY, CONN_RETRY };
enum app_timer_id { T_RECONNECT = 1, T_IDLE = 2, T_NOTICE = 3 };
enum app_busy { BUSY_NONE, BUSY_UPLOADING, BUSY_RUNNING };

/* An image in the composer, waiting to be sent. */
struct app_att {
    int att;                 /* id shared with the worker */
    int ready;               /* 0: the worker is decoding it */
    struct conv_image im;    /* im.thumb owned here */
};

struct app {
    enum app_page page;
    int dark;
    char origin[256];
    double session;          /* this page load (ms since the epoch) */

    enum app_conn conn;
    int retries;             /* reconnect attempts since the last ready */
    int retry_ms;            /* the delay of the pending reconnect */

    /* from the server's ready message */
    char model[128];
    int demo;                /* random-weight demo model */
    int idle_s;              /* kiosk reset period */
    int budget;              /* soft tokens per image */
    char lan_url[160];

    struct conv cur;
    struct conv_index index;
    struct app_att atts[CONV_MAX_IMAGES];
    int n_atts, next_att;

    int max_tokens;          /* the person's reply limit (chat page), 0 = the server's */

    enum app_busy busy;
    char req_id[24];
    int req_n;               /* requests sent by this page */
    int reply;               /* index of the reply in cur being written */
    int uploads_left;
    uint32_t *pending_ids;   /* upload ids of the request being prepared, one per image of cur, 0 = left out */
    uint32_t next_image_id;
    double t_sent;           /* when the request left (for the live TTFT) */
    double t_first;          /* when its first token arrived */

    struct dash dash;
    struct wbuf scratch;
};

extern struct app app_g;

/* app_view.c */
void view_status(struct app *a);
void view_messages(struct app *a);
void view_reply(struct app *a, int i);
void view_atts(struct app *a);
void view_convs(struct app *a);
void view_busy(struct app *a);
void view_notice(struct app *a, const char *msg);
void view_qr(struct app *a);

#endif
