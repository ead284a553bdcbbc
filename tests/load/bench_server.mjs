// tests/load/bench_server.mjs PORT [ROUNDS] [MAX_TOKENS] — a benchmark, not a test: requests per second and
// time to first token of `g4 serve` under the load of tests/load/concurrency.mjs (32 WebSocket clients and 8
// OpenAI streaming clients at once), plus one request alone for reference. Prints a markdown table row per
// measurement; tests/load/bench_server.sh runs it and docs/perf.md ("Server") keeps the figures.
import OpenAI from 'openai';
import { connect } from '../server/lib.mjs';

const [port, roundsArg, maxArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 3), maxTokens = Number(maxArg || 16);
const openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 600000 });

function body(i) {
  return { messages: [{ role: 'user', content: `Benchmark request ${i}: write about the number ${i}.` }],
    max_tokens: maxTokens, temperature: 1, seed: i };
}

// One request; returns {ttft, total, tokens} in ms from the moment it was sent.
async function viaWs(i) {
  const c = await connect(port);
  const t0 = performance.now();
  let first = 0;
  c.send({ type: 'chat', id: 'b', ...body(i) });
  for (;;) {
    const m = await c.wait(x => x.id === 'b' && ['token', 'done', 'error'].includes(x.type));
    if (m.type === 'token' && !first) first = performance.now();
    if (m.type === 'error') throw new Error(m.message);
    if (m.type === 'done') {
      c.close();
      return { ttft: first - t0, total: performance.now() - t0, tokens: m.usage.completion_tokens };
    }
  }
}

async function viaOpenAI(i) {
  const t0 = performance.now();
  let first = 0, tokens = 0;
  const s = await openai.chat.completions.create({ model: 'm', ...body(i), stream: true, stream_options: { include_usage: true } });
  for await (const ch of s) {
    if (!first && ch.choices.length && ch.choices[0].delta.content) first = performance.now();
    if (ch.usage) tokens = ch.usage.completion_tokens;
  }
  return { ttft: first - t0, total: performance.now() - t0, tokens };
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };

async function load(n_ws, n_oa, seed0) {
  const t0 = performance.now();
  const jobs = [];
  for (let i = 0; i < n_ws; i++) jobs.push(viaWs(seed0 + i));
  for (let i = 0; i < n_oa; i++) jobs.push(viaOpenAI(seed0 + n_ws + i));
  const r = await Promise.all(jobs);
  const wall = (performance.now() - t0) / 1000;
  const tokens = r.reduce((a, x) => a + x.tokens, 0);
  return { n: r.length, wall, rps: r.length / wall, tps: tokens / wall,
    p50: pct(r.map(x => x.ttft), 0.5), p95: pct(r.map(x => x.ttft), 0.95), max: Math.max(...r.map(x => x.ttft)) };
}

const f = (x, d = 1) => x.toFixed(d);
console.log('| load | requests | wall s | requests/s | tokens/s | TTFT p50 ms | TTFT p95 ms | TTFT max ms |');
console.log('|---|---|---|---|---|---|---|---|');
{
  const alone = [];
  for (let i = 0; i < 5; i++) alone.push(await viaWs(1000 + i));
  const ttft = alone.map(x => x.ttft), wall = alone.reduce((a, x) => a + x.total, 0) / 1000;
  console.log(`| 1 WebSocket client, one request at a time (5) | 5 | ${f(wall, 2)} | ${f(5 / wall, 2)} | ` +
    `${f(alone.reduce((a, x) => a + x.tokens, 0) / wall)} | ${f(pct(ttft, 0.5))} | ${f(pct(ttft, 0.95))} | ${f(Math.max(...ttft))} |`);
}
for (let k = 0; k < rounds; k++) {
  const r = await load(32, 8, 2000 + 100 * k);
  console.log(`| 32 WebSocket + 8 OpenAI streaming, round ${k + 1} | ${r.n} | ${f(r.wall, 2)} | ${f(r.rps, 2)} | ${f(r.tps)} | ` +
    `${f(r.p50)} | ${f(r.p95)} | ${f(r.max)} |`);
}
