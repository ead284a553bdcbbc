// webui/g4.js — the thin glue between the page, the socket, the image worker and the client's C
// (g4client.wasm). It decides nothing: DOM events, socket events and worker answers go to the app_* entry
// points (webui/app.h); the C calls back through the small named functions of window.G4 (webui/plat.h).
// The page says which program it is with <body data-page="chat|kiosk|dashboard">.
'use strict';
(function () {
  const PAGES = { chat: 0, kiosk: 1, dashboard: 2 };
  const page = document.body.dataset.page;
  let M = null, ws = null, worker = null, stick = true;
  const timers = new Map();
  const el = (id) => (id ? document.getElementById(id) : document.documentElement);

  // Calls a C entry point with string arguments copied into the module's heap (strings can be large: a
  // pasted text, a thumbnail data URL), numbers passed as they are.
  function call(name, ...args) {
    const ptrs = [];
    const conv = args.map((a) => {
      if (typeof a !== 'string') return a;
      const n = M.lengthBytesUTF8(a) + 1, p = M._web_alloc(n);
      M.stringToUTF8(a, p, n);
      ptrs.push(p);
      return p;
    });
    try { return M['_' + name](...conv); } finally { ptrs.forEach((p) => M._web_free(p)); }
  }

  // ---- C -> page (plat.h) ----
  window.G4 = {
    html(id, h) { const e = el(id); if (e) e.innerHTML = h; },
    text(id, t) { const e = el(id); if (e) e.textContent = t; },
    attr(id, n, v) { const e = el(id); if (e) { if (v === null) e.removeAttribute(n); else e.setAttribute(n, v); } },
    cls(id, c, on) { const e = el(id); if (e) e.classList.toggle(c, on < 0 ? undefined : !!on); },
    value(id, v) { const e = el(id); if (e) { e.value = v; e.dispatchEvent(new Event('input')); } },
    focus(id) { const e = el(id); if (e) e.focus(); },
    scrollEnd(id) { const e = el(id); if (e && stick) e.scrollTop = e.scrollHeight; },
    canvas(id, px, w, h) {
      const c = el(id);
      if (!c) return;
      if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
      c.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(px), w, h), 0, 0);
    },
    clipboard(t) { if (navigator.clipboard) navigator.clipboard.writeText(t).catch(() => {}); },
    navigate(p) { location.replace(p + location.search); },
    wsOpen() {
      const key = new URLSearchParams(location.search).get('key');
      const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws' +
        (key ? '?key=' + encodeURIComponent(key) : '');
      const s = new WebSocket(url);
      s.binaryType = 'arraybuffer';
      ws = s;
      s.onopen = () => { if (ws === s) call('app_ws_opened'); };
      s.onmessage = (e) => { if (ws === s && typeof e.data === 'string') call('web_ws_message', e.data); };
      s.onclose = () => { if (ws === s) { ws = null; call('app_ws_closed'); } };
    },
    wsSend(t) {
      if (!ws || ws.readyState !== WebSocket.OPEN) return -1;
      ws.send(t);
      return 0;
    },
    upload(att, imageId) { imageWorker().postMessage({ op: 'frames', att, image_id: imageId }); },
    forget(att) { if (worker) worker.postMessage({ op: 'free', att }); },
    timer(id, ms) {
      clearTimeout(timers.get(id));
      timers.delete(id);
      if (ms >= 0) timers.set(id, setTimeout(() => { timers.delete(id); call('app_timer', id); }, ms));
    },
    storeSet(k, v) { try { localStorage.setItem(k, v); return 0; } catch (e) { return -1; } },
    storeGet(k) { try { return localStorage.getItem(k); } catch (e) { return null; } },
    storeDel(k) { try { localStorage.removeItem(k); } catch (e) { /* storage unavailable */ } },
  };

  // ---- image worker: decoding and patching off the main thread ----
  function imageWorker() {
    if (worker) return worker;
    worker = new Worker('img-worker.js');
    worker.onmessage = (e) => {
      const d = e.data;
      if (d.op === 'done') {
        call('app_attach_done', d.att, d.err, d.n, d.grid_w, d.grid_h, d.src_w, d.src_h, d.thumb);
      } else if (d.op === 'frames') {
        const ok = d.frames && ws && ws.readyState === WebSocket.OPEN;
        if (ok) d.frames.forEach((f) => ws.send(f));
        call('app_uploaded', d.att, ok ? 1 : 0);
      }
    };
    return worker;
  }

  function attach(files) {
    for (const f of files) {
      const att = call('app_attach', f.name, f.size, f.type);
      if (att > 0) imageWorker().postMessage({ op: 'process', att, file: f, budget: call('app_budget') });
    }
  }

  // ---- page -> C ----
  function wire() {
    const input = el('input'), file = el('file'), log = el('log');
    document.addEventListener('click', (e) => {
      const t = e.target.closest('[data-act]');
      if (!t) return;
      if (t.dataset.act === 'attach') { file.click(); return; }
      call('app_action', t.dataset.act, t.dataset.arg || '', input ? input.value : '');
    });
    document.addEventListener('change', (e) => {
      const t = e.target.closest('[data-change]');
      if (t) call('app_action', t.dataset.change, t.value, input ? input.value : '');
    });
    document.addEventListener('keydown', () => call('app_activity'));
    document.addEventListener('pointerdown', () => call('app_activity'));
    if (log) log.addEventListener('scroll', () => { stick = log.scrollHeight - log.scrollTop - log.clientHeight < 80; });
    if (!input) return;
    input.addEventListener('keydown', (e) => {
      if (e.isComposing) return;
      if (call('app_key', e.key, e.shiftKey ? 1 : 0, input.value)) e.preventDefault();
    });
    input.addEventListener('input', () => { input.style.height = 'auto'; input.style.height = Math.min(input.scrollHeight, 240) + 'px'; });
    file.addEventListener('change', () => { attach(file.files); file.value = ''; });
    document.addEventListener('paste', (e) => {
      const files = e.clipboardData ? e.clipboardData.files : null;
      if (files && files.length) { e.preventDefault(); attach(files); }
    });
    let depth = 0;
    const dragging = (on) => document.documentElement.classList.toggle('dragging', on);
    document.addEventListener('dragenter', (e) => { e.preventDefault(); depth++; dragging(true); });
    document.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; dragging(false); } });
    document.addEventListener('dragover', (e) => e.preventDefault());
    document.addEventListener('drop', (e) => {
      e.preventDefault();
      depth = 0;
      dragging(false);
      if (e.dataTransfer && e.dataTransfer.files.length) attach(e.dataTransfer.files);
    });
  }

  G4Client().then((m) => {
    M = m;
    wire();
    call('app_init', PAGES[page] || 0, matchMedia('(prefers-color-scheme: dark)').matches ? 1 : 0, location.origin);
    document.documentElement.dataset.ready = '1';
  });
})();
