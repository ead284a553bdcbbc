// tests/server/ws_access.mjs PORT — who may open the WebSocket on a server started with --api-key sekrit
// --max-conns-per-addr 3 --allow-origin http://app.example --max-streams 1 --max-queue 1: the key (header or
// ?key=), the Origin (the served host, an allowed origin, others refused), the path (/ws only), connections
// per address, and the queue limit (WebSocket error and HTTP 429).
import { check, finish, test, connect, httpJson } from './lib.mjs';

const port = process.argv[2];

async function refused(opts) {
  try { const c = await connect(port, opts); c.close(); return 0; } catch (e) { return e.status || -1; }
}

await test('access', async () => {
  check('no key: 401', await refused({}) === 401);
  check('wrong key: 401', await refused({ headers: { authorization: 'Bearer nope' } }) === 401);
  check('wrong key in the URL: 401', await refused({ path: '/ws?key=nope' }) === 401);
  check('other path: 404', await refused({ path: '/socket', headers: { authorization: 'Bearer sekrit' } }) === 404);
  check('foreign Origin: 403', await refused({ path: '/ws?key=sekrit', origin: 'http://evil.example' }) === 403);
  const a = await connect(port, { headers: { authorization: 'Bearer sekrit' } });
  check('key in the Authorization header', a.ready.type === 'ready');
  const b = await connect(port, { path: '/ws?key=sekrit', origin: 'http://app.example' });
  check('key in the URL, allowed Origin', b.ready.type === 'ready');
  const c = await connect(port, { path: '/ws?key=sekrit', origin: `http://127.0.0.1:${port}` });
  check('the served origin', c.ready.type === 'ready');
  // three connections are open from 127.0.0.1: the fourth is refused with 429
  const status = await refused({ path: '/ws?key=sekrit' });
  check('connections per address: the 4th gets 429', status === 429, status);
  const r = await a.chat('x', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  check('the open connections keep working', r.end.type === 'done', r.end);
  b.close(); c.close(); // room for the HTTP request below under the per-address limit
  // one stream, a queue of one: the third request is refused, on either transport
  // seeded: the random test model samples a stop id now and then, and a long request must stay long
  const long = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 3000, seed: 1 };
  a.send({ type: 'chat', id: 'l1', ...long });
  await a.wait(m => m.id === 'l1' && m.type === 'token');
  a.send({ type: 'chat', id: 'l2', ...long });
  await a.wait(m => m.id === 'l2' && m.type === 'queued');
  a.send({ type: 'chat', id: 'l3', ...long });
  const full = await a.wait(m => m.id === 'l3' && m.type === 'error');
  check('a full queue refuses a WebSocket chat', full.code === 'queue_full' && full.message.includes('queue is full'), full);
  const h = await httpJson(`http://127.0.0.1:${port}`, '/v1/chat/completions', long, { authorization: 'Bearer sekrit' });
  check('a full queue refuses an API request with 429', h.status === 429 && h.json.error.code === 'queue_full' &&
    h.json.error.type === 'rate_limit_error', h);
  a.send({ type: 'cancel', id: 'l1' });
  a.send({ type: 'cancel', id: 'l2' });
  const ends = [await a.reply('l1'), await a.reply('l2')];
  check('both cancel', ends.every(e => e.end.finish_reason === 'cancelled'), ends.map(e => e.end));
  a.close();
});
finish();
