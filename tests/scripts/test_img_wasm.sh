#!/bin/sh
# test_img_wasm — the wasm image module (build/web/g4img.js, built here by webui/build-wasm.sh if needed) under
# node gives byte-identical patches, sizes and positions to the native `g4 patches`, on the same files:
# PNG (RGB, RGBA, 16-bit, palette, gray, interlaced), JPEG (baseline, progressive, gray, EXIF-rotated), WebP
# (lossy, lossless, alpha), the HF fixture inputs when present, at several budgets; both refuse the same bad
# files; and the module's frames carry exactly its rows. Skips (saying so; a failure
# under G4_REQUIRE_ALL=1, as in CI) without emcc or node.
. tests/scripts/lib.sh
G4=${G4:-build/g4}
G4_BUILD=${G4_BUILD:-build}
WEB="$G4_BUILD/web"

if ! command -v emcc >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    skip "test_img_wasm: emcc or node not installed (make deps installs them)"
fi
log=$(mktemp)
if ! sh webui/build-wasm.sh "$WEB" >"$log" 2>&1; then
    cat "$log"
    check "wasm module builds" false
    finish
    exit $?
fi
rm -f "$log"
check "wasm module builds" test -s "$WEB/g4img.wasm"

T=$(mktemp -d /tmp/g4imgwasm.XXXXXX)
# Inputs made with ImageMagick / cwebp (deterministic seeds), plus the HF fixture inputs when present.
mk() { convert "$@" 2>/dev/null; }
mk -seed 7 -size 640x480 plasma:red-blue -blur 0x1 "$T/rgb.png"
mk -seed 8 -size 333x222 plasma:green-yellow -alpha set -channel A -fx 'i/w' +channel "$T/rgba.png"
mk -seed 9 -size 160x120 plasma: -depth 16 "$T/rgb16.png"
mk -seed 10 -size 200x150 plasma: -colors 50 -type Palette "$T/palette.png"
mk -seed 11 -size 300x200 plasma: -colorspace Gray -depth 8 "$T/gray.png"
mk -seed 12 -size 301x199 plasma: -interlace PNG "$T/interlaced.png"
mk -seed 13 -size 1920x1080 plasma: -quality 90 "$T/base.jpg"
mk -seed 14 -size 800x600 plasma: -interlace JPEG -quality 85 "$T/prog.jpg"
mk -seed 15 -size 300x200 plasma: -colorspace Gray -quality 90 "$T/gray.jpg"
mk -seed 16 -size 120x3000 plasma: -quality 90 "$T/tall.jpg"
# EXIF orientation 6: an APP1 segment (little-endian TIFF, IFD0 tag 0x0112 = 6) spliced in after SOI
mk -seed 17 -size 320x240 plasma: -quality 92 "$T/plain.jpg"
{ printf '\377\330\377\341\000\042Exif\000\000II*\000\010\000\000\000\001\000\022\001\003\000'
  printf '\001\000\000\000\006\000\000\000\000\000\000\000'; tail -c +3 "$T/plain.jpg"; } >"$T/exif6.jpg"
