#!/bin/sh
# tests/gpu/pending.sh — what changed without a full GPU run (docs/cuda.md, "Not yet run end to end"), checked
# and timed in device calls of under 10 minutes each, over a build carried as for tests/gpu/run.sh:
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh check [OUT_DIR]
#       bits first, each program under a time limit (a tensor copy whose bytes never come hangs): run.sh with
#       the defaults (the tensor-copy products, fused GeGLU, early loads: test_cuda_kernels, test_cuda_engine
#       with early loads flipped, memcheck), the wgmma test, then the engine test and memcheck with early loads
#       off, and the engine test on the cp.async products ("mma", the defaults before version 11).
#   sh tests/gpu/pending.sh time [OUT_DIR]
#       speed: the whole g4 bench with the defaults, with the cp.async products and without early loads
#       (bench_cuda_products, every variant's column, after the first), bench_cuda_attention with and without
#       early loads.
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh quick [OUT_DIR]
#       for a session that may get one device call: the product kernels' bits (test_cuda_kernels,
#       test_cuda_wgmma), the engine test with the defaults, then time's steps.
#   [G4_PENDING_STREAMS=64] sh tests/gpu/pending.sh costs [OUT_DIR]
#       what each kind of small kernel costs a graphed decode step: the decode bench (1, 4, 16 streams or more)
#       as served, then with G4_CUDA_PROFILE_SKIP=prep, attention, norms and all three (cuda_profile.c; the
#       results are wrong then, the times are the point).
#   sh tests/gpu/pending.sh attention [OUT_DIR]
#       the attention knobs not yet run (attention.cu, kernels.h): first the engine test (wide model: head dims
#       256 and 512, row-exact checks) with the defaults; then, on a 12-layer 12B (quick to write), prompt
#       attention compiled for two blocks per multiprocessor (G4_CUDA_ATTN_PROMPT_CTAS=2) or with two pairs'
#       keys and values in flight (G4_CUDA_ATTN_PROMPT_BUFFERS=2), prefill and first token alternating with the
#       default (twice each with G4_PENDING_REPEAT=1); then the engine test with each knob, and memcheck with
#       two buffers.
#   sh tests/gpu/pending.sh rows [OUT_DIR]
#       the cut between the decode and the prompt product kernels (kern_gemm): the products table with the
#       wgmma column (with G4_PENDING_PRODUCTS=1), the decode bench up to 64 streams of the whole 12B with the
#       default cut (65 rows) against the products of 8,192 outputs or more on the prompt kernel from 64 or 48
#       rows (G4_CUDA_WGMMA_ROWS_WIDE), then the engine test with the cut at 2 rows (bits).
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh loads [OUT_DIR]
#       attention's keys and values by cp.async pieces against bulk copies (G4_CUDA_ATTN_CP, attention.cu),
#       and the tiles taken longest first (G4_CUDA_ATTN_LONGEST_FIRST): the engine test with both in both kinds
#       of pass (bits), then on a 12-layer 12B prefill (--prefill-only, up to 8k; neither, each, both) and
#       decode up to 16 streams (one stream runs the prompt kernel) and bench_cuda_attention, pieces or not.
#   sh tests/gpu/pending.sh prompt [OUT_DIR]
#       where a prompt pass's time goes, on a 12-layer 12B: `g4 bench --prefill-only` up to 8k with
#       G4_CUDA_PROFILE=1 (time by kind of kernel), then ncu (--set full, the SASS page as CSV) of one prompt
#       attention launch of each layer kind: sliding (head dim 256) in the second 1,024-row chunk of the 2k
#       prompt, full (512) in the last chunk of the 8k prompt.
#   sh tests/gpu/pending.sh decode [OUT_DIR]
#       where a 64-stream decode step goes: bench_cuda_attention as served, with two key/value buffers in decode
#       blocks (G4_CUDA_ATTN_DECODE_BUFFERS=2) and with cp.async pieces; the engine test with two buffers; the
#       64-stream decode bench of the whole 12B as served and without attention (G4_CUDA_PROFILE_SKIP); then ncu
#       (--set full, the SASS page as CSV) of one sliding decode attention launch at 64 streams, context 1k
#       (bench_cuda_attention), bulk copies and cp.async pieces.
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh next [OUT_DIR]
#       for a session that may get one device call, the written and unmeasured knobs, most decisive first: the
#       engine test with the four knobs on (cp.async pieces, longest first, two decode buffers, the last layer
#       on the logits rows: bits), a 12-layer prefill to 2k with the tiles longest first or not and the last
#       layer on the logits rows or every row, alternating (first token),
#       bench_cuda_attention as served / with two decode buffers / with cp.async pieces, then 8k prefill with
#       and without longest first.
# A summary comes last. The full logs (and, for check, the SASS of every kernel in g4, for reading on a machine
# without cuobjdump) go to one archive, OUT_DIR/pending-WHAT.tgz (default OUT_DIR: /tmp), since the device tool
# brings back few files.
set -u
what=${1:-}
dest=${2:-/tmp}
out=/tmp/g4-pending-$what
b=${G4_BUILD:-build}
here=$(dirname "$0")
mkdir -p "$out" "$dest"
export LD_LIBRARY_PATH="$PWD/.devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# the products before version 11 (commas join a setting's variables)
mma=G4_CUDA_SKINNY_VARIANT=mma,G4_CUDA_WGMMA=mma,G4_CUDA_GEGLU_FUSED=0
summary=""
note() { summary="$summary
$1"; echo "$1"; }
# G4_PENDING_SECONDS (default 560): the whole run's budget; a step gets at most what is left of it, and one
# with under 20 s left is skipped (noted as such), so the summary and the archive always come back.
until=$(($(date +%s) + ${G4_PENDING_SECONDS:-560}))
step() { # name limit command...: runs it, keeps its log, notes its status
    name=$1 limit=$2
    shift 2
    start=$(date +%s)
    [ $((until - start)) -lt "$limit" ] && limit=$((until - start))
    if [ "$limit" -lt 20 ]; then
        note "$name: skipped, the run's time is spent"
        return
    fi
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    [ "$rc" -eq 124 ] && echo "TIMED OUT after $limit s" >>"$out/$name.log"
    tail -n 40 "$out/$name.log"
    note "$name: rc $rc in $(($(date +%s) - start)) s; $(grep -E 'passed, [0-9]+ failed|ERROR SUMMARY|TIMED OUT' "$out/$name.log" | tail -n 1)"
}
benches() { # the g4 bench with each setting (G4_DEFAULTS=1: none), the lines that decide into the summary
    bench="--model /dev/shm/g4-12b --shape 12b --max-prefill 8192 --max-streams 16"
    for s in "$@"; do
        n=bench_$(echo "$s" | tr -c 'A-Za-z0-9_\n' _)
        step "$n" 200 env $(echo "$s" | tr , ' ') "$b/g4" bench $bench
        note "$(grep -E '^\| 1 row \| (1|4|16) \| 1024 |^\| 1 stream, context 1024 \| 16 |first token, 1000-token prompt|^\| (512|2048|8192) \|' \
            "$out/$n.log")"
        [ "$s" = G4_DEFAULTS=1 ] && step products 150 "$b/bench/bench_cuda_products"
    done
}
case $what in
check)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    step run_defaults 330 sh "$here/run.sh" "$out/defaults"
    step wgmma 150 "$b/tests/test_cuda_wgmma"
    step run_late 200 env G4_CUDA_EARLY_LOADS=0 G4_GPU_TESTS="engine memcheck" sh "$here/run.sh" "$out/late"
    step run_mma 100 env $(echo "$mma" | tr , ' ') G4_GPU_TESTS=engine sh "$here/run.sh" "$out/mma"
    command -v cuobjdump >/dev/null 2>&1 && cuobjdump -sass "$b/g4" >"$out/g4.sass" 2>&1
    ;;
