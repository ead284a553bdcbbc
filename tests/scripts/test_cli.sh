#!/bin/sh
# CLI behaviour of build/g4 on the tiny demo model: usage errors, JSON outputs, determinism of
# make-tiny-model, tokenize/detokenize round trips, render, generate (lengths, seeds, stop strings, --json).
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
