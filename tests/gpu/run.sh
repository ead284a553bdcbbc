#!/bin/sh
# tests/gpu/run.sh — the GPU checks, run on the GPU machine over a build made with nvcc (make), with the
# runtime libraries the build machine collected (sh ../shared/tools/device-runtime-libs.sh .devlibs):
#   [G4_TOKENIZER=tokenizer.json[.gz]] sh tests/gpu/run.sh [OUT_DIR]
# Runs the matrix-product test at the real 12B/31B shapes (decode and prompt kernels bit-identical, close to
# double precision), the attention test (every kernel and split bit-identical at the 12B's layer shapes, close to
# double precision), the CUDA engine tests (bf16 error against the CPU path, row-exactness) on the tiny
# fixtures and on the "wide" model it writes (real head dims, K segments, 700 positions), then
# compute-sanitizer memcheck on the engine test (tiny fixtures) when it is installed. Prints one closing line
# `N passed, N failed`. G4_GPU_TESTS picks some of them (default "kernels attention engine memcheck"); the tuning
# settings in the environment (G4_CUDA_*) reach every program.
set -u
out=${1:-/tmp/g4-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
pass=0; fail=0
# Each program runs under a time limit (G4_GPU_TEST_LIMIT seconds, default 240): a kernel waiting on an
# mbarrier whose bytes never come hangs rather than fails, and the device machine's time is short; past the
# limit the program fails with "TIMED OUT".
limit=${G4_GPU_TEST_LIMIT:-240}
run() {
    name=$1; shift
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    [ "$rc" -eq 124 ] && echo "TIMED OUT after $limit s" >>"$out/$name.log"
    if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); echo "PASS $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
    tail -n 30 "$out/$name.log"
}
b=${G4_BUILD:-build}
export G4_REQUIRE_GPU=1 # here a missing GPU is a failure, not test_cuda_engine's SKIP-NO-GPU
wide=${G4_CUDA_WIDE_MODEL:-/tmp/g4-wide}
[ -f "$wide/config.json" ] || "$b/g4" make-tiny-model "$wide" --shape wide >/dev/null
tests=" ${G4_GPU_TESTS:-kernels attention engine memcheck} "
case $tests in *" kernels "*) run cuda_kernels "$b/tests/test_cuda_kernels" ;; esac
case $tests in *" attention "*) run cuda_attention "$b/tests/test_cuda_attention" ;; esac
if [ -n "${G4_TOKENIZER:-}" ]; then # the demo model (head dim 16) needs the real tokenizer, json or json.gz
    demo=/tmp/g4-demo
    if [ ! -f "$demo/config.json" ]; then
        tok=$G4_TOKENIZER
        case $tok in *.gz) gunzip -c "$tok" >/tmp/g4-demo-tokenizer.json; tok=/tmp/g4-demo-tokenizer.json ;; esac
        "$b/g4" make-tiny-model "$demo" --tokenizer-from "$tok" >/dev/null
    fi
    export G4_CUDA_DEMO_MODEL="$demo"
fi
export G4_CUDA_WIDE_MODEL="$wide"
case $tests in *" engine "*) run cuda_engine "$b/tests/test_cuda_engine" ;; esac
unset G4_CUDA_WIDE_MODEL G4_CUDA_DEMO_MODEL
case $tests in *" memcheck "*)
    if command -v compute-sanitizer >/dev/null 2>&1; then
        run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$b/tests/test_cuda_engine"
    fi ;;
esac
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
