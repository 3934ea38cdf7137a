# GEMM kernels: gemm_ops_tests (GPU vs the CPU oracle; label gpu, exit 77 = skipped without a device)
# and gemm_bench (a micro-benchmark program, built but never registered as a test).
# Included from tests/ops/CMakeLists.txt when the CUDA backend is built.
if(STRATA_HAVE_CUDA)
  add_executable(gemm_ops_tests ${CMAKE_CURRENT_LIST_DIR}/gemm_test.cpp)
  target_include_directories(gemm_ops_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # -ffp-contract=off: the test forms the CPU's F32 terms itself (silu * up) and compares bits.
  target_compile_options(gemm_ops_tests PRIVATE -Wall -Wextra -ffp-contract=off)
  target_link_libraries(gemm_ops_tests PRIVATE strata_core Catch2::Catch2)
  add_test(NAME gemm_ops_tests COMMAND gemm_ops_tests)
  set_tests_properties(gemm_ops_tests PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  # The GEMM tests again with the mma.sync kernel (STRATA_GEMM=mma), which every device other than compute
  # capability 9.0 runs (the test says which kernel ran); the vector kernels' tests need no second run.
  add_test(NAME gemm_ops_tests_mma COMMAND gemm_ops_tests "[mmq],[moe]")
  set_tests_properties(gemm_ops_tests_mma PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 ENVIRONMENT STRATA_GEMM=mma)

  add_executable(gemm_bench ${CMAKE_CURRENT_LIST_DIR}/gemm_bench.cpp)
  target_compile_options(gemm_bench PRIVATE -Wall -Wextra)
  target_link_libraries(gemm_bench PRIVATE strata_core)
endif()
