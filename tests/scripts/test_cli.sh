#!/bin/sh
# CLI behaviour of build/g4 on the tiny demo model: usage errors (exit 2: the reason, then the usage line) and
# work failures (exit 1: one line) of every command, JSON outputs, determinism of make-tiny-model,
# tokenize/detokenize round trips, render, generate (lengths, seeds, stop strings, --json).
. tests/scripts/lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)

# usage: exit 2 and a one-line reason for bad arguments; exit 1 when the work fails
usage_fails() { "$G4" "$@" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q "usage: g4" "$tmp/err"; }
check "no command is a usage error" sh -c "'$G4' >/dev/null 2>&1; [ \$? -eq 2 ]"
check "unknown command" usage_fails frobnicate
check "info without --model" usage_fails info
check "tokenize unknown option" usage_fails tokenize --model "$m" --frob
check "generate bad temperature" usage_fails generate --model "$m" --prompt hi --temperature -1
check "generate bad max-soft-tokens" usage_fails generate --model "$m" --prompt hi --max-soft-tokens 100
check "logits needs --out" usage_fails logits --model "$m" --ids 2,3
work_fails() { "$G4" "$@" >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] && [ "$(wc -l <"$tmp/err")" -ge 1 ]; }
check "info on a missing dir fails with a reason" work_fails info --model /nonexistent/model
check "logits rejects an out-of-vocabulary id" sh -c "'$G4' logits --model '$m' --ids 2,999999 --out $tmp/l 2>&1 | grep -q 'outside the vocabulary'"

