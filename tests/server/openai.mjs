// tests/server/openai.mjs PORT IMAGE_PNG — the official `openai` npm package as a client of g4's
// OpenAI-compatible API: non-streamed and streamed completions (equal to each other for the same seed),
// stream_options.include_usage, an image as a data URI, /v1/models, and errors surfacing as APIError with
// OpenAI's status and code.
import fs from 'node:fs';
import OpenAI from 'openai';
import { check, finish, test } from './lib.mjs';

const [port, png] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name three colours.' }];

await test('models', async () => {
  const list = await client.models.list();
  check('models.list sees the served model', list.data.length === 1 && list.data[0].id === 'test-model', list.data);
});

let whole;
await test('non-streamed', async () => {
  whole = await client.chat.completions.create({ model: 'test-model', messages, max_tokens: 12, temperature: 0.8, seed: 7 });
  check('a whole completion', whole.object === 'chat.completion' && whole.choices[0].message.role === 'assistant' &&
    typeof whole.choices[0].message.content === 'string' && whole.usage.completion_tokens >= 1 &&
    ['stop', 'length'].includes(whole.choices[0].finish_reason), whole);
});

await test('streamed', async () => {
  const stream = await client.chat.completions.create({ model: 'test-model', messages, max_tokens: 12, temperature: 0.8,
    seed: 7, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const ch of stream) {
    chunks++;
    if (ch.choices.length) {
      text += ch.choices[0].delta.content || '';
      if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
    }
    if (ch.usage) usage = ch.usage;
  }
  check('streamed text equals the whole completion for the same seed', text === whole.choices[0].message.content,
    { text, whole: whole.choices[0].message.content });
  check('the stream ends with a finish reason and usage', finish === whole.choices[0].finish_reason &&
    usage && usage.completion_tokens === whole.usage.completion_tokens && chunks >= 3, { finish, usage });
});

await test('image', async () => {
  const url = 'data:image/png;base64,' + fs.readFileSync(png).toString('base64');
  const content = [{ type: 'text', text: 'Describe the picture.' }, { type: 'image_url', image_url: { url } }];
  const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content }], max_tokens: 6, temperature: 0 });
  const low = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: [content[0], { type: 'image_url', image_url: { url, detail: 'low' } }] }], max_tokens: 1, temperature: 0 });
  const text = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Describe the picture.' }], max_tokens: 1 });
  check('an image data URI adds its soft tokens to the prompt', r.usage.prompt_tokens > text.usage.prompt_tokens + 200 &&
    r.choices[0].message.content.length > 0, { image: r.usage, text: text.usage });
  check('detail: low uses a 70-token budget', low.usage.prompt_tokens < r.usage.prompt_tokens &&
    low.usage.prompt_tokens <= text.usage.prompt_tokens + 70 + 8, { low: low.usage, auto: r.usage });
});

await test('errors', async () => {
  try {
    await client.chat.completions.create({ model: 'x', messages, temperature: 7 });
    check('a bad temperature is an APIError', false, 'no error');
  } catch (e) {
    check('a bad temperature is an APIError 400', e instanceof OpenAI.APIError && e.status === 400 &&
      e.code === 'invalid_value' && /temperature/.test(e.message), { status: e.status, code: e.code, message: e.message });
  }
  try {
    await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,@@@' } }] }] });
    check('a bad image is an APIError', false, 'no error');
  } catch (e) {
    check('a bad image is an APIError 400 image_error', e.status === 400 && e.code === 'image_error', { status: e.status, code: e.code });
  }
  try {
    const s = await client.chat.completions.create({ model: 'x', messages, max_tokens: 100000, stream: true });
    for await (const ch of s) void ch;
    check('a stream past the context is an APIError', false, 'no error');
  } catch (e) {
    check('a stream past the context is an APIError 400 before any chunk', e.status === 400 &&
      e.code === 'context_length_exceeded', { status: e.status, code: e.code });
  }
});

finish();
