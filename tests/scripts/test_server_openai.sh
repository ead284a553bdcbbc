#!/bin/sh
# The OpenAI-compatible API with the official npm `openai` client: tests/server/openai.mjs.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
convert -size 200x140 gradient:green-white -fill black -draw "rectangle 40,30 120,100" "$tmp/img.png"
start_server openai || exit 1
run_node "openai client" tests/server/openai.mjs "$PORT" "$tmp/img.png"
check "server exits 0 on SIGTERM" stop_server
finish