# says_usage CMD TEXT ARGS...: exit 2; stderr is the reason "g4 CMD: ..." containing TEXT, then the usage line
says_usage() {
    c=$1; w=$2; shift 2
    "$G4" "$c" "$@" >/dev/null 2>"$tmp/err"
    [ $? -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 2 ] && head -n 1 "$tmp/err" | grep -q "^g4 $c: " &&
        head -n 1 "$tmp/err" | grep -qF -- "$w" && sed -n 2p "$tmp/err" | grep -q "^usage: g4 $c " ||
        { sed 's/^/    stderr: /' "$tmp/err"; false; }
}
# fails_with CMD TEXT ARGS...: exit 1 and one line "g4 CMD: ..." containing TEXT
fails_with() {
    c=$1; w=$2; shift 2
    "$G4" "$c" "$@" >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^g4 $c: " "$tmp/err" && grep -qF -- "$w" "$tmp/err" ||
        { sed 's/^/    stderr: /' "$tmp/err"; false; }
}
printf '[{"role":"user","content":"Hi"}]' >"$tmp/hi.json"
printf '[{"role":"user",' >"$tmp/trunc.json"
printf '[{"role":"user","content":[{"type":"image"}]}]' >"$tmp/img.json"
png=tests/fixtures/images/images/gray8_300x300.png
head -c 200 "$png" >"$tmp/cut.png"
check "detokenize without --model" says_usage detokenize "--model DIR is required" 9259
check "detokenize --model without a value" says_usage detokenize "--model needs a value" 9259 --model
check "detokenize without ids" says_usage detokenize "at least one token ID is required" --model "$m"
check "detokenize a non-number id" says_usage detokenize "ID must be an integer in [0, 16777215], got 'abc'" --model "$m" abc
check "detokenize a negative id" says_usage detokenize "got '-5'" --model "$m" -5
check "detokenize an unknown option" says_usage detokenize "unknown option --frob" --model "$m" --frob 9259
check "detokenize an id past the vocabulary fails" fails_with detokenize "token id 300000 at position 0 is not in the vocabulary" --model "$m" 300000
check "detokenize with a missing model fails" fails_with detokenize "/nonexistent/model/tokenizer.json" --model /nonexistent/model 9259
check "render without --messages" says_usage render "--messages FILE.json are required" --model "$m"
check "render an unknown argument" says_usage render "unknown argument --frob" --model "$m" --messages "$tmp/hi.json" --frob
check "render --image-tokens 0" says_usage render "--image-tokens must be an integer in [1, 4096], got '0'" --model "$m" --messages "$tmp/hi.json" --image-tokens 0
check "render a missing messages file fails" fails_with render "/nonexistent/m.json: cannot open" --model "$m" --messages /nonexistent/m.json
check "render truncated JSON fails" fails_with render "trunc.json: not valid JSON" --model "$m" --messages "$tmp/trunc.json"
check "render an image without a token count fails" fails_with render "image part 0 has no soft-token count" --model "$m" --messages "$tmp/img.json"
check "render with a missing model fails" fails_with render "/nonexistent/model/tokenizer.json" --model /nonexistent/model --messages "$tmp/hi.json"
check "patches without --out" says_usage patches "--image and --out are required" --image "$png"
check "patches --out without a value" says_usage patches "--out needs a file" --image "$png" --out
check "patches an unknown argument" says_usage patches "unknown argument '--frob'" --image "$png" --out "$tmp/p.u8" --frob
check "patches a bad budget" says_usage patches "--max-soft-tokens must be one of 70, 140, 280, 560, 1120" --image "$png" --out "$tmp/p.u8" --max-soft-tokens 100
check "patches a missing image fails" fails_with patches "/nonexistent.png: cannot open" --image /nonexistent.png --out "$tmp/p.u8"
check "patches a non-image fails" fails_with patches "not a PNG, JPEG or WebP file" --image "$tmp/hi.json" --out "$tmp/p.u8"
check "patches a truncated PNG fails" fails_with patches "cut.png: " --image "$tmp/cut.png" --out "$tmp/p.u8"
check "patches an unwritable --out fails" fails_with patches "/nonexistent/dir/p.u8" --image "$png" --out /nonexistent/dir/p.u8
check "no patch file after failures" test ! -e "$tmp/p.u8"
check "make-tiny-model without a directory" says_usage make-tiny-model "the output directory is required"
check "make-tiny-model two directories" says_usage make-tiny-model "unknown argument $tmp/t2" "$tmp/t1" "$tmp/t2"
check "make-tiny-model a negative seed" says_usage make-tiny-model "--seed must be an integer in [0, 2147483647], got '-1'" "$tmp/t1" --seed -1
check "make-tiny-model an unknown shape" says_usage make-tiny-model "--shape must be 12b, 31b or wide, got '99b'" "$tmp/t1" --shape 99b
check "make-tiny-model an unknown argument" says_usage make-tiny-model "unknown argument --frob" "$tmp/t1" --frob
check "make-tiny-model under a file fails" fails_with make-tiny-model "hi.json/sub: cannot create" "$tmp/hi.json/sub"
check "make-tiny-model a missing tokenizer fails" fails_with make-tiny-model "/nonexistent/tokenizer.json: cannot open" "$tmp/t3" --tokenizer-from /nonexistent/tokenizer.json
check "nothing written by refused make-tiny-model runs" sh -c "[ ! -e '$tmp/t1' ] && [ ! -e '$tmp/t2' ] && [ ! -f '$tmp/t3/config.json' ] && [ ! -f '$tmp/t3/model.safetensors' ]"

# make-tiny-model is deterministic for a seed and differs across seeds
"$G4" make-tiny-model "$tmp/a" --seed 7 >/dev/null && "$G4" make-tiny-model "$tmp/b" --seed 7 >/dev/null &&
    "$G4" make-tiny-model "$tmp/c" --seed 8 >/dev/null
check "same seed, same weights" cmp -s "$tmp/a/model.safetensors" "$tmp/b/model.safetensors"
check "other seed, other weights" sh -c "! cmp -s '$tmp/a/model.safetensors' '$tmp/c/model.safetensors'"
check "same seed, same tokenizer" cmp -s "$tmp/a/tokenizer.json" "$tmp/b/tokenizer.json"
rm -rf "$tmp/b" "$tmp/c"

# info is one JSON object naming the model type and a complete checkpoint
"$G4" info --model "$m" >"$tmp/info.json"
check "info is JSON" node -e "JSON.parse(require('fs').readFileSync('$tmp/info.json','utf8'))"
check "info says gemma4_unified, complete" node -e "
  const j = JSON.parse(require('fs').readFileSync('$tmp/info.json','utf8'));
  if (j.config.model_type !== 'gemma4_unified' || !j.weights.complete || j.tokenizer.vocab !== 262144) process.exit(1)"

