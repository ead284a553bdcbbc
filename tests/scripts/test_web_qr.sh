#!/bin/sh
# The kiosk's QR code (webui/qr.c) against npm's qrcode (same matrix) and jsqr (reads back the text):
# tests/scripts/web_qr_check.mjs over test_web_qr --matrix.
. tests/scripts/lib.sh
prog="$G4_BUILD/tests/test_web_qr"
[ -x "$prog" ] || { echo "FAIL $prog missing"; echo "0 passed, 1 failed"; exit 1; }
out=$(node tests/scripts/web_qr_check.mjs "$prog" 2>&1)
echo "$out" | grep -v '^[0-9]* passed' | grep -v '^PASS' | head -40
t_pass=$(printf '%s\n' "$out" | grep -c '^PASS ')
t_fail=$(printf '%s\n' "$out" | grep -c '^FAIL ')
printf '%s\n' "$out" | grep -q '^[0-9]* passed, [0-9]* failed$' || t_fail=$((t_fail + 1))
echo "($t_pass checks of matrices and decodes passed)"
finish
