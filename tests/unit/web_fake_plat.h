/* web_fake_plat — plat.h for the web client's native unit tests: records what the C asked of the page (the
 * last HTML/text per element, classes, sent frames, timers, uploads) and keeps a localStorage in memory, so
 * a test can drive app.h's entry points as the JavaScript glue would and look at the result. Included by one
 * test file (the functions are defined here). */
#ifndef G4_TEST_WEB_FAKE_PLAT_H
#define G4_TEST_WEB_FAKE_PLAT_H

#include <stdlib.h>
#include <string.h>

#include "plat.h"

#define FAKE_MAX 64

struct fake_kv {
    char *key, *value;
};

static struct {
    struct fake_kv el[FAKE_MAX];       /* element id -> last html or text */
    struct fake_kv cls[FAKE_MAX];      /* "id cls" -> "1" / "0" */
    struct fake_kv store[FAKE_MAX];    /* localStorage */
    char *sent[256];                   /* text frames sent */
    int n_sent;
    int ws_opens;
    int ws_open;                       /* plat_ws_send succeeds */
    int timers[8];                     /* ms armed per timer id, -1 when cancelled */
    int uploads[32][2];                /* (att, image_id) */
    int n_uploads;
    int forgets;
    double now;
    int canvases;
    char clipboard[1024];
    char navigated[256];               /* the last plat_navigate path */
} fake;

static char *fake_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    memcpy(p, s, n);
    return p;
}

static struct fake_kv *fake_slot(struct fake_kv *t, const char *key, int create)
{
    for (int i = 0; i < FAKE_MAX; i++)
        if (t[i].key && !strcmp(t[i].key, key)) return &t[i];
    if (!create) return NULL;
    for (int i = 0; i < FAKE_MAX; i++)
        if (!t[i].key) {
            t[i].key = fake_dup(key);
            return &t[i];
        }
    abort();
}

static void fake_set(struct fake_kv *t, const char *key, const char *value)
{
    struct fake_kv *s = fake_slot(t, key, 1);
    free(s->value);
    s->value = fake_dup(value);
}

static inline const char *fake_get(struct fake_kv *t, const char *key)
{
    struct fake_kv *s = fake_slot(t, key, 0);
    return s && s->value ? s->value : "";
}

/* The page's state is reset; the store survives unless keep_store is 0 (a reload keeps it). */
static inline void fake_reset(int keep_store)
{
    for (int i = 0; i < FAKE_MAX; i++) {
        free(fake.el[i].key), free(fake.el[i].value), free(fake.cls[i].key), free(fake.cls[i].value);
        if (!keep_store) free(fake.store[i].key), free(fake.store[i].value), fake.store[i].key = fake.store[i].value = NULL;
        fake.el[i].key = fake.el[i].value = fake.cls[i].key = fake.cls[i].value = NULL;
    }
    for (int i = 0; i < fake.n_sent; i++) free(fake.sent[i]);
    fake.n_sent = fake.ws_opens = fake.n_uploads = fake.forgets = fake.canvases = 0;
    fake.ws_open = 0;
    fake.navigated[0] = 0;
    for (int i = 0; i < 8; i++) fake.timers[i] = -1;
    fake.now += 1000;
}

static inline const char *fake_last_sent(void)
{
    return fake.n_sent ? fake.sent[fake.n_sent - 1] : "";
}

static inline int fake_has_class(const char *id, const char *cls)
{
    char k[128];
    snprintf(k, sizeof k, "%s %s", id, cls);
    return !strcmp(fake_get(fake.cls, k), "1");
}

void plat_html(const char *id, const char *html) { fake_set(fake.el, id, html); }
void plat_text(const char *id, const char *text) { fake_set(fake.el, id, text); }
void plat_attr(const char *id, const char *name, const char *value)
{
    char k[128];
    snprintf(k, sizeof k, "%s@%s", id, name);
    fake_set(fake.el, k, value ? value : "");
}
void plat_class(const char *id, const char *cls, int on)
{
    char k[128];
    snprintf(k, sizeof k, "%s %s", id, cls);
    if (on < 0) on = !fake_has_class(id, cls);
    fake_set(fake.cls, k, on ? "1" : "0");
}
void plat_value(const char *id, const char *text)
{
    char k[128];
    snprintf(k, sizeof k, "%s#value", id);
    fake_set(fake.el, k, text);
}
void plat_focus(const char *id) { (void)id; }
void plat_scroll_end(const char *id) { (void)id; }
void plat_canvas(const char *id, const uint8_t *rgba, int w, int h) { (void)id, (void)rgba, (void)w, (void)h, fake.canvases++; }
void plat_clipboard(const char *text) { snprintf(fake.clipboard, sizeof fake.clipboard, "%s", text); }
void plat_navigate(const char *path) { snprintf(fake.navigated, sizeof fake.navigated, "%s", path); }
void plat_ws_open(void) { fake.ws_opens++; }
int plat_ws_send(const char *text)
{
    if (!fake.ws_open || fake.n_sent == 256) return -1;
    fake.sent[fake.n_sent++] = fake_dup(text);
    return 0;
}
void plat_upload(int att, uint32_t image_id)
{
    fake.uploads[fake.n_uploads][0] = att;
    fake.uploads[fake.n_uploads++][1] = (int)image_id;
}
void plat_forget(int att) { (void)att, fake.forgets++; }
void plat_timer(int id, int ms) { fake.timers[id] = ms; }
double plat_now(void) { return fake.now += 1; }
int plat_store_set(const char *key, const char *value)
{
    fake_set(fake.store, key, value);
    return 0;
}
char *plat_store_get(const char *key)
{
    struct fake_kv *s = fake_slot(fake.store, key, 0);
    return s && s->value ? fake_dup(s->value) : NULL;
}
void plat_store_del(const char *key)
{
    struct fake_kv *s = fake_slot(fake.store, key, 0);
    if (s) free(s->value), s->value = NULL;
}

#endif
