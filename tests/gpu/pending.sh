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
#   sh tests/gpu/pending.sh rows [OUT_DIR]
#       the cut between the decode and the prompt product kernels (kern_gemm): the products table with the
#       wgmma column (with G4_PENDING_PRODUCTS=1), the decode bench up to 64 streams of the whole 12B, then the
#       engine test with the cut at 2 rows (bits).
#   [G4_PENDING_PREFILL="SETTING ..."] [G4_PENDING_PROFILE=0] sh tests/gpu/pending.sh prompt [OUT_DIR]
#       where a prompt pass's time goes, on a 12-layer 12B: first the 12-layer prefill up to 8k under each
#       setting of G4_PENDING_PREFILL (variables joined by commas, "-" for the defaults), then (unless
#       G4_PENDING_PROFILE=0) `g4 bench --prefill-only` up to 8k with G4_CUDA_PROFILE=1 (time by kind of
#       kernel) and ncu (--set full, the SASS page as CSV, its stalls summed by sass_stalls.py) of one prompt
#       attention launch of each layer kind: sliding (head dim 256) in the second 1,024-row chunk of the 2k
#       prompt, full (512) in the last chunk of the 8k prompt. The kernel profiled is attention_wg.cu's (the
#       default for prompt passes since version 13.7); G4_PENDING_ATTN_KERNEL=attention_kernel with
#       G4_CUDA_ATTN_WG=0 profiles attention.cu's 8-warp kernel instead.
#   sh tests/gpu/pending.sh decode [OUT_DIR]
#       where a decode step's attention goes: the engine test (bits), bench_cuda_attention, the whole 12B's
#       decode up to 16 streams (bench.sh 12b 512 0 16), then ncu (--set full, the SASS page as CSV)
#       of one sliding decode attention launch and the merge after it at context 1k, one stream (latency: 17.7 µs
#       for 8 MB, version 13.2) and 64 streams (87 % of the copy rate), and of one 64-row decode product
#       (q|k|v sliding, variant 6: 58 % of the copy rate against 82 % at one row).
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh next [OUT_DIR]
#       for a session that may get one device call: the kernel tests (every decode product variant's bits,
#       the 16- and 32-column warps of version 13.2 among them), the engine test and memcheck with the defaults,
#       the whole 12B's bench (tests/gpu/bench.sh 12b: the record), then the products table.
#   [G4_TOKENIZER=…] sh tests/gpu/pending.sh merge [OUT_DIR]
#       the merge's factors at once and the batched segment totals (c514a03) and the wide merge
#       (G4_CUDA_MERGE_WIDE): the kernel tests, the engine test (which flips the wide merge) and memcheck,
#       bench_cuda_attention and the whole 12B's decode (1-64 streams) with the merge 128 and D threads wide
#       and on G4_PENDING_BASE (a build of the commit before, if set), then kernels1's table.
#   sh tests/gpu/pending.sh tail [OUT_DIR]
#       settings of the decode step (by default the residual update in the o and down products' last CTA,
#       kernels.h, "product tails"): the kernel tests, the engine test and memcheck with one setting
#       (G4_PENDING_ENGINE; default the tail up to 4 rows),
#       the products table, and the 12B's decode by setting (G4_PENDING_DECODE; default, to 4 streams: the
#       defaults, the tail at 1 and at 4 rows, the defaults again; to 64: the defaults).
#   sh tests/gpu/pending.sh wg [OUT_DIR]
#       the warpgroup prompt attention (attention_wg.cu): test_cuda_attention (every kernel and split
#       bit-identical, close to double precision), the engine test and memcheck, bench_cuda_attention (its prompt
#       table: both kernels on 1,024-row chunks), then the 12-layer 12B's prefill up to 8k with the kernel off
#       and on, twice, alternating.
#   sh tests/gpu/pending.sh kernels1 [OUT_DIR]
#       every kernel of about two graphed one-stream decode steps, each timed alone by ncu, as a table by
#       kernel (tests/gpu/kernel_times.py): which of the ~400 launches a step are far from their bytes' time.
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
ncu_pages() { # name: the details and SASS pages of $out/name.ncu-rep as text, the SASS stalls summed into the
    # summary, and the report removed (tens of MB; the text pages are what comes back)
    ncu -i "$out/$1.ncu-rep" --page details >"$out/$1-details.txt" 2>&1
    ncu -i "$out/$1.ncu-rep" --page source --csv --print-source sass >"$out/$1-sass.csv" 2>&1
    note "$(python3 "$here/sass_stalls.py" "$out/$1-sass.csv" 6 2>&1)"
    rm -f "$out/$1.ncu-rep"
}
kernels1() { # every kernel of about two graphed one-stream decode steps at context 1k (after the prompt and
    # the first steps), each timed alone by ncu, tabled by kernel; G4_PENDING_SKIP / _COUNT move the window
    PATH=$PATH:/usr/local/cuda/bin
    step ncu_kernels1 150 ncu --metrics gpu__time_duration.sum --csv --launch-skip "${G4_PENDING_SKIP:-4000}" \
        --launch-count "${G4_PENDING_COUNT:-850}" --kill yes "$b/g4" bench --model /dev/shm/g4-12b --shape 12b \
        --max-streams 1 --decode-only
    python3 "$here/kernel_times.py" <"$out/ncu_kernels1.log" >"$out/kernels1.md" 2>&1
    cat "$out/kernels1.md"
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
rows)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    [ "${G4_PENDING_PRODUCTS:-0}" = 1 ] && step products 200 "$b/bench/bench_cuda_products"
    step decode 150 "$b/g4" bench --model /dev/shm/g4-12b --shape 12b --max-streams 64 --decode-only
    note "$(grep -E '^\| 1 row \| (1|16|64) \| ' "$out/decode.log")"
    step engine_wgmma_rows2 120 env G4_CUDA_WGMMA_ROWS=2 G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine_rows2"
    ;;
