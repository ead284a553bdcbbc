#!/bin/sh
# Clients that stop reading, over real sockets: tests/server/slow.mjs drives $G4_BUILD/tools/slow_client (a
# socket with a small receive buffer that reads nothing) through a WebSocket chat and an SSE stream of
# thousands of tokens, on a server whose unread-reply bound is small (--slow-reader-bytes 4096,
# --slow-reader-ms 4000) so that the bound, not the kernel's buffers, decides.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
client="$G4_BUILD/tools/slow_client"
[ -x "$client" ] || { echo "FAIL $client is not built (make all)"; t_fail=1; finish; exit 1; }
start_server slow --slow-reader-bytes 4096 --slow-reader-ms 4000 || exit 1
run_node "slow readers" tests/server/slow.mjs "$PORT" "$client" 4096 4000
check "server exits 0 on SIGTERM" stop_server
finish
