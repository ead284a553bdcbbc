#!/bin/sh
# webui/build-wasm-deps.sh — zlib, libpng, libjpeg-turbo (decoder) and libwebp (decoder + demux) built with
# Emscripten from Debian bookworm's source packages, for the wasm image module (webui/build-wasm.sh).
#
#   sh webui/build-wasm-deps.sh            builds into .wasm-deps/ (ignored by git) unless already built
#   WASM_DEPS=DIR sh webui/build-wasm-deps.sh
#
# Result: DIR/lib/{libz,libpng,libjpeg,libwebp,libcjson}.a and DIR/include/ with their headers (cJSON is for
# the client module, webui/app.c and friends). The sources are
# fetched at build time with `apt-get source` (needs deb-src lines: `make deps` adds them) and never
# committed. A stamp file makes a second run a no-op; delete DIR to rebuild. Plain `emcc -c` + `emar` over
# explicit file lists (no configure/cmake: Emscripten 3.1.6's emcmake passes node a flag node 20 rejects, and
# the lists are short): about a minute on 2 cores. SIMD is off (wasm builds use the C paths).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=${WASM_DEPS:-$ROOT/.wasm-deps}
STAMP="$DEPS/stamp-v1"
EMCC=${EMCC:-emcc}
EMAR=${EMAR:-emar}
JOBS=${JOBS:-2}
[ -f "$STAMP" ] && [ -f "$DEPS/lib/libcjson.a" ] && exit 0
command -v "$EMCC" >/dev/null || { echo "build-wasm-deps: $EMCC not found (apt-get install emscripten)" >&2; exit 1; }
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}

mkdir -p "$DEPS/src" "$DEPS/obj" "$DEPS/lib" "$DEPS/include/webp"
cd "$DEPS/src"
# One folder per source package; fetched once.
for pkg in zlib libpng1.6 libjpeg-turbo libwebp cjson; do
    case $pkg in libpng1.6) pat='libpng1.6-*' ;; *) pat="$pkg-*" ;; esac
    if ! ls -d $pat/ >/dev/null 2>&1; then
        echo "build-wasm-deps: apt-get source $pkg/bookworm"
        apt-get source -q "$pkg/bookworm" >/dev/null
    fi
done
ZLIB=$(ls -d "$DEPS"/src/zlib-*/ | head -n 1)
PNG=$(ls -d "$DEPS"/src/libpng1.6-*/ | head -n 1)
JPEG=$(ls -d "$DEPS"/src/libjpeg-turbo-*/ | head -n 1)
WEBP=$(ls -d "$DEPS"/src/libwebp-*/ | head -n 1)
CJSON=$(ls -d "$DEPS"/src/cjson-*/ | head -n 1)

CFLAGS="-O2 -w"

