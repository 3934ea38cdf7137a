#!/bin/sh
# The synth_npm_check ctest: `strata make-model` writes small synthetic models
# and @huggingface/gguf must read each as a complete qwen3moe file.
# Usage: synth_check.sh STRATA_CLI WORK_DIR. Exits 77 (skipped) without node, npm or registry.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/npm_env.sh"
require_node_package @huggingface/gguf || exit 77
cli=$1
work=$2
mkdir -p "$work"
for spec in "tiny 4 q4_k small" "tiny 2 q8_0 small" "tiny 1 f16 qwen3" "tiny 1 q3_k small" "tiny 1 q2_k small" \
    "tiny 1 q4_0 small" "tiny 1 q5_1 small" "tiny 1 iq4_xs small" "tiny 1 iq3_xxs small" "tiny 1 iq2_xxs small" \
    "tiny 1 iq3_s small" "tiny 1 iq2_xs small" "tiny 1 iq2_s small" "tiny 1 mxfp4 small" "tiny 1 nvfp4 small" \
    "tiny 1 q1_0 small" "tiny 1 q2_0 small"; do
  set -- $spec
  out="$work/synth-$1-$2-$3-$4.gguf"
  "$cli" make-model --shape "$1" --layers "$2" --quant "$3" --vocab "$4" -t 2 -o "$out" >/dev/null 2>&1 ||
    { echo "synth_check: strata make-model $spec failed"; exit 1; }
  node "$here/synth_check.mjs" "$out" || exit 1
  rm -f "$out"
done
