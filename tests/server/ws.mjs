// tests/server/ws.mjs PORT PATCHES_JSON PATCHES_U8 IMAGE_PNG — the WebSocket protocol (docs/protocol.md) with
// the npm `ws` client against a running `g4 serve` on the tiny model: ready, streaming replies (equal to the
// OpenAI endpoint's for the same request), seeds, stop strings, cancel, per-connection limits, metrics
// subscription, image patch frames (equal to the same image sent as a file), every kind of bad input
// (each answered with an error while the connection keeps working), the limits (uploads waiting per
// connection by count and bytes, stop-string length, prompt_too_long, the draft field's type), and a socket
// closed mid-stream.
import fs from 'node:fs';
import { check, finish, test, connect, frame, httpJson, sleep, TIMEOUT } from './lib.mjs';

const [port, patchesJson, patchesU8, imagePng] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const hello = [{ role: 'user', content: 'Hello there' }];
// seeded: the random test model samples a stop id now and then; seed 1 runs all 3000 tokens
const long = { messages: hello, max_tokens: 3000, seed: 1 };
const info = JSON.parse(fs.readFileSync(patchesJson, 'utf8'));
const rows = fs.readFileSync(patchesU8);
const pngUri = 'data:image/png;base64,' + fs.readFileSync(imagePng).toString('base64');

