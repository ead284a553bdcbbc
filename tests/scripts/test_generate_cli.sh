#!/bin/sh
# test_generate_cli — `g4 generate`'s prompt sources and sampling flags on the tiny demo model (which has a
# vision embedder):
#   --ids / --messages: the rendered ids of a conversation, or the conversation file, give exactly the tokens
#     of the equivalent --prompt (greedy and seeded); other ids give other tokens.
#   --image: adds the image's soft tokens (as `g4 patches` counts them, at --max-soft-tokens), works with
#     --prompt, --messages and --ids alike, and the reply depends on the pixels.
#   --top-k / --top-p / --min-p: every drawn token lies in the set the flag allows, checked against `g4 logits`
#     of the same sequence (generate_check.mjs); top-k 1 and a tiny top-p equal greedy; seeded runs repeat.
#   bad values exit 2 with a first line that names the flag; failing work exits 1 with one line.
. tests/scripts/lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
imgs=tests/fixtures/images/images

gen() { "$G4" generate --model "$m" --json "$@" 2>"$tmp/gen.err"; }
# field NAME: a field of the JSON object on stdin (arrays comma-joined)
field() {
    node -e "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'))[process.argv[1]];
             console.log(Array.isArray(v) ? v.join(',') : v)" "$1"
}
same() { [ -s "$1" ] && cmp -s "$1" "$2"; }
differ() { [ -s "$1" ] && [ -s "$2" ] && ! cmp -s "$1" "$2"; }

# ---- --ids and --messages against --prompt -------------------------------------------------------------
printf '[{"role":"user","content":"Hi"}]' >"$tmp/hi.json"
printf '{"messages":[{"role":"user","content":"Hi"}]}' >"$tmp/hi_obj.json"
"$G4" render --model "$m" --messages "$tmp/hi.json" >"$tmp/hi.render"
hi_ids=$(field ids <"$tmp/hi.render"); hi_n=$(field count <"$tmp/hi.render")
gen --prompt Hi --max-tokens 6 --temperature 0 >"$tmp/p.greedy"
gen --messages "$tmp/hi.json" --max-tokens 6 --temperature 0 >"$tmp/m.greedy"
gen --messages "$tmp/hi_obj.json" --max-tokens 6 --temperature 0 >"$tmp/mo.greedy"
gen --ids "$hi_ids" --max-tokens 6 --temperature 0 >"$tmp/i.greedy"
check "--prompt counts the rendered prompt" test "$(field prompt_tokens <"$tmp/p.greedy")" = "$hi_n"
check "--messages equals --prompt (greedy)" same "$tmp/m.greedy" "$tmp/p.greedy"
check "--messages as {\"messages\": [...]} too" same "$tmp/mo.greedy" "$tmp/p.greedy"
check "--ids of the rendering equals --prompt (greedy)" same "$tmp/i.greedy" "$tmp/p.greedy"
gen --prompt Hi --max-tokens 6 --temperature 1 --seed 3 >"$tmp/p.s3"
gen --ids "$hi_ids" --max-tokens 6 --temperature 1 --seed 3 >"$tmp/i.s3"
check "--ids equals --prompt (seeded)" same "$tmp/i.s3" "$tmp/p.s3"
gen --ids 2,105,2364,107,9259,106,107 --max-tokens 6 --temperature 0 >"$tmp/i2.greedy"
check "other --ids, other tokens" differ "$tmp/i2.greedy" "$tmp/i.greedy"
check "--ids counts its ids" test "$(field prompt_tokens <"$tmp/i2.greedy")" = 7

# ---- --image -------------------------------------------------------------------------------------------
a="$imgs/exif_o2_160x96.jpg"; b="$imgs/exif_o3_160x96.jpg"; big="$imgs/gray8_300x300.png"
na=$("$G4" patches --image "$a" --out "$tmp/a.u8" | field n)
nb=$("$G4" patches --image "$b" --out "$tmp/b.u8" | field n)
check "the two test images have the same patch count and other pixels" sh -c \
    "[ '$na' -gt 0 ] && [ '$na' = '$nb' ] && ! cmp -s '$tmp/a.u8' '$tmp/b.u8'"
printf '[{"role":"user","content":[{"type":"image","tokens":%s},{"type":"text","text":"What is this?"}]}]' "$na" \
    >"$tmp/img.json"
