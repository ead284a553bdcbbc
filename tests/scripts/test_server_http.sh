#!/bin/sh
# The HTTP side of `g4 serve` with curl: /health, /v1/models, /metrics (every documented name), chat
# completions whole and streamed (equal to `g4 generate` for the same request), OpenAI-shaped errors with
# their status codes for every kind of bad input, body and prompt limits; then, on a second server, static
# files (MIME types, CSP, kiosk page, path traversal), the API key, Origin checks and CORS.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)

# jcheck FILE EXPR: EXPR (JavaScript, the parsed file in j) must hold
jcheck() {
    node -e "const j = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
             if (!($2)) { console.error('  got: ' + JSON.stringify(j).slice(0, 400)); process.exit(1); }" "$1"
}
# post BODY [CURL ARGS...]: POST to /v1/chat/completions; body in $tmp/r.json, status printed
post() {
    body=$1; shift
    curl -s -o "$tmp/r.json" -w '%{http_code}' -H 'content-type: application/json' --data-binary "$body" "$@" \
        "$BASE/v1/chat/completions"
}
# expect_error STATUS CODE BODY [NEEDLE]: the request fails with STATUS and OpenAI's error shape
expect_error() {
    st=$(post "$3")
    [ "$st" = "$1" ] || { echo "  status $st, want $1: $(head -c 300 "$tmp/r.json")"; return 1; }
    jcheck "$tmp/r.json" "j.error && j.error.code === '$2' && typeof j.error.message === 'string' &&
        typeof j.error.type === 'string' && ('param' in j.error) && j.error.message.includes('${4:-}')"
}
hello='"messages":[{"role":"user","content":"Hello"}]'

start_server main || exit 1

# ---- health, models, metrics ------------------------------------------------------------------------------
check "/health" eval "[ \"\$(curl -s $BASE/health)\" = '{\"status\":\"ok\"}' ]"
curl -s "$BASE/v1/models" >"$tmp/models.json"
check "/v1/models lists the model" jcheck "$tmp/models.json" \
    "j.object === 'list' && j.data.length === 1 && j.data[0].id === 'test-model' && j.data[0].object === 'model'"

# ---- completions ------------------------------------------------------------------------------------------
"$G4" generate --model "$m" --prompt Hello --max-tokens 10 --seed 5 --temperature 1 >"$tmp/cli.txt" 2>/dev/null
st=$(post "{$hello,\"max_tokens\":10,\"seed\":5,\"temperature\":1}")
cp "$tmp/r.json" "$tmp/whole.json"
check "whole reply: 200 and OpenAI's shape" eval "[ $st = 200 ] && jcheck '$tmp/whole.json' \"j.object === 'chat.completion' &&
    j.id.startsWith('chatcmpl-') && j.model === 'test-model' && j.choices[0].message.role === 'assistant' &&
    j.choices[0].finish_reason === 'length' && j.usage.completion_tokens === 10 &&
    j.usage.total_tokens === j.usage.prompt_tokens + 10\""
check "whole reply equals g4 generate for the same request" node -e "
    const fs = require('fs');
    const j = JSON.parse(fs.readFileSync('$tmp/whole.json', 'utf8'));
    const cli = fs.readFileSync('$tmp/cli.txt', 'utf8').replace(/\n\$/, '');
    if (j.choices[0].message.content !== cli) { console.error(JSON.stringify([j.choices[0].message.content, cli])); process.exit(1); }"
curl -s -N -H 'content-type: application/json' "$BASE/v1/chat/completions" \
    -d "{$hello,\"max_tokens\":10,\"seed\":5,\"temperature\":1,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$tmp/sse.txt"
check "SSE: data events ending in [DONE]" eval "tail -n 2 '$tmp/sse.txt' | head -n 1 | grep -qx 'data: \[DONE\]'"
check "SSE: role, deltas equal to the whole reply, finish, usage" node -e "
    const fs = require('fs');
    const ev = fs.readFileSync('$tmp/sse.txt', 'utf8').split('\n\n').filter(x => x).map(x => x.replace(/^data: /, ''));
    const whole = JSON.parse(fs.readFileSync('$tmp/whole.json', 'utf8'));
    const chunks = ev.slice(0, -1).map(x => JSON.parse(x));
    const text = chunks.map(c => (c.choices[0] && c.choices[0].delta.content) || '').join('');
    const fin = chunks.filter(c => c.choices[0] && c.choices[0].finish_reason);
    const usage = chunks[chunks.length - 1];
    const ok = chunks.every(c => c.object === 'chat.completion.chunk' && c.id === chunks[0].id) &&
        chunks[0].choices[0].delta.role === 'assistant' && text === whole.choices[0].message.content &&
        fin.length === 1 && fin[0].choices[0].finish_reason === 'length' &&
        usage.choices.length === 0 && usage.usage.completion_tokens === 10 && ev[ev.length - 1] === '[DONE]';
    if (!ok) { console.error(ev.join('\n')); process.exit(1); }"
