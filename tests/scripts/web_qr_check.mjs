// tests/scripts/web_qr_check.mjs — the kiosk's QR encoder (webui/qr.c, through `test_web_qr --matrix`)
// against two independent implementations from npm: `qrcode` (an encoder: the same version, level and
// mask must give the same matrix, module for module) and `jsqr` (a decoder: the matrix, drawn with a quiet
// zone, must read back as the text). Prints PASS/FAIL lines and `N passed, N failed`.
//   node tests/scripts/web_qr_check.mjs BUILD/tests/test_web_qr
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
const require = createRequire(new URL('../package.json', import.meta.url));
const QRCode = require('qrcode');
const jsQR = require('jsqr');

const prog = process.argv[2];
let passed = 0, failed = 0;
const check = (name, ok, detail) => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
};

function ours(ecl, mask, text) {
  const out = execFileSync(prog, ['--matrix', ecl, String(mask), text]).toString().trim().split('\n');
  const [version, m] = out[0].split(' ').map(Number);
  return { version, mask: m, rows: out.slice(1) };
}

// The matrix as an RGBA image: 4 pixels per module, a 4-module quiet zone.
function draw(rows) {
  const n = rows.length, s = 4, side = (n + 8) * s, px = new Uint8ClampedArray(side * side * 4).fill(255);
  for (let r = 0; r < n; r++)
    for (let c = 0; c < n; c++)
      if (rows[r][c] === '1')
        for (let y = 0; y < s; y++)
          for (let x = 0; x < s; x++) {
            const i = (((r + 4) * s + y) * side + (c + 4) * s + x) * 4;
            px[i] = px[i + 1] = px[i + 2] = 0;
          }
  return { px, side };
}

const texts = ['http://192.168.1.20:8080/', 'http://10.0.0.7:8080/kiosk', 'Hi!',
  'https://g4.example.org:8443/?key=0123456789abcdef0123456789abcdef&lang=en', 'ünïcode ✓ bytes',
  'x'.repeat(120), 'http://[fe80::1]:8080/' + 'a/'.repeat(60)];
for (const text of texts) {
  for (const ecl of ['L', 'M']) {
    for (const mask of [-1, 0, 3, 5, 7]) {
      const name = `${JSON.stringify(text.slice(0, 30))} ${ecl} mask ${mask}`;
      const q = ours(ecl, mask, text);
      const ref = QRCode.create([{ data: Buffer.from(text, 'utf8'), mode: 'byte' }],
        { errorCorrectionLevel: ecl, version: q.version, maskPattern: q.mask });
      const n = ref.modules.size;
      let same = n === q.rows.length, diff = 0;
      for (let r = 0; same && r < n; r++)
        for (let c = 0; c < n; c++) diff += (ref.modules.get(r, c) ? '1' : '0') !== q.rows[r][c];
      check(`${name}: equals npm qrcode (version ${q.version}, mask ${q.mask})`, same && diff === 0, `${diff} modules differ`);
      const { px, side } = draw(q.rows);
      const got = jsQR(px, side, side);
      check(`${name}: jsqr reads it back`, got && Buffer.from(got.binaryData).toString('utf8') === text,
        got ? JSON.stringify(got.data) : 'no code found');
    }
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