printf '[{"role":"user","content":[{"type":"image"},{"type":"text","text":"What is this?"}]}]' >"$tmp/img_part.json"
"$G4" render --model "$m" --messages "$tmp/img.json" >"$tmp/img.render"
img_ids=$(field ids <"$tmp/img.render"); img_n=$(field count <"$tmp/img.render")
gen --prompt "What is this?" --image "$a" --max-tokens 6 --temperature 0 >"$tmp/pa"
gen --messages "$tmp/img_part.json" --image "$a" --max-tokens 6 --temperature 0 >"$tmp/ma"
gen --ids "$img_ids" --image "$a" --max-tokens 6 --temperature 0 >"$tmp/ia"
gen --prompt "What is this?" --image "$b" --max-tokens 6 --temperature 0 >"$tmp/pb"
gen --prompt "What is this?" --max-tokens 6 --temperature 0 >"$tmp/p0"
check "--image adds the image's soft tokens to the prompt" sh -c \
    "[ '$(field prompt_tokens <"$tmp/pa")' = '$img_n' ] && [ '$img_n' -gt '$na' ]"
check "--messages with an image part equals --prompt with --image" same "$tmp/ma" "$tmp/pa"
check "--ids with the placeholder run and --image equals --prompt with --image" same "$tmp/ia" "$tmp/pa"
check "other pixels, other reply" differ "$tmp/pb" "$tmp/pa"
check "no image, other reply" differ "$tmp/p0" "$tmp/pa"
gen --prompt "What is this?" --image "$a" --max-tokens 6 --temperature 1 --seed 4 >"$tmp/pa.s4"
gen --prompt "What is this?" --image "$a" --max-tokens 6 --temperature 1 --seed 4 >"$tmp/pa.s4b"
check "a seeded image run repeats" same "$tmp/pa.s4" "$tmp/pa.s4b"
n280=$("$G4" patches --image "$big" --out "$tmp/big.u8" | field n)
n70=$("$G4" patches --image "$big" --out "$tmp/big.u8" --max-soft-tokens 70 | field n)
t280=$(gen --prompt x --image "$big" --max-tokens 1 | field prompt_tokens)
t70=$(gen --prompt x --image "$big" --max-tokens 1 --max-soft-tokens 70 | field prompt_tokens)
check "--max-soft-tokens sets the image's token count" sh -c \
    "[ '$n70' -lt '$n280' ] && [ \$(($t280 - $t70)) -eq \$(($n280 - $n70)) ]"

# ---- sampling flags against the logits of the same sequence ---------------------------------------------
V=$("$G4" info --model "$m" | node -e "console.log(JSON.parse(require('fs').readFileSync(0, 'utf8')).tokenizer.vocab)")
# drawn MODE VALUE SEED FLAGS...: generates 8 tokens after the "Hi" prompt and checks them with generate_check
drawn() {
    mode=$1; value=$2; seed=$3; shift 3
    gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed "$seed" "$@" >"$tmp/d.json" || return 1
    out=$(field ids <"$tmp/d.json")
    ctx="$hi_ids"
    [ "${out%,*}" != "$out" ] && ctx="$hi_ids,${out%,*}" # the sequence up to the last drawn token
    "$G4" logits --model "$m" --ids "$ctx" --out "$tmp/d.f32" >/dev/null || return 1
    node tests/scripts/generate_check.mjs "$tmp/d.f32" "$V" "$hi_n" "$out" "$m/generation_config.json" "$mode" \
        "$value" >>"$tmp/checks.log"
}
# ranked: some drawn token of the last MODE checks was not the top one (so the draws really sampled)
ranked() { grep "\"mode\":\"$1\"" "$tmp/checks.log" | grep -q '"ranks":\[[0-9,]*[1-9]'; }
: >"$tmp/checks.log"
check "--top-k 3: every token among the 3 best" drawn top-k 3 1 --top-k 3 --top-p 1 --min-p 0
check "--top-k 3 (another seed)" drawn top-k 3 2 --top-k 3 --top-p 1 --min-p 0
check "--top-k 3 draws below the top" ranked top-k
check "--top-p 0.0005: every token in the nucleus" drawn top-p 0.0005 1 --top-k 0 --top-p 0.0005 --min-p 0
check "--top-p 0.0005 (another seed)" drawn top-p 0.0005 2 --top-k 0 --top-p 0.0005 --min-p 0
check "--top-p draws below the top" ranked top-p
check "--min-p 0.995: every token within the ratio" drawn min-p 0.995 1 --top-k 0 --top-p 1 --min-p 0.995
check "--min-p 0.995 (another seed)" drawn min-p 0.995 2 --top-k 0 --top-p 1 --min-p 0.995
check "--min-p draws below the top" ranked min-p
check "the allowed sets are small (the flags bind)" sh -c \
    "! grep -q '\"allowed\":\[[0-9,]*[0-9]\{4,\}' '$tmp/checks.log'"
