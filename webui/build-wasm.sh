#!/bin/sh
# webui/build-wasm.sh — links shared/ (image decode, Gemma 4 image processor, frame codec) with the
# Emscripten-built image libraries into the web client's module: OUT/g4img.js + OUT/g4img.wasm.
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
     shared/img_flat.c shared/frame.c"
if [ -f "$OUT/g4img.wasm" ] && [ -f "$OUT/g4img.js" ]; then
    newer=$(find shared webui/build-wasm.sh "$DEPS/stamp-v1" -newer "$OUT/g4img.wasm" -type f 2>/dev/null | head -n 1)
    [ -z "$newer" ] && exit 0
fi

EXPORTS='_malloc,_free,_img_flat_process,_img_flat_free,_img_flat_error,_img_flat_status,_img_flat_n,'\
'_img_flat_grid_w,_img_flat_grid_h,_img_flat_resized_w,_img_flat_resized_h,_img_flat_src_w,_img_flat_src_h,'\
'_img_flat_rows,_img_flat_positions,_img_flat_frame_size,_img_flat_frame'

# shellcheck disable=SC2086
"$EMCC" -O2 -std=c11 -Wall -Wextra -pedantic -Werror -Ishared -I"$DEPS/include" $SRC \
    "$DEPS/lib/libwebp.a" "$DEPS/lib/libjpeg.a" "$DEPS/lib/libpng.a" "$DEPS/lib/libz.a" \
    -sMODULARIZE=1 -sEXPORT_NAME=G4Img -sENVIRONMENT=web,worker,node \
    -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=33554432 -sMAXIMUM_MEMORY=2147483648 \
    -sEXPORTED_FUNCTIONS="$EXPORTS" -sEXPORTED_RUNTIME_METHODS=UTF8ToString \
    -o "$OUT/g4img.js"
echo "build-wasm: $OUT/g4img.js + g4img.wasm ($(wc -c < "$OUT/g4img.wasm") bytes wasm)"
