// Device instructions of the warpgroup GEMM (sm_90a only): wgmma m64n64k16 with A in registers, its fence, commit and wait, the generic-to-async proxy fence.
//
// Compiled only into the sm_90a object (src/cuda/sm90a): wgmma exists on
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

// d (64 x 64 over the warpgroup, F32) += A (64 x 16 F16, registers, layout in
// wgmma_layout.h) times B (16 x 64 F16, K-major in shared memory at desc).
__device__ __forceinline__ void mma_m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

}  // namespace strata::cuda::wgmma
