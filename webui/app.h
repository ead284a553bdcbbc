/* app — the web client's entry points: what the JavaScript glue calls when something happens (the socket
 * opened, closed or brought a message; a button, a key, a timer; a file was picked and then decoded by the
 * image worker). The chat page, the kiosk and the dashboard are one program with three pages.
 *
 * Single-threaded: the browser's main thread calls these one at a time (platform_web.c exports them);
 * unit tests call them directly. */
#ifndef G4_WEB_APP_H
#define G4_WEB_APP_H

#include <stddef.h>

enum app_page { APP_CHAT, APP_KIOSK, APP_DASH };

/* Starts the page: reads the stored theme and conversations, renders, connects. dark: the system's colour
 * scheme; origin: the page's scheme://host:port (the kiosk's QR code when the server names no LAN URL). */
void app_init(enum app_page page, int dark, const char *origin);

void app_ws_opened(void);
void app_ws_closed(void);
void app_ws_message(const char *text, size_t n);   /* one text frame */

/* A click on an element with data-act (arg: its data-arg or ""), with the composer's current text. */
void app_action(const char *act, const char *arg, const char *input);
/* A key in the composer: 1 when the app handled it (the glue then prevents the default). */
int app_key(const char *key, int shift, const char *input);
void app_timer(int id);
/* Any key or pointer activity on the page (the kiosk's idle clock). */
void app_activity(void);

/* A file the person picked, dropped or pasted: its attachment id (> 0), which the glue hands to the image
 * worker with app_budget() soft tokens, or 0 when refused (the page shows why). */
int app_attach(const char *name, double bytes, const char *mime);
int app_budget(void);
/* The worker's answer for att: err non-empty when the file could not be used; else the patch grid, the
 * source size and a thumbnail data URL. */
void app_attach_done(int att, const char *err, int patches, int grid_w, int grid_h, int src_w, int src_h,
                     const char *thumb);
/* The frames of att went out on the socket (ok) or could not (socket closed, worker lost them). */
void app_uploaded(int att, int ok);

#endif
