// webui/img-worker.js — the image worker: decodes a file and cuts it into the model's 48-pixel patches with
// the wasm build of shared/ (build/web/g4img.wasm), off the page's thread, so a 12-megapixel photo does not
// freeze it. Keeps each image's patches until told to free them, and makes G4IP frames (shared/frame.h) on
// request with the upload id the client's C chose. Messages: {op:'process', att, file, budget} -> {op:'done',
// ...}; {op:'frames', att, image_id} -> {op:'frames', att, frames}; {op:'free', att}.
'use strict';
importScripts('g4img.js');
const ROWS_PER_FRAME = 256; // 1.7 MB frames, well under the server's 8 MiB message limit
const ready = G4Img();
const images = new Map(); // att -> img_patches handle

async function processFile(M, d) {
  let h = 0, data = null;
  try { data = new Uint8Array(await d.file.arrayBuffer()); } catch (e) {
    return { op: 'done', att: d.att, err: 'the file could not be read' };
  }
  const p = M._malloc(data.length || 1);
  M.HEAPU8.set(data, p);
  h = M._img_flat_process(p, data.length, d.budget);
  M._free(p);
  if (!h) return { op: 'done', att: d.att, err: M.UTF8ToString(M._img_flat_error()) };
  const gw = M._img_flat_grid_w(h), gh = M._img_flat_grid_h(h);
  const t = M._thumb_data_url(M._img_flat_rows(h), gw, gh, 64);
  const thumb = t ? M.UTF8ToString(t) : '';
  M._free(t);
  images.set(d.att, h);
  return { op: 'done', att: d.att, err: '', n: M._img_flat_n(h), grid_w: gw, grid_h: gh,
           src_w: M._img_flat_src_w(h), src_h: M._img_flat_src_h(h), thumb };
}

function frames(M, d) {
  const h = images.get(d.att);
  if (!h) return { op: 'frames', att: d.att, frames: null };
  const n = M._img_flat_n(h), out = [];
  for (let first = 0; first < n; first += ROWS_PER_FRAME) {
    const count = Math.min(ROWS_PER_FRAME, n - first), cap = M._img_flat_frame_size(count), p = M._malloc(cap);
    const len = M._img_flat_frame(h, d.image_id, first, count, p, cap);
    if (len > 0) out.push(M.HEAPU8.slice(p, p + len).buffer);
    M._free(p);
    if (len <= 0) return { op: 'frames', att: d.att, frames: null };
  }
  return { op: 'frames', att: d.att, frames: out };
}

onmessage = async (e) => {
  const M = await ready, d = e.data;
  if (d.op === 'process') postMessage(await processFile(M, d));
  else if (d.op === 'frames') { const r = frames(M, d); postMessage(r, r.frames || []); }
  else if (d.op === 'free' && images.has(d.att)) { M._img_flat_free(images.get(d.att)); images.delete(d.att); }
};
