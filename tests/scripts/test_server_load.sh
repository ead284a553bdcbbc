#!/bin/sh
# Concurrency and exactness under load: tests/load/concurrency.mjs against a server with 8 streams and a
# queue of 64 (32 WebSocket + 8 OpenAI streaming clients, quitters, a client that does not read).
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
case "$G4_BUILD" in *asan*) export G4_SANITIZED=1 ;; esac
start_server load --max-streams 8 --max-queue 64 || exit 1
run_node "load" tests/load/concurrency.mjs "$PORT" "$SRV_PID"
check "server exits 0 on SIGTERM" stop_server
finish