# a reply that ends in its first step (max_tokens 1) ends before the SSE headers go out: its ending, once
curl -s -N -H 'content-type: application/json' "$BASE/v1/chat/completions" \
    -d "{$hello,\"max_tokens\":1,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$tmp/sse1.txt"
check "SSE ended in its first step: one finish chunk, one usage chunk, one [DONE] at the end" node -e "
    const ev = require('fs').readFileSync('$tmp/sse1.txt', 'utf8').split('\n\n').filter(x => x).map(x => x.replace(/^data: /, ''));
    const n = (f) => ev.filter(f).length;
    const ok = n(e => e === '[DONE]') === 1 && ev[ev.length - 1] === '[DONE]' && n(e => e.includes('\"finish_reason\":\"length\"')) === 1 &&
        n(e => e.includes('\"usage\"')) === 1;
    if (!ok) { console.error(ev.join('\n')); process.exit(1); }"
st=$(post "{$hello,\"max_completion_tokens\":3,\"temperature\":0,\"stop\":null,\"seed\":null,\"n\":1,\"presence_penalty\":0}")
check "max_completion_tokens, nulls, n=1, zero penalties" eval "[ $st = 200 ] && jcheck '$tmp/r.json' 'j.usage.completion_tokens === 3'"
st=$(post '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]},{"role":"assistant","content":"Hello!"},{"role":"user","content":"More"}],"max_tokens":2}')
check "parts content and a multi-turn conversation" eval "[ $st = 200 ]"

# ---- bad input ----------------------------------------------------------------------------------------------
check "malformed JSON: 400 bad_json" expect_error 400 bad_json '{"messages": [' 'malformed JSON'
check "not an object: 400 bad_json" expect_error 400 bad_json '"hello"'
check "missing messages: 400 missing_field" expect_error 400 missing_field '{"max_tokens": 3}' 'messages'
check "messages not an array: 400" expect_error 400 invalid_type '{"messages": "hi"}' 'messages'
check "temperature a string: 400 invalid_type" expect_error 400 invalid_type "{$hello,\"temperature\":\"hot\"}" temperature
check "temperature 3: 400 invalid_value" expect_error 400 invalid_value "{$hello,\"temperature\":3}" 'in [0, 2]'
check "top_p 0: 400 invalid_value" expect_error 400 invalid_value "{$hello,\"top_p\":0}" top_p
check "top_k -1: 400 invalid_value" expect_error 400 invalid_value "{$hello,\"top_k\":-1}" top_k
check "seed 1.5: 400 invalid_type" expect_error 400 invalid_type "{$hello,\"seed\":1.5}" seed
check "stream a string: 400 invalid_type" expect_error 400 invalid_type "{$hello,\"stream\":\"yes\"}" stream
check "n=2: 400" expect_error 400 invalid_value "{$hello,\"n\":2}" '[1, 1]'
check "tools: 400" expect_error 400 invalid_value "{$hello,\"tools\":[{\"type\":\"function\"}]}" tools
check "an empty stop string: 400" expect_error 400 invalid_value "{$hello,\"stop\":[\"\"]}" stop
x257=$(head -c 257 /dev/zero | tr '\0' x)
check "a stop string of 257 bytes: 400 naming the limit" expect_error 400 invalid_value "{$hello,\"stop\":\"$x257\"}" '1 to 256 bytes'
check "unknown role: 400" expect_error 400 invalid_type '{"messages":[{"role":"wizard","content":"x"}]}' wizard
check "an unknown part type: 400" expect_error 400 invalid_type '{"messages":[{"role":"user","content":[{"type":"audio"}]}]}' audio
check "max_tokens past the context: 400 context_length_exceeded" expect_error 400 context_length_exceeded \
    "{$hello,\"max_tokens\":9000}" 'context of 8192'
check "max_tokens past its limit: 400" expect_error 400 invalid_value "{$hello,\"max_tokens\":300000}" max_tokens
check "a remote image URL: 400 image_error" expect_error 400 image_error \
    '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}' 'data: URIs'
check "bad base64: 400 image_error" expect_error 400 image_error \
    '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K*GgoAAA"}}]}]}' 'invalid base64'
check "a data URI that is no image: 400" expect_error 400 image_error \
    '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8gd29ybGQ="}}]}]}' 'image 0'
