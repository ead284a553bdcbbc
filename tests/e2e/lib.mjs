// tests/e2e/lib.mjs — helpers for the browser tests (tests/scripts/test_e2e.sh): PASS/FAIL lines counted by
// the shell wrapper, a Chromium launched through playwright-core with Debian's /usr/bin/chromium (no browser
// download), the WebSocket frames a page sends and receives, and G4IP patch frames (shared/frame.h).
import { createRequire } from 'node:module';
const require = createRequire(new URL('../package.json', import.meta.url));
const { chromium } = require('playwright-core');

let passed = 0, failed = 0;

export function check(name, cond, detail) {
  if (cond) { passed++; console.log(`PASS ${name}`); }
  else { failed++; console.log(`FAIL ${name}${detail !== undefined ? ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail)) : ''}`); }
  return cond;
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// Runs one test; an exception is one failure named after it (the others still run).
export async function test(name, fn) {
  const t0 = Date.now();
  try { await fn(); } catch (e) {
    check(name, false, `threw ${e && e.stack ? e.stack.split('\n').slice(0, 4).join(' | ') : e}`);
  }
  console.log(`   (${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

// Waits are on conditions, never on fixed sleeps; this is their upper bound (ASan builds are slow).
export const TIMEOUT = Number(process.env.G4_E2E_TIMEOUT_MS || 120000);

export function launch() {
  return chromium.launch({
    executablePath: process.env.G4_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// Records every WebSocket frame of a page: {dir: 'sent'|'received', text?, bin?, json?}.
export function recordFrames(page) {
  const frames = [];
  page.on('websocket', (ws) => {
    const add = (dir) => (e) => {
      const p = e.payload;
      if (typeof p === 'string') {
        let json = null;
        try { json = JSON.parse(p); } catch { /* not JSON */ }
        frames.push({ dir, text: p, json });
      } else frames.push({ dir, bin: Buffer.from(p) });
    };
    ws.on('framesent', add('sent'));
    ws.on('framereceived', add('received'));
  });
  return frames;
}

// Parses a G4IP frame (shared/frame.h): header fields and the rows.
export function parseFrame(buf) {
  if (buf.length < 24 || buf.toString('latin1', 0, 4) !== 'G4IP') return null;
  return { version: buf.readUInt16LE(4), flags: buf.readUInt16LE(6), image_id: buf.readUInt32LE(8),
           grid_w: buf.readUInt16LE(12), grid_h: buf.readUInt16LE(14), first: buf.readUInt32LE(16),
           count: buf.readUInt32LE(20), rows: buf.subarray(24) };
}

// Waits until pred() is true, polling (for conditions outside the page, like recorded frames).
export async function until(pred, what, ms = TIMEOUT) {
  const t0 = Date.now();
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
