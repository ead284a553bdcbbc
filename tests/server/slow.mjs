// tests/server/slow.mjs PORT SLOW_CLIENT BYTES MS — clients that stop reading (docs/protocol.md, "Limits": unread
// reply), against a server started with --slow-reader-bytes BYTES --slow-reader-ms MS. The client is
// $G4_BUILD/tools/slow_client (tests/server/slow_client.c): a real socket with a small receive buffer that
// sends its request and then reads nothing. For a WebSocket chat and for an SSE stream of thousands of
// tokens: the stream pauses (g4_requests_paused), another client's request meanwhile completes and equals the
// same request alone, the paused stream then ends with `slow_reader` (the engine stream is freed), and once
// the client reads again the error is the last thing it gets (WebSocket: an `error` message after its
// tokens, no `done`; SSE: an error event, no [DONE], then the connection closes).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, finish, test, connect, sleep, TIMEOUT, serverMetrics, metricsUntil, startSlowClient, wsUpgrade,
  wsFrame, parseWsFrames } from './lib.mjs';

const [port, slowClient, bytesArg, msArg] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const limitBytes = Number(bytesArg), limitMs = Number(msArg);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'g4-slow-'));
const long = { messages: [{ role: 'user', content: 'Tell me everything, at length.' }], max_tokens: 6000, seed: 7 };
const other = { messages: [{ role: 'user', content: 'A short one, please.' }], max_tokens: 40, temperature: 0 };

const metrics = () => serverMetrics(base);
const until = (pred, what) => metricsUntil(base, pred, what);
const startSlow = (name, request) => startSlowClient(slowClient, port, path.join(tmp, name + '.req'), request);

// The part every test shares: the stream pauses, another request runs meanwhile, the paused one ends.
async function pausedThenEnded(name, alone) {
  const paused = await until((m) => m.paused === 1, `the ${name} stream to pause`);
  check(`${name}: the stream pauses once its client stops reading`, paused.paused === 1 && paused.running >= 1, paused);
  const c = await connect(port);
  const r = await c.chat('other', other);
  c.close();
  check(`${name}: another client's request completes meanwhile, equal to it alone`, r.end.type === 'done' &&
    r.text === alone.text && r.end.usage.completion_tokens === alone.end.usage.completion_tokens, { alone: alone.text, got: r.text, end: r.end });
  return until((m) => m.errors === paused.errors + 1 && m.running === 0 && m.paused === 0, `the ${name} stream to end`);
}

const c0 = await connect(port);
const alone = await c0.chat('alone', other);
c0.close();
check('the reference request runs alone', alone.end.type === 'done' && alone.text.length > 0, alone.end);

await test('WebSocket client that stops reading', async () => {
  const s = await startSlow('ws', Buffer.concat([wsUpgrade(port), wsFrame(JSON.stringify({ type: 'chat', id: 'deaf', ...long }))]));
  const ended = await pausedThenEnded('WebSocket', alone);
  check('WebSocket: the slow reader is ended and its engine stream freed', ended.running === 0, ended);
  // now read: every message the server held, then the error
  s.ch.stdin.write('go\n');
  const t0 = Date.now();
  let head = -1, frames = [];
  for (;;) {
    const b = s.bytes();
    head = b.indexOf('\r\n\r\n');
    frames = head >= 0 ? parseWsFrames(b.subarray(head + 4)) : [];
    if (frames.some((f) => /"type":"(error|done)"/.test(f.text))) break;
    if (Date.now() - t0 > TIMEOUT) throw new Error(`no end after reading ${b.length} bytes`);
    await sleep(100);
  }
  s.ch.stdin.end();
  await s.exited;
  const text = s.bytes().subarray(0, head).toString('latin1');
  const msgs = frames.map((f) => JSON.parse(f.text));
  const tokens = msgs.filter((m) => m.type === 'token' && m.id === 'deaf');
  const last = msgs.at(-1);
  const replyBytes = tokens.reduce((a, m) => a + Buffer.byteLength(m.text), 0);
  console.log(`   WebSocket: ${tokens.length} token messages, ${replyBytes} reply bytes, n = ${tokens.at(-1) && tokens.at(-1).n}; ${s.stderr().trim().replace(/\n/g, ', ')}`);
  check('WebSocket: the upgrade succeeded', text.startsWith('HTTP/1.1 101'), text.slice(0, 80));
  check('WebSocket: ready, then the tokens it had not read', msgs[0].type === 'ready' && tokens.length > 0);
  check('WebSocket: more than the unread-reply bound was generated', replyBytes > limitBytes && tokens.at(-1).n < long.max_tokens,
    { replyBytes, limitBytes });
  check('WebSocket: the stream ends with the slow_reader error naming the limits', last.type === 'error' && last.id === 'deaf' &&
    last.code === 'slow_reader' && last.message.includes(`${limitBytes} bytes`) && last.message.includes(`${limitMs} ms`), last);
  check('WebSocket: no done for it', !msgs.some((m) => m.type === 'done'));
});

await test('SSE client that stops reading', async () => {
  const body = JSON.stringify({ ...long, stream: true });
  const s = await startSlow('sse', Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
  const ended = await pausedThenEnded('SSE', alone);
  check('SSE: the slow reader is ended and its engine stream freed', ended.running === 0, ended);
  s.ch.stdin.write('go\n');
  const code = await Promise.race([s.exited, sleep(TIMEOUT).then(() => 'timeout')]);
  s.ch.stdin.end();
  const all = s.bytes().toString('utf8');
  const head = all.slice(0, all.indexOf('\r\n\r\n'));
  const events = all.slice(head.length + 4).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  const chunks = events.filter((e) => e.startsWith('{"id"')).map((e) => JSON.parse(e));
  const replyBytes = chunks.reduce((a, c) => a + Buffer.byteLength((c.choices[0] && c.choices[0].delta.content) || ''), 0);
  console.log(`   SSE: ${chunks.length} chunks, ${replyBytes} reply bytes`);
  check('SSE: the server closes the stream after the error (the client saw its end)', code === 0, code);
  check('SSE: 200 with text/event-stream', /^HTTP\/1\.1 200/.test(head) && /content-type: text\/event-stream/i.test(head), head);
  check('SSE: more than the unread-reply bound was generated', replyBytes > limitBytes, { replyBytes, limitBytes });
  const last = events.at(-1) ? JSON.parse(events.at(-1)) : null;
  check('SSE: the last event is the slow_reader error', last && last.error && last.error.code === 'slow_reader' &&
    last.error.message.includes(`${limitBytes} bytes`), events.at(-1));
  check('SSE: no [DONE]', !events.includes('[DONE]'));
});

await test('the server is idle and serves after the slow readers', async () => {
  const m = await metrics();
  const c = await connect(port);
  const r = await c.chat('after', other);
  c.close();
  check('nothing left running or paused; a new request completes', m.running === 0 && m.paused === 0 && r.end.type === 'done' &&
    r.text === alone.text, { m, end: r.end });
});

fs.rmSync(tmp, { recursive: true, force: true });
finish();
