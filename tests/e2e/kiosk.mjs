// tests/e2e/kiosk.mjs — `g4 serve --kiosk` in real Chromium (run by tests/scripts/test_e2e.sh): every path to
// the chat page gives the kiosk (/ and /index.html from the server; a chat page the browser already had,
// here a copy of index.html that the server's web folder holds as stale-chat.html, as a stale tab, a cache or
// a bookmark would have it, turns itself into the kiosk when ready says kiosk, keeping the ?key= query, and
// sends nothing), while the dashboard stays the dashboard (the operator's page) and gets its metrics.
//   node tests/e2e/kiosk.mjs BASE ARTIFACTS
import path from 'node:path';
import { check, finish, test, launch, recordFrames, TIMEOUT } from './lib.mjs';

const [BASE, ART] = process.argv.slice(2);
const browser = await launch();

async function open(url) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const frames = recordFrames(page);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  return { ctx, page, frames, errors };
}

const pageKind = (page) => page.evaluate(() => document.body.dataset.page);
const kioskReady = (page) => page.waitForFunction(() => document.body.dataset.page === 'kiosk' &&
  document.documentElement.dataset.ready && document.querySelector('#conn[data-state="ready"]'), null, { timeout: TIMEOUT });

for (const p of ['/', '/index.html']) {
  await test(`--kiosk: ${p} is the kiosk`, async () => {
    const { ctx, page, errors } = await open(BASE + p);
    await kioskReady(page);
    check(`${p}: the kiosk page, connected`, (await pageKind(page)) === 'kiosk' && await page.isVisible('#qr svg'));
    check(`${p}: no conversation list`, (await page.locator('#convs').count()) === 0);
    check(`${p}: no page errors`, errors.length === 0, errors);
    await ctx.close();
  });
}

await test('--kiosk: a chat page the browser already had becomes the kiosk', async () => {
  const { ctx, page, frames, errors } = await open(BASE + '/stale-chat.html?key=k1');
  await kioskReady(page);
  const url = new URL(page.url());
  check('it went to /kiosk', /^\/kiosk\/?$/.test(url.pathname), page.url());
  check('the query (an API key) came along', url.search === '?key=k1', url.search);
  check('the page is the kiosk, connected', (await pageKind(page)) === 'kiosk');
  const sent = frames.filter((f) => f.dir === 'sent' && f.json && f.json.type === 'chat');
  check('the chat page sent no request', sent.length === 0, sent);
  check('nothing was stored', (await page.evaluate(() => localStorage.length)) === 0);
  check('no page errors', errors.length === 0, errors);
  await page.screenshot({ path: path.join(ART, 'kiosk-from-chat.png') });
  await ctx.close();
});

await test('--kiosk: the dashboard stays the dashboard', async () => {
  const { ctx, page, errors } = await open(BASE + '/dashboard');
  await page.waitForFunction(() => /snapshots/.test((document.getElementById('v-time') || {}).textContent || ''), null, { timeout: TIMEOUT });
  check('the dashboard page, with metrics', (await pageKind(page)) === 'dashboard');
  check('no page errors', errors.length === 0, errors);
  await ctx.close();
});

await browser.close();
finish();