prompt)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    PATH=$PATH:/usr/local/cuda/bin
    m12="--model /dev/shm/g4-12b-12 --shape 12b --layers 12 --max-streams 1 --prefill-only"
    # G4_PENDING_PREFILL: settings compared first, each a 12-layer prefill up to 8k (a setting's variables joined
    # by commas, "-" for the defaults); G4_PENDING_PROFILE=0 stops there
    for s in ${G4_PENDING_PREFILL:-}; do
        n=prefill_$(echo "$s" | tr -c 'A-Za-z0-9_\n' _)
        step "$n" 120 env $(echo "$s" | tr , ' ' | sed 's/^-$//') "$b/g4" bench $m12 --max-prefill 8192
        note "$s: $(grep -E '^\| (512|2048|8192) \||first token' "$out/$n.log" | tr '\n' ' ')"
    done
    if [ "${G4_PENDING_PROFILE:-1}" != 0 ]; then
        step profile 150 env G4_CUDA_PROFILE=1 "$b/g4" bench $m12 --max-prefill 8192
        # launches of the prompt attention kernel with --prefill-only: 10 sliding and 2 full layers a 1,024-row
        # chunk; the 512 prompt is one chunk, the 2k two, the 8k eight
        kname=${G4_PENDING_ATTN_KERNEL:-attention_wg_kernel}
        for k in "256 20 2048" "512 20 8192"; do
            set -- $k
            step "ncu_$1" 200 ncu --kernel-name-base demangled --kernel-name "regex:$kname<\\(int\\)$1, " \
                --launch-skip "$2" --launch-count 1 --set full --import-source yes -f -o "$out/prompt$1" \
                "$b/g4" bench $m12 --max-prefill "$3"
            ncu_pages "prompt$1"
            note "$(grep -E '^ +(Duration|Grid Size|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Executed Ipc Active) ' \
                "$out/prompt$1-details.txt")"
        done
    fi
    ;;
decode)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    PATH=$PATH:/usr/local/cuda/bin
    step engine 120 env G4_GPU_TESTS=engine sh "$here/run.sh" "$out/engine"
    step attention 60 "$b/bench/bench_cuda_attention"
    note "$(grep -E '^\| (sliding|full) \| (1|16|64) \| 1024 \| 1 \|' "$out/attention.log")"
    step decode12b 150 sh "$here/bench.sh" 12b 512 0 16
    note "$(grep -E '^\| 1 row \|' "$out/decode12b.log")"
    # the sliding decode launches (attention_kernel<(int)256, ...> as ncu demangles it: 8 warps for one stream's
    # rows, 4 for more) and their merges; skip the first rounds (warm-up)
    for k in 1 64; do
        step "ncu_decode$k" 150 ncu --kernel-name-base demangled --kernel-name "regex:attention_(kernel<\\(int\\)256|merge)" \
            --launch-skip 40 --launch-count 2 --kill yes --set full --import-source yes -f -o "$out/decode$k" \
            "$b/bench/bench_cuda_attention" sliding "$k" 1024 1
        ncu_pages "decode$k"
        note "$(grep -E '^  [a-z_]+.*\(|^ +(Duration|Grid Size|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Executed Ipc Active) ' \
            "$out/decode$k-details.txt")"
    done
    # the 64-row decode product (variant 6 at 64 rows: gemm_skinny_tma_kernel<4, 4, 1>; the products table's
    # first shape, q|k|v sliding, is the first to launch it)
    step ncu_products64 150 ncu --kernel-name-base demangled \
        --kernel-name "regex:gemm_skinny_tma_kernel<\\(int\\)4, \\(int\\)4, \\(int\\)1>" --launch-skip 10 \
        --launch-count 1 --kill yes --set full --import-source yes -f -o "$out/products64" "$b/bench/bench_cuda_products"
    ncu_pages "products64"
    note "$(grep -E '^ +(Duration|Grid Size|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Executed Ipc Active|L1/TEX Cache Throughput|L2 Cache Throughput) ' \
        "$out/products64-details.txt")"
    ;;
