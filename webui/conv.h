/* conv — the chat's conversations as the browser keeps them: messages with their text, images (thumbnail and
 * size; the patches themselves stay in the image worker for this page's life) and reply statistics; JSON
 * for localStorage, the conversation index, and the `chat` request a conversation becomes (docs/protocol.md).
 *
 * Pure data: no DOM, no socket, no storage calls (app.c does those). Tested natively by
 * tests/unit/test_web_conv.c. */
#ifndef G4_WEB_CONV_H
#define G4_WEB_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "wbuf.h"

#define CONV_MAX_IMAGES 16     /* images per request (the server's SRV_MAX_IMAGES_PER_REQUEST) */
#define CONV_MAX_STORED 50     /* conversations kept in the index; the oldest go first */
#define CONV_ID_MAX 32
#define CONV_TITLE_MAX 64

enum conv_role { CONV_USER, CONV_ASSISTANT };
enum conv_state { CONV_DONE, CONV_PENDING, CONV_STREAMING };

struct conv_image {
    int att;                   /* this page's attachment id (patches in the worker), 0 after a reload */
    char *thumb;               /* data URL (malloc'd) or NULL */
    int src_w, src_h;          /* the file's pixels */
    int grid_w, grid_h, patches;
    char name[96];
};

struct conv_msg {
    enum conv_role role;
    struct wbuf text;
    struct conv_image *img;    /* n_img images (user messages) */
    int n_img;
    /* replies */
    enum conv_state state;
    char finish[16];           /* "stop", "length", "cancelled", "error" or "" while running */
    char error[200];           /* the server's or the page's message when finish is "error" */
    double ttft_ms;            /* the server's time to first token, ms (0: unknown) */
    double tps;                /* decode tokens per second after the first token */
    int tokens;                /* tokens generated */
    int queued;                /* queue position while waiting, else 0 */
};

struct conv {
    char id[CONV_ID_MAX];
    char title[CONV_TITLE_MAX];  /* from the first user message */
    double updated;              /* ms since the epoch */
    double session;              /* the page load that wrote it: attachment ids are valid only in that one */
    struct conv_msg *msg;
    int n_msg, cap_msg;
};

struct conv_entry {
    char id[CONV_ID_MAX];
    char title[CONV_TITLE_MAX];
    double updated;
};

struct conv_index {
    struct conv_entry e[CONV_MAX_STORED]; /* most recently updated first */
    int n;
};

void conv_init(struct conv *c, const char *id);
void conv_free(struct conv *c);
/* Appends an empty message of role. */
struct conv_msg *conv_add(struct conv *c, enum conv_role role);
/* Drops messages [n, n_msg). */
void conv_truncate(struct conv *c, int n);
/* Adds a copy of im to m (thumb duplicated). -1 when m already has CONV_MAX_IMAGES. */
int conv_add_image(struct conv_msg *m, const struct conv_image *im);
/* Sets the title from the first user message (first line, cut at a character boundary). */
void conv_retitle(struct conv *c);

/* JSON of c (what localStorage keeps), malloc'd. */
char *conv_to_json(const struct conv *c);
/* Parses what conv_to_json wrote into c (initialised here). 0, or -1 with err (200 bytes) on bad input.
 * Replies that were running when the page went away come back as finish "error". */
int conv_from_json(const char *s, size_t n, struct conv *c, char *err);

/* Index: moves or adds c's entry at the front; returns the id that fell off the end (to delete), or NULL. */
const char *conv_index_touch(struct conv_index *ix, const struct conv *c, char dropped[CONV_ID_MAX]);
void conv_index_remove(struct conv_index *ix, const char *id);
char *conv_index_to_json(const struct conv_index *ix);
int conv_index_from_json(const char *s, size_t n, struct conv_index *ix);

/* The `chat` request for messages [0, n) of c (the last one a user message), with request id req_id.
 * image_ids[k] is the upload id of the k-th image in order (over all messages), 0 to leave that image out.
 * max_tokens <= 0 leaves the server's default. Assistant replies that produced no text are left out.
 * Returns malloc'd JSON. */
char *conv_request(const struct conv *c, int n, const char *req_id, const uint32_t *image_ids, int max_tokens);

/* Images in messages [0, n) of c, in order. */
int conv_count_images(const struct conv *c, int n);

#endif
