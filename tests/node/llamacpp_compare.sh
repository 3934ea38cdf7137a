#!/bin/sh
# ctest llamacpp_compare: the CPU forward pass against llama.cpp (node-llama-cpp's prebuilt CPU binary) on
# synthetic models, teacher-forced over tests/data/compare_text.txt (docs/testing.md, "llama.cpp").
#   llamacpp_compare.sh STRATA_EXE WORK_DIR TEXT_FILE
# Exit 77 (ctest: skipped) without node >= 18, npm, the registry, or a prebuilt binary for this platform.
# Nothing is compiled and nothing but npm packages is downloaded: install scripts are off (.npmrc), the
# GPU binary packages are left out, and the script asks node-llama-cpp never to build or fetch llama.cpp.
set -u
here=$(cd "$(dirname "$0")" && pwd)
strata=$1
work=$2
text=$3
mkdir -p "$work" || exit 1

if ! command -v node >/dev/null 2>&1; then echo "llamacpp_compare: node not found; skipping"; exit 77; fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "llamacpp_compare: node $(node --version) is older than 18; skipping"; exit 77
fi
# node-llama-cpp's CPU binaries for this platform, e.g. @node-llama-cpp/linux-x64.
plat=$(node -e 'const p = {linux: "linux", darwin: "mac"}[process.platform]; const a = process.arch;
  process.stdout.write(p === "mac" && a === "arm64" ? "mac-arm64-metal" : p && ["x64", "arm64"].includes(a) ? `${p}-${a}` : "")')
if [ -z "$plat" ]; then echo "llamacpp_compare: no node-llama-cpp binary package for this platform; skipping"; exit 77; fi
version=$(node -e 'process.stdout.write(require(process.argv[1]).dependencies["node-llama-cpp"])' "$here/package.json")

export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true  # belt and braces: the install scripts are off anyway
if [ ! -d "$here/node_modules/node-llama-cpp" ] || [ ! -d "$here/node_modules/@node-llama-cpp/$plat" ]; then
  if ! command -v npm >/dev/null 2>&1; then echo "llamacpp_compare: npm not found; skipping"; exit 77; fi
  # package.json's dependencies plus this platform's binary package, which is an optional dependency
  # of node-llama-cpp (.npmrc leaves optional dependencies out: the CUDA and Vulkan ones weigh 600 MB).
  # --no-save: the next plain `npm install` removes it again, and this script puts it back.
  if ! timeout 300 npm install --prefix "$here" --no-save --ignore-scripts --omit=optional \
       "@node-llama-cpp/$plat@$version" >"$work/npm.log" 2>&1; then
    echo "llamacpp_compare: npm install failed (registry unreachable?); skipping"
    tail -5 "$work/npm.log"
    exit 77
  fi
fi

# compare NAME MIN_TOP1 MAX_DLP MAX_MEDIAN_DLP JUDGE make-model-args...
# JUDGE=exact also evaluates `strata dequantize`'s F32 copy of the model and judges both engines against it
# (tiny models only: the copy is four times the quantized file); JUDGE=- does not.
compare() {
  name=$1 min_top1=$2 max_dlp=$3 max_median=$4 judge=$5
  shift 5
  m="$work/$name.gguf"
  "$strata" make-model "$@" -o "$m" >/dev/null || return 1
  "$strata" tokenize -m "$m" <"$text" >"$work/$name.ids.json" || return 1
  "$strata" eval -m "$m" -f "$text" --logits-out "$work/$name.eval.bin" --top 20 --devices cpu || return 1
  set --
  if [ "$judge" = exact ]; then
    "$strata" dequantize -m "$m" -o "$work/$name.f32.gguf" >/dev/null || return 1
    "$strata" eval -m "$work/$name.f32.gguf" -f "$text" --logits-out "$work/$name.exact.bin" --top 20 \
      --devices cpu
    rc=$?
    rm -f "$work/$name.f32.gguf"
    [ "$rc" -eq 0 ] || return 1
    set -- --exact "$work/$name.exact.bin"
  fi
  node "$here/llamacpp_compare.mjs" --model "$m" --tokens "$work/$name.ids.json" --strata "$work/$name.eval.bin" \
       --label "$name" --min-top1 "$min_top1" --max-dlp "$max_dlp" --max-median-dlp "$max_median" "$@"
  rc=$?
  [ "$rc" -eq 77 ] && exit 77  # node-llama-cpp or its binary did not load: skip
  [ "$rc" -eq 0 ] && rm -f "$m"  # the qwen3-shaped file is 1.1 GB; a failing one stays for a look
  return "$rc"
}

# Bounds: measured values (docs/testing.md) with a margin. F32 weights: both engines compute the same float
# math, so only summation order and llama.cpp's F16 rounding of Q and of the softmax weights differ. K-quant
# weights: llama.cpp quantizes activations to Q8_K (one scale per 256), strata to 32-blocks, and the top-k
# routing turns the small difference into a different expert now and then (2 of 8 experts in `tiny`).
status=0
compare tiny-f32 0.99 0.002 0.0005 - --shape tiny --quant f32 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q4k 0.95 1.0 0.08 exact --shape tiny --quant q4_k --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q3k 0.95 1.0 0.08 exact --shape tiny --quant q3_k --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q2k 0.95 1.0 0.08 exact --shape tiny --quant q2_k --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q4_0 0.95 1.0 0.08 exact --shape tiny --quant q4_0 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q4_1 0.95 1.0 0.08 exact --shape tiny --quant q4_1 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q5_0 0.95 1.0 0.08 exact --shape tiny --quant q5_0 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q5_1 0.95 1.0 0.08 exact --shape tiny --quant q5_1 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq4xs 0.95 1.0 0.08 exact --shape tiny --quant iq4_xs --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq4nl 0.95 1.0 0.08 exact --shape tiny --quant iq4_nl --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq3xxs 0.95 1.0 0.08 exact --shape tiny --quant iq3_xxs --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq3s 0.95 1.0 0.08 exact --shape tiny --quant iq3_s --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq2xxs 0.95 1.0 0.08 exact --shape tiny --quant iq2_xxs --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq2xs 0.95 1.0 0.08 exact --shape tiny --quant iq2_xs --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq2s 0.95 1.0 0.08 exact --shape tiny --quant iq2_s --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq1s 0.95 1.0 0.08 exact --shape tiny --quant iq1_s --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-iq1m 0.95 1.0 0.08 exact --shape tiny --quant iq1_m --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-mxfp4 0.95 1.0 0.08 exact --shape tiny --quant mxfp4 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-nvfp4 0.95 1.0 0.08 exact --shape tiny --quant nvfp4 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q1_0 0.95 1.0 0.08 exact --shape tiny --quant q1_0 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare tiny-q2_0 0.95 1.0 0.08 exact --shape tiny --quant q2_0 --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
# One file of many types, like the UD mixes (K-quants in attention, IQ types in the experts, a q5_1 down
# projection; output Q6_K under the q4_k base).
mix='token_embd=q4_k,attn_(q|k)=q5_k,attn_v=q6_k,attn_output=iq4_xs,blk\.0\.ffn_down_exps=q5_1'
mix="$mix"',ffn_down_exps=iq4_nl,blk\.3\.ffn_gate_exps=q2_k,blk\.3\.ffn_up_exps=iq2_xxs'
mix="$mix"',blk\.[01]\.ffn_(gate|up)_exps=iq3_s,ffn_(gate|up)_exps=iq3_xxs'
compare tiny-mix 0.95 1.0 0.08 exact --shape tiny --quant q4_k --quant-mix "$mix" --vocab small --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
compare qwen3-30b-a3b-2l-q4k 0.95 0.3 0.08 - --shape qwen3-30b-a3b --layers 2 --quant q4_k --vocab qwen3 --seed 7
rc=$?; [ "$rc" -ne 0 ] && status=$rc
exit "$status"
