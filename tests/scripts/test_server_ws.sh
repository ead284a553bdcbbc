#!/bin/sh
# The WebSocket protocol against a real client (npm ws): tests/server/ws.mjs on one server, then access
# control and capacity (API key, Origin, path, connections per address, queue) on a second one:
# tests/server/ws_access.mjs; then --host 0.0.0.0 (LAN URLs, ready.lan_url): tests/server/lan.mjs.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)

# an image, and its patches as the browser would compute them (the same C, shared/img.h)
convert -size 160x120 gradient:red-blue -fill yellow -draw "circle 80,60 80,20" "$tmp/img.png"
"$G4" patches --image "$tmp/img.png" --out "$tmp/img.u8" >"$tmp/img.json" || { echo "g4 patches failed"; exit 1; }

start_server ws || exit 1
run_node "ws protocol" tests/server/ws.mjs "$PORT" "$tmp/img.json" "$tmp/img.u8" "$tmp/img.png"
check "server exits 0 on SIGTERM" stop_server

start_server access --api-key sekrit --max-conns-per-addr 3 --allow-origin http://app.example \
    --max-streams 1 --max-queue 1 || exit 1
run_node "ws access" tests/server/ws_access.mjs "$PORT"
check "server exits 0 on SIGTERM" stop_server

start_server lan --host 0.0.0.0 || exit 1
run_node "lan" tests/server/lan.mjs "$PORT" "$tmp/lan.out"
check "server exits 0 on SIGTERM" stop_server
finish