async function metric(name) {
  const r = await fetch(base + '/metrics');
  const t = await r.text();
  const line = t.split('\n').find(l => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

const c = await connect(port);

await test('ready', async () => {
  const r = c.ready;
  check('ready has no lan_url on 127.0.0.1', r.lan_url === undefined, r.lan_url);
  check('ready names the protocol, the model and its limits', r.protocol === 1 && r.model === 'test-model' &&
    r.context > 0 && r.limits.message_bytes === 8 * 1024 * 1024 && r.limits.images_per_request === 16 &&
    r.max_soft_tokens === 280, r);
  check('ready gives the generation_config defaults', r.defaults.top_k === 64 && r.defaults.top_p === 0.95 &&
    r.defaults.temperature === 1, r.defaults);
});

await test('streaming', async () => {
  const body = { messages: hello, max_tokens: 12, temperature: 0 };
  const a = await c.chat('g1', body);
  const http = await httpJson(base, '/v1/chat/completions', body);
  check('greedy reply streams and ends with done', a.end.type === 'done' && a.text.length > 0 && a.tokens >= 1, a.end);
  check('WebSocket reply equals the OpenAI endpoint\'s', http.status === 200 &&
    http.json.choices[0].message.content === a.text, { ws: a.text, http: http.json });
  check('done carries usage and timings', a.end.usage.completion_tokens === http.json.usage.completion_tokens &&
    a.end.usage.prompt_tokens === http.json.usage.prompt_tokens && a.end.ttft_ms > 0 &&
    ['stop', 'length'].includes(a.end.finish_reason), a.end);
  const s1 = await c.chat('s1', { messages: hello, max_tokens: 16, temperature: 1, seed: 42 });
  const s2 = await c.chat('s2', { messages: hello, max_tokens: 16, temperature: 1, seed: 42 });
  const s3 = await c.chat('s3', { messages: hello, max_tokens: 16, temperature: 1, seed: 43 });
  check('same seed, same reply', s1.text === s2.text && s1.end.seed === 42, [s1.text, s2.text]);
  check('another seed, another reply', s1.text !== s3.text, [s1.text, s3.text]);
  // a stop string from the middle of the reply: the reply ends before its first occurrence
  const chars = [...s1.text];
  const stop = chars[Math.floor(chars.length / 2)];
  const cut = s1.text.slice(0, s1.text.indexOf(stop));
  const s4 = await c.chat('s4', { messages: hello, max_tokens: 16, temperature: 1, seed: 42, stop: [stop] });
  check('stop string cuts the reply', s4.text === cut && s4.end.finish_reason === 'stop', { stop, cut, got: s4.text });
});

await test('cancel', async () => {
  c.send({ type: 'chat', id: 'long', ...long });
  await c.wait(m => m.id === 'long' && m.type === 'token');
  c.send({ type: 'cancel', id: 'long' });
  const r = await c.reply('long');
  check('cancel ends the reply with done/cancelled', r.end.type === 'done' && r.end.finish_reason === 'cancelled' &&
    r.end.usage.completion_tokens < 3000, r.end);
  c.send({ type: 'cancel', id: 'nobody' });
  const e = await c.wait(m => m.type === 'error' && m.id === 'nobody');
  check('cancel of an unknown id', e.code === 'unknown_id', e);
});

await test('per-connection limits', async () => {
  c.send({ type: 'chat', id: 'dup', ...long });
  c.send({ type: 'chat', id: 'dup', messages: hello, max_tokens: 5 });
  const e = await c.wait(m => m.type === 'error' && m.id === 'dup');
  check('a running id cannot be reused', e.code === 'duplicate_id', e);
  for (let i = 1; i < 9; i++) c.send({ type: 'chat', id: `many${i}`, ...long });
  const e2 = await c.wait(m => m.type === 'error' && m.id === 'many8');
  check('at most 8 running requests per connection', e2.code === 'too_many_requests', e2);
  for (const id of ['dup', 'many1', 'many2', 'many3', 'many4', 'many5', 'many6', 'many7']) c.send({ type: 'cancel', id });
  const ends = await Promise.all(['dup', 'many1', 'many2', 'many3', 'many4', 'many5', 'many6', 'many7'].map(id => c.reply(id)));
  check('all of them cancel', ends.every(r => r.end.finish_reason === 'cancelled'), ends.map(r => r.end));
});

await test('metrics subscription', async () => {
  c.send({ type: 'subscribe', topic: 'metrics' });
  const t0 = Date.now();
  const got = [];
  while (Date.now() - t0 < 2000) got.push(await c.wait(m => m.type === 'metrics'));
  const rate = got.length / ((Date.now() - t0) / 1000);
  check('metrics arrive at 2 Hz or more', rate >= 2, `${got.length} in ${Date.now() - t0} ms`);
  const m = got[got.length - 1];
  check('a snapshot has the documented fields', ['running', 'waiting', 'streams_max', 'prefill_tokens_per_s',
    'decode_tokens_per_s', 'kv_usage', 'prompt_tokens', 'generated_tokens', 'ttft_ms_p50', 'drafts_accepted',
    'prompt_cache_hits', 'gpu_memory_bytes', 'connections'].every(k => typeof m[k] === 'number'), m);
  c.send({ type: 'unsubscribe', topic: 'metrics' });
  await sleep(600);
  c.inbox = c.inbox.filter(x => x.type !== 'metrics');
  await sleep(1000);
  check('unsubscribe stops them', !c.inbox.some(x => x.type === 'metrics'));
});

await test('bad input', async () => {
  const cases = [
    ['malformed JSON', '{"type": "chat", ', 'bad_json'],
    ['not an object', '[1, 2, 3]', 'bad_json'],
    ['trailing garbage', '{"type":"subscribe","topic":"metrics"} x', 'bad_json'],
    ['unknown type', '{"type": "launch"}', 'unknown_type'],
    ['type of the wrong type', '{"type": 7}', 'bad_request'],
    ['messages not an array', JSON.stringify({ type: 'chat', id: 'b1', messages: 'hi' }), 'bad_request'],
    ['id not a string', JSON.stringify({ type: 'chat', id: 5, messages: hello }), 'bad_request'],
    ['id too long', JSON.stringify({ type: 'chat', id: 'x'.repeat(65), messages: hello }), 'bad_request'],
    ['temperature a string', JSON.stringify({ type: 'chat', id: 'b2', messages: hello, temperature: 'hot' }), 'bad_request', 'temperature'],
    ['top_p out of range', JSON.stringify({ type: 'chat', id: 'b3', messages: hello, top_p: 0 }), 'bad_request', 'top_p'],
    ['max_tokens not an integer', JSON.stringify({ type: 'chat', id: 'b4', messages: hello, max_tokens: 1.5 }), 'bad_request', 'max_tokens'],
    ['too many stop strings', JSON.stringify({ type: 'chat', id: 'b5', messages: hello, stop: Array(9).fill('x') }), 'bad_request', 'stop'],
    ['unknown role', JSON.stringify({ type: 'chat', id: 'b6', messages: [{ role: 'wizard', content: 'x' }] }), 'bad_request', 'wizard'],
    ['remote image URL', JSON.stringify({ type: 'chat', id: 'b7', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://example.com/a.png' } }] }] }), 'image_error', 'data: URIs'],
    ['17 images', JSON.stringify({ type: 'chat', id: 'b8', messages: [{ role: 'user', content: Array(17).fill({ type: 'image', image_id: 1 }) }] }), 'bad_request', '16'],
    ['unknown image_id', JSON.stringify({ type: 'chat', id: 'b9', messages: [{ role: 'user', content: [{ type: 'image', image_id: 999 }] }] }), 'image_error', '999'],
    ['subscribe to nothing', '{"type": "subscribe", "topic": "gossip"}', 'bad_request'],
  ];
  for (const [name, raw, code, needle] of cases) {
    c.send(raw);
    const e = await c.wait(m => m.type === 'error');
    check(`bad input: ${name}`, e.code === code && (!needle || e.message.includes(needle)), e);
  }
  c.ws.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { binary: false });
  const u = await c.wait(m => m.type === 'error');
  check('bad input: invalid UTF-8 text frame', u.code === 'invalid_utf8', u);
  c.send(JSON.stringify({ type: 'chat', id: 'huge', messages: [{ role: 'user', content: 'a'.repeat(9 * 1024 * 1024) }] }));
  const big = await c.wait(m => m.type === 'error');
  check('bad input: a 9 MiB message', big.code === 'message_too_large' && big.message.includes('8388608'), big);
  // a message in fragments is reassembled
  const whole = JSON.stringify({ type: 'chat', id: 'frag', messages: hello, max_tokens: 3, temperature: 0 });
  const half = Math.floor(whole.length / 2);
  c.ws.send(whole.slice(0, half), { fin: false });
  c.ws.send(whole.slice(half), { fin: true });
  const f = await c.reply('frag');
  check('a fragmented message is reassembled', f.end.type === 'done', f.end);
  const after = await c.chat('after', { messages: hello, max_tokens: 4, temperature: 0 });
  check('the connection keeps working after bad input', after.end.type === 'done' && after.text.length > 0, after);
});

await test('image frames', async () => {
  const { grid_w: gw, grid_h: gh, n } = info;
  check('patches file matches its summary', rows.length === n * 6912 && gw * gh === n);
  const half = Math.floor(n / 2);
  c.ws.send(frame(7, gw, gh, half, n - half, rows));   // second half first: order is free
  c.ws.send(frame(7, gw, gh, 0, half, rows));
  const ack = await c.wait(m => m.type === 'image');
  check('an uploaded image is acknowledged when complete', ack.image_id === 7 && ack.patches === n, ack);
  const content = t => [{ type: 'text', text: 'What is this?' }, t];
  const up = await c.chat('img1', { messages: [{ role: 'user', content: content({ type: 'image', image_id: 7 }) }], max_tokens: 8, temperature: 0 });
  const file = await c.chat('img2', { messages: [{ role: 'user', content: content({ type: 'image_url', image_url: { url: pngUri } }) }], max_tokens: 8, temperature: 0 });
  check('a chat with uploaded patches runs', up.end.type === 'done' && up.end.usage.prompt_tokens > n, up.end);
  check('uploaded patches and the same file as a data URI give the same reply', up.text === file.text &&
    up.end.usage.prompt_tokens === file.end.usage.prompt_tokens, { up: up.text, file: file.text });
  const reuse = await c.chat('img3', { messages: [{ role: 'user', content: content({ type: 'image', image_id: 7 }) }], max_tokens: 2 });
  check('an upload is used by one chat only', reuse.end.type === 'error' && reuse.end.code === 'image_error', reuse.end);
});

await test('lying frames', async () => {
  const { grid_w: gw, grid_h: gh, n } = info;
  const lies = [
    ['a frame shorter than its header', Buffer.from('G4IP'), 'bad_frame'],
    ['bad magic', frame(8, gw, gh, 0, 1, rows, { magic: 'PNG!' }), 'bad_frame'],
    ['unknown version', frame(8, gw, gh, 0, 1, rows, { version: 9 }), 'bad_frame'],
    ['reserved flags set', frame(8, gw, gh, 0, 1, rows, { flags: 1 }), 'bad_frame'],
    ['more rows announced than sent', frame(8, gw, gh, 0, 2, rows).subarray(0, 24 + 6912), 'bad_frame'],
    ['more bytes than announced', Buffer.concat([frame(8, gw, gh, 0, 1, rows), Buffer.alloc(10)]), 'bad_frame'],
    ['an empty grid', frame(8, 0, gh, 0, 1, rows), 'bad_frame'],
    ['a grid over 1120 patches', frame(8, 40, 40, 0, 1, rows), 'bad_frame'],
    ['rows past the grid', frame(8, 2, 2, 3, 2, Buffer.concat([rows, rows])), 'bad_frame'],
  ];
  for (const [name, buf, code] of lies) {
    c.ws.send(buf);
    const e = await c.wait(m => m.type === 'error');
    check(`lying frame: ${name}`, e.code === code, e);
  }
  c.ws.send(frame(9, gw, gh, 0, 1, rows));
  c.ws.send(frame(9, gw, gh, 0, 1, rows));
  const dup = await c.wait(m => m.type === 'error');
  check('lying frame: a row sent twice', dup.code === 'bad_frame' && dup.message.includes('twice'), dup);
  c.ws.send(frame(10, gw, gh, 0, 1, rows));
  c.ws.send(frame(10, gw + 1, gh, 1, 1, rows));
  const grid = await c.wait(m => m.type === 'error');
  check('lying frame: a grid that changes between frames', grid.code === 'bad_frame' && grid.message.includes('differs'), grid);
  c.ws.send(frame(11, gw, gh, 0, Math.min(3, n - 1), rows));
  const partial = await c.chat('part', { messages: [{ role: 'user', content: [{ type: 'image', image_id: 11 }] }], max_tokens: 2 });
  check('an incomplete upload cannot be used', partial.end.code === 'image_error' && partial.end.message.includes('incomplete'), partial.end);
  const bad64 = await c.chat('b64', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO!!!!' } }] }], max_tokens: 2 });
  check('bad base64 in a data URI', bad64.end.code === 'image_error' && bad64.end.message.includes('base64'), bad64.end);
  const notimg = await c.chat('txt', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' + Buffer.from('hello, not an image').toString('base64') } }] }], max_tokens: 2 });
  check('a data URI that is not an image', notimg.end.code === 'image_error', notimg.end);
  const ok = await c.chat('ok2', { messages: hello, max_tokens: 3, temperature: 0 });
  check('the connection keeps working after lying frames', ok.end.type === 'done', ok.end);
});

await test('limits', async () => {
  // uploads waiting per connection: 16 images ...
  const u = await connect(port);
  const one = Buffer.alloc(6912, 7);
  for (let id = 100; id < 116; id++) u.ws.send(frame(id, 1, 1, 0, 1, one));
  const acks = [];
  for (let k = 0; k < 16; k++) acks.push(await u.wait((m) => m.type === 'image' || m.type === 'error'));
  check('16 uploads wait on one connection', acks.every((m) => m.type === 'image' && m.patches === 1), acks.filter((m) => m.type !== 'image'));
  u.ws.send(frame(116, 1, 1, 0, 1, one));
  const over = await u.wait((m) => m.type === 'error' || m.type === 'image');
  check('the 17th is refused, naming the limits', over.type === 'error' && over.code === 'bad_frame' &&
    over.message.includes('16 images') && over.message.includes('64 MiB'), over);
  const used = await u.chat('use100', { messages: [{ role: 'user', content: [{ type: 'image', image_id: 100 }] }], max_tokens: 2 });
  u.ws.send(frame(117, 1, 1, 0, 1, one));
  const again = await u.wait((m) => m.type === 'error' || m.type === 'image');
  check('a chat that uses an upload makes room for another', used.end.type === 'done' && again.type === 'image' && again.image_id === 117, { used: used.end, again });
  u.close();
  // ... and 64 MiB of patches: eight 1120-patch images (61.9 MB) fit, a ninth does not
  const v = await connect(port);
  for (let id = 200; id < 209; id++) v.ws.send(frame(id, 35, 32, 0, 1120, null));
  const big = [];
  for (let k = 0; k < 9; k++) big.push(await v.wait((m) => m.type === 'image' || m.type === 'error', 5 * TIMEOUT));
  check('eight 1120-patch uploads fit in 64 MiB', big.slice(0, 8).every((m) => m.type === 'image' && m.patches === 1120), big.slice(0, 8));
  check('the ninth is refused, naming the limits', big[8].type === 'error' && big[8].code === 'bad_frame' && big[8].message.includes('64 MiB'), big[8]);
  v.close();
  // a stop string over 256 bytes
  c.send({ type: 'chat', id: 'stop257', messages: hello, stop: ['x'.repeat(257)] });
  const st = await c.wait((m) => m.id === 'stop257');
  check('a stop string of 257 bytes: bad_request naming stop and 256', st.type === 'error' && st.code === 'bad_request' &&
    st.message.includes('stop') && st.message.includes('256'), st);
  const st256 = await c.chat('stop256', { messages: hello, max_tokens: 2, stop: ['x'.repeat(256)] });
  check('a stop string of 256 bytes is accepted', st256.end.type === 'done', st256.end);
  // prompts too long for the context, or for the prompt limit
  const ctx = await c.chat('ctx', { messages: hello, max_tokens: 9000 });
  check('max_tokens past the context: prompt_too_long naming the context', ctx.end.type === 'error' &&
    ctx.end.code === 'prompt_too_long' && ctx.end.message.includes('8192'), ctx.end);
  const huge = await c.chat('huge', { messages: [{ role: 'user', content: 'hello '.repeat(33000) }], max_tokens: 1 });
  check('a prompt over 32768 tokens: prompt_too_long naming the limit', huge.end.type === 'error' &&
    huge.end.code === 'prompt_too_long' && huge.end.message.includes('32768'), huge.end);
  // draft: a boolean
  for (const bad of ['yes', 1, {}, [true]]) {
    c.send({ type: 'chat', id: 'd1', messages: hello, draft: bad });
    const d = await c.wait((m) => m.id === 'd1');
    check(`draft ${JSON.stringify(bad)}: bad_request naming the field`, d.type === 'error' && d.code === 'bad_request' &&
      d.message.includes('draft') && d.message.includes('true or false'), d);
  }
  const dt = await c.chat('d2', { messages: hello, max_tokens: 3, temperature: 0, draft: true });
  const df = await c.chat('d3', { messages: hello, max_tokens: 3, temperature: 0, draft: false });
  check('draft true and false are accepted, with the same reply (no drafter yet)', dt.end.type === 'done' && df.end.type === 'done' &&
    dt.text === df.text, [dt.end, df.end]);
});

await test('closed socket', async () => {
  const before = await metric('g4_requests_total{finish="cancelled"}');
  const d = await connect(port);
  d.send({ type: 'chat', id: 'gone', ...long });
  await d.wait(m => m.id === 'gone' && m.type === 'token');
  d.ws.terminate();
  let after = before, running = 1;
  for (let i = 0; i < 100 && (after <= before || running > 0); i++) {
    await sleep(100);
    after = await metric('g4_requests_total{finish="cancelled"}');
    running = await metric('g4_requests_running');
  }
  check('a closed socket cancels its stream', after === before + 1 && running === 0, { before, after, running });
});

c.close();
finish();
