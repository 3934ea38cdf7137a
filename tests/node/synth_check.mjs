// Reads a synthetic qwen3moe GGUF with @huggingface/gguf (an independent parser) and checks it against
// what a real Qwen3-MoE file carries: every hyperparameter key with its GGUF type, the tokenizer keys,
// every tensor with the shape its metadata implies, and tensor data that fits, aligned, in the file.
// Exit codes: 0 all good, 1 a difference (each printed), 2 usage, 77 the npm package is not installed.
import { statSync } from "node:fs";
import { resolve } from "node:path";

let gguf;
try {
  ({ gguf } = await import("@huggingface/gguf"));
} catch (err) {
  console.error(`synth_check: @huggingface/gguf is not installed (${err.message}); skipping`);
  process.exit(77);
}

const file = process.argv[2];
if (!file) {
  console.error("usage: node synth_check.mjs MODEL.gguf");
  process.exit(2);
}

const { metadata, typedMetadata: typed, tensorInfos, tensorDataOffset } = await gguf(resolve(file), {
  allowLocalFile: true,
  typedMetadata: true,
});
const problems = [];
const expect = (ok, what) => ok || problems.push(what);

// GGUF value types.
const U32 = 4, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, I32 = 5;
const key = (name, type, subType) => {
  const e = typed[name];
  if (!e) return problems.push(`missing key ${name}`), undefined;
  expect(e.type === type, `${name}: type ${e.type}, expected ${type}`);
  if (subType !== undefined) expect(e.subType === subType, `${name}: element type ${e.subType}, expected ${subType}`);
  return e.value;
};

expect(key("general.architecture", STRING) === "qwen3moe", "general.architecture is not qwen3moe");
key("general.name", STRING);
const alignment = Number(key("general.alignment", U32) ?? 32);
const a = "qwen3moe.";
const hp = {};
for (const k of ["block_count", "context_length", "embedding_length", "feed_forward_length",
                 "expert_feed_forward_length", "expert_count", "expert_used_count", "attention.head_count",
                 "attention.head_count_kv", "attention.key_length", "attention.value_length"]) {
  hp[k] = Number(key(a + k, U32));
  expect(hp[k] > 0, `${a}${k} = ${hp[k]}`);
}
expect(key(a + "attention.layer_norm_rms_epsilon", F32) > 0, "rms epsilon not positive");
expect(key(a + "rope.freq_base", F32) > 0, "rope.freq_base not positive");
expect(hp.expert_used_count <= hp.expert_count, "more experts used than exist");

expect(key("tokenizer.ggml.model", STRING) === "gpt2", "tokenizer.ggml.model is not gpt2");
expect(key("tokenizer.ggml.pre", STRING) === "qwen2", "tokenizer.ggml.pre is not qwen2");
const tokens = key("tokenizer.ggml.tokens", ARRAY, STRING) ?? [];
const types = key("tokenizer.ggml.token_type", ARRAY, I32) ?? [];
const merges = key("tokenizer.ggml.merges", ARRAY, STRING) ?? [];
expect(types.length === tokens.length, `token_type has ${types.length} entries for ${tokens.length} tokens`);
expect(merges.length > 0 && merges.every((m) => m.split(" ").length === 2), "merges are not 'a b' pairs");
for (const k of ["bos_token_id", "eos_token_id", "padding_token_id"]) {
  const id = Number(key("tokenizer.ggml." + k, U32));
  expect(id >= 0 && id < tokens.length, `tokenizer.ggml.${k} = ${id} outside the vocabulary`);
  expect(types[id] === 3, `tokenizer.ggml.${k} = ${id} is not a control token`);
}
expect(key("tokenizer.ggml.add_bos_token", BOOL) === false, "add_bos_token is not false");

