// The warpgroup (wgmma) kernels' operand maps: for the quantized GEMM (mmq_wgmma.cuh) which K values each instruction multiplies, where a stage's activations sit in shared memory (each lane's quants: QuantTraits::quant_pairs); for the prompt attention (attention_wgmma.cuh) the Q/K/V tiles read K-major and MN-major; the descriptors. Plain C++ maps a CPU test checks.
//
// Source: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
// (register fragments of wgmma .m64nNk16, shared memory matrix layout,
// matrix descriptor format). Facts used:
//
//   A from registers: warp w of the warpgroup holds rows 16 (w % 4) .. + 15
//     in the layout of mma.sync m16n8k16's A (mma_layout.h a_elem): logical
//     k 0..7 in registers 0, 1 and k 8..15 in registers 2, 3, lane (g, t)
//     holding k 2t, 2t + 1 (+ 8) of rows g (registers 0, 2) and g + 8 (1, 3).
//   B from shared memory, K-major (each column's K values contiguous), with
//     the 128-byte swizzle: each column's 64 K values of an atom are one
//     128-byte row, 8 columns make a 1024-byte atom (1024-byte aligned), and
//     element (k, n) of an instruction lies at swizzle(start + (n / 8) * SBO
//     + (n % 8) * 128 + 2 k), SBO the stride between groups of 8 columns and
//     swizzle(x) = x with its bits 4-6 (the 16-byte chunk) XORed with its
//     bits 7-9 (the row in the atom). An instruction's 16 K values are 32
//     bytes of the row: start advances 32 bytes a step.
//   D: warp w's rows as A's; register 4 i + r holds row g (r < 2) or g + 8,
//     column 8 i + 2t + (r & 1): mma.sync's C layout repeated along N.
//   Descriptor: bits 0-13 start address >> 4, 16-29 LBO >> 4 (unused by a
//     swizzled K-major operand; 1), 32-45 SBO >> 4, 49-51 base offset (0 for
//     1024-byte aligned atoms), 62-63 layout (1: 128-byte swizzle).
//
// K order. Each instruction takes two 8-value chunks of the stage's 256
// values (chunk c = values 8c .. 8c + 7), chunks first_chunk(i) and
// first_chunk(i) + delta (the type's kChunkDelta), as its core matrices along K. The pairs are
// chosen so that one 2-byte load per row gives a lane both of its pairs:
// the two chunks sit in the same GGUF bytes (low and high nibbles; Q5_K's
// and Q6_K's high bits in one more pair of bytes), Q8_0 and the IQ4 types
// excepted (two loads). Lane t's pair of a chunk is values 8c + 2t, 8c + 2t + 1, the
// activation tile stores each chunk whole, and the sum over k of an
// instruction is the same for any pairing, so A and B only have to agree:
// the tile puts instruction i's two chunks side by side as its logical K
// values 16 i .. 16 i + 15 (atom i / 4, 32-byte step i % 4). The swizzle
// keeps the tensor cores' reads of 8 columns off each other's banks (the
// unswizzled tile put an instruction's two core matrices 4 or 8 KiB apart,
// on the same banks: 28% of the shared wavefronts were excess).
#pragma once

#include <cstdint>
#include <cstring>

#include "cuda/gemm/mma_layout.h"

