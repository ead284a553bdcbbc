// tests/server/shutdown.mjs PORT PID SIGNAL — what clients see when the server is stopped (protocol.md,
// "Shutdown"): a running and a queued WebSocket request, an SSE stream and a whole (non-streamed) request are
// in flight when SIGNAL arrives; each must end with a "shutdown" error (WebSocket `error`, SSE error event,
// HTTP 503 for the request still waiting), and the WebSocket must close with 1001. The server runs with two
// streams: the WebSocket request and the SSE stream run, the others wait. The shell script then checks the
// exit status.
import { check, finish, test, connect, sleep } from './lib.mjs';

const [port, pid, signal] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
// seeded: the random test model samples a stop id now and then; seed 1 runs all 3000 tokens
const long = { messages: [{ role: 'user', content: 'Go on forever.' }], max_tokens: 3000, seed: 1 };

await test(`shutdown on ${signal}`, async () => {
  const c = await connect(port);
  c.send({ type: 'chat', id: 'run', ...long });
  await c.wait(m => m.id === 'run' && m.type === 'token');
  const res = await fetch(base + '/v1/chat/completions', { method: 'POST', body: JSON.stringify({ ...long, stream: true }) });
  const reader = res.body.getReader();
  let s = '';
  while (!s.includes('"content":"')) s += new TextDecoder().decode((await reader.read()).value);
  const sse = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return s;
      s += new TextDecoder().decode(value);
    }
  })();
  c.send({ type: 'chat', id: 'wait', ...long });           // both streams busy: this one queues
  const q = await c.wait(m => m.id === 'wait' && m.type === 'queued');
  const whole = fetch(base + '/v1/chat/completions', { method: 'POST', body: JSON.stringify(long) })
    .then(async r => ({ status: r.status, body: await r.json() }));
  await sleep(300);
  process.kill(Number(pid), signal);
  const run = await c.reply('run'), wait = await c.reply('wait');
  check('the queued request was queued', q.position === 1, q);
  check('the running WebSocket request ends with a shutdown error', run.end.type === 'error' && run.end.code === 'shutdown' &&
    run.text.length > 0, run.end);
  check('the queued WebSocket request ends with a shutdown error', wait.end.type === 'error' && wait.end.code === 'shutdown', wait.end);
  for (let i = 0; i < 100 && !c.closed; i++) await sleep(50);
  check('the WebSocket closes with 1001 (going away)', c.closed && c.closed.code === 1001, c.closed);
  await sse;
  check('the SSE stream ends with a shutdown error event', /data: \{"error":\{[^\n]*"code":"shutdown"/.test(s) && !s.includes('[DONE]'),
    s.slice(-300));
  const w = await whole;
  check('the waiting whole request gets 503 shutdown', w.status === 503 && w.body.error.code === 'shutdown', w);
});
finish();
