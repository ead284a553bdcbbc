#!/bin/sh
# `g4 bench` on the CPU engine with the tiny model: every table it promises is printed (decode at stream counts
# with the floor, decode windows, prefill including a prompt longer than the main engine's context in an engine
# of its own, time to first token with and without an image), and the shape writer's --layers limits.
. tests/scripts/lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)

"$G4" bench --device cpu --model "$m" --max-prefill 8192 >"$tmp/b.txt" 2>"$tmp/b.err"
check "bench exits 0" [ $? -eq 0 ]
check "bench names the model and device" grep -q "gemma4_unified, hidden 64, 4 layers), device cpu" "$tmp/b.txt"
check "decode rows: 1 and 4 streams with % of floor" sh -c "grep -Eq '^\| 1 row \| 1 \| 1024 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$' '$tmp/b.txt' &&
    grep -Eq '^\| 1 row \| 4 \| 1024 \|' '$tmp/b.txt'"
check "decode windows up to 16 rows" grep -Eq '^\| 1 stream, context 1024 \| 16 \| [0-9.]+ \| [0-9.]+ \|$' "$tmp/b.txt"
check "prefill 512 and 2048 in the main engine" sh -c "grep -Eq '^\| 512 \| [0-9.]+ \| [0-9]+ \|$' '$tmp/b.txt' &&
    grep -Eq '^\| 2048 \| [0-9.]+ \| [0-9]+ \|$' '$tmp/b.txt'"
check "prefill 8192 in an engine of its own" grep -Eq '^\| 8192 \(own engine: 1 stream, context 8208\) \| [0-9.]+ \| [0-9]+ \|$' "$tmp/b.txt"
check "no 32768 prefill past --max-prefill" sh -c "! grep -q '^| 32768' '$tmp/b.txt'"
check "time to first token" grep -Eq '^time to first token, 1000-token prompt: [0-9.]+ ms$' "$tmp/b.txt"
check "time to first token with an image" grep -Eq '^time to first token, 1000-token prompt holding one 280-patch image: [0-9.]+ ms \(-?[0-9.]+ ms more\)$' "$tmp/b.txt"

# --prefill-only: the prefill table and the first token, no decode steps (ncu's launch counts in pending.sh)
"$G4" bench --device cpu --model "$m" --max-prefill 2048 --prefill-only >"$tmp/p.txt" 2>"$tmp/p.err"
check "bench --prefill-only exits 0" [ $? -eq 0 ]
check "--prefill-only: prefill 512 and first token" sh -c "grep -Eq '^\| 512 \| [0-9.]+ \| [0-9]+ \|$' '$tmp/p.txt' &&
    grep -Eq '^time to first token, 1000-token prompt: [0-9.]+ ms$' '$tmp/p.txt'"
check "--prefill-only: no decode rows or windows" sh -c "! grep -Eq '^\| (1 row|1 stream, context)' '$tmp/p.txt'"
"$G4" bench --device cpu --model "$m" --decode-only --prefill-only >/dev/null 2>"$tmp/e4"
check "--decode-only with --prefill-only is a usage error" sh -c "[ $? -eq 2 ] && grep -q 'exclude each other' '$tmp/e4'"

# --layers: only with --shape, at most the shape's depth (checked before anything is written)
"$G4" make-tiny-model "$tmp/x" --layers 2 >/dev/null 2>"$tmp/e1"
check "--layers without --shape is a usage error" sh -c "[ $? -eq 2 ] && grep -q 'layers goes with --shape' '$tmp/e1'"
"$G4" make-tiny-model "$tmp/y" --shape 31b --layers 61 >/dev/null 2>"$tmp/e2"
check "--layers over the 31b's 60 fails naming the depth" grep -q "the 31b shape has 60 layers" "$tmp/e2"
check "nothing written for a refused --layers" sh -c "[ ! -f '$tmp/y/model.safetensors' ]"
"$G4" bench --model "$tmp/z" --shape 12b --layers 0 >/dev/null 2>"$tmp/e3"
check "bench --layers 0 is a usage error" sh -c "[ $? -eq 2 ] && grep -q 'layers' '$tmp/e3'"
rm -rf "$tmp"
finish