time | quick)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    if [ "$what" = quick ]; then
        step kernels 150 env G4_GPU_TESTS=kernels sh "$here/run.sh" "$out/kernels"
        step wgmma 120 "$b/tests/test_cuda_wgmma"
        step engine 120 env G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine"
    fi
    # G4_PENDING_BENCHES: the settings to bench (spaces between settings, commas within one)
    benches ${G4_PENDING_BENCHES:-G4_DEFAULTS=1 $mma G4_CUDA_EARLY_LOADS=0}
    step attention 60 "$b/bench/bench_cuda_attention"
    step attention_late 60 env G4_CUDA_EARLY_LOADS=0 "$b/bench/bench_cuda_attention"
    ;;
costs)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    for k in "" prep attention norms prep,attention,norms; do
        name=skip_$(echo "${k:-none}" | tr , _)
        step "$name" 150 env G4_CUDA_PROFILE_SKIP="$k" "$b/g4" bench --model /dev/shm/g4-12b --shape 12b \
            --max-streams "${G4_PENDING_STREAMS:-16}" --decode-only
        note "$(grep -E "^\| 1 row \| (1|16|${G4_PENDING_STREAMS:-16}) \| 1024 " "$out/$name.log")"
    done
    ;;
attention)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step engine_defaults 120 env G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine"
    i=0
    for k in X=1 G4_CUDA_ATTN_PROMPT_CTAS=2 G4_CUDA_ATTN_PROMPT_BUFFERS=2 ${G4_PENDING_REPEAT:+X=1 \
        G4_CUDA_ATTN_PROMPT_CTAS=2 G4_CUDA_ATTN_PROMPT_BUFFERS=2}; do
        i=$((i + 1))
        name=prompt${i}_$(echo "$k" | sed 's/G4_CUDA_ATTN_//g' | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 120 env $(echo "$k" | tr , ' ') "$b/g4" bench \
            --model /dev/shm/g4-12b-12 --shape 12b --layers 12 --max-streams 1 --max-prefill 8192
        note "$(grep -E 'first token, 1000-token prompt|^\| (512|2048|8192) \|' "$out/$name.log")"
    done
    step engine_ctas2 120 env G4_CUDA_ATTN_PROMPT_CTAS=2 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_ctas2"
    step engine_buffers2 120 env G4_CUDA_ATTN_PROMPT_BUFFERS=2 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_buffers2"
    step memcheck_buffers2 150 env G4_CUDA_ATTN_PROMPT_BUFFERS=2 G4_GPU_TESTS=memcheck \
        sh "$here/run.sh" "$out/memcheck"
    ;;
rows)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    [ "${G4_PENDING_PRODUCTS:-0}" = 1 ] && step products 200 "$b/bench/bench_cuda_products"
    i=0
    for k in X=1 G4_CUDA_WGMMA_ROWS_WIDE=64 G4_CUDA_WGMMA_ROWS_WIDE=48 X=1; do
        i=$((i + 1))
        name=decode${i}_$(echo "$k" | sed 's/G4_CUDA_//g' | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 150 env "$k" "$b/g4" bench --model /dev/shm/g4-12b --shape 12b --max-streams 64 --decode-only
        note "$(grep -E '^\| 1 row \| (1|16|64) \| ' "$out/$name.log")"
    done
    step engine_wgmma_rows2 120 env G4_CUDA_WGMMA_ROWS=2 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_rows2"
    ;;
loads)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step engine_cp 120 env G4_CUDA_ATTN_CP=3 G4_CUDA_ATTN_LONGEST_FIRST=3 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_cp"
    m12="--model /dev/shm/g4-12b-12 --shape 12b --layers 12"
    for k in CP=0 LONGEST_FIRST=1 CP=1 CP=1,LONGEST_FIRST=1; do
        name=prefill_$(echo "$k" | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 90 env $(echo "G4_CUDA_ATTN_$k" | sed 's/,/ G4_CUDA_ATTN_/g') "$b/g4" bench $m12 --max-streams 1 \
            --prefill-only --max-prefill 8192
        note "$(grep -E '^\| (512|2048|8192) \||first token, 1000-token prompt:' "$out/$name.log")"
    done
    for k in 0 3; do
        step "decode_cp$k" 60 env G4_CUDA_ATTN_CP=$k "$b/g4" bench $m12 --max-streams 16 --decode-only
        note "$(grep -E '^\| 1 row \| (1|4|16) \| ' "$out/decode_cp$k.log")"
    done
    for k in 0 3; do
        step "attention_cp$k" 60 env G4_CUDA_ATTN_CP=$k "$b/bench/bench_cuda_attention"
    done
    ;;
prompt)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    PATH=$PATH:/usr/local/cuda/bin
    m12="--model /dev/shm/g4-12b-12 --shape 12b --layers 12 --max-streams 1 --prefill-only"
    step profile 150 env G4_CUDA_PROFILE=1 "$b/g4" bench $m12 --max-prefill 8192
    # launches of attention_kernel<D, 8, ...> with --prefill-only: 10 sliding and 2 full layers a 1,024-row
    # chunk; the 512 prompt is one chunk, the 2k two, the 8k eight
    for k in "256 20 2048" "512 20 8192"; do
        set -- $k
        step "ncu_$1" 200 ncu --kernel-name-base demangled --kernel-name "regex:attention_kernel<$1, 8," \
            --launch-skip "$2" --launch-count 1 --set full --import-source yes -f -o "$out/prompt$1" \
            "$b/g4" bench $m12 --max-prefill "$3"
        ncu -i "$out/prompt$1.ncu-rep" --page details >"$out/prompt$1-details.txt" 2>&1
        ncu -i "$out/prompt$1.ncu-rep" --page source --csv --print-source sass >"$out/prompt$1-sass.csv" 2>&1
        rm -f "$out/prompt$1.ncu-rep" # tens of MB; the two text pages are what comes back
        note "$(grep -E '^ +(Duration|Grid Size|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Executed Ipc Active) ' \
            "$out/prompt$1-details.txt")"
    done
    ;;
