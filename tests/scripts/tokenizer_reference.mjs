// tokenizer_reference.mjs — the independent reference for g4's tokenizer: @lenml/tokenizers (a port of
// transformers.js's tokenizers, no shared code with g4) run on a tokenizer.json + tokenizer_config.json.
//
// usage: node tests/scripts/tokenizer_reference.mjs TOKENIZER_DIR CORPUS_JSON OUT_JSON [N_RANDOM]
//
// For every string of the corpus, plus N_RANDOM (default 400) seeded random strings built from fragments
// that stress the tokenizer (special-token spellings and pieces of them, space/newline/tab runs, CJK,
// emoji with ZWJ and skin tones, combining marks) and a few long space-free texts, it writes:
//   hex           the string as UTF-8, hex (so NUL and friends survive any JSON reader)
//   ids           encode(text, {add_special_tokens: false})
//   ids_special   encode(text) (add_special_tokens: true, i.e. with the post-processor)
//   decoded_hex   decode(ids), UTF-8 hex; decoded_skip_hex with skip_special_tokens
// g4's side of the comparison is `test_tokenizer_gemma --compare` (tests/scripts/test_tokenizer_reference.sh).
import fs from "node:fs";
import path from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";

const [dir, corpusPath, outPath, nRandomArg] = process.argv.slice(2);
if (!dir || !corpusPath || !outPath) {
  console.error("usage: node tokenizer_reference.mjs TOKENIZER_DIR CORPUS_JSON OUT_JSON [N_RANDOM]");
  process.exit(2);
}
const nRandom = nRandomArg === undefined ? 400 : Number(nRandomArg);

const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

// mulberry32: a small seeded PRNG, so every run tests the same strings
let seed = 0x6a09e667;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const fragments = [
  "a", "e", "the", " ", "  ", "\n", "\n\n", "\t", "\r\n", ".", ",", "!", "?", "'", "\"", "(", ")", "{", "}",
  "0", "42", "1999", "hello", "Hello", " world", "token", "izer", "ing", "_", "-", "=", "==", "->", "//",
  "<", ">", "|", "<|", "|>", "<|turn>", "<turn|>", "turn", "<bos>", "<eos>", "<pad>", "<mask>", "<unk>",
  "<|image|>", "<|image>", "<image|>", "<|\"|>", "<|channel>", "<channel|>", "<|think|>", "<|tool_call>",
  "<unused", "<unused5>", "<unused123>", "unused>", "<start_of_turn>", "<end_of_turn>", "<0x41>", "<0x", "▁",
  "你", "好", "世界", "中文", "日本", "語", "カタカナ", "한국", "어", "Привет", "مرحبا", "नमस्ते",
  "😀", "👍", "🏽", "👍🏽", "\u200d", "👨‍👩‍👧", "🇫🇷", "❤️", "\ufe0f", "e\u0301", "\u0301", "\u0308", "\u00ff\u00fe",
  "\ufffd", "𠜎", "\u00a0", "\u200b", "x", "y", "z", "A", "B", "Z",
];

const texts = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
for (let i = 0; i < nRandom; i++) {
  const n = 1 + Math.floor(rand() * 40);
  let s = "";
  for (let k = 0; k < n; k++) s += pick(fragments);
  texts.push(s);
}
if (nRandom > 0) {
  // long texts: a space-free CJK paragraph, runs of spaces and newlines, a long mixed line
  texts.push("人工智能是计算机科学的一个分支它企图了解智能的实质".repeat(800));
  texts.push(" ".repeat(5000));
  texts.push("\n".repeat(1000) + "x" + " \n".repeat(500));
  let long = "";
  while (long.length < 20000) long += pick(fragments);
  texts.push(long);
}

const hex = (s) => Buffer.from(s, "utf8").toString("hex");
const cases = [];
let specialDiffers = 0;
for (const text of texts) {
  const ids = tok.encode(text, { add_special_tokens: false });
  const idsSpecial = tok.encode(text);
  if (JSON.stringify(ids) !== JSON.stringify(idsSpecial)) specialDiffers++;
  const decoded = tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  const decodedSkip = tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
  cases.push({ hex: hex(text), ids, ids_special: idsSpecial, decoded_hex: hex(decoded), decoded_skip_hex: hex(decodedSkip) });
}
fs.writeFileSync(outPath, JSON.stringify({ tokenizer: dir, cases }));
console.log(`reference: ${cases.length} strings, ${specialDiffers} where add_special_tokens changes the ids`);
