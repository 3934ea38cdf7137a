#!/usr/bin/env bash
set -u
B=build/gpu; L=$OUT/log.txt
t=$SECONDS
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_CUDA_ARCH=90 >/dev/null && \
  cmake --build $B -j16 --target gemm_ops_tests ops_tests e2e_tests >/dev/null; } > $OUT/build.txt 2>&1 || { tail -50 $OUT/build.txt; exit 1; }
echo "build $((SECONDS-t)) s" >> $L
t=$SECONDS; ctest --test-dir $B -R "^(gemm_ops_tests_mma|ops_tests_sync_check|ops_attention_mma)$" --output-on-failure --timeout 200 > $OUT/tests.txt 2>&1
echo "ctest rc=$? $((SECONDS-t)) s" >> $L
grep -E "Test +#|tests passed|tests failed" $OUT/tests.txt >> $L
t=$SECONDS; compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/e2e/e2e_tests "tiny*" > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$? $((SECONDS-t)) s" >> $L; tail -3 $OUT/memcheck.txt >> $L
