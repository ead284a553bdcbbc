#!/bin/sh
# tests/gpu/bench.sh — the engine's speed on the GPU machine, with the runtime libraries of tests/gpu/run.sh:
#   sh tests/gpu/bench.sh [SHAPE] [MAX_PREFILL] [LAYERS] [MAX_STREAMS]
# Writes random weights of SHAPE (12b, default; 31b) to /dev/shm (RAM: quicker to write and map than the
# disk) unless they are there, then prints `g4 bench`'s tables (docs/perf.md keeps them).
set -eu
shape=${1:-12b}
max_prefill=${2:-8192}
layers=${3:-0}
streams=${4:-64}
b=${G4_BUILD:-build}
export LD_LIBRARY_PATH="$PWD/.devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
dir=/dev/shm/g4-$shape
[ "$layers" -gt 0 ] && dir=$dir-$layers
set -- --model "$dir" --shape "$shape" --max-prefill "$max_prefill" --max-streams "$streams"
[ "$layers" -gt 0 ] && set -- "$@" --layers "$layers"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
"$b/g4" bench "$@"