# tokenize / detokenize
"$G4" tokenize --model "$m" "Hello world" >"$tmp/t.json"
check "tokenize Hello world" grep -q '"ids":\[9259,1902\]' "$tmp/t.json"
check "tokenize reads stdin" sh -c "printf 'Hello world' | '$G4' tokenize --model '$m' | grep -q '\[9259,1902\]'"
check "tokenize --bos prepends 2" sh -c "'$G4' tokenize --model '$m' --bos hi | grep -q '\"ids\":\[2,'"
check "special token text is one id" sh -c "'$G4' tokenize --model '$m' '<|turn>' | grep -q '\"ids\":\[105\]'"
check "detokenize" sh -c "[ \"\$('$G4' detokenize --model '$m' 9259 1902)\" = 'Hello world' ]"
check "tokenize rejects invalid UTF-8" sh -c "printf 'a\377b' | '$G4' tokenize --model '$m' 2>&1 | grep -q 'not valid UTF-8'"

# render
printf '[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]' >"$tmp/msgs.json"
"$G4" render --model "$m" --messages "$tmp/msgs.json" >"$tmp/r.json"
check "render text" node -e "
  const j = JSON.parse(require('fs').readFileSync('$tmp/r.json','utf8'));
  const want = '<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>';
  if (j.text !== want || j.ids[0] !== 2 || j.ids[1] !== 105 || j.ids.length !== j.count) process.exit(1)"
printf '[{"role":"wizard","content":"x"}]' >"$tmp/bad.json"
check "render names a bad role" sh -c "'$G4' render --model '$m' --messages '$tmp/bad.json' 2>&1 | grep -q \"unknown role 'wizard'\""

# generate
gen() { "$G4" generate --model "$m" --json "$@" 2>/dev/null; }
gen --prompt "Hello" --max-tokens 12 --seed 5 --temperature 1 >"$tmp/g1"
gen --prompt "Hello" --max-tokens 12 --seed 5 --temperature 1 >"$tmp/g2"
gen --prompt "Hello" --max-tokens 12 --seed 6 --temperature 1 >"$tmp/g3"
check "generate --json gives 12 tokens" grep -q '"completion_tokens":12' "$tmp/g1"
check "same seed, same tokens" cmp -s "$tmp/g1" "$tmp/g2"
check "other seed, other tokens" sh -c "! cmp -s '$tmp/g1' '$tmp/g3'"
check "greedy is deterministic without a seed" sh -c "
  a=\$('$G4' generate --model '$m' --prompt Hi --max-tokens 8 --temperature 0 --json 2>/dev/null)
  b=\$('$G4' generate --model '$m' --prompt Hi --max-tokens 8 --temperature 0 --seed 99 --json 2>/dev/null)
  [ \"\$a\" = \"\$b\" ]"
"$G4" generate --model "$m" --prompt "Hello" --max-tokens 12 --seed 5 --temperature 1 >"$tmp/text" 2>/dev/null
ids=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$tmp/g1','utf8')).ids.join(' '))")
"$G4" detokenize --model "$m" --skip-special $ids >"$tmp/text2"
check "streamed text equals the decode of its ids" cmp -s "$tmp/text" "$tmp/text2"
# a stop string taken from the middle of that reply ends it just before the string
stop=$(node -e "const t=require('fs').readFileSync('$tmp/text','utf8'); const c=[...t]; console.log(c.slice(4,6).join(''))")
"$G4" generate --model "$m" --prompt "Hello" --max-tokens 12 --seed 5 --temperature 1 --stop "$stop" >"$tmp/stopped" 2>/dev/null
check "stop string cuts the reply" node -e "
  const fs=require('fs'); const full=fs.readFileSync('$tmp/text','utf8'), cut=fs.readFileSync('$tmp/stopped','utf8');
  const want = full.slice(0, full.indexOf(process.argv[1])) + '\n';
  if (cut !== want) { console.error(JSON.stringify({cut, want})); process.exit(1) }" "$stop"
rm -rf "$tmp"
finish