rm -f "$T/plain.jpg"
mk -seed 18 -size 5x7 plasma: "$T/tiny.png"
mk -seed 19 -size 400x300 plasma: -quality 80 "$T/lossy.webp"
mk -seed 20 -size 300x200 plasma: -define webp:lossless=true "$T/lossless.webp"
mk -seed 21 -size 320x240 plasma: -alpha set -channel A -fx 'j/h' +channel -quality 80 "$T/alpha.webp"
printf 'GIF89a not ours' > "$T/bad.gif"
head -c 2000 "$T/base.jpg" > "$T/truncated.jpg"
head -c 100 "$T/rgb.png" > "$T/truncated.png"
ls tests/fixtures/images/images/* >/dev/null 2>&1 && cp tests/fixtures/images/images/* "$T/"

# Native: one .u8 and one .json per (file, budget); status file for refusals.
n_native=0
for f in "$T"/*.png "$T"/*.jpg "$T"/*.webp "$T"/*.gif; do
    [ -f "$f" ] || continue
    for b in 70 280 1120; do
        case "$f" in *tall*|*base*|*rgb.png) ;; *) [ "$b" = 1120 ] && continue ;; esac
        if "$G4" patches --image "$f" --max-soft-tokens "$b" --out "$f.$b.native.u8" >"$f.$b.native.json" 2>/dev/null; then
            n_native=$((n_native + 1))
        else
            echo refused >"$f.$b.native.json"
        fi
    done
done
check "native g4 patches produced outputs" test "$n_native" -gt 20

cat >"$T/run.js" <<'EOF'
// Runs the wasm module on every FILE.BUDGET.native.json's file and compares with the native result.
const fs = require('fs'), path = require('path');
const [web, dir] = process.argv.slice(2);
const G4Img = require(path.resolve(web, 'g4img.js'));
G4Img({ wasmBinary: fs.readFileSync(path.join(web, 'g4img.wasm')) }).then((M) => {
  let pass = 0, fail = 0;
  const cases = fs.readdirSync(dir).filter((n) => n.endsWith('.native.json')).sort();
  for (const jn of cases) {
    const m = jn.match(/^(.*)\.(\d+)\.native\.json$/);
    const file = path.join(dir, m[1]), budget = +m[2];
    const data = fs.readFileSync(file);
    const ptr = M._malloc(data.length);
    M.HEAPU8.set(data, ptr);
    const h = M._img_flat_process(ptr, data.length, budget);
    M._free(ptr);
    const nativeText = fs.readFileSync(path.join(dir, jn), 'utf8').trim();
    let ok = true, why = '';
    if (nativeText === 'refused') {
      ok = h === 0 && M._img_flat_status() < 0;
      why = ok ? '' : 'wasm accepted what native refused';
    } else if (h === 0) {
      ok = false; why = 'wasm refused: ' + M.UTF8ToString(M._img_flat_error());
    } else {
      const nat = JSON.parse(nativeText);
      const n = M._img_flat_n(h);
      const rows = M.HEAPU8.subarray(M._img_flat_rows(h), M._img_flat_rows(h) + n * 6912);
      const natRows = fs.readFileSync(file + '.' + budget + '.native.u8');
      const pos = new Int32Array(M.HEAPU8.buffer, M._img_flat_positions(h), 2 * n);
      if (n !== nat.n || M._img_flat_resized_w(h) !== nat.resized_width || M._img_flat_resized_h(h) !== nat.resized_height ||
          M._img_flat_src_w(h) !== nat.width || M._img_flat_src_h(h) !== nat.height) { ok = false; why = 'sizes differ'; }
      else if (Buffer.compare(Buffer.from(rows), natRows) !== 0) { ok = false; why = 'patch bytes differ'; }
      else if (nat.positions.some((xy, k) => xy[0] !== pos[2 * k] || xy[1] !== pos[2 * k + 1])) { ok = false; why = 'positions differ'; }
      else {
        // a frame of rows [1, n) (or [0, 1) for one patch): header fields and rows as frame.h lays them out
        const first = n > 1 ? 1 : 0, count = n > 1 ? n - 1 : 1;
        const size = M._img_flat_frame_size(count);
        const out = M._malloc(size);
        const wrote = M._img_flat_frame(h, 0x01020304, first, count, out, size);
        const fr = Buffer.from(M.HEAPU8.subarray(out, out + size));
        M._free(out);
        const dv = new DataView(fr.buffer, fr.byteOffset, fr.length);
        if (wrote !== size || fr.toString('latin1', 0, 4) !== 'G4IP' || dv.getUint16(4, true) !== 1 ||
            dv.getUint32(8, true) !== 0x01020304 || dv.getUint16(12, true) !== nat.grid_w ||
            dv.getUint16(14, true) !== nat.grid_h || dv.getUint32(16, true) !== first || dv.getUint32(20, true) !== count ||
            Buffer.compare(fr.subarray(24), natRows.subarray(first * 6912, (first + count) * 6912)) !== 0) {
          ok = false; why = 'frame bytes wrong';
        }
      }
      M._img_flat_free(h);
    }
    console.log((ok ? 'PASS' : 'FAIL') + ' wasm == native: ' + m[1] + ' @' + budget + (why ? ' (' + why + ')' : ''));
    ok ? pass++ : fail++;
  }
  console.log(pass + ' passed, ' + fail + ' failed');
  process.exit(fail ? 1 : 0);
});
EOF
node "$T/run.js" "$WEB" "$T" >"$T/node.log" 2>&1
cat "$T/node.log"
res=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$T/node.log" | tail -n 1)
np=${res%% passed*}
nf=${res#*passed, }
nf=${nf%% failed}
check "node ran the wasm module over every case" test -n "$res"
check "wasm patches byte-identical to native (${np:-0} cases)" test "${nf:-1}" = 0 -a "${np:-0}" -gt 20
rm -rf "$T"
finish