namespace strata::cuda::wgmma {

inline constexpr int kSteps = 16;        // instructions (k16 steps) per 256-value stage
inline constexpr int kChunks = 32;       // 8-value chunks per stage
inline constexpr int kAtomBytes = 1024;  // 8 columns x 64 K values
inline constexpr int kSbo = kAtomBytes;   // groups of 8 columns are adjacent in an atom column

// The chunk order is the weight type's (QuantTraits::kChunkDelta): delta,
// the chunks between an instruction's two core matrices, is 4 where a
// byte's other nibble or the next block lies 32 values on (Q4_K, Q5_K,
// Q8_0, IQ4_NL, IQ4_XS) and 8 where it lies 64 values on (Q6_K).

// The first chunk of instruction i (0..15).
//   delta 4: i = 4 p + w: chunk 8 p + w, the second 8 p + 4 + w
//     (blocks 2p and 2p + 1, values 8w .. 8w + 7 of each).
//   delta 8: i = 8 h + 4 k + w (k = 0, 1): chunk 16 h + 4 k + w, the second
//     8 further (Q6_K: sub-blocks 4h + k and 4h + k + 2 of half h).
constexpr STRATA_HD int first_chunk(int delta, int i) {
  return delta == 8 ? 16 * (i >> 3) + 4 * ((i >> 2) & 1) + (i & 3) : 8 * (i >> 2) + (i & 3);
}

// Chunk of core matrix m (0, 1) of instruction i.
constexpr STRATA_HD int chunk_of(int delta, int i, int m) { return first_chunk(delta, i) + m * delta; }

// The instruction and core matrix (0, 1) that chunk c belongs to: the
// inverse of chunk_of.
constexpr STRATA_HD int instruction_of(int delta, int c) {
  return delta == 8 ? 8 * (c / 16) + 4 * ((c % 8) / 4) + c % 4 : 4 * (c / 8) + c % 4;
}
constexpr STRATA_HD int core_matrix_of(int delta, int c) { return delta == 8 ? (c % 16) / 8 : (c % 8) / 4; }

// The 128-byte swizzle on a shared-memory byte offset from a 1024-byte
// aligned base.
constexpr STRATA_HD int swizzle128(int x) { return x ^ (((x >> 7) & 7) << 4); }

// Where instruction i's B starts in a stage's activation tile of `cols`
// columns, before the swizzle: its atom, then its 32-byte step.
constexpr STRATA_HD int b_start(int i, int cols) { return (i / 4) * (cols / 8) * kAtomBytes + 32 * (i % 4); }

// Byte offset of chunk c of column (position) n in the tile: logical chunk
// 2 (i % 4) + m of column n's row in atom i / 4, swizzled.
constexpr STRATA_HD int x_offset(int delta, int n, int c, int cols) {
  const int i = instruction_of(delta, c), m = core_matrix_of(delta, c);
  return swizzle128(b_start(i, cols) - 32 * (i % 4) + (n / 8) * kSbo + (n % 8) * 128 + 16 * (2 * (i % 4) + m));
}

// The activation copies of a stage (`cols` columns, 64 or 128, x 32 chunks,
// 16 bytes each): copy k (0 .. 32 cols - 1) takes column x_copy_column(k,
// cols), chunk x_copy_chunk(k, cols), so 8 consecutive copies fill one core
// matrix's 128 bytes and a warp's 32 read 64 contiguous bytes of each of 8
// activation rows.
constexpr STRATA_HD int column_group_bits(int cols) { return cols == 128 ? 4 : 3; }  // log2(cols / 8)
constexpr STRATA_HD int x_copy_column(int k, int cols) {
  return (k & 7) | (((k >> 5) & ((1 << column_group_bits(cols)) - 1)) << 3);
}
constexpr STRATA_HD int x_copy_chunk(int k, int cols) {
  return ((k >> 3) & 3) | ((k >> (5 + column_group_bits(cols))) << 2);
}

// Where the hardware reads B element (k, n) of an instruction whose B
// starts at `start` bytes past a 1024-byte aligned base (see above).
constexpr STRATA_HD int b_elem_offset(int start, int k, int n, int sbo) {
  return swizzle128(start + (n / 8) * sbo + (n % 8) * 128 + 2 * k);
}

// The descriptor of an operand with the 128-byte swizzle at shared address
// addr: SBO the stride between groups of 8 rows along the strided dimension
// (K-major: of M or N; MN-major: of K), LBO unused by a K-major operand (16,
// encoded 1) and for an MN-major one the stride between its 64-element
// panels along M or N.
constexpr STRATA_HD uint64_t smem_desc(uint32_t addr, uint32_t sbo, uint32_t lbo = 16) {
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (uint64_t{1} << 62);
}

// The descriptor of the operand `bytes` past the one desc describes (the
// start address field, in 16-byte units, stays below 2^14: shared memory
// addresses are below 256 KiB).
constexpr STRATA_HD uint64_t desc_at(uint64_t desc, int bytes) { return desc + static_cast<uint64_t>(bytes >> 4); }

// ---- attention tiles (attention_wgmma.cuh) ----------------------------------
//
// A tile of `rows` rows of 128 F16 values (Q rows, K or V rows of keys) as
// two panels of 64 values, panel p holding values 64p .. 64p + 63 of every
// row as one 128-byte row, 8 rows an atom: chunk c (values 8c .. 8c + 7) of
// row r at panel_offset(r, c, rows), swizzled. The same bytes serve as
//   - a K-major operand (Q as A, K as B of S = Q K^T; rows along M or N):
//     instruction kk (values 16 kk .. 16 kk + 15) starts at
//     kmajor_start(kk, rows), SBO 1024 (kAtomBytes);
//   - an MN-major operand (V as B of O = P V; keys along K, values along N):
//     element (k, n) of the hardware's MN-major 128-byte-swizzled layout lies
//     at mn_elem_offset(start, k, n, lbo, sbo) = swizzle(start + (n / 64) LBO
//     + 2 (n % 64) + (k / 8) SBO + (k % 8) 128); with LBO the panel (rows x
//     128 bytes) and SBO 1024, instruction kk (keys 16 kk .. 16 kk + 15)
//     starts at mn_start(kk).
constexpr STRATA_HD int panel_offset(int row, int chunk, int rows) {
  return swizzle128((chunk / 8) * rows * 128 + (row / 8) * kAtomBytes + (row % 8) * 128 + 16 * (chunk % 8));
}
constexpr STRATA_HD int kmajor_start(int kk, int rows) { return (kk / 4) * rows * 128 + 32 * (kk % 4); }
constexpr STRATA_HD int mn_start(int kk) { return 2 * kAtomBytes * kk; }
constexpr STRATA_HD int mn_elem_offset(int start, int k, int n, int lbo, int sbo) {
  return swizzle128(start + (n / 64) * lbo + 2 * (n % 64) + (k / 8) * sbo + (k % 8) * 128);
}

// The A register of lane's row g + 8 h (h = 0, 1) and core matrix m: rows
// g / g + 8 alternate, k 2t, 2t + 1 (m = 0) come before k 2t + 8, 2t + 9.
constexpr STRATA_HD int a_reg(int h, int m) { return h + 2 * m; }

// The prep table's entry of chunk c with `entries` per 32-value block (1,
// or 2: one per 16-value half), and for Q3_K and Q6_K (one entry, two
// scales) whether it is the block's second 16-value half.
constexpr STRATA_HD int entry_of_chunk(int c, int entries) { return c * entries / 4; }
constexpr STRATA_HD bool second_half(int c) { return (c & 3) >= 2; }

// The two bytes at p (2-byte aligned) as the low half of a word.
STRATA_HD inline uint32_t ld16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}

}  // namespace strata::cuda::wgmma
