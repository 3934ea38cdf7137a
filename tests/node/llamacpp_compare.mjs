// Teacher-forced comparison of the libstrata CPU forward pass with llama.cpp (through node-llama-cpp's prebuilt
// CPU binary): same GGUF, same token ids, next-token log-probabilities at every position.
//   node llamacpp_compare.mjs --model M.gguf --tokens ids.json --strata eval.bin
//        [--min-top1 R] [--max-dlp X] [--max-median-dlp Y] [--label NAME] [--threads N] [--dump FILE]
//        [--exact exact.bin]
// ids.json: the ids `strata tokenize` printed; eval.bin: `strata eval --logits-out` over the same text.
// Compared per position: the argmax (top-1), and the log-probability llama.cpp gives to each of strata's
// top-k tokens and to the next (teacher) token. A position where the argmax differs must be a near tie: llama.cpp's
// argmax must be among strata's top-k (so its difference is inside the |dlogprob| bound too). Bounds: the top-1
// agreement rate, the largest |dlogprob| and the median over positions of each position's largest
// |dlogprob|. With --exact (`strata eval` over `strata dequantize`'s F32 copy of the model: the same weights in
// float arithmetic), both engines are judged against it: strata must be at least as close as llama.cpp to its
// log-probability of the teacher token, on average over the positions (mean |dlogprob|). The top-1 matches
// with the exact pass are printed, and every top-1 disagreement between the engines with the side the exact
// pass takes, but not judged: they are near ties, a handful per file, and which engine wins them changes
// from seed to seed (docs/testing.md). Exit: 0 within the bounds, 1 outside, 2 usage,
// 77 node-llama-cpp or its prebuilt CPU binary is unavailable (nothing is built or downloaded here).
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const SKIP = 77;

function parseArgs(argv) {
  const o = { maxDlp: Infinity, maxMedianDlp: Infinity, minTop1: 0, label: "", threads: 2, dump: "" };
  for (let i = 0; i < argv.length; ++i) {
    const v = argv[i + 1];
    switch (argv[i]) {
      case "--model": o.model = v; ++i; break;
      case "--tokens": o.tokens = v; ++i; break;
      case "--strata": o.strata = v; ++i; break;
      case "--max-dlp": o.maxDlp = Number(v); ++i; break;
      case "--max-median-dlp": o.maxMedianDlp = Number(v); ++i; break;
      case "--min-top1": o.minTop1 = Number(v); ++i; break;
      case "--label": o.label = v; ++i; break;
      case "--threads": o.threads = Number(v); ++i; break;
      case "--dump": o.dump = v; ++i; break;
      case "--exact": o.exact = v; ++i; break;
      default: usage(`unknown argument ${argv[i]}`);
    }
  }
  if (!o.model || !o.tokens || !o.strata) usage("--model, --tokens and --strata are required");
  return o;
}

function usage(msg) {
  console.error(`llamacpp_compare: ${msg}`);
  console.error("usage: node llamacpp_compare.mjs --model M.gguf --tokens ids.json --strata eval.bin " +
                "[--min-top1 R] [--max-dlp X] [--max-median-dlp Y] [--label NAME] [--threads N] [--dump FILE] " +
                "[--exact exact.bin]");
  process.exit(2);
}

// The `strata eval --logits-out` file (examples/strata/cmd_eval.cpp): "STRATAEV", u32 version = 1, u32 top_k,
// u32 n_positions, u32 n_vocab; per position i32 next token, f32 its log-prob, top_k i32 ids, top_k f32 log-probs.
function readStrataEval(path) {
  const buf = readFileSync(path);
  if (buf.length < 24 || buf.toString("latin1", 0, 8) !== "STRATAEV") throw new Error(`${path}: not a STRATAEV file`);
  const [version, topK, nPos, nVocab] = [8, 12, 16, 20].map((off) => buf.readUInt32LE(off));
  if (version !== 1) throw new Error(`${path}: version ${version}, expected 1`);
  const rowBytes = 8 + 8 * topK;
  if (buf.length !== 24 + nPos * rowBytes) throw new Error(`${path}: ${buf.length} bytes, expected ${24 + nPos * rowBytes}`);
  const rows = [];
  for (let p = 0, off = 24; p < nPos; ++p, off += rowBytes) {
    const ids = [], lps = [];
    for (let j = 0; j < topK; ++j) {
      ids.push(buf.readInt32LE(off + 8 + 4 * j));
      lps.push(buf.readFloatLE(off + 8 + 4 * topK + 4 * j));
    }
    rows.push({ next: buf.readInt32LE(off), nextLp: buf.readFloatLE(off + 4), ids, lps });
  }
  return { topK, nPos, nVocab, rows };
}