# a PNG whose header claims 10000 x 6000 pixels: refused by its size before anything is decoded
node -e "
    const zlib = require('zlib');
    const crcTable = Array.from({length: 256}, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
    const crc = b => { let c = 0xffffffff; for (const x of b) c = crcTable[(c ^ x) & 255] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
    const chunk = (t, d) => { const len = Buffer.alloc(4); len.writeUInt32BE(d.length); const td = Buffer.concat([Buffer.from(t), d]); const c = Buffer.alloc(4); c.writeUInt32BE(crc(td)); return Buffer.concat([len, td, c]); };
    const ihdr = Buffer.alloc(13); ihdr.writeUInt32BE(10000, 0); ihdr.writeUInt32BE(6000, 4); ihdr[8] = 8; ihdr[9] = 2;
    const png = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(Buffer.alloc(100))), chunk('IEND', Buffer.alloc(0))]);
    const body = {messages: [{role: 'user', content: [{type: 'image_url', image_url: {url: 'data:image/png;base64,' + png.toString('base64')}}]}]};
    require('fs').writeFileSync('$tmp/bigpng.json', JSON.stringify(body));"
check "a 60-megapixel PNG: 400 image_error naming the limit" expect_error 400 image_error "$(cat "$tmp/bigpng.json")" '50000000'
printf '{"messages":[{"role":"user","content":"caf\351"}]}' >"$tmp/latin1.json"
check "invalid UTF-8: 400 invalid_utf8" eval "[ \$(curl -s -o '$tmp/u.json' -w '%{http_code}' --data-binary @'$tmp/latin1.json' $BASE/v1/chat/completions) = 400 ] &&
    jcheck '$tmp/u.json' \"j.error.code === 'invalid_utf8'\""
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' "$BASE/v1/chat/completions")
check "GET on completions: 405" eval "[ $st = 405 ] && jcheck '$tmp/r.json' \"j.error.code === 'method_not_allowed'\""
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -X PUT -d x "$BASE/v1/models")
check "PUT: 405" eval "[ $st = 405 ]"
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -d '{}' "$BASE/v1/embeddings")
check "unknown URL: 404 unknown_url" eval "[ $st = 404 ] && jcheck '$tmp/r.json' \"j.error.code === 'unknown_url'\""
head -c 34000000 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' --data-binary @"$tmp/big.json" "$BASE/v1/chat/completions")
check "a 34 MB body: 413 body_too_large" eval "[ $st = 413 ] && jcheck '$tmp/r.json' \"j.error.code === 'body_too_large'\""
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/big.json" \
    "$BASE/v1/chat/completions")
check "a 34 MB chunked body: 413" eval "[ $st = 413 ]"
rm -f "$tmp/big.json"
check "the server still serves after all that" eval "[ \$(curl -s -o /dev/null -w '%{http_code}' $BASE/health) = 200 ]"

