// Device instructions of the warpgroup kernels (sm_90a only): wgmma m64n64k16 and m64n128k16 (A from registers or shared memory, B K-major or N-major), its fence, commit and wait, the generic-to-async proxy fence.
//
// Compiled only into the sm_90a object (src/cuda/*/sm90a): wgmma exists on
// sm_90a and nowhere else. The instructions are asynchronous: the
// accumulators and A registers of an issued wgmma must not be touched until
// a wait_group covers it (ptxas tracks this and warns when it has to
// serialize), and shared memory written by ordinary stores or cp.async must
// pass fence_proxy_async() before a wgmma reads it.
#pragma once

#include <cstdint>

namespace strata::cuda::wgmma {

// Orders this thread's earlier register writes (accumulators, A) before the
// wgmma instructions that follow.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes the group of wgmma instructions issued since the last commit.
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits until at most N committed groups are pending.
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Makes this thread's shared-memory writes (stores, cp.async) visible to the
// async proxy that wgmma reads through; then a barrier publishes them.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Keeps the compiler from moving reads or writes of v across this point
// (after a wait: the accumulators hold their final values only from here).
__device__ __forceinline__ void fence_operand(float& v) { asm volatile("" : "+f"(v)::"memory"); }

// The accumulator operands of the instructions below: the register list of
// 32 F32 accumulators (%0 .. %31) and their bindings, from d[o] on.
#define STRATA_WGMMA_ACC32_LIST                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define STRATA_WGMMA_ACC8(d, o)                                                                          \
  "+f"(d[(o) + 0]), "+f"(d[(o) + 1]), "+f"(d[(o) + 2]), "+f"(d[(o) + 3]), "+f"(d[(o) + 4]), "+f"(d[(o) + 5]), \
      "+f"(d[(o) + 6]), "+f"(d[(o) + 7])
#define STRATA_WGMMA_ACC32(d, o) \
  STRATA_WGMMA_ACC8(d, o), STRATA_WGMMA_ACC8(d, (o) + 8), STRATA_WGMMA_ACC8(d, (o) + 16), STRATA_WGMMA_ACC8(d, (o) + 24)

// d (64 x 64 over the warpgroup, F32) += A (64 x 16 F16, registers, layout in
// wgmma_layout.h) times B (16 x 64 F16, K-major in shared memory at desc).
__device__ __forceinline__ void mma_m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " STRATA_WGMMA_ACC32_LIST
      ", {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : STRATA_WGMMA_ACC32(d, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

// d (64 x 64, F32) = (accumulate ? d : 0) + A (64 x 16 F16) times B (16 x
// 64 F16), both K-major in shared memory at their descriptors; without
// accumulate, d's old values are not read (need no initial zeros).
__device__ __forceinline__ void mma_m64n64k16_ss(float (&d)[32], uint64_t a_desc, uint64_t b_desc,
                                                 bool accumulate = true) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " STRATA_WGMMA_ACC32_LIST
      ", %32, %33, p, 1, 1, 0, 0;\n}\n"
      : STRATA_WGMMA_ACC32(d, 0)
      : "l"(a_desc), "l"(b_desc), "r"(static_cast<uint32_t>(accumulate)));
}

// d (64 x 128, F32) += A (64 x 16 F16, registers) times B (16 x 128 F16 in
// shared memory at desc): K-major for kTransB 0, N-major (the transposed
// operand, imm-trans-b 1) for kTransB 1.
template <int kTransB>
__device__ __forceinline__ void mma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc) {
  static_assert(kTransB == 0 || kTransB == 1, "imm-trans-b is 0 or 1");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "
      "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
      ", {%64, %65, %66, %67}, %68, p, 1, 1, %69;\n}\n"
      : STRATA_WGMMA_ACC32(d, 0), STRATA_WGMMA_ACC32(d, 32)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(kTransB));
}

#undef STRATA_WGMMA_ACC32
#undef STRATA_WGMMA_ACC8
#undef STRATA_WGMMA_ACC32_LIST

}  // namespace strata::cuda::wgmma
