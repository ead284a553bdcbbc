#!/bin/sh
# webui/build-wasm.sh — builds the web client into OUT, the folder `g4 serve` serves (by default the `web`
# folder beside the g4 binary, so build/web for build/g4):
#
#   OUT/g4img.js + g4img.wasm      shared/ (image decode, Gemma 4 image processor, frame codec) + webui/thumb.c
#                                  with the Emscripten-built image libraries: the image worker's module
#   OUT/g4client.js + .wasm        the client's C (webui/*.c: state, protocol, conversations, markdown, charts,
#                                  QR code) with cJSON: the pages' module
#   OUT/*.html, g4.css, g4.js, img-worker.js    copied from webui/
#
#   sh webui/build-wasm.sh [OUT]        OUT defaults to build/web; `make webui` runs this
#
# The JS side calls the img_flat_* functions (shared/img_flat.h) through the exports below, with
# Module._malloc/_free and Module.HEAPU8 for the bytes. The module is MODULARIZE'd as G4Img(opts) -> Promise.
# Under node 20, pass {wasmBinary: fs.readFileSync('g4img.wasm')} (node's fetch cannot read file: URLs).
# Rebuilds only when a source is newer than the module. Needs emcc (Debian's emscripten 3.1.6).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-build/web}
EMCC=${EMCC:-emcc}
DEPS=${WASM_DEPS:-$ROOT/.wasm-deps}
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
cd "$ROOT"
sh webui/build-wasm-deps.sh
mkdir -p "$OUT"

SRC="shared/img_decode.c shared/img_png.c shared/img_jpeg.c shared/img_webp.c shared/img_resize.c shared/img_patch.c
     shared/img_flat.c shared/frame.c webui/thumb.c webui/wbuf.c"
CLIENT_SRC="webui/app.c webui/app_view.c webui/conv.c webui/dash.c webui/md.c webui/qr.c webui/wbuf.c
     webui/platform_web.c"
STATIC="index.html kiosk.html dashboard.html g4.css g4.js img-worker.js"

# stale TARGET DEPS...: true when TARGET is missing or a DEPS file or folder entry is newer
stale() {
    t=$1; shift
    [ -f "$t" ] || return 0
    [ -n "$(find "$@" -newer "$t" -type f 2>/dev/null | head -n 1)" ]
}

for f in $STATIC; do
    if stale "$OUT/$f" "webui/$f"; then cp "webui/$f" "$OUT/$f"; fi
done

if stale "$OUT/g4client.wasm" webui/*.c webui/*.h webui/build-wasm.sh "$DEPS/stamp-v1"; then
    CEXPORTS='_malloc,_free,_app_init,_app_ws_opened,_app_ws_closed,_web_ws_message,_app_action,_app_key,'\
'_app_timer,_app_activity,_app_attach,_app_budget,_app_attach_done,_app_uploaded'
    # shellcheck disable=SC2086
    "$EMCC" -O2 -std=c11 -Wall -Wextra -pedantic -Werror -Iwebui -I"$DEPS/include" $CLIENT_SRC "$DEPS/lib/libcjson.a" \
        -sMODULARIZE=1 -sEXPORT_NAME=G4Client -sENVIRONMENT=web -sALLOW_MEMORY_GROWTH=1 \
        -sEXPORTED_FUNCTIONS="$CEXPORTS" -sEXPORTED_RUNTIME_METHODS=UTF8ToString,stringToUTF8,lengthBytesUTF8 \
        -o "$OUT/g4client.js"
    echo "build-wasm: $OUT/g4client.js + g4client.wasm ($(wc -c < "$OUT/g4client.wasm") bytes wasm)"
fi

if ! stale "$OUT/g4img.wasm" shared webui/thumb.c webui/thumb.h webui/wbuf.c webui/build-wasm.sh "$DEPS/stamp-v1"; then
    exit 0
fi

EXPORTS='_malloc,_free,_img_flat_process,_img_flat_free,_img_flat_error,_img_flat_status,_img_flat_n,'\
'_img_flat_grid_w,_img_flat_grid_h,_img_flat_resized_w,_img_flat_resized_h,_img_flat_src_w,_img_flat_src_h,'\
'_img_flat_rows,_img_flat_positions,_img_flat_frame_size,_img_flat_frame,_thumb_data_url'

# shellcheck disable=SC2086
"$EMCC" -O2 -std=c11 -Wall -Wextra -pedantic -Werror -Ishared -Iwebui -I"$DEPS/include" $SRC \
    "$DEPS/lib/libwebp.a" "$DEPS/lib/libjpeg.a" "$DEPS/lib/libpng.a" "$DEPS/lib/libz.a" \
    -sMODULARIZE=1 -sEXPORT_NAME=G4Img -sENVIRONMENT=web,worker,node \
    -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=33554432 -sMAXIMUM_MEMORY=2147483648 \
    -sEXPORTED_FUNCTIONS="$EXPORTS" -sEXPORTED_RUNTIME_METHODS=UTF8ToString \
    -o "$OUT/g4img.js"
echo "build-wasm: $OUT/g4img.js + g4img.wasm ($(wc -c < "$OUT/g4img.wasm") bytes wasm)"
