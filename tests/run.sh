#!/bin/sh
# tests/run.sh — runs every test group and prints one closing line `N passed, N failed`.
#
#   unit:    every $G4_BUILD/tests/test_* program (C, tests/unit/)
#   scripts: every tests/scripts/test_*.sh (CLI and cross-implementation checks; they may use node)
# Each test program prints its own `N passed, N failed` as its last line; a program that crashes or
# prints no such line counts as one failure. Set G4_TEST_FILTER to a substring to run only matching programs.
# Skips (tests/README.md): a program that cannot run here prints `SKIP reason`; with G4_REQUIRE_ALL=1 (CI)
# that is a failure (the helpers count it; a SKIP line with no failure beside it is counted here). A
# `SKIP-NO-GPU reason` line (test_cuda_engine without a GPU) is never a failure. Both are listed at the end.
set -u
G4=${G4:-build/g4}
G4_BUILD=${G4_BUILD:-build}
export G4 G4_BUILD
passed=0; failed=0; broken=""; skipped=""; no_gpu=""
log=$(mktemp)
for prog in "$G4_BUILD"/tests/test_* tests/scripts/test_*.sh; do
    [ -e "$prog" ] || continue
    case "$prog" in *.d|*.o) continue ;; esac
    if [ -n "${G4_TEST_FILTER:-}" ]; then case "$prog" in *"$G4_TEST_FILTER"*) ;; *) continue ;; esac; fi
    echo "== $prog"
    case "$prog" in *.sh) sh "$prog" >"$log" 2>&1 ;; *) "$prog" >"$log" 2>&1 ;; esac
    rc=$?
    cat "$log"
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        echo "   ($prog exited $rc without a result line: counted as 1 failure)"
        failed=$((failed + 1)); broken="$broken $prog"; continue
    fi
    p=${last%% passed*}; f=${last#*passed, }; f=${f%% failed}
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "   ($prog exited $rc: counted as 1 failure)"; failed=$((failed + 1)); broken="$broken $prog"
    fi
    [ "$f" -gt 0 ] && broken="$broken $prog"
    if grep -q '^SKIP ' "$log"; then
        skipped="$skipped $prog"
        if [ "${G4_REQUIRE_ALL:-0}" = 1 ] && [ "$f" -eq 0 ]; then
            echo "   ($prog skipped under G4_REQUIRE_ALL=1: counted as 1 failure)"
            failed=$((failed + 1)); broken="$broken $prog"
        fi
    fi
    grep -q '^SKIP-NO-GPU ' "$log" && no_gpu="$no_gpu $prog"
done
rm -f "$log"
[ -n "$skipped" ] && echo "skipped:$skipped"
[ -n "$no_gpu" ] && echo "skipped, no GPU:$no_gpu"
[ -n "$broken" ] && echo "failing:$broken"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
