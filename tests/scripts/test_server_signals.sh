#!/bin/sh
# SIGTERM and SIGINT with requests in flight: every client hears "shutdown", the server exits 0 (and, in the
# sanitizer build, without a leak report). tests/server/shutdown.mjs plays the clients. Then, for each signal,
# the drain (tests/server/drain.mjs): a client that does not read ($G4_BUILD/tools/slow_client) holds the
# server in it (--shutdown-grace-ms 600000), and new connections and requests meanwhile are refused.
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
client="$G4_BUILD/tools/slow_client"
[ -x "$client" ] || { echo "no $client (make all builds it)"; exit 1; }
for sig in SIGTERM SIGINT; do
    start_server "stop-$sig" --max-streams 2 || exit 1
    run_node "shutdown $sig" tests/server/shutdown.mjs "$PORT" "$SRV_PID" "$sig"
    wait "$SRV_PID"
    rc=$?
    check "$sig: the server exits 0" [ "$rc" -eq 0 ]
    check "$sig: it says it stopped" grep -q 'g4 serve: stopped' "$tmp/stop-$sig.err"
    check "$sig: no sanitizer report" sh -c "! grep -q 'Sanitizer' '$tmp/stop-$sig.err'"
    [ "$rc" -eq 0 ] || cat "$tmp/stop-$sig.err"

    start_server "drain-$sig" --shutdown-grace-ms 600000 --slow-reader-bytes 4096 --slow-reader-ms 600000 || exit 1
    run_node "drain $sig" tests/server/drain.mjs "$PORT" "$SRV_PID" "$sig" "$client"
    wait "$SRV_PID"
    rc=$?
    check "$sig drain: the server exits 0 once the slow client has read" [ "$rc" -eq 0 ]
    check "$sig drain: no sanitizer report" sh -c "! grep -q 'Sanitizer' '$tmp/drain-$sig.err'"
    [ "$rc" -eq 0 ] || cat "$tmp/drain-$sig.err"
done
finish
