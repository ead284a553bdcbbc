#!/bin/sh
# The web client in real Chromium (playwright-core, Debian's /usr/bin/chromium) against `g4 serve` with the
# tiny model: tests/e2e/web.mjs. Screenshots go to $G4_BUILD/e2e-artifacts/. Skips (and says so) when the
# client was not built (no emcc) or Chromium is missing (a failure under G4_REQUIRE_ALL=1, as in CI).
. tests/scripts/lib.sh
. tests/scripts/server_lib.sh
web="$G4_BUILD/web"
if [ ! -f "$web/g4client.wasm" ] || [ ! -f "$web/g4img.wasm" ]; then
    skip "e2e: $web has no wasm modules (emcc missing?)"
fi
if [ ! -x "${G4_CHROMIUM:-/usr/bin/chromium}" ] || [ ! -d tests/node_modules/playwright-core ]; then
    skip "e2e: chromium or playwright-core missing (make deps)"
fi
m=$(test_model) || { echo "cannot make the test model"; exit 1; }
tmp=$(mktemp -d)
art="$G4_BUILD/e2e-artifacts"
rm -rf "$art"; mkdir -p "$art"

# images: a small PNG, a JPEG, a WebP larger than the 280-token budget, a second PNG, a GIF, a broken PNG,
# a PNG wider than the decoder's limit
convert -size 160x120 gradient:red-blue -fill yellow -draw "circle 80,60 80,20" "$tmp/a.png"
convert -size 320x240 plasma:red-green -quality 85 "$tmp/b.jpg"
convert -size 1600x1200 gradient:navy-orange -fill white -draw "rectangle 300,300 900,800" -quality 80 "$tmp/c.webp"
convert -size 100x100 xc:teal "$tmp/d.png"
convert -size 40x40 xc:red "$tmp/e.gif"
printf 'this is not a PNG file at all' > "$tmp/bad.png"
node tests/e2e/wide_png.cjs "$tmp/wide.png"
for f in a.png b.jpg c.webp d.png; do
    "$G4" patches --image "$tmp/$f" --out "$tmp/$f.u8" > "$tmp/$f.json" || { echo "g4 patches $f failed"; exit 1; }
done

# --context 1024: three 266-patch images fit; replies without a limit stay under ~20 s on the tiny model
# no --webui: g4 serve finds $G4_BUILD/web beside $G4_BUILD/g4 by itself
start_server e2e --context 1024 --kiosk-idle 3 || exit 1
run_node "e2e web" tests/e2e/web.mjs "$BASE" "$art" "$tmp"
check "server exits 0 on SIGTERM" stop_server

# --kiosk: every path to the chat page gets the kiosk (the server's routes, and the client when ready says
# kiosk: tests/e2e/kiosk.mjs); the dashboard stays
cp -r "$web" "$tmp/web"
cp "$web/index.html" "$tmp/web/stale-chat.html" # a chat page the browser already had
start_server kiosk --kiosk --webui "$tmp/web" || exit 1
check "--kiosk serves the kiosk page at /" sh -c "curl -sf '$BASE/' | grep -q 'data-page=\"kiosk\"'"
check "--kiosk serves the kiosk page at /index.html" sh -c "curl -sf '$BASE/index.html' | grep -q 'data-page=\"kiosk\"'"
check "--kiosk keeps the dashboard" sh -c "curl -sfL '$BASE/dashboard' | grep -q 'data-page=\"dashboard\"'"
run_node "e2e kiosk" tests/e2e/kiosk.mjs "$BASE" "$art"
check "server exits 0 on SIGTERM" stop_server
ls "$art"
finish
