// Encodes a fresh random set of texts with the npm reference and with the C++
// tokenizer (tokenizer_ids) and compares the ids. A fixed seed reproduces a
// run: STRATA_LIVE_SEED=<seed printed by the failing run>.
//   node tokenizer_live.mjs TOKENIZER_IDS_EXE TOKENIZER_JSON [COUNT]
import { spawnSync } from "node:child_process";
import { makeReference, knownDivergence } from "./reference.mjs";

const [helper, tokenizerPath, countArg] = process.argv.slice(2);
if (!helper || !tokenizerPath) {
  console.error("usage: node tokenizer_live.mjs TOKENIZER_IDS_EXE TOKENIZER_JSON [COUNT]");
  process.exit(2);
}
const count = Number(countArg ?? 600);
const seed = Number(process.env.STRATA_LIVE_SEED ?? Date.now() % 2 ** 31);

// mulberry32: small seeded PRNG, so a failing set can be regenerated.
let state = seed >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const range = (lo, hi) => String.fromCodePoint(lo + Math.floor(rand() * (hi - lo + 1)));

// Blocks whose letters and digits were all assigned by Unicode 15.1, so the
// C++ tables and node's newer ICU agree on them.
const blocks = [
  [0x21, 0x7e], [0xa1, 0xff], [0x100, 0x17e], [0x391, 0x3c9], [0x410, 0x44f], [0x5d0, 0x5ea],
  [0x620, 0x64a], [0x660, 0x669], [0x905, 0x939], [0x966, 0x96f], [0xe01, 0xe30], [0x3041, 0x3096],
  [0x30a1, 0x30fa], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xff01, 0xff5e], [0x2010, 0x2027],
  [0x2070, 0x2079], [0x2150, 0x2188], [0x2460, 0x249b], [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f],
  [0x1d400, 0x1d6a5], [0x20000, 0x2a6df],
];
const words = [
  "the", "The", "THE", "model", "Expert", "routing", "token", "PCIe", "GPU", "x", "I", "a",
  "don't", "DON'T", "she'll", "We'RE", "they've", "I'm", "it's", "he'd", "o'clock", "rock'n'roll",
  "naïve", "café", "Straße", "東京", "日本語", "中文", "한국어", "안녕", "Привет", "مرحبا", "שלום",
  "नमस्ते", "สวัสดี", "αβγ", "foo_bar", "camelCase", "v1.2.3", "https://example.com/a?b=1",
  "user@example.com", "C:\\path\\x", "#include", "std::vector<int>", "=>", "!=", "...", "--",
];
const spaces = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\t\t", "\u00a0", "\u3000", "\u2003"];
const puncts = [".", ",", "!", "?", ";", ":", "'", "\"", "(", ")", "[", "]", "{", "}", "-", "_", "*", "#", "@", "$", "%", "/", "\\", "—", "…", "«", "»", "“", "”", "’"];
const emoji = ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸", "🇯🇵", "❤️", "1️⃣", "🧑‍💻", "🔥"];
const specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|fim_prefix|>", "<|im_start", "|>"];

function randomText() {
  const n = 1 + Math.floor(rand() * 40);
  let s = "";
  for (let i = 0; i < n; ++i) {
    const r = rand();
    if (r < 0.35) s += pick(words);
    else if (r < 0.55) s += pick(spaces);
    else if (r < 0.65) s += pick(puncts);
    else if (r < 0.72) s += String(Math.floor(rand() * 10 ** (1 + Math.floor(rand() * 12))));
    else if (r < 0.77) s += pick(emoji);
    else if (r < 0.81) s += pick(specials);
    else {
      const [lo, hi] = pick(blocks);
      const k = 1 + Math.floor(rand() * 6);
      for (let j = 0; j < k; ++j) s += range(lo, hi);
    }
  }
  return s;
}

const cases = [];
let skipped = 0;
while (cases.length < count) {
  const text = randomText();
  if (knownDivergence(text)) {
    ++skipped;
    continue;
  }
  cases.push({ text, parse_special: rand() < 0.5 });
}

const run = spawnSync(helper, [tokenizerPath], {
  input: JSON.stringify(cases),
  encoding: "utf8",
  maxBuffer: 1 << 28,
});
if (run.status !== 0) {
  console.error(`tokenizer_ids failed (status ${run.status}): ${run.stderr}`);
  process.exit(1);
}
const got = JSON.parse(run.stdout);

const ref = await makeReference();
let passed = 0;
let failed = 0;
for (let i = 0; i < cases.length; ++i) {
  const expect = ref.encode(cases[i].text, cases[i].parse_special);
  if (JSON.stringify(expect) === JSON.stringify(got[i])) {
    ++passed;
    continue;
  }
  if (++failed <= 10) {
    console.log(`MISMATCH ${JSON.stringify(cases[i])}\n  npm: ${JSON.stringify(expect)}\n  c++: ${JSON.stringify(got[i])}`);
  }
}
console.log(`seed ${seed}: ${cases.length} random texts (${skipped} non-NFC or known-divergent ones regenerated)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
