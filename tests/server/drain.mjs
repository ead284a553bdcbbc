// tests/server/drain.mjs PORT PID SIGNAL SLOW_CLIENT — "stop accepting" while streams drain (docs/protocol.md,
// "Shutdown"), on a server started with --shutdown-grace-ms 600000 --slow-reader-bytes 4096 so that a client
// that does not read (slow_client, its WebSocket stream paused) holds the server in its drain after SIGNAL
// for as long as the test needs, without any timing. During the drain: a request on a connection opened
// before the signal gets 503 (GET /health "shutting_down", POST chat "shutdown"); a new WebSocket connection
// and a new HTTP connection are refused (closed without an answer, or 503), and the server is still running
// when they are. Then the slow client reads: it gets the tokens it had left, the `shutdown` error and the
// close with 1001, and the server, quiet, exits (the shell checks the status).
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { check, finish, test, connect, sleep, TIMEOUT, metricsUntil, startSlowClient, wsUpgrade,
  wsFrame, parseWsFrames } from './lib.mjs';

const [port, pid, signal, slowClient] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'g4-drain-'));
const long = { messages: [{ role: 'user', content: 'Do not stop.' }], max_tokens: 6000, seed: 3 };

// A keep-alive connection opened now, for requests sent later: send(raw) resolves with the next response
// (status line, headers, body by Content-Length) or with {closed: true} when the server closes instead.
function keepAlive() {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), '127.0.0.1');
    let buf = Buffer.alloc(0), waiter = null, closed = false;
    const pump = () => {
      if (!waiter) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = buf.subarray(0, end).toString('latin1');
        const len = Number((/content-length: *(\d+)/i.exec(head) || [0, 0])[1]);
        if (buf.length >= end + 4 + len) {
          const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
          buf = buf.subarray(end + 4 + len);
          const w = waiter;
          waiter = null;
          w({ status: Number(head.split(' ')[1]), head, body });
          return;
        }
      }
      if (closed) { const w = waiter; waiter = null; w({ closed: true }); }
    };
    s.on('data', (d) => { buf = Buffer.concat([buf, d]); pump(); });
    s.on('close', () => { closed = true; pump(); });
    s.on('error', () => {});
    s.on('connect', () => resolve({
      send: (raw) => new Promise((r) => { waiter = r; s.write(raw); pump(); }),
      close: () => s.destroy(),
    }));
    s.on('error', reject);
  });
}

// A request on a fresh connection (no pooling): {status, body} or {error} when the connection is refused or
// closed without an answer.
function freshRequest(method, p, body) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, agent: false,
      headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {} }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: b }));
      res.on('error', (e) => resolve({ error: e.code || String(e) }));
    });
    req.on('error', (e) => resolve({ error: e.code || String(e) }));
    req.end(body);
  });
}

const refused = (r) => r.error !== undefined || r.status === 503;
const alive = () => { try { process.kill(Number(pid), 0); return true; } catch { return false; } };

await test(`drain after ${signal}`, async () => {
  const slow = await startSlowClient(slowClient, port, path.join(tmp, 'ws.req'),
    Buffer.concat([wsUpgrade(port), wsFrame(JSON.stringify({ type: 'chat', id: 'deaf', ...long }))]));
  await metricsUntil(base, (m) => m.paused === 1, 'the slow client\'s stream to pause');
  const ka = await keepAlive(); // opened just before the signal: lws closes keep-alive connections idle for 5 s
  const h0 = await ka.send(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  check('before the signal: /health 200 on a keep-alive connection', h0.status === 200, h0);
  process.kill(Number(pid), signal);
  // the keep-alive connection tells when the server has begun to stop (the signal thread wakes it)
  let h = null;
  for (let i = 0; i < TIMEOUT / 100; i++) {
    h = await ka.send(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    if (h.closed || h.status !== 200) break;
    await sleep(50);
  }
  check('a request on an open connection after the signal: /health 503 shutting_down', h.status === 503 &&
    JSON.parse(h.body).status === 'shutting_down', h);
  const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  const p = await ka.send(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(chatBody)}\r\n\r\n${chatBody}`);
  check('a chat on an open connection after the signal: 503 shutdown', p.status === 503 &&
    JSON.parse(p.body).error.code === 'shutdown', p);
  ka.close();
  let ws;
  try { const c = await connect(port); c.close(); ws = { opened: true, ready: c.ready }; } catch (e) { ws = { error: e.status || e.code || String(e) }; }
  check('a new WebSocket connection during the drain is refused', !ws.opened, ws);
  const get = await freshRequest('GET', '/health');
  check('a new HTTP connection during the drain is refused (GET /health)', refused(get), get);
  const post = await freshRequest('POST', '/v1/chat/completions', chatBody);
  check('a new HTTP connection during the drain is refused (POST chat)', refused(post) && !(post.status === 200), post);
  check('the server was still draining meanwhile (its process runs)', alive());
  console.log(`   refused: WebSocket ${JSON.stringify(ws)}, GET ${JSON.stringify(get)}, POST ${JSON.stringify(post)}`);
  // the slow client reads now: its tokens, the shutdown error, the close
  slow.ch.stdin.write('go\n');
  const code = await Promise.race([slow.exited, sleep(TIMEOUT).then(() => 'timeout')]);
  const b = slow.bytes(), head = b.indexOf('\r\n\r\n');
  const frames = head >= 0 ? parseWsFrames(b.subarray(head + 4)) : [];
  const msgs = frames.filter((f) => f.opcode === 1).map((f) => JSON.parse(f.text));
  const close = frames.find((f) => f.opcode === 8);
  const last = msgs.at(-1);
  console.log(`   the slow client read ${b.length} bytes: ${msgs.length} messages`);
  check('the slow client gets its tokens, then the shutdown error', msgs.some((m) => m.type === 'token') && last &&
    last.type === 'error' && last.id === 'deaf' && last.code === 'shutdown', last);
  check('then the WebSocket closes with 1001 and the server hangs up', code === 0 && close && close.payload.readUInt16BE(0) === 1001,
    { code, close: close && close.payload.toString('hex') });
});
fs.rmSync(tmp, { recursive: true, force: true });
finish();