sed 's/^/    /' "$tmp/checks.log"
gen --ids "$hi_ids" --max-tokens 8 --temperature 0 >"$tmp/greedy"
for s in 1 2; do
    gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed $s --top-k 1 >"$tmp/k1.$s"
    gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed $s --top-k 0 --top-p 1e-9 >"$tmp/p0.$s"
done
check "--top-k 1 equals greedy" sh -c "cmp -s '$tmp/k1.1' '$tmp/greedy' && cmp -s '$tmp/k1.2' '$tmp/greedy'"
check "--top-p 1e-9 equals greedy" sh -c "cmp -s '$tmp/p0.1' '$tmp/greedy' && cmp -s '$tmp/p0.2' '$tmp/greedy'"
mix="--top-k 40 --top-p 0.5 --min-p 0.5"
# shellcheck disable=SC2086
gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed 9 $mix >"$tmp/mix.a"
# shellcheck disable=SC2086
gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed 9 $mix >"$tmp/mix.b"
# shellcheck disable=SC2086
gen --ids "$hi_ids" --max-tokens 8 --temperature 1 --seed 10 $mix >"$tmp/mix.c"
check "a seeded run with all three flags repeats" same "$tmp/mix.a" "$tmp/mix.b"
check "another seed, other tokens" differ "$tmp/mix.c" "$tmp/mix.a"

# ---- bad values and failing work ------------------------------------------------------------------------
# bad FLAG [VALUE]: exit 2, the first stderr line is "g4 generate: FLAG ...", then the usage line
bad() {
    "$G4" generate --model "$m" --prompt Hi "$@" >/dev/null 2>"$tmp/err"
    [ $? -eq 2 ] && head -n 1 "$tmp/err" | grep -qF -- "g4 generate: $1" && sed -n 2p "$tmp/err" | grep -q '^usage: g4 generate ' ||
        { sed 's/^/    stderr: /' "$tmp/err"; false; }
}
fails() {
    w=$1; shift
    "$G4" generate --model "$m" "$@" >/dev/null 2>"$tmp/err"
    [ $? -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q '^g4 generate: ' "$tmp/err" && grep -qF -- "$w" "$tmp/err" ||
        { sed 's/^/    stderr: /' "$tmp/err"; false; }
}
check "--top-k -1" bad --top-k -1
check "--top-k 1.5" bad --top-k 1.5
check "--top-k without a value" bad --top-k
check "--top-p 1.5" bad --top-p 1.5
check "--top-p -0.1" bad --top-p -0.1
check "--top-p nan" bad --top-p nan
check "--top-p 0 (the sampler's range is (0, 1])" bad --top-p 0
check "--min-p 1 (the sampler's range is [0, 1))" bad --min-p 1
check "--top-k past the vocabulary" bad --top-k 300000
check "--min-p 2" bad --min-p 2
check "--min-p x" bad --min-p x
check "--seed -1" bad --seed -1
check "--max-tokens 0" bad --max-tokens 0
check "--ids not numbers" bad --ids 2,x
check "--ids empty" bad --ids ""
check "no prompt source" sh -c "'$G4' generate --model '$m' 2>&1 >/dev/null | grep -q 'one of --prompt, --ids or --messages'"
check "--ids past the vocabulary fails" fails "token id 999999 at position 1 is outside the vocabulary" --ids 2,999999
check "--messages missing fails" fails "/nonexistent/m.json: cannot open" --messages /nonexistent/m.json
printf '[{"role":"user"' >"$tmp/trunc.json"
check "--messages truncated fails" fails "trunc.json: not valid JSON" --messages "$tmp/trunc.json"
check "--messages image part without --image fails" fails "more image parts than the 0 --image file(s)" --messages "$tmp/img_part.json"
check "--ids placeholders without --image fails" fails "image" --ids "$img_ids"
check "--image missing fails" fails "/nonexistent.png: cannot open" --prompt Hi --image /nonexistent.png
check "--image not an image fails" fails "hi.json: not a PNG, JPEG or WebP file" --prompt Hi --image "$tmp/hi.json"
rm -rf "$tmp"
finish