# build LIB SRCDIR CFLAGS FILE...: compiles FILEs (relative to SRCDIR) in parallel, archives them.
build() {
    lib=$1; dir=$2; flags=$3; shift 3
    [ -f "$STAMP" ] && [ -f "$DEPS/lib/$lib.a" ] && return 0 # built by an earlier run (before cJSON joined)
    mkdir -p "$DEPS/obj/$lib"
    for f in "$@"; do echo "$f"; done | xargs -P "$JOBS" -I{} sh -c \
        'o="$0/$(echo "{}" | tr / _).o"; '"$EMCC"' '"$CFLAGS $flags"' -c "$1/{}" -o "$o"' "$DEPS/obj/$lib" "$dir"
    rm -f "$DEPS/lib/$lib.a"
    "$EMAR" rcs "$DEPS/lib/$lib.a" "$DEPS/obj/$lib"/*.o
    echo "build-wasm-deps: $lib.a ($(ls "$DEPS/obj/$lib" | wc -l) objects)"
}

# zlib
build libz "$ZLIB" "" adler32.c compress.c crc32.c deflate.c infback.c inffast.c inflate.c inftrees.c \
    trees.c uncompr.c zutil.c
cp "$ZLIB/zlib.h" "$ZLIB/zconf.h" "$DEPS/include/"

# libpng
cp "$PNG/scripts/pnglibconf.h.prebuilt" "$PNG/pnglibconf.h"
build libpng "$PNG" "-I$ZLIB -DPNG_ARM_NEON_OPT=0 -DPNG_INTEL_SSE_OPT=0 -DPNG_POWERPC_VSX_OPT=0 -DPNG_MIPS_MSA_OPT=0" \
    png.c pngerror.c pngget.c pngmem.c pngpread.c pngread.c pngrio.c pngrtran.c pngrutil.c pngset.c \
    pngtrans.c pngwio.c pngwrite.c pngwtran.c pngwutil.c
cp "$PNG/png.h" "$PNG/pngconf.h" "$PNG/pnglibconf.h" "$DEPS/include/"

# libjpeg-turbo: the decompressor, with the config headers CMake would write (8-bit samples, arithmetic
# decoding, memory source/destination, no SIMD).
JV=$(sed -n 's/^.*set(VERSION \([0-9.]*\)).*$/\1/p' "$JPEG/CMakeLists.txt" | head -n 1)
[ -n "$JV" ] || JV=2.1.5
JVN=$(echo "$JV" | awk -F. '{printf "%d%03d%03d", $1, $2, $3}')
sed -e "s/@JPEG_LIB_VERSION@/62/" -e "s/@VERSION@/$JV/" -e "s/@LIBJPEG_TURBO_VERSION_NUMBER@/$JVN/" \
    -e "s/@BITS_IN_JSAMPLE@/8/" -e "s/#cmakedefine C_ARITH_CODING_SUPPORTED 1/#define C_ARITH_CODING_SUPPORTED 1/" \
    -e "s/#cmakedefine D_ARITH_CODING_SUPPORTED 1/#define D_ARITH_CODING_SUPPORTED 1/" \
    -e "s/#cmakedefine MEM_SRCDST_SUPPORTED 1/#define MEM_SRCDST_SUPPORTED 1/" \
    -e "s/#cmakedefine \(.*\)/\/* #undef \1 *\//" "$JPEG/jconfig.h.in" > "$JPEG/jconfig.h"
sed -e "s/@BUILD@/g4-wasm/" -e "s/@INLINE@/inline __attribute__((always_inline))/" -e "s/@THREAD_LOCAL@//" \
    -e "s/@CMAKE_PROJECT_NAME@/libjpeg-turbo/" -e "s/@VERSION@/$JV/" -e "s/@SIZE_T@/4/" \
    -e "s/#cmakedefine HAVE_BUILTIN_CTZL/#define HAVE_BUILTIN_CTZL/" -e "s/#cmakedefine \(.*\)/\/* #undef \1 *\//" \
    "$JPEG/jconfigint.h.in" > "$JPEG/jconfigint.h"
sed -e "s/@COPYRIGHT_YEAR@/1991-2023/" "$JPEG/jversion.h.in" > "$JPEG/jversion.h"
build libjpeg "$JPEG" "-I$JPEG" jaricom.c jcomapi.c jdapimin.c jdapistd.c jdarith.c jdatasrc.c jdatadst.c \
    jdcoefct.c jdcolor.c jddctmgr.c jdhuff.c jdicc.c jdinput.c jdmainct.c jdmarker.c jdmaster.c jdmerge.c \
    jdphuff.c jdpostct.c jdsample.c jdtrans.c jerror.c jidctflt.c jidctfst.c jidctint.c jidctred.c jquant1.c \
    jquant2.c jutils.c jmemmgr.c jmemnobs.c jsimd_none.c
cp "$JPEG/jpeglib.h" "$JPEG/jconfig.h" "$JPEG/jmorecfg.h" "$JPEG/jerror.h" "$DEPS/include/"

# libwebp: decoder and demuxer
build libwebp "$WEBP" "-I$WEBP -I$WEBP/src" \
    src/dec/alpha_dec.c src/dec/buffer_dec.c src/dec/frame_dec.c src/dec/idec_dec.c src/dec/io_dec.c \
    src/dec/quant_dec.c src/dec/tree_dec.c src/dec/vp8_dec.c src/dec/vp8l_dec.c src/dec/webp_dec.c \
    src/demux/demux.c \
    src/dsp/alpha_processing.c src/dsp/cpu.c src/dsp/dec.c src/dsp/dec_clip_tables.c src/dsp/filters.c \
    src/dsp/lossless.c src/dsp/rescaler.c src/dsp/upsampling.c src/dsp/yuv.c \
    src/utils/bit_reader_utils.c src/utils/color_cache_utils.c src/utils/filters_utils.c \
    src/utils/huffman_utils.c src/utils/quant_levels_dec_utils.c src/utils/rescaler_utils.c \
    src/utils/random_utils.c src/utils/thread_utils.c src/utils/utils.c
cp "$WEBP"/src/webp/decode.h "$WEBP"/src/webp/demux.h "$WEBP"/src/webp/types.h "$WEBP"/src/webp/mux_types.h \
    "$DEPS/include/webp/"

# cJSON (the web client's JSON, the same library the server uses natively)
build libcjson "$CJSON" "" cJSON.c
cp "$CJSON/cJSON.h" "$DEPS/include/"

date > "$STAMP"
echo "build-wasm-deps: done ($DEPS)"
