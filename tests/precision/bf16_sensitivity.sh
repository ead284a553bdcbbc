#!/bin/sh
# tests/precision/bf16_sensitivity.sh — how far the CPU engine's bf16-activation logits move when only the
# floating-point contraction changes (bf16_sensitivity.c says why). Builds the library twice from HEAD in a
# scratch directory (plain, and with -mfma -ffp-contract=fast; no CUDA), runs both on MODEL (default: the
# "wide" model, written to /tmp/g4-wide if absent) for a T-token prompt, and prints a markdown table.
#   sh tests/precision/bf16_sensitivity.sh [MODEL] [T]
# About 3.5 minutes on 2 cores with the wide model and T = 600; needs a machine with FMA (x86-64 v3).
set -eu
model=${1:-/tmp/g4-wide}
T=${2:-600}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/g4-bf16-sensitivity.XXXXXX)
grep -qw fma /proc/cpuinfo || { echo "bf16_sensitivity: this CPU has no FMA" >&2; exit 1; }
[ -f "$model/config.json" ] || (cd "$root" && make -s build/g4 >/dev/null && build/g4 make-tiny-model "$model" --shape wide >/dev/null)
(cd "$root" && git archive HEAD) | tar -x -C "$work"
cd "$work"
pkgs="libwebsockets libcjson libpng libwebp libwebpdemux"
inc="-Ibackend -Ishared $(pkg-config --cflags $pkgs 2>/dev/null) -I/usr/include/cjson"
libs="-lwebsockets -lcap -lcjson -lpng16 -lwebpdemux -lwebp -ljpeg -lz -lm -lpthread"
for kind in plain fma; do
    flags="-O2 -g"
    [ "$kind" = fma ] && flags="-O2 -g -mfma -ffp-contract=fast"
    CFLAGS="$flags" make -s NVCC= BUILD="build-$kind" "build-$kind/libg4.a" >/dev/null
    cc $flags -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $inc tests/precision/bf16_sensitivity.c \
        "build-$kind/libg4.a" -o "sens-$kind" $libs
    "./sens-$kind" run "$model" "$T" "$work/$kind"
done
V=$(sed -n 's/.*"vocab_size": *\([0-9]*\).*/\1/p' "$model/config.json" | head -n 1)
echo "| a | b | largest row max-rel | mean row max-rel | argmax agree |"
echo "|---|---|---|---|---|"
cd "$work"
./sens-plain compare plain.bf16 plain.fp32 "$T" "$V"
./sens-plain compare fma.fp32 plain.fp32 "$T" "$V"
./sens-plain compare fma.bf16 plain.bf16 "$T" "$V"
./sens-plain compare fma.bf16 plain.fp32 "$T" "$V"
rm -rf "$work"
