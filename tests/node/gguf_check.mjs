// Reads a GGUF file with @huggingface/gguf (an independent parser) and prints its metadata and tensor infos as JSON;
// with an expected JSON file (written by gguf_make_corpus --crosscheck) it compares and exits 1 on any difference.
// Exit codes: 0 match (or printed), 1 mismatch or invalid file, 77 the npm package is not installed.
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";

let gguf;
try {
  ({ gguf } = await import("@huggingface/gguf"));
} catch (err) {
  console.error(`gguf_check: @huggingface/gguf is not installed (${err.message}); skipping`);
  process.exit(77);
}

const [file, expectedPath] = process.argv.slice(2);
if (!file) {
  console.error("usage: node gguf_check.mjs FILE.gguf [EXPECTED.json]");
  process.exit(2);
}

// BigInt -> decimal string, so 64-bit values survive JSON; arrays recursively.
const canon = (v) => (typeof v === "bigint" ? v.toString() : Array.isArray(v) ? v.map(canon) : v);

const parsed = await gguf(resolve(file), { allowLocalFile: true, typedMetadata: true });
const header = new Set(["version", "tensor_count", "kv_count"]);
const alignment = Number(parsed.metadata["general.alignment"] ?? 32);
const view = {
  version: parsed.metadata.version,
  alignment,
  tensor_data_offset: canon(parsed.tensorDataOffset),
  metadata: Object.entries(parsed.typedMetadata)
    .filter(([key]) => !header.has(key))
    .map(([key, e]) => ({
      key,
      type: e.type,
      ...(e.subType === undefined ? {} : { subType: e.subType }),
      value: canon(e.value),
    })),
  tensors: parsed.tensorInfos.map((t) => ({
    name: t.name,
    n_dims: t.n_dims,
    shape: canon(t.shape),
    dtype: t.dtype,
    offset: canon(t.offset),
  })),
};

// Checks that need no expectation: counts agree with the header, offsets are
// aligned and lie inside the file.
const problems = [];
const size = BigInt(statSync(file).size);
if (BigInt(view.metadata.length) !== BigInt(parsed.metadata.kv_count)) problems.push("kv_count differs from the entries read");
if (BigInt(view.tensors.length) !== BigInt(parsed.metadata.tensor_count)) problems.push("tensor_count differs from the infos read");
for (const t of parsed.tensorInfos) {
  if (t.offset % BigInt(alignment) !== 0n) problems.push(`tensor ${t.name}: offset ${t.offset} not aligned to ${alignment}`);
  if (parsed.tensorDataOffset + t.offset >= size) problems.push(`tensor ${t.name}: offset ${t.offset} past the end of the file`);
}

console.log(JSON.stringify(view, null, 1));

if (expectedPath) {
  const expected = JSON.parse(readFileSync(expectedPath, "utf8"));
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const field of ["version", "alignment", "tensor_data_offset"]) {
    if (!same(view[field], expected[field])) problems.push(`${field}: read ${JSON.stringify(view[field])}, expected ${JSON.stringify(expected[field])}`);
  }
  for (const field of ["metadata", "tensors"]) {
    const got = view[field];
    const want = expected[field];
    if (got.length !== want.length) problems.push(`${field}: read ${got.length} entries, expected ${want.length}`);
    for (let i = 0; i < Math.max(got.length, want.length); i++) {
      if (!same(got[i], want[i])) problems.push(`${field}[${i}]: read ${JSON.stringify(got[i])}, expected ${JSON.stringify(want[i])}`);
    }
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`gguf_check: ${p}`);
  console.error(`gguf_check: ${problems.length} difference(s)`);
  process.exit(1);
}
console.error(`gguf_check: ${view.metadata.length} metadata entries and ${view.tensors.length} tensors ${expectedPath ? "match" : "read"}`);