const opt = parseArgs(process.argv.slice(2));
const tokens = JSON.parse(readFileSync(opt.tokens, "utf8"));
if (!Array.isArray(tokens) || tokens.length < 2 || !tokens.every(Number.isInteger))
  usage(`${opt.tokens}: expected a JSON array of at least 2 token ids`);
const ref = readStrataEval(opt.strata);
if (ref.nPos !== tokens.length) throw new Error(`strata eval has ${ref.nPos} positions, the token file ${tokens.length}`);
for (let p = 0; p + 1 < tokens.length; ++p)
  if (ref.rows[p].next !== tokens[p + 1]) throw new Error(`position ${p}: strata's next token is not the token file's`);
const exact = opt.exact ? readStrataEval(opt.exact) : null;
if (exact && (exact.nPos !== ref.nPos || exact.rows.some((r, p) => r.next !== ref.rows[p].next)))
  throw new Error(`${opt.exact}: not an eval of the same tokens`);

let lib;
try {
  lib = await import("node-llama-cpp");
} catch (err) {
  console.log(`llamacpp_compare: node-llama-cpp is not installed (${err.message}); skipping`);
  process.exit(SKIP);
}
let llama;
try {
  // CPU only, the prebuilt binary only: never build llama.cpp from source, never download its sources.
  llama = await lib.getLlama({
    gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
    maxThreads: opt.threads, logLevel: lib.LlamaLogLevel.error,
  });
} catch (err) {
  console.log(`llamacpp_compare: no usable prebuilt llama.cpp CPU binary (${err.message}); skipping`);
  process.exit(SKIP);
}

const model = await llama.loadModel({ modelPath: resolve(opt.model), gpuLayers: 0, checkTensors: true });
if (model.tokens.bos != null && model.tokens.shouldPrependBosToken)
  console.log(`llamacpp_compare: note: the file asks for BOS ${model.tokens.bos}; it is NOT added (ids are fed as given)`);
const fileVocab = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length;
if (fileVocab !== undefined && fileVocab !== ref.nVocab) throw new Error(`vocabulary: llama.cpp ${fileVocab}, strata ${ref.nVocab}`);

// F16 KV cache (llama.cpp's default and strata's), no flash attention: the plain softmax(QK^T)V path.
const context = await model.createContext({
  contextSize: tokens.length, batchSize: Math.min(512, tokens.length), sequences: 1,
  threads: opt.threads, flashAttention: false,
});
const sequence = context.getSequence();

// Fed in chunks so that only one chunk's results are held at a time. The filter asks llama.cpp for the exact
// logits of strata's top-k tokens and of the teacher token, plus its own top-k; totalLogitWeight is
// sum(exp(logit - max)) over the whole vocabulary, which turns a logit into a log-probability.
const stats = { positions: 0, top1Agree: 0, maxDlpTop1: 0, maxDlpTopK: 0, maxDlpNext: 0, worst: null, disagree: [],
                perPosition: [] };
// Against the exact pass: top-1 matches and the sum of |dlogprob| of the teacher token, per engine.
const judge = { strataTop1: 0, llamaTop1: 0, strataNext: 0, llamaNext: 0 };
const dump = [];
const chunk = 64;
for (let start = 0; start < tokens.length; start += chunk) {
  const end = Math.min(tokens.length, start + chunk);
  const input = [];
  for (let p = start; p < end; ++p) {
    if (p + 1 >= tokens.length) { input.push(tokens[p]); continue; }  // the last token predicts nothing
    const want = [...new Set([tokens[p + 1], ...ref.rows[p].ids])];
    input.push([tokens[p], { generateNext: { logits: { filter: { tokens: want, includeTop: ref.topK } }, totalLogitWeight: true } }]);
  }
  const out = await sequence.controlledEvaluate(input);
  for (let p = start; p < end && p + 1 < tokens.length; ++p) {
    const r = out[p - start]?.next;
    if (!r?.logits || r.totalLogitWeight == null) throw new Error(`position ${p}: llama.cpp returned no logits`);
    const logits = r.logits;  // Map id -> logit, sorted best first
    const [llTop, llMax] = logits.entries().next().value;
    const lse = llMax + Math.log(r.totalLogitWeight);
    const lp = (id) => logits.get(id) - lse;
    const row = ref.rows[p];
    ++stats.positions;
    const agree = llTop === row.ids[0];
    if (agree) ++stats.top1Agree;
    if (exact) {
      const ex = exact.rows[p];
      judge.strataTop1 += row.ids[0] === ex.ids[0];
      judge.llamaTop1 += llTop === ex.ids[0];
      judge.strataNext += Math.abs(row.nextLp - ex.nextLp);
      judge.llamaNext += Math.abs(lp(row.next) - ex.nextLp);
    }
    if (!agree) stats.disagree.push({ pos: p, strata: row.ids[0], llama: llTop, exact: exact?.rows[p].ids[0],
                               strataGap: row.lps[0] - (row.ids.includes(llTop) ? row.lps[row.ids.indexOf(llTop)] : -Infinity),
                               llamaGap: lp(llTop) - lp(row.ids[0]) });
    const dTop1 = Math.abs(lp(row.ids[0]) - row.lps[0]);
    let dTopK = 0;
    for (let j = 0; j < ref.topK; ++j) dTopK = Math.max(dTopK, Math.abs(lp(row.ids[j]) - row.lps[j]));
    const dNext = Math.abs(lp(row.next) - row.nextLp);
    stats.perPosition.push(Math.max(dTopK, dNext));
    stats.maxDlpTop1 = Math.max(stats.maxDlpTop1, dTop1);
    stats.maxDlpNext = Math.max(stats.maxDlpNext, dNext);
    if (dTopK > stats.maxDlpTopK) { stats.maxDlpTopK = dTopK; stats.worst = p; }
    if (opt.dump) dump.push({ pos: p, next: row.next, strata: { ids: row.ids, lps: row.lps, next: row.nextLp },
                              llama: { top: [...logits.keys()].slice(0, ref.topK).map((id) => [id, lp(id)]), next: lp(row.next) } });
  }
}
await context.dispose();
await model.dispose();
if (opt.dump) writeFileSync(opt.dump, JSON.stringify(dump));