// Tensors: names and shapes from the hyperparameters (ne0 first).
const n = hp.embedding_length, nv = tokens.length, hd = hp["attention.key_length"];
const q = hp["attention.head_count"] * hd, kv = hp["attention.head_count_kv"] * hd;
const ff = hp.expert_feed_forward_length, ne = hp.expert_count;
const F32T = 0;
const want = [["token_embd.weight", [n, nv]]];
for (let l = 0; l < hp.block_count; l++) {
  const b = `blk.${l}.`;
  want.push([b + "attn_norm.weight", [n], F32T], [b + "attn_q.weight", [n, q]], [b + "attn_k.weight", [n, kv]],
            [b + "attn_v.weight", [n, kv]], [b + "attn_output.weight", [q, n]], [b + "attn_q_norm.weight", [hd], F32T],
            [b + "attn_k_norm.weight", [hd], F32T], [b + "ffn_norm.weight", [n], F32T],
            [b + "ffn_gate_inp.weight", [n, ne], F32T], [b + "ffn_gate_exps.weight", [n, ff, ne]],
            [b + "ffn_up_exps.weight", [n, ff, ne]], [b + "ffn_down_exps.weight", [ff, n, ne]]);
}
want.push(["output_norm.weight", [n], F32T], ["output.weight", [n, nv]]);

const byName = new Map(tensorInfos.map((t) => [t.name, t]));
expect(tensorInfos.length === want.length, `${tensorInfos.length} tensors, expected ${want.length}`);
for (const [name, shape, dtype] of want) {
  const t = byName.get(name);
  if (!t) { problems.push(`missing tensor ${name}`); continue; }
  const got = t.shape.map(Number);
  expect(JSON.stringify(got) === JSON.stringify(shape), `${name}: shape ${got}, expected ${shape}`);
  if (dtype !== undefined) expect(t.dtype === dtype, `${name}: dtype ${t.dtype}, expected ${dtype}`);
}

// Data: aligned, non-overlapping, inside the file. [elements per block, bytes per block] by type id.
const blocks = {
  0: [1, 4], 1: [1, 2], 2: [32, 18], 3: [32, 20], 6: [32, 22], 7: [32, 24], 8: [32, 34],
  10: [256, 84], 11: [256, 110], 12: [256, 144], 13: [256, 176], 14: [256, 210],
  16: [256, 66], 17: [256, 74], 18: [256, 98], 20: [32, 18], 21: [256, 110], 22: [256, 82], 23: [256, 136], 30: [1, 2],
  39: [32, 17], 40: [64, 36], 41: [128, 18], 42: [64, 18],
};
const size = BigInt(statSync(file).size);
let end = 0n;
for (const t of [...tensorInfos].sort((x, y) => (x.offset < y.offset ? -1 : 1))) {
  const geo = blocks[t.dtype];
  if (!geo) { problems.push(`${t.name}: unexpected dtype ${t.dtype}`); continue; }
  const elems = t.shape.reduce((p, d) => p * BigInt(d), 1n);
  expect(elems % BigInt(geo[0]) === 0n, `${t.name}: ${elems} elements are not whole blocks`);
  const bytes = (elems / BigInt(geo[0])) * BigInt(geo[1]);
  expect(t.offset % BigInt(alignment) === 0n, `${t.name}: offset ${t.offset} not aligned to ${alignment}`);
  expect(t.offset >= end, `${t.name}: overlaps the tensor before it`);
  end = t.offset + bytes;
}
expect(tensorDataOffset + end <= size, `tensor data ends at ${tensorDataOffset + end}, past the file's ${size} bytes`);
expect(BigInt(tensorInfos.length) === BigInt(metadata.tensor_count), "tensor_count differs from the infos read");

if (problems.length > 0) {
  for (const p of problems) console.error(`synth_check: ${p}`);
  console.error(`synth_check: ${problems.length} problem(s) in ${file}`);
  process.exit(1);
}
console.log(`synth_check: @huggingface/gguf read ${file}: ${tensorInfos.length} tensors, ${hp.block_count} layers, ` +
            `${nv} tokens, all as a qwen3moe file should be`);
