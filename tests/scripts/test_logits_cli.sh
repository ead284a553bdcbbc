#!/bin/sh
# `g4 logits` end to end against transformers: the 12B-style fixture's image prompt, with its two images
# given as PNG files (rebuilt from the fixture's patch rows: their sizes sit on the 70-token grid, so the
# processor does not resize them), must reproduce transformers' logits for every position (1e-4 relative,
# per row), in both image-mask variants; and a text prompt fed in chunks of 7 must too.
. tests/scripts/lib.sh
fx=tests/fixtures/engine/unified
tmp=$(mktemp -d)
node - "$fx" "$tmp" <<'JS'
const fs = require('fs'), [fx, tmp] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(`${fx}/cases.json`, 'utf8')).cases;
for (const c of cases) fs.writeFileSync(`${tmp}/${c.name}.ids`, c.ids.join(','));
const img = cases.find(c => c.name === 'image');
for (const f of img.images) {
  const rows = fs.readFileSync(`${fx}/${f}.patches.u8`), pos = new Int32Array(new Uint8Array(fs.readFileSync(`${fx}/${f}.pos.i32`)).buffer);
  const n = rows.length / 6912; let gw = 0, gh = 0;
  for (let i = 0; i < n; i++) { gw = Math.max(gw, pos[2*i] + 1); gh = Math.max(gh, pos[2*i+1] + 1); }
  const W = gw * 48, H = gh * 48, px = Buffer.alloc(W * H * 3);
  for (let i = 0; i < n; i++) for (let r = 0; r < 48; r++)
    rows.copy(px, ((pos[2*i+1] * 48 + r) * W + pos[2*i] * 48) * 3, i * 6912 + r * 144, i * 6912 + r * 144 + 144);
  fs.writeFileSync(`${tmp}/${f}.ppm`, Buffer.concat([Buffer.from(`P6\n${W} ${H}\n255\n`), px]));
}
JS
for f in image-a.png image-b.png; do convert "$tmp/$f.ppm" "$tmp/$f"; done
compare() { # compare OUT.f32 REF.f32 V
    node -e "
      const fs=require('fs'), [g,r,V]=[process.argv[1],process.argv[2],+process.argv[3]];
      const a=new Float32Array(new Uint8Array(fs.readFileSync(g)).buffer), b=new Float32Array(new Uint8Array(fs.readFileSync(r)).buffer);
      if (a.length!==b.length) { console.error('length', a.length, b.length); process.exit(1) }
      let worst=0; for (let t=0;t<a.length/V;t++){ let md=0,mr=0; for(let v=0;v<V;v++){ const d=Math.abs(a[t*V+v]-b[t*V+v]); if(!(d<=md)) md=d; mr=Math.max(mr,Math.abs(b[t*V+v])) } worst=Math.max(worst,md/mr) }
      console.log('  worst row rel error', worst.toExponential(2)); process.exit(worst <= 1e-4 ? 0 : 1)" "$1" "$2" "$3"
}
run_image() { # MASK REF
    "$G4" logits --model "$fx" --ids "$(cat "$tmp/image.ids")" --image "$tmp/image-a.png" --image "$tmp/image-b.png" \
        --max-soft-tokens 70 --image-mask "$1" --out "$tmp/out.f32" >"$tmp/out.json" &&
        grep -q '"T":142,"V":512' "$tmp/out.json" && compare "$tmp/out.f32" "$fx/$2" 512
}
check "image prompt, sliding-only image mask (create_masks_for_generate)" run_image sliding image.generate.logits.f32
check "image prompt, all-layers image mask (direct forward)" run_image all image.forward.logits.f32
check "text prompt in chunks of 7" sh -c "'$G4' logits --model '$fx' --ids '$(cat "$tmp/text.ids")' --chunk 7 --out '$tmp/t.f32' >/dev/null"
check "text logits match" compare "$tmp/t.f32" "$fx/text.logits.f32" 512
check "an image that does not fit its placeholder run is refused" sh -c "
  '$G4' logits --model '$fx' --ids '$(cat "$tmp/image.ids")' --image '$tmp/image-b.png' --image '$tmp/image-a.png' \
    --max-soft-tokens 70 --out '$tmp/x' 2>&1 | grep -q 'placeholder run has 63 tokens but the image has 64'"
rm -rf "$tmp"
finish
