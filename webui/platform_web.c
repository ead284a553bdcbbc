/* platform_web — the one file that knows it runs in a browser: plat.h implemented as calls into the
 * JavaScript glue (window.G4 in webui/g4.js, one small named function each), and the entry points the glue
 * calls (app.h, plus string adapters). Built only by emcc (webui/build-wasm.sh); natively, the unit tests
 * link a recorder in its place.
 *
 * What it must not do: hold state or decide anything; it only converts between C strings and JS values. */
#ifdef __EMSCRIPTEN__

#include <emscripten.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "plat.h"

/* ---- C -> page ----------------------------------------------------------------------------------------- */

EM_JS(void, js_html, (const char *id, const char *html), { G4.html(UTF8ToString(id), UTF8ToString(html)); })
EM_JS(void, js_text, (const char *id, const char *text), { G4.text(UTF8ToString(id), UTF8ToString(text)); })
EM_JS(void, js_attr, (const char *id, const char *name, const char *value),
      { G4.attr(UTF8ToString(id), UTF8ToString(name), value ? UTF8ToString(value) : null); })
EM_JS(void, js_class, (const char *id, const char *cls, int on), { G4.cls(UTF8ToString(id), UTF8ToString(cls), on); })
EM_JS(void, js_value, (const char *id, const char *text), { G4.value(UTF8ToString(id), UTF8ToString(text)); })
EM_JS(void, js_focus, (const char *id), { G4.focus(UTF8ToString(id)); })
EM_JS(void, js_scroll_end, (const char *id), { G4.scrollEnd(UTF8ToString(id)); })
EM_JS(void, js_canvas, (const char *id, const unsigned char *rgba, int w, int h),
      { G4.canvas(UTF8ToString(id), HEAPU8.subarray(rgba, rgba + w * h * 4), w, h); })
EM_JS(void, js_clipboard, (const char *text), { G4.clipboard(UTF8ToString(text)); })
EM_JS(void, js_navigate, (const char *path), { G4.navigate(UTF8ToString(path)); })
EM_JS(void, js_ws_open, (void), { G4.wsOpen(); })
EM_JS(int, js_ws_send, (const char *text), { return G4.wsSend(UTF8ToString(text)); })
EM_JS(void, js_upload, (int att, unsigned image_id), { G4.upload(att, image_id >>> 0); })
EM_JS(void, js_forget, (int att), { G4.forget(att); })
EM_JS(void, js_timer, (int id, int ms), { G4.timer(id, ms); })
EM_JS(double, js_now, (void), { return Date.now(); })
EM_JS(int, js_store_set, (const char *key, const char *value),
      { return G4.storeSet(UTF8ToString(key), UTF8ToString(value)); })
EM_JS(char *, js_store_get, (const char *key), {
    var s = G4.storeGet(UTF8ToString(key));
    if (s === null) return 0;
    var n = lengthBytesUTF8(s) + 1, p = _malloc(n);
    stringToUTF8(s, p, n);
    return p;
})
EM_JS(void, js_store_del, (const char *key), { G4.storeDel(UTF8ToString(key)); })

void plat_html(const char *id, const char *html) { js_html(id, html); }
void plat_text(const char *id, const char *text) { js_text(id, text); }
void plat_attr(const char *id, const char *name, const char *value) { js_attr(id, name, value); }
void plat_class(const char *id, const char *cls, int on) { js_class(id, cls, on); }
void plat_value(const char *id, const char *text) { js_value(id, text); }
void plat_focus(const char *id) { js_focus(id); }
void plat_scroll_end(const char *id) { js_scroll_end(id); }
void plat_canvas(const char *id, const uint8_t *rgba, int w, int h) { js_canvas(id, rgba, w, h); }
void plat_clipboard(const char *text) { js_clipboard(text); }
void plat_navigate(const char *path) { js_navigate(path); }
void plat_ws_open(void) { js_ws_open(); }
int plat_ws_send(const char *text) { return js_ws_send(text); }
void plat_upload(int att, uint32_t image_id) { js_upload(att, image_id); }
void plat_forget(int att) { js_forget(att); }
void plat_timer(int id, int ms) { js_timer(id, ms); }
double plat_now(void) { return js_now(); }
int plat_store_set(const char *key, const char *value) { return js_store_set(key, value); }
char *plat_store_get(const char *key) { return js_store_get(key); }
void plat_store_del(const char *key) { js_store_del(key); }

/* ---- page -> C: adapters for calls whose JS side cannot pass a length ---------------------------------- */

EMSCRIPTEN_KEEPALIVE void web_ws_message(const char *text)
{
    app_ws_message(text, strlen(text));
}

/* Strings the glue allocated with _malloc for a call (so that large ones do not go on the stack). */
EMSCRIPTEN_KEEPALIVE void *web_alloc(size_t n)
{
    return malloc(n);
}

EMSCRIPTEN_KEEPALIVE void web_free(void *p)
{
    free(p);
}

#endif