next)
    # what the last sessions wrote and could not run, most decisive first, for a session that gets one call
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step engine_knobs 120 env G4_CUDA_ATTN_CP=3 G4_CUDA_ATTN_LONGEST_FIRST=3 G4_CUDA_ATTN_DECODE_BUFFERS=2 \
        G4_CUDA_LAST_ROWS=1 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_knobs"
    m12="--model /dev/shm/g4-12b-12 --shape 12b --layers 12 --max-streams 1 --prefill-only"
    i=0
    for k in X=1 G4_CUDA_ATTN_LONGEST_FIRST=1 G4_CUDA_LAST_ROWS=1 G4_CUDA_ATTN_LONGEST_FIRST=1,G4_CUDA_LAST_ROWS=1 \
        X=1 G4_CUDA_ATTN_LONGEST_FIRST=1 G4_CUDA_LAST_ROWS=1 G4_CUDA_ATTN_LONGEST_FIRST=1,G4_CUDA_LAST_ROWS=1; do
        i=$((i + 1))
        name=prefill${i}_$(echo "$k" | sed 's/G4_CUDA_//g' | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 60 env $(echo "$k" | tr , ' ') "$b/g4" bench $m12 --max-prefill 2048
        note "$(grep -E '^\| (512|2048) \||first token, 1000-token prompt:' "$out/$name.log")"
    done
    for k in X=1 G4_CUDA_ATTN_DECODE_BUFFERS=2 G4_CUDA_ATTN_CP=2; do
        name=attention_$(echo "$k" | sed 's/G4_CUDA_ATTN_//' | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 60 env "$k" "$b/bench/bench_cuda_attention"
        note "$(grep -E '^\| (sliding|full) \| (16|64) \| ' "$out/$name.log")"
    done
    for k in 0 1; do
        step "prefill8k_lf$k" 90 env G4_CUDA_ATTN_LONGEST_FIRST=$k "$b/g4" bench $m12 --max-prefill 8192
        note "$(grep -E '^\| 8192 \|' "$out/prefill8k_lf$k.log")"
    done
    ;;
decode)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    PATH=$PATH:/usr/local/cuda/bin
    for k in X=1 G4_CUDA_ATTN_DECODE_BUFFERS=2 G4_CUDA_ATTN_CP=2; do
        name=attention_$(echo "$k" | sed 's/G4_CUDA_ATTN_//' | tr -c 'A-Za-z0-9_\n' _)
        step "$name" 60 env "$k" "$b/bench/bench_cuda_attention"
        note "$(grep -E '^\| (sliding|full) \| (16|64) \| ' "$out/$name.log")"
    done
    step engine_buffers2 120 env G4_CUDA_ATTN_DECODE_BUFFERS=2 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_b2"
    for k in "" attention; do
        name=skip64_${k:-none}
        step "$name" 150 env G4_CUDA_PROFILE_SKIP="$k" "$b/g4" bench --model /dev/shm/g4-12b --shape 12b \
            --max-streams 64 --decode-only
        note "$(grep -E '^\| 1 row \| (1|16|64) \| ' "$out/$name.log")"
    done
    # attention_kernel<256, 4, ...>: the sliding decode launches; skip the first rounds (warm-up)
    for k in 0 2; do
        step "ncu_decode_cp$k" 150 env G4_CUDA_ATTN_CP=$k ncu --kernel-name-base demangled \
            --kernel-name "regex:attention_kernel<256, 4," --launch-skip 40 --launch-count 1 --set full \
            --import-source yes -f -o "$out/decode_cp$k" "$b/bench/bench_cuda_attention" sliding 64 1024 1
        ncu -i "$out/decode_cp$k.ncu-rep" --page details >"$out/decode_cp$k-details.txt" 2>&1
        ncu -i "$out/decode_cp$k.ncu-rep" --page source --csv --print-source sass >"$out/decode_cp$k-sass.csv" 2>&1
        rm -f "$out/decode_cp$k.ncu-rep"
        note "$(grep -E '^ +(Duration|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Executed Ipc Active) ' \
            "$out/decode_cp$k-details.txt")"
    done
    ;;
*)
    echo "usage: sh tests/gpu/pending.sh check|time|quick|costs|attention|rows|loads|prompt|decode|next [OUT_DIR]" >&2
    exit 2
    ;;
esac
echo "$summary" >"$out/summary.txt"
tar czf "$dest/pending-$what.tgz" -C "$out" .
echo
echo "== summary ($what; logs in $dest/pending-$what.tgz)$summary"
