#!/bin/sh
# SIGTERM and SIGINT with requests in flight: every client hears "shutdown", the server exits 0 (and, in the
# sanitizer build, without a leak report). tests/server/shutdown.mjs plays the clients.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
for sig in SIGTERM SIGINT; do
    start_server "stop-$sig" --max-streams 2 || exit 1
    run_node "shutdown $sig" tests/server/shutdown.mjs "$PORT" "$SRV_PID" "$sig"
    wait "$SRV_PID"
    rc=$?
    check "$sig: the server exits 0" [ "$rc" -eq 0 ]
    check "$sig: it says it stopped" grep -q 'g4 serve: stopped' "$tmp/stop-$sig.err"
    check "$sig: no sanitizer report" sh -c "! grep -q 'Sanitizer' '$tmp/stop-$sig.err'"
    [ "$rc" -eq 0 ] || cat "$tmp/stop-$sig.err"
done
finish
