/* plat — what the client's C asks of the page: the DOM, the WebSocket, the image worker, timers, storage,
 * the clipboard and canvases. Each call is one small named function of the JavaScript glue (webui/g4.js),
 * reached through webui/platform_web.c (the one file that knows about Emscripten); the unit tests link a
 * recorder instead (tests/unit/web_fake_plat.h).
 *
 * Element ids are the page's (index.html, kiosk.html, dashboard.html). Strings are UTF-8, copied by the
 * callee. None of these calls back into C synchronously. */
#ifndef G4_WEB_PLAT_H
#define G4_WEB_PLAT_H

#include <stddef.h>
#include <stdint.h>

void plat_html(const char *id, const char *html);       /* element.innerHTML = html */
void plat_text(const char *id, const char *text);       /* element.textContent = text */
void plat_attr(const char *id, const char *name, const char *value); /* value NULL: remove the attribute */
void plat_class(const char *id, const char *cls, int on); /* on 1 add, 0 remove, -1 toggle; id "" is <html> */
void plat_value(const char *id, const char *text);      /* an input's value */
void plat_focus(const char *id);
void plat_scroll_end(const char *id);                   /* scroll to the bottom if the reader was near it */
void plat_canvas(const char *id, const uint8_t *rgba, int w, int h); /* putImageData of (h, w, 4) bytes */
void plat_clipboard(const char *text);
void plat_navigate(const char *path);                   /* location.replace(path + this page's query) */

void plat_ws_open(void);                                /* connect to this page's server, /ws */
int plat_ws_send(const char *text);                     /* a text frame; -1 when not open */

void plat_upload(int att, uint32_t image_id);           /* worker makes the frames, glue sends them, then app_uploaded */
void plat_forget(int att);                              /* worker frees att's patches */

void plat_timer(int id, int ms);                        /* one-shot app_timer(id) after ms; ms < 0 cancels */
double plat_now(void);                                  /* ms since the epoch */

int plat_store_set(const char *key, const char *value); /* localStorage; -1 when full or unavailable */
char *plat_store_get(const char *key);                  /* malloc'd, or NULL */
void plat_store_del(const char *key);

#endif
