#!/bin/sh
# test_img_fuzz — a short libFuzzer run (25 s per target, about a minute with the build) of the image
# pipeline and the frame decoder under ASan + UBSan; it must find nothing. `make fuzz` runs longer.
# Skips (saying so; a failure under G4_REQUIRE_ALL=1, as in CI) without clang.
. tests/scripts/lib.sh
G4_BUILD=${G4_BUILD:-build}
if ! command -v clang >/dev/null 2>&1; then
    skip "test_img_fuzz: clang not installed (make deps installs it)"
fi
out="$G4_BUILD/fuzz-ci"
sh tests/fuzz/run.sh "${G4_FUZZ_SECONDS:-25}" "$out" >"$out.log" 2>&1
rc=$?
cat "$out.log"
check "fuzzers built and ran" test -x "$out/fuzz_img" -a -x "$out/fuzz_frame"
check "fuzzing found nothing" test "$rc" = 0
finish
