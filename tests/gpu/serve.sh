#!/bin/sh
# tests/gpu/serve.sh — `g4 serve --device cuda` on the GPU machine, driven by curl, held to `g4 generate` on
# the same GPU engine:
#   sh tests/gpu/serve.sh TOKENIZER.json[.gz]
# Makes a tiny model with the real Gemma tokenizer (the demo model's; the file may be gzipped to travel),
# starts the server on it, and checks: the engine is on the GPU (/metrics g4_gpu_memory_used_bytes > 0); a
# greedy chat completion's text equals `g4 generate --device cuda` for the same messages; the streamed
# deltas (SSE) add up to the same text and end with [DONE]; four concurrent requests each get that text
# (their rows share steps, so this is the exactness contract through the server); a bad parameter gets a
# 400 naming it and the server keeps serving; SIGTERM stops it. Prints `N passed, N failed`.
set -u
b=${G4_BUILD:-build}
tok=${1:?usage: sh tests/gpu/serve.sh TOKENIZER.json[.gz]}
export LD_LIBRARY_PATH="$PWD/.devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
work=$(mktemp -d /tmp/g4-serve.XXXXXX)
port=${G4_SERVE_PORT:-18431}
dev=${G4_SERVE_DEVICE:-cuda} # cpu: a dry run of the script itself where there is no GPU
pass=0; fail=0
check() { # check NAME CONDITION-EXIT-STATUS
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); echo "PASS $1"; else fail=$((fail + 1)); echo "FAIL $1"; fi
}
case $tok in *.gz) gunzip -c "$tok" >"$work/tokenizer.json"; tok=$work/tokenizer.json ;; esac
"$b/g4" make-tiny-model "$work/model" --tokenizer-from "$tok" >/dev/null || { echo "FAIL make-tiny-model"; exit 1; }
msgs='[{"role":"user","content":"Say something about the sea."}]'
printf '%s' "$msgs" >"$work/msgs.json"
"$b/g4" generate --model "$work/model" --messages "$work/msgs.json" --max-tokens 24 --temperature 0 --device "$dev" \
    >"$work/generate.txt" 2>"$work/generate.log"
check "g4 generate --device $dev" $?

"$b/g4" serve --model "$work/model" --device "$dev" --port "$port" >"$work/serve.log" 2>&1 &
pid=$!
up=1
for i in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { up=0; break; }
    sleep 0.5
done
check "server up (--device $dev)" $up
url=http://127.0.0.1:$port/v1/chat/completions
body="{\"model\":\"g4\",\"messages\":$msgs,\"max_tokens\":24,\"temperature\":0"

gpu=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "g4_gpu_memory_used_bytes" {print $2}')
python3 -c "import sys; sys.exit(0 if float('${gpu:-0}') > 0 else 1)"
check "metrics: g4_gpu_memory_used_bytes = ${gpu:-none}" $?

curl -s "$url" -H 'content-type: application/json' -d "$body}" >"$work/one.json"
python3 - "$work/one.json" "$work/generate.txt" <<'EOF'
import json, sys
got = json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]
want = open(sys.argv[2], encoding="utf-8").read().rstrip("\n")
print("  server:  ", repr(got[:80]))
print("  generate:", repr(want[:80]))
sys.exit(0 if got == want and got else 1)
EOF
check "completion = g4 generate" $?

curl -s -N "$url" -H 'content-type: application/json' -d "$body,\"stream\":true}" >"$work/sse.txt"
python3 - "$work/sse.txt" "$work/generate.txt" <<'EOF'
import json, sys
lines = [l[6:] for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l.startswith("data: ")]
text = "".join(json.loads(l)["choices"][0]["delta"].get("content", "") for l in lines[:-1] if l != "[DONE]")
want = open(sys.argv[2], encoding="utf-8").read().rstrip("\n")
print("  %d events, last %r" % (len(lines), lines[-1][:20] if lines else None))
sys.exit(0 if lines and lines[-1] == "[DONE]" and text == want else 1)
EOF
check "streamed deltas = g4 generate, then [DONE]" $?

pids=
for k in 1 2 3 4; do
    curl -s "$url" -H 'content-type: application/json' -d "$body}" >"$work/c$k.json" &
    pids="$pids $!"
done
wait $pids
python3 - "$work" <<'EOF'
import json, sys
want = open(sys.argv[1] + "/generate.txt", encoding="utf-8").read().rstrip("\n")
got = [json.load(open("%s/c%d.json" % (sys.argv[1], k)))["choices"][0]["message"]["content"] for k in (1, 2, 3, 4)]
print("  %d of 4 equal" % sum(g == want for g in got))
sys.exit(0 if all(g == want for g in got) else 1)
EOF
check "4 concurrent requests = g4 generate" $?

code=$(curl -s -o "$work/bad.json" -w '%{http_code}' "$url" -H 'content-type: application/json' \
    -d "{\"model\":\"g4\",\"messages\":$msgs,\"max_tokens\":-3}")
bad=1
[ "$code" = 400 ] && grep -q max_tokens "$work/bad.json" && bad=0
check "bad max_tokens: $code, names the parameter" $bad
curl -sf "http://127.0.0.1:$port/health" >/dev/null
check "still serving after the bad request" $?

kill -TERM "$pid" 2>/dev/null
wait "$pid"
check "SIGTERM stops the server" $?
tail -n 5 "$work/serve.log"
rm -rf "$work"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