# ---- metrics ------------------------------------------------------------------------------------------------
curl -s "$BASE/metrics" >"$tmp/metrics.txt"
names=$(sed -n '/^## Prometheus metrics/,/^## /p' docs/protocol.md | grep -o '`g4_[a-z_]*' | tr -d '`' | sort -u)
missing=""
for n in $names; do grep -q "^# TYPE $n " "$tmp/metrics.txt" || missing="$missing $n"; done
check "/metrics has every name docs/protocol.md lists ($(echo $names | wc -w))" eval "[ -z '$missing' ] || { echo '  missing:$missing'; false; }"
check "/metrics counts the tokens generated" eval "awk '/^g4_generation_tokens_total/ {exit !(\$2 >= 23)}' '$tmp/metrics.txt'"
check "/metrics counts bad requests" eval "awk '/^g4_bad_requests_total/ {exit !(\$2 >= 25)}' '$tmp/metrics.txt'"
check "/metrics histogram is cumulative and ends in +Inf = count" eval "
    inf=\$(sed -n 's/^g4_time_to_first_token_seconds_bucket{le=\"+Inf\"} //p' '$tmp/metrics.txt')
    cnt=\$(sed -n 's/^g4_time_to_first_token_seconds_count //p' '$tmp/metrics.txt')
    [ -n \"\$inf\" ] && [ \"\$inf\" = \"\$cnt\" ] && [ \"\$cnt\" -ge 4 ]"
check "main server exits 0 on SIGTERM" stop_server

# ---- static files, key, origins ----------------------------------------------------------------------------
mkdir -p "$tmp/www/sub"
echo '<!doctype html><title>index</title>' >"$tmp/www/index.html"
echo '<!doctype html><title>kiosk</title>' >"$tmp/www/kiosk.html"
printf '\0asm\1\0\0\0' >"$tmp/www/app.wasm"
echo 'export const x = 1;' >"$tmp/www/sub/mod.mjs"
cp "$tmp/www/app.wasm" "$tmp/www/pic.webp"
echo 'TOP-SECRET' >"$tmp/secret.txt"
start_server web --webui "$tmp/www" --kiosk --api-key sekrit --allow-origin http://app.example --context 40000 \
    --max-streams 2 || exit 1
ctype() { curl -s -o /dev/null -w '%{content_type}' "$BASE$1"; }
check "/ is the kiosk page with --kiosk" eval "curl -s $BASE/ | grep -q '<title>kiosk'"
check "/index.html is the kiosk page with --kiosk" eval "curl -s $BASE/index.html | grep -q '<title>kiosk'"
check ".wasm is application/wasm" eval "[ '$(ctype /app.wasm)' = application/wasm ]"
check ".webp is image/webp" eval "[ '$(ctype /pic.webp)' = image/webp ]"
check ".mjs is JavaScript" eval "[ '$(ctype /sub/mod.mjs)' = text/javascript ]"
curl -s -D "$tmp/h.txt" -o /dev/null "$BASE/index.html"
check "static files carry a CSP with wasm-unsafe-eval" grep -qi "^content-security-policy:.*'wasm-unsafe-eval'" "$tmp/h.txt"
check "static files carry nosniff" grep -qi '^x-content-type-options: nosniff' "$tmp/h.txt"
check "a missing file: 404" eval "[ \$(curl -s -o /dev/null -w '%{http_code}' $BASE/nothere.js) = 404 ]"
leak=""
for p in '/../secret.txt' '/%2e%2e/secret.txt' '/..%2fsecret.txt' '/sub/../../secret.txt' '/kiosk/../../secret.txt' \
         '//../secret.txt' '/%2e%2e%2fsecret.txt' '/sub/%2e%2e/%2e%2e/secret.txt' '/..\\secret.txt'; do
    curl -s --path-as-is "$BASE$p" | grep -q TOP-SECRET && leak="$leak $p"
done
check "path traversal never leaves the web directory" eval "[ -z '$leak' ] || { echo '  leaked by:$leak'; false; }"
check "no key: 401 invalid_api_key" eval "[ \$(curl -s -o '$tmp/k.json' -w '%{http_code}' $BASE/v1/models) = 401 ] &&
    jcheck '$tmp/k.json' \"j.error.code === 'invalid_api_key'\""
check "wrong key: 401" eval "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' $BASE/v1/models) = 401 ]"
check "right key: 200" eval "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sekrit' $BASE/v1/models) = 200 ]"
check "a POST without the key: 401" eval "[ \$(post '{$hello}') = 401 ]"
check "/health and /metrics need no key" eval "[ \$(curl -s -o /dev/null -w '%{http_code}' $BASE/health) = 200 ] &&
    [ \$(curl -s -o /dev/null -w '%{http_code}' $BASE/metrics) = 200 ]"
st=$(post "{$hello,\"max_tokens\":2}" -H 'Authorization: Bearer sekrit' -H 'Origin: http://evil.example')
check "a foreign Origin: 403" eval "[ $st = 403 ] && jcheck '$tmp/r.json' \"j.error.code === 'origin_not_allowed'\""
curl -s -D "$tmp/cors.txt" -o "$tmp/r.json" -H 'content-type: application/json' -H 'Authorization: Bearer sekrit' \
    -H 'Origin: http://app.example' -d "{$hello,\"max_tokens\":2}" "$BASE/v1/chat/completions"
check "an allowed Origin gets CORS headers" grep -qi '^access-control-allow-origin: http://app.example' "$tmp/cors.txt"
curl -s -D "$tmp/pre.txt" -o /dev/null -X OPTIONS -H 'Origin: http://app.example' \
    -H 'Access-Control-Request-Method: POST' "$BASE/v1/chat/completions"
check "preflight: 204 with the allowed methods and headers" eval "head -n 1 '$tmp/pre.txt' | grep -q ' 204' &&
    grep -qi '^access-control-allow-headers: authorization, content-type' '$tmp/pre.txt'"
node -e "require('fs').writeFileSync('$tmp/long.json', JSON.stringify({messages: [{role: 'user', content: 'hello '.repeat(33000)}], max_tokens: 1}))"
st=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -H 'Authorization: Bearer sekrit' --data-binary @"$tmp/long.json" \
    "$BASE/v1/chat/completions")
check "a prompt over 32768 tokens: 400 context_length_exceeded" eval "[ $st = 400 ] &&
    jcheck '$tmp/r.json' \"j.error.code === 'context_length_exceeded' && j.error.message.includes('32768')\""
check "web server exits 0 on SIGTERM" stop_server
finish
