set -u
b=build/gpu
cmake -S . -B $b -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_CUDA_ARCH=90 > $OUT/cfg.txt 2>&1
cmake --build $b -j 16 > $OUT/build.txt 2>&1 || { grep -B5 -A20 "error" $OUT/build.txt | head -60; exit 1; }
for i in 1 2 3; do $b/tests/ops/ops_tests > /tmp/o.txt 2>&1 || { grep -a -m1 seed= /tmp/o.txt; grep -a -B2 -A30 "FAILED" /tmp/o.txt | head -80; } ; done > $OUT/ops_fail.txt
ctest --test-dir $b -R 'e2e_cuda_parity|e2e_cuda_graph|e2e_cuda_streaming|e2e_cuda_stages' --output-on-failure --timeout 300 > /tmp/c.txt 2>&1; grep -a -E "Test +#|tests passed|FAILED|failed" /tmp/c.txt | head -20 >> $OUT/ops_fail.txt
grep -a -B5 -A25 "FAILED" /tmp/c.txt | head -60 >> $OUT/ops_fail.txt
$b/bin/strata make-model --shape qwen3-30b-a3b --quant q4_k --layers 4 -o /tmp/m4.gguf > /dev/null 2>&1
ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $b/bin/strata bench -m /tmp/m4.gguf --devices 0 --prompt 600 --gen 8 --repeat 1 > $OUT/ncu_decode.txt 2>&1
$b/bin/strata make-model --shape qwen3-30b-a3b --quant q4_k --router-skew 0 -o /tmp/m48.gguf > /dev/null 2>&1
$b/bin/strata bench -m /tmp/m48.gguf --devices 0 --prompt 512,2048 --gen 64 --repeat 2 > $OUT/bench.txt 2>&1
$b/bin/strata bench -m /tmp/m48.gguf --devices 0 --vram-budget 4GiB --prompt 512 --gen 64 --repeat 2 >> $OUT/bench.txt 2>&1
cat $OUT/ops_fail.txt | head -60; grep -a "prompt\|phases" $OUT/bench.txt
