# tests/scripts/server_lib.sh — starting and stopping `g4 serve` in shell tests (sourced after lib.sh).
#
#   start_server NAME [ARGS...]  starts the server on a free port (--port 0) with the test model and waits for
#                                its URL line; sets SRV_PID, PORT, BASE; logs in $tmp/NAME.out / .err
#   stop_server                  SIGTERM, waits, returns the exit status
#   run_node NAME SCRIPT [ARGS]  runs a node test, adds its PASS/FAIL lines to this script's counts
# Every server a test starts is killed on exit, even when the test fails (trap).
SRV_PIDS=""
SRV_PID=""
cleanup_servers() {
    for p in $SRV_PIDS; do kill -9 "$p" 2>/dev/null; done
    [ -n "${tmp:-}" ] && rm -rf "$tmp"
}
trap cleanup_servers EXIT INT TERM

start_server() {
    name=$1; shift
    "$G4" serve --model "$m" --port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    SRV_PID=$!
    SRV_PIDS="$SRV_PIDS $SRV_PID"
    i=0
    PORT=""
    while [ $i -lt 600 ]; do # 60 s: a sanitizer build loads the tokenizer slowly
        PORT=$(sed -n 's|^g4 serve: .* on http://[0-9.]*:\([0-9]*\)/.*|\1|p' "$tmp/$name.out" | head -n 1)
        [ -n "$PORT" ] && break
        if ! kill -0 "$SRV_PID" 2>/dev/null; then
            echo "server $name exited before listening:"; cat "$tmp/$name.err"; return 1
        fi
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$PORT" ] || { echo "server $name did not start"; return 1; }
    BASE="http://127.0.0.1:$PORT"
}

stop_server() {
    kill -TERM "$SRV_PID" 2>/dev/null
    wait "$SRV_PID"
}

run_node() {
    name=$1; shift
    out=$(node "$@" 2>&1)
    rc=$?
    echo "$out"
    p=$(printf '%s\n' "$out" | grep -c '^PASS ')
    f=$(printf '%s\n' "$out" | grep -c '^FAIL ')
    t_pass=$((t_pass + p))
    t_fail=$((t_fail + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name (node exited $rc)"; t_fail=$((t_fail + 1))
    fi
}

# The server's resident memory in KiB (Linux /proc).
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
