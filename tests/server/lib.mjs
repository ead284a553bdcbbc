// tests/server/lib.mjs — helpers for the server tests run by tests/scripts/test_server_*.sh: PASS/FAIL lines
// (the shell wrapper counts them), a WebSocket client over npm `ws` that queues incoming messages and waits
// for the ones a test wants, and G4IP patch frames (shared/frame.h).
import WebSocket from 'ws';

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

// Runs a test body; an exception is one failure named after the test, not a crash of the whole file.
export async function test(name, fn) {
  try { await fn(); } catch (e) { check(name, false, `threw ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`); }
}

export const TIMEOUT = Number(process.env.G4_TEST_TIMEOUT_MS || 120000);

export class Client {
  constructor(ws) {
    this.ws = ws;
    this.inbox = [];
    this.waiters = [];
    this.closed = null;
    ws.on('message', (data, isBinary) => {
      let m;
      try { m = JSON.parse(data.toString()); } catch { m = { type: 'unparsable', raw: data.toString() }; }
      if (isBinary) m = { type: 'binary' };
      this.inbox.push(m);
      this.pump();
    });
    ws.on('close', (code, reason) => { this.closed = { code, reason: reason.toString() }; this.pump(); });
    ws.on('error', () => {});
  }

  pump() {
    for (const w of [...this.waiters]) {
      const i = this.inbox.findIndex(w.pred);
      if (i >= 0) {
        const [m] = this.inbox.splice(i, 1);
        this.waiters.splice(this.waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(m);
      } else if (this.closed) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.reject(new Error(`socket closed (${this.closed.code} ${this.closed.reason}) while waiting`));
      }
    }
  }

  // The first queued-or-future message matching pred (removed from the inbox).
  wait(pred, ms = TIMEOUT) {
    return new Promise((resolve, reject) => {
      const w = { pred, resolve, reject };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`timeout after ${ms} ms waiting for a message`));
      }, ms);
      this.waiters.push(w);
      this.pump();
    });
  }

  send(obj) { this.ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj)); }

  // The whole reply of request id: concatenated token text, the final message, queue positions seen.
  async reply(id, ms = TIMEOUT) {
    let text = '', tokens = 0;
    const queued = [];
    for (;;) {
      const m = await this.wait(x => x.id === id && ['token', 'done', 'error', 'queued'].includes(x.type), ms);
      if (m.type === 'token') { text += m.text; tokens = m.n; }
      else if (m.type === 'queued') queued.push(m.position);
      else return { text, end: m, queued, tokens };
    }
  }

  async chat(id, body, ms) {
    this.send({ type: 'chat', id, ...body });
    return this.reply(id, ms);
  }

  close() { try { this.ws.close(); } catch {} }
}

// Opens /ws (or path) and waits for `ready`. Rejects with err.status when the upgrade is refused.
export function connect(port, { path = '/ws', headers = {}, origin } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers, origin, perMessageDeflate: false });
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', d => { body += d; });
      res.on('end', () => { const e = new Error(`upgrade refused: ${res.statusCode}`); e.status = res.statusCode; e.body = body; reject(e); });
    });
    ws.on('error', e => reject(e));
    ws.on('open', () => {
      const c = new Client(ws);
      c.wait(m => m.type === 'ready').then(ready => { c.ready = ready; resolve(c); }, reject);
    });
  });
}

// A G4IP frame (shared/frame.h) holding rows [first, first + count) of an image's (n, 6912) patch bytes.
export function frame(imageId, gridW, gridH, first, count, rows, { magic = 'G4IP', version = 1, flags = 0 } = {}) {
  const b = Buffer.alloc(24 + count * 6912);
  b.write(magic, 0, 'latin1');
  b.writeUInt16LE(version, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(imageId >>> 0, 8);
  b.writeUInt16LE(gridW, 12);
  b.writeUInt16LE(gridH, 14);
  b.writeUInt32LE(first, 16);
  b.writeUInt32LE(count, 20);
  if (rows) rows.copy(b, 24, first * 6912, (first + count) * 6912);
  return b;
}

export async function httpJson(base, path, body, headers = {}) {
  const res = await fetch(base + path, body === undefined ? { headers } : {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text, headers: res.headers };
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));
