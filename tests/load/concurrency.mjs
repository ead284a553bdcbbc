// tests/load/concurrency.mjs PORT SERVER_PID — the exactness contract under load (design.md): 32 WebSocket
// clients and 8 OpenAI streaming clients at once, beside clients that disconnect mid-stream and one that
// never reads, on a server with fewer streams than requests (so most wait in the queue). Every well-behaved
// reply must equal the same request run alone, greedy and seeded; none may fail; queue positions only go
// down; the server's memory, measured from before the first request, stays bounded, and a second round adds
// next to nothing (no growth per round).
import fs from 'node:fs';
import OpenAI from 'openai';
import { check, finish, test, connect, sleep } from '../server/lib.mjs';

const [port, pid] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const sanitized = process.env.G4_SANITIZED === '1';
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });

// 40 distinct requests: every other one greedy, the rest seeded sampling; lengths vary.
const reqs = Array.from({ length: 40 }, (_, i) => ({
  kind: i < 32 ? 'ws' : 'openai',
  body: {
    messages: [{ role: 'user', content: `Request ${i}: tell me about the number ${i * 37 % 101}.` }],
    max_tokens: 5 + (i % 6),
    temperature: i % 2 ? 1 : 0,
    ...(i % 2 ? { seed: 1000 + i } : {}),
  },
}));

async function runWs(r, i) {
  const c = await connect(port);
  const out = await c.chat(`r${i}`, r.body);
  c.close();
  return { text: out.text, end: out.end, queued: out.queued, error: out.end.type === 'error' ? out.end : null };
}

async function runOpenAI(r) {
  const s = await openai.chat.completions.create({ model: 'm', ...r.body, stream: true });
  let text = '', finish = null;
  for await (const ch of s) {
    if (ch.choices.length) {
      text += ch.choices[0].delta.content || '';
      finish = ch.choices[0].finish_reason || finish;
    }
  }
  return { text, end: { finish_reason: finish }, queued: [], error: null };
}

function run(r, i) {
  return (r.kind === 'ws' ? runWs(r, i) : runOpenAI(r)).catch(e => ({ error: String(e), text: null, queued: [] }));
}

async function idle() {
  for (let i = 0; i < 600; i++) {
    const t = await (await fetch(base + '/metrics')).text();
    const v = n => Number((t.split('\n').find(l => l.startsWith(n + ' ')) || ' NaN').split(' ')[1]);
    if (v('g4_requests_running') === 0 && v('g4_requests_waiting') === 0) return true;
    await sleep(100);
  }
  return false;
}

async function metricValue(name) {
  const t = await (await fetch(base + '/metrics')).text();
  return Number((t.split('\n').find((l) => l.startsWith(name + ' ')) || ' NaN').split(' ')[1]);
}

function rssKiB() {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(s)[1]);
}

// Clients that misbehave beside the others: two WebSockets and one SSE stream that hang up after their first
// token, and a WebSocket that stops reading its socket (resumed after the round to check it lost nothing).
async function rude(tag) {
  const quitters = [0, 1].map(async k => {
    const c = await connect(port);
    c.send({ type: 'chat', id: 'q', messages: [{ role: 'user', content: `quitter ${tag}${k}` }], max_tokens: 400 });
    await c.wait(m => m.id === 'q' && m.type === 'token');
    c.ws.terminate();
  });
  const sse = (async () => {
    const s = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'abandon' }], max_tokens: 400, stream: true });
    for await (const ch of s) { void ch; s.controller.abort(); break; }
  })().catch(() => {});
  const deaf = await connect(port);
  deaf.send({ type: 'chat', id: 'deaf', messages: [{ role: 'user', content: `deaf ${tag}` }], max_tokens: 60, temperature: 0 });
  deaf.ws._socket.pause();
  return { wait: Promise.all([...quitters, sse]), deaf };
}

async function round(name, solo) {
  const bad = rude(name);
  const t0 = Date.now();
  const got = await Promise.all(reqs.map(run));
  const secs = (Date.now() - t0) / 1000;
  const { wait, deaf } = await bad;
  await wait;
  const errors = got.filter(g => g.error);
  check(`${name}: no errors for the 40 well-behaved clients`, errors.length === 0, errors.slice(0, 3));
  const diff = got.map((g, i) => i).filter(i => got[i].text !== solo[i].text);
  check(`${name}: every reply equals the same request alone (20 greedy, 20 seeded)`, diff.length === 0,
    diff.slice(0, 3).map(i => ({ i, alone: solo[i].text, together: got[i].text })));
  const queued = got.filter(g => g.queued.length);
  check(`${name}: requests past the streams wait with positions that only go down`, queued.length >= 8 &&
    queued.every(g => g.queued.every((p, k) => p >= 1 && (k === 0 || p < g.queued[k - 1]))),
    queued.slice(0, 3).map(g => g.queued));
  deaf.ws._socket.resume();
  const dr = await deaf.reply('deaf');
  check(`${name}: the client that did not read gets its whole reply once it reads`, dr.end.type === 'done' &&
    dr.end.usage.completion_tokens >= 1, dr.end);
  deaf.close();
  check(`${name}: the server goes idle`, await idle());
  console.log(`   ${name}: 40 requests in ${secs.toFixed(1)} s`);
}

await test('load', async () => {
  const rssStart = rssKiB();
  const solo = [];
  for (let i = 0; i < reqs.length; i++) solo.push(await run(reqs[i], i));
  check('alone: every request succeeds', solo.every(s => !s.error && s.text !== null), solo.filter(s => s.error).slice(0, 2));
  check('alone: no request waits', solo.every(s => s.queued.length === 0));
  const rss0 = rssKiB();
  await round('round 1', solo);
  const rss1 = rssKiB();
  await round('round 2', solo);
  const rss2 = rssKiB();
  const engineKiB = (await metricValue('g4_engine_memory_bytes')) / 1024;
  console.log(`   resident memory: ${rssStart} KiB at the start, ${rss0} after the solo runs, ${rss1} after round 1, ` +
    `${rss2} after round 2; the engine holds ${Math.round(engineKiB)} KiB`);
  if (!sanitized) {
    // Measured on the build machine (CPU engine, 2 cores, Dec 2026, 7 runs): from the start (no request yet)
    // to after round 1 +42.3 to +45.4 MiB, most of it the engine's weights and buffers becoming resident on
    // first use; from after the solo runs to after round 1 +8.6 to +11.6 MiB (the other streams' KV cache, 40
    // clients' buffers); round 2 +0.2 MiB. The bounds leave about 1.4x, 2x and 20x of that. The bound from the
    // start holds for the CPU engine only: on CUDA the first kernels load libraries into host memory.
    if (!(await metricValue('g4_gpu_memory_used_bytes') > 0))
      check('memory: from before the first request to after a round ≤ +64 MiB', rss1 - rssStart <= 64 * 1024, { rssStart, rss1 });
    check('memory: a round of load after the solo runs ≤ +24 MiB', rss1 - rss0 <= 24 * 1024, { rss0, rss1 });
    check('memory: back to its level after another round (≤ +4 MiB)', rss2 - rss1 <= 4 * 1024, { rss1, rss2 });
  }
});
finish();
