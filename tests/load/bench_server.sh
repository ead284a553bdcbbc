#!/bin/sh
# Server benchmark (not a test): starts `g4 serve` on the tiny demo model with 16 and with 40 engine streams
# and runs tests/load/bench_server.mjs against each (requests/s, tokens/s, time to first token under 32
# WebSocket + 8 OpenAI streaming clients). Figures go to docs/perf.md, "Server".
#   usage: G4=build/g4 G4_BUILD=build sh tests/load/bench_server.sh [ROUNDS] [MAX_TOKENS]
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
G4=${G4:-build/g4}
G4_BUILD=${G4_BUILD:-build}
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
echo "g4 serve on $(nproc) cores, $(uname -m), model $m, $(date -u +%Y-%m-%d)"
for streams in 16 40; do
    start_server "bench$streams" --max-streams "$streams" || exit 1
    echo
    echo "--max-streams $streams"
    node tests/load/bench_server.mjs "$PORT" "${1:-3}" "${2:-16}"
    curl -s "$BASE/metrics" | grep -E '^g4_(generation_tokens_total|engine_steps_total|prompt_tokens_total) '
    stop_server
done
