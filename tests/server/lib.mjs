// tests/server/lib.mjs — helpers for the server tests run by tests/scripts/test_server_*.sh: PASS/FAIL lines
// (the shell wrapper counts them), a WebSocket client over npm `ws` that queues incoming messages and waits
// for the ones a test wants, G4IP patch frames (shared/frame.h), /metrics values, and a client that stops
// reading ($G4_BUILD/tools/slow_client, tests/server/slow_client.c) with the raw WebSocket bytes it needs.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
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

// The gauges and counters the slow-reader and drain tests watch, from GET /metrics.
export async function serverMetrics(base) {
  const t = await (await fetch(base + '/metrics')).text();
  const v = (n) => Number((t.split('\n').find((l) => l.startsWith(n + ' ')) || ' NaN').split(' ')[1]);
  return { errors: v('g4_requests_total{finish="error"}'), running: v('g4_requests_running'),
    paused: v('g4_requests_paused'), generated: v('g4_generation_tokens_total') };
}

// Polls /metrics until pred holds (a condition, not a sleep; 5 * TIMEOUT bounds it).
export async function metricsUntil(base, pred, what, ms = 5 * TIMEOUT) {
  const t0 = Date.now();
  for (;;) {
    const m = await serverMetrics(base);
    if (pred(m)) return m;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(m)}`);
    await sleep(200);
  }
}

// The bytes of a WebSocket upgrade request for /ws.
export function wsUpgrade(port) {
  return Buffer.from(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
}

// A masked client text frame (RFC 6455).
export function wsFrame(text) {
  const p = Buffer.from(text), mask = crypto.randomBytes(4);
  let h;
  if (p.length < 126) { h = Buffer.alloc(2); h[1] = 0x80 | p.length; }
  else { h = Buffer.alloc(4); h[1] = 0x80 | 126; h.writeUInt16BE(p.length, 2); }
  h[0] = 0x81;
  return Buffer.concat([h, mask, Buffer.from(p.map((b, i) => b ^ mask[i & 3]))]);
}

// The server's (unmasked) frames in buf, which starts after the 101 response: [{opcode, text, payload}]; a
// frame cut off at the end is left out.
export function parseWsFrames(buf) {
  const out = [];
  let o = 0;
  while (o + 2 <= buf.length) {
    let len = buf[o + 1] & 0x7f, h = 2;
    if (len === 126) { if (o + 4 > buf.length) break; len = buf.readUInt16BE(o + 2); h = 4; }
    else if (len === 127) { if (o + 10 > buf.length) break; len = Number(buf.readBigUInt64BE(o + 2)); h = 10; }
    if (o + h + len > buf.length) break;
    const payload = buf.subarray(o + h, o + h + len);
    out.push({ opcode: buf[o] & 0x0f, text: payload.toString('utf8'), payload });
    o += h + len;
  }
  return out;
}

// Starts slow_client (receive buffer 4096) on port with the request bytes (written to file); resolves once it
// says the request went out. Its stdin line 'go' starts the reading; bytes() is what it has read so far.
export async function startSlowClient(bin, port, file, request) {
  fs.writeFileSync(file, request);
  const ch = spawn(bin, [String(port), '4096', file], { stdio: ['pipe', 'pipe', 'pipe'] });
  const chunks = [];
  let err = '';
  ch.stdout.on('data', (d) => chunks.push(d));
  ch.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => ch.on('exit', (code) => r(code)));
  for (let i = 0; !err.includes('sent\n'); i++) {
    if (i > TIMEOUT / 50 || ch.exitCode !== null) throw new Error(`slow_client did not send: ${err}`);
    await sleep(50);
  }
  return { ch, exited, bytes: () => Buffer.concat(chunks), stderr: () => err };
}
