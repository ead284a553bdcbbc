#!/bin/sh
# tests/fuzz/run.sh — builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS.
#
#   sh tests/fuzz/run.sh [SECONDS] [OUTDIR]      `make fuzz` runs 300 s per target; CI's `make test` runs
#                                                 tests/scripts/test_img_fuzz.sh, 25 s per target
#
# Targets: fuzz_img (bytes -> img_process) and fuzz_frame (bytes -> frame_decode). shared/ is instrumented;
# libpng/libjpeg/libwebp are the system's (uninstrumented: our code's coverage, their memory safety is
# still watched by ASan through our calls). Seed corpora are made here: small PNG/JPEG/WebP files of every
# kind the decoder takes, and valid frames. A crash leaves its input in OUTDIR as crash-* and exits 1.
set -eu
SECONDS_PER=${1:-300}
OUT=${2:-build/fuzz}
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (make deps installs clang)"; exit 2; }
mkdir -p "$OUT/corpus_img" "$OUT/corpus_frame"
FLAGS="-g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Ishared \
 $(pkg-config --cflags libpng libwebp 2>/dev/null)"
LIBS="$(pkg-config --libs libpng libwebp libwebpdemux) -ljpeg -lz -lm"
SRC="shared/img_decode.c shared/img_png.c shared/img_jpeg.c shared/img_webp.c shared/img_resize.c shared/img_patch.c"
# shellcheck disable=SC2086
$CC $FLAGS tests/fuzz/fuzz_img.c $SRC -o "$OUT/fuzz_img" $LIBS
# shellcheck disable=SC2086
$CC $FLAGS tests/fuzz/fuzz_frame.c shared/frame.c -o "$OUT/fuzz_frame"

# Seeds: one byte of budget selector + a small file. ImageMagick / cwebp make them when present.
seed() { { printf '\000'; cat "$1"; } > "$OUT/corpus_img/$(basename "$1")"; }
T=$(mktemp -d /tmp/g4fuzz.XXXXXX)
if command -v convert >/dev/null; then
    convert -seed 1 -size 13x9 plasma: "$T/a.png"
    convert -seed 2 -size 12x10 plasma: -alpha set -channel A -fx 'i/w' +channel "$T/b.png"
    convert -seed 3 -size 9x7 plasma: -depth 16 "$T/c.png"
    convert -seed 4 -size 16x8 plasma: -colors 4 -type Palette "$T/d.png"
    convert -seed 5 -size 11x6 plasma: -interlace PNG "$T/e.png"
    convert -seed 6 -size 16x16 plasma: -quality 70 "$T/f.jpg"
    convert -seed 7 -size 24x16 plasma: -interlace JPEG -quality 60 "$T/g.jpg"
    convert -seed 8 -size 8x8 plasma: -colorspace Gray "$T/h.jpg"
    convert -seed 9 -size 10x10 plasma: -quality 50 "$T/i.webp"
    convert -seed 10 -size 10x10 plasma: -define webp:lossless=true "$T/j.webp"
    convert -seed 11 -size 16x16 plasma: -colorspace CMYK -quality 70 "$T/k.jpg" 2>/dev/null || true
    for f in "$T"/*; do seed "$f"; done
fi
rm -rf "$T"
# a valid 1 x 2 frame and a 2 x 1 frame of one row
{ printf 'G4IP\001\000\000\000\007\000\000\000\001\000\002\000\000\000\000\000\002\000\000\000'; head -c 13824 /dev/zero; } \
    > "$OUT/corpus_frame/two_rows"
{ printf 'G4IP\001\000\000\000\010\000\000\000\002\000\001\000\001\000\000\000\001\000\000\000'; head -c 6912 /dev/zero; } \
    > "$OUT/corpus_frame/one_row"

rc=0
for t in fuzz_img fuzz_frame; do
    c=$OUT/corpus_$(echo $t | sed 's/fuzz_//')
    echo "fuzz: $t for ${SECONDS_PER}s"
    if ! "$OUT/$t" "$c" -max_total_time="$SECONDS_PER" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$OUT/" -print_final_stats=1 >"$OUT/$t.log" 2>&1; then
        echo "fuzz: $t FOUND A PROBLEM (see $OUT/$t.log and $OUT/crash-*)"
        tail -n 40 "$OUT/$t.log"
        rc=1
    else
        grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "$OUT/$t.log" | tail -n 2
    fi
done
exit $rc