const rate = stats.top1Agree / stats.positions;
const sorted = stats.perPosition.slice().sort((a, b) => a - b);
const median = sorted[Math.floor((sorted.length - 1) / 2)];
const notTies = stats.disagree.filter((d) => !Number.isFinite(d.strataGap));
const tag = opt.label ? `${opt.label}: ` : "";
console.log(`${tag}llama.cpp (node-llama-cpp ${lib.getModuleVersion ? await lib.getModuleVersion() : "?"}) vs strata, ` +
            `${stats.positions} positions, top-${ref.topK}`);
console.log(`${tag}top-1 agreement ${stats.top1Agree}/${stats.positions} (${(100 * rate).toFixed(2)}%)`);
console.log(`${tag}max |dlogprob|: strata top-1 token ${stats.maxDlpTop1.toExponential(3)}, ` +
            `strata top-${ref.topK} tokens ${stats.maxDlpTopK.toExponential(3)} (position ${stats.worst}), ` +
            `teacher token ${stats.maxDlpNext.toExponential(3)}; median over positions ${median.toExponential(3)}`);
const side = (d) => d.exact === undefined ? "" : d.exact === d.strata ? ", exact: strata's" :
                                                 d.exact === d.llama ? ", exact: llama.cpp's" : `, exact: ${d.exact}`;
for (const d of stats.disagree.slice(0, exact ? Infinity : 10))
  console.log(`${tag}  top-1 differs at position ${d.pos}: strata ${d.strata}, llama.cpp ${d.llama} ` +
              `(gap strata ${d.strataGap.toExponential(2)}, llama.cpp ${d.llamaGap.toExponential(2)}${side(d)})`);
if (exact) {
  const n = stats.positions, pct = (k) => `${(100 * k / n).toFixed(2)}%`;
  console.log(`${tag}against the exact F32 pass: top-1 strata ${pct(judge.strataTop1)}, llama.cpp ${pct(judge.llamaTop1)}; ` +
              `mean |dlogprob| of the teacher token strata ${(judge.strataNext / n).toExponential(3)}, ` +
              `llama.cpp ${(judge.llamaNext / n).toExponential(3)}`);
}
const maxDlp = Math.max(stats.maxDlpTopK, stats.maxDlpNext);
let ok = true;
if (rate < opt.minTop1) { console.log(`${tag}FAIL: top-1 agreement ${rate} < ${opt.minTop1}`); ok = false; }
if (!(maxDlp <= opt.maxDlp)) { console.log(`${tag}FAIL: max |dlogprob| ${maxDlp} > ${opt.maxDlp}`); ok = false; }
if (!(median <= opt.maxMedianDlp)) { console.log(`${tag}FAIL: median |dlogprob| ${median} > ${opt.maxMedianDlp}`); ok = false; }
if (exact && !(judge.strataNext <= judge.llamaNext)) {
  console.log(`${tag}FAIL: strata is further from the exact teacher log-probabilities than llama.cpp`); ok = false;
}
for (const d of notTies) {
  console.log(`${tag}FAIL: position ${d.pos}: llama.cpp's top-1 ${d.llama} is not in strata's top-${ref.topK} (not a near tie)`);
  ok = false;
}
process.exit(ok ? 0 : 1);
