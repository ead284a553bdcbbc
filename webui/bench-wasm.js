// webui/bench-wasm.js — times img_flat_process (decode + resize + patches) of the wasm module under node.
//   node webui/bench-wasm.js WEBDIR IMAGE      (bench_img runs it on its 12-MP JPEG)
// Prints one line per budget: median of 5 runs, milliseconds.
const fs = require('fs'), path = require('path');
const [web, image] = process.argv.slice(2);
const G4Img = require(path.resolve(web, 'g4img.js'));
G4Img({ wasmBinary: fs.readFileSync(path.join(web, 'g4img.wasm')) }).then((M) => {
  const data = fs.readFileSync(image);
  const ptr = M._malloc(data.length);
  M.HEAPU8.set(data, ptr);
  for (const budget of [70, 280, 1120]) {
    const t = [];
    let n = 0;
    for (let r = 0; r < 5; r++) {
      const t0 = process.hrtime.bigint();
      const h = M._img_flat_process(ptr, data.length, budget);
      t.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (!h) { console.log('wasm refused: ' + M.UTF8ToString(M._img_flat_error())); process.exit(1); }
      n = M._img_flat_n(h);
      M._img_flat_free(h);
    }
    t.sort((a, b) => a - b);
    console.log(`wasm ${String(budget).padEnd(6)} total ${t[2].toFixed(1)} ms  n=${n}  (node ${process.version})`);
  }
  M._free(ptr);
});
