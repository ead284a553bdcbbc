#!/bin/sh
# tests/gpu/ab.sh — one build's speed with and without a tuning setting, in one run on the GPU machine (the same
# weights, the same process environment otherwise), for settings that must not change bits (G4_CUDA_WGMMA,
# G4_CUDA_SKINNY_VARIANT, G4_CUDA_ATTN_PER_SM_DECODE, ...):
#   sh tests/gpu/ab.sh NAME=VALUE [g4 bench arguments]
# Default bench arguments: random weights of the 12B shape in /dev/shm/g4-12b (g4 bench writes them when absent),
# --max-prefill 8192 --max-streams 16. Prints `g4 bench`'s tables for A (the default) then B (NAME=VALUE).
set -eu
[ $# -ge 1 ] && case $1 in *=*) ;; *) false ;; esac || { echo "usage: sh tests/gpu/ab.sh NAME=VALUE [bench args]" >&2; exit 2; }
setting=$1
shift
b=${G4_BUILD:-build}
export LD_LIBRARY_PATH="$PWD/.devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
[ $# -gt 0 ] || set -- --model /dev/shm/g4-12b --shape 12b --max-prefill 8192 --max-streams 16
echo "== A: defaults"
"$b/g4" bench "$@"
echo "== B: $setting"
env "$setting" "$b/g4" bench "$@"
