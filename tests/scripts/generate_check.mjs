// generate_check.mjs — checks that every token `g4 generate` drew lies in the set its sampling flag allows,
// from `g4 logits` of the same sequence (float32, (T, V)), by sampler.h's rules at temperature 1: candidates are
// the ids not suppressed (generation_config.json) with a finite logit, ranked by logit descending then id
// ascending; w_r = exp(x_r - x_0).
//   top-k K: rank < K.   top-p P: rank < m, the smallest m with w_0 + ... + w_{m-1} >= P * sum(w).
//   min-p M: w_rank >= M.
// Usage: node generate_check.mjs LOGITS.f32 V PROMPT_LEN IDS GEN_CONFIG.json (top-k|top-p|min-p) VALUE
// IDS are the generated ids, comma-separated; token j was drawn from row PROMPT_LEN - 1 + j. Prints one JSON
// line {ranks, allowed} (allowed: the size of each token's set) and exits 1 when a token is outside its set.
import { readFileSync } from 'node:fs';

const [file, vArg, nArg, idsArg, genFile, mode, valArg] = process.argv.slice(2);
const V = Number(vArg), n = Number(nArg), value = Number(valArg);
const ids = idsArg.split(',').map(Number);
const gen = JSON.parse(readFileSync(genFile, 'utf8'));
const suppressed = new Set(gen.suppress_tokens || []);
const buf = readFileSync(file);
const all = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
if (all.length < (n - 1 + ids.length) * V) {
    console.error(`generate_check: ${file} has ${all.length / V} rows, need ${n - 1 + ids.length}`);
    process.exit(1);
}

// The rank of token t in row x, and the size of the set the flag allows there.
function check(x, t) {
    const cand = [];
    for (let i = 0; i < V; i++) if (!suppressed.has(i) && Number.isFinite(x[i])) cand.push(x[i]);
    const sorted = Float64Array.from(cand).sort().reverse(); // descending; ties weigh the same
    const x0 = sorted[0];
    let rank = 0;
    for (let i = 0; i < V; i++)
        if (i !== t && !suppressed.has(i) && Number.isFinite(x[i]) && (x[i] > x[t] || (x[i] === x[t] && i < t))) rank++;
    let allowed;
    if (mode === 'top-k') {
        allowed = Math.min(value, sorted.length);
    } else if (mode === 'top-p') {
        let z = 0;
        for (const s of sorted) z += Math.exp(s - x0);
        let c = 0;
        allowed = sorted.length;
        for (let m = 0; m < sorted.length; m++) {
            c += Math.exp(sorted[m] - x0);
            if (c >= value * z * (1 + 1e-9)) { allowed = m + 1; break; } // a hair loose: exp may differ by an ulp
        }
    } else if (mode === 'min-p') {
        allowed = 0;
        while (allowed < sorted.length && Math.exp(sorted[allowed] - x0) >= value * (1 - 1e-12)) allowed++;
    } else {
        console.error(`generate_check: unknown mode ${mode}`);
        process.exit(2);
    }
    return { rank, allowed, ok: !suppressed.has(t) && Number.isFinite(x[t]) && rank < allowed };
}

const ranks = [], allowed = [];
let bad = 0;
ids.forEach((t, j) => {
    const row = all.subarray((n - 1 + j) * V, (n + j) * V);
    const r = check(row, t);
    ranks.push(r.rank);
    allowed.push(r.allowed);
    if (!r.ok) {
        console.error(`generate_check: token ${j} (id ${t}) has rank ${r.rank}, outside the ${r.allowed} that ${mode} ${value} allows`);
        bad++;
    }
});
console.log(JSON.stringify({ mode, value, ranks, allowed }));
process.exit(bad ? 1 : 0);