next)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step kernels 120 env G4_GPU_TESTS=kernels sh "$here/run.sh" "$out/kernels"
    step engine 150 env G4_GPU_TESTS="engine memcheck" sh "$here/run.sh" "$out/engine"
    step bench12b 200 sh "$here/bench.sh" 12b
    note "$(grep -E '^\| 1 row \||^\| 1 stream, context 1024 \| 16 |first token|^\| (512|2048|8192) \|' "$out/bench12b.log")"
    step products 60 "$b/bench/bench_cuda_products"
    note "$(grep -E '^\| [a-z|() ]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| (1|64) \|' "$out/products.log")"
    ;;
merge)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    PATH=$PATH:/usr/local/cuda/bin
    step kernels 120 env G4_GPU_TESTS=kernels sh "$here/run.sh" "$out/kernels"
    step engine 150 env G4_GPU_TESTS="engine memcheck" sh "$here/run.sh" "$out/engine"
    # G4_PENDING_MERGE: the merge widths to time (0 narrow, 1 wide, auto by rows, base: the build in
    # G4_PENDING_BASE, of the commit before, timed on the same machine; skipped where that is unset)
    for w in ${G4_PENDING_MERGE:-0 1 base}; do
        d=$b
        [ "$w" = base ] && { [ -n "${G4_PENDING_BASE:-}" ] || continue; d=$G4_PENDING_BASE; }
        step "attention_$w" 60 env G4_CUDA_MERGE_WIDE=$w "$d/bench/bench_cuda_attention"
        note "$(grep -E '^\| (sliding|full) \| (1|16|64) \| 1024 \| 1 \|' "$out/attention_$w.log")"
        step "decode_$w" 150 env G4_CUDA_MERGE_WIDE=$w "$d/g4" bench --model /dev/shm/g4-12b --shape 12b \
            --max-streams 64 --decode-only
        note "$(grep -E '^\| 1 row \|' "$out/decode_$w.log")"
    done
    kernels1
    ;;
tail)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step kernels 60 env G4_GPU_TESTS=kernels sh "$here/run.sh" "$out/kernels"
    # G4_PENDING_ENGINE: the setting the engine test and memcheck run with (commas join its variables)
    step engine_setting 120 env $(echo "${G4_PENDING_ENGINE:-G4_CUDA_TAIL_ROWS_RESIDUAL=4}" | tr , ' ') \
        G4_GPU_TESTS="engine memcheck" sh "$here/run.sh" "$out/engine"
    step products 100 "$b/bench/bench_cuda_products"
    note "$(grep -E '^\| [a-z|() ]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| (1|64) \|' "$out/products.log")"
    # G4_PENDING_DECODE: the decode runs of the 12B, each "STREAMS:SETTING" (--max-streams STREAMS; the setting's
    # variables joined by commas, "-" for the defaults)
    for r in ${G4_PENDING_DECODE:-4:- 4:G4_CUDA_TAIL_ROWS_RESIDUAL=1 4:G4_CUDA_TAIL_ROWS_RESIDUAL=4 4:- 64:-}; do
        streams=${r%%:*} s=${r#*:}
        n=decode${streams}_$(echo "$s" | tr -c 'A-Za-z0-9_\n' _)
        step "$n" 160 env $(echo "$s" | tr , ' ' | sed 's/^-$//') "$b/g4" bench --model /dev/shm/g4-12b --shape 12b \
            --max-streams "$streams" --decode-only
        note "$s: $(grep -E '^\| 1 row \|' "$out/$n.log")"
    done
    ;;
wg)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    step attention_test 120 env G4_REQUIRE_GPU=1 "$b/tests/test_cuda_attention"
    step engine 200 env G4_GPU_TESTS="engine memcheck" sh "$here/run.sh" "$out/engine"
    step attention 90 "$b/bench/bench_cuda_attention"
    note "$(grep -E '^\| (sliding|full) \| 1024 \|' "$out/attention.log")"
    for s in G4_CUDA_ATTN_WG=0 - G4_CUDA_ATTN_WG=0 -; do
        n=prefill_$(echo "$s" | tr -c 'A-Za-z0-9_\n' _)_$(date +%s)
        step "$n" 120 env $(echo "$s" | sed 's/^-$//') "$b/g4" bench --model /dev/shm/g4-12b-12 --shape 12b \
            --layers 12 --max-streams 1 --prefill-only --max-prefill 8192
        note "$s: $(grep -E '^\| (512|2048|8192) \||first token' "$out/$n.log" | tr '\n' ' ')"
    done
    ;;
kernels1)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
    kernels1
    ;;
*)
    echo "usage: sh tests/gpu/pending.sh check|time|quick|costs|rows|prompt|decode|next|merge|tail|wg|kernels1 [OUT_DIR]" >&2
    exit 2
    ;;
esac
echo "$summary" >"$out/summary.txt"
tar czf "$dest/pending-$what.tgz" -C "$out" .
echo
echo "== summary ($what; logs in $dest/pending-$what.tgz)$summary"
