#!/bin/sh
# test_run_skips — tests/run.sh's handling of skips, on a scratch tree of stand-in tests run from a temporary
# folder: a script that calls lib.sh's `skip`, a program that prints a bare `SKIP` line, a real unit program
# that skips through test.h's test_skip (test_img_fixtures, whose fixture folder is absent there), one that
# prints `SKIP-NO-GPU`, and one passing script. Without G4_REQUIRE_ALL every skip passes and is listed; with
# G4_REQUIRE_ALL=1 each skip is one failure except SKIP-NO-GPU. (The inner output is printed indented, so its
# SKIP lines are not this test's own.)
. tests/scripts/lib.sh
G4_BUILD=${G4_BUILD:-build}
repo=$(pwd)
tmp=$(mktemp -d)
mkdir -p "$tmp/tests/scripts" "$tmp/build/tests"
cp tests/scripts/lib.sh "$tmp/tests/scripts/"
printf '. tests/scripts/lib.sh\nskip "a: a tool is missing"\n' >"$tmp/tests/scripts/test_a_skip.sh"
printf '. tests/scripts/lib.sh\ncheck "b works" true\nfinish\n' >"$tmp/tests/scripts/test_b_pass.sh"
printf '#!/bin/sh\necho "SKIP c: bare skip line"\necho "0 passed, 0 failed"\n' >"$tmp/build/tests/test_c_bare"
printf '#!/bin/sh\necho "SKIP-NO-GPU d: no GPU"\necho "0 passed, 0 failed"\n' >"$tmp/build/tests/test_d_gpu"
chmod +x "$tmp/build/tests/test_c_bare" "$tmp/build/tests/test_d_gpu"
cp "$G4_BUILD/tests/test_img_fixtures" "$tmp/build/tests/"

# inner REQUIRE_ALL: runs tests/run.sh in the scratch tree; its output in $tmp/out.REQUIRE_ALL, exit code after
inner() {
    (cd "$tmp" && env -u G4_TEST_FILTER -u G4_IMG_FIXTURES G4_REQUIRE_ALL="$1" G4_BUILD=build sh "$repo/tests/run.sh") \
        >"$tmp/out.$1" 2>&1
    echo $? >"$tmp/rc.$1"
    sed 's/^/    | /' "$tmp/out.$1"
}
inner 0
check "without G4_REQUIRE_ALL skips pass" sh -c "[ \$(cat '$tmp/rc.0') -eq 0 ] && tail -n 1 '$tmp/out.0' | grep -qx '1 passed, 0 failed'"
check "the unit program skipped through test_skip" grep -q '^SKIP test_img_fixtures: ' "$tmp/out.0"
check "skips are listed" grep -qx 'skipped: build/tests/test_c_bare build/tests/test_img_fixtures tests/scripts/test_a_skip.sh' "$tmp/out.0"
check "the GPU skip is listed apart" grep -qx 'skipped, no GPU: build/tests/test_d_gpu' "$tmp/out.0"
inner 1
check "G4_REQUIRE_ALL=1: three skips, three failures" sh -c "[ \$(cat '$tmp/rc.1') -ne 0 ] && tail -n 1 '$tmp/out.1' | grep -qx '1 passed, 3 failed'"
check "G4_REQUIRE_ALL=1: the failing list names them, not the GPU one" \
    grep -qx 'failing: build/tests/test_c_bare build/tests/test_img_fixtures tests/scripts/test_a_skip.sh' "$tmp/out.1"
rm -rf "$tmp"
finish
