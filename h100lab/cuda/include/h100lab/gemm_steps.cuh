// h100lab/gemm_steps.cuh -- the parts of lesson 8's step-by-step GEMMs (l08_steps.cu) that are not the point of a
// step: the TMA load, the 128B-swizzled matrix descriptor, one k-block of m64n256k16 wgmmas, and the direct bf16
// stores of a warpgroup's 64 x 256 accumulator fragment. The mbarrier calls come from h100lab/mbarrier.cuh, the
// wgmma fence/commit/wait and the accumulator operand macros from h100lab/wgmma_probe.cuh. Everything is an inline
// function: a kernel compiles to the same code as when each was written out in it.
#pragma once

#include <h100lab/tensormap.cuh>
#include <h100lab/mbarrier.cuh>          // smem_u32, mbar_init, mbar_arrive_expect_tx, mbar_try
#define smem_u32 wgmma_probe_smem_u32    // wgmma_probe.cuh brings its own copy of smem_u32: keep it apart
#include <h100lab/wgmma_probe.cuh>       // dyn[], wgmma_fence, wgmma_commit_wait0, pin, WG_D128 / WG_ACC128
#undef smem_u32

namespace {

constexpr int STEP_BM = 128;             // CTA tile rows: two consumer warpgroups of 64 rows
constexpr int STEP_BN = 256;             // CTA tile columns = the wgmma N
constexpr int STEP_BK = 64;              // K elements per k-block: one 128-byte swizzle row of bf16
constexpr int STEP_A_BYTES = STEP_BM * STEP_BK * 2;
constexpr int STEP_B_BYTES = STEP_BN * STEP_BK * 2;
constexpr int STEP_NACC = STEP_BN / 2;   // f32 accumulators per thread: 64 x 256 over a warpgroup's 128 threads

// Spin on mbarrier.try_wait.parity until the phase of `parity` has completed (PTX ISA 9.7.13.15.16).
__device__ __forceinline__ void mbar_wait_parity(unsigned bar, unsigned parity) {
    while (!mbar_try(bar, parity)) {
    }
}

// cp.async.bulk.tensor.2d global -> shared, completing `bytes` on the mbarrier `bar` (PTX ISA 9.7.9.25.5.1); the box
// at element coordinates (x, y) of the tensor map, out-of-bounds elements zero-filled (and counted in the bytes).
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

// wgmma matrix descriptor of a K-major 128B-swizzled tile (PTX ISA 9.7.15.5.1.2.1): start address >> 4 in bits 0-13,
// leading byte offset encoded 1 (unused for swizzled K-major), stride byte offset 1024 B (8 rows of 128 B, encoded
// 64) in bits 32-45, layout type 1 (128B swizzle) in bits 62-63.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// wgmma.mma_async m64n256k16, f32 += bf16 x bf16, both operands from shared memory (SS, PTX ISA 9.7.15.5.2);
// scale-d = 0 (D = A B, the accumulators ignored) when scale_d is 0.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[STEP_NACC], unsigned long long da, unsigned long long db,
                                                 int scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " WG_D128 ", %128, %129, p, 1, 1, 0, 0;\n\t}"
                 : WG_ACC128(WG_C_float, d, 0) : "l"(da), "l"(db), "r"(scale_d) : "memory");
}

// the accumulators may change here (an empty asm: no instruction), so the compiler keeps no copy of them across a
// wgmma.fence or a wait_group
__device__ __forceinline__ void pin_all(float (&d)[STEP_NACC]) {
#pragma unroll
    for (int r = 0; r < STEP_NACC; ++r) pin(d[r]);
}

// One k-block (64 K-elements) of this warpgroup's 64 x 256 tile: four k16 wgmmas, the K-advance inside the 128-byte
// swizzle row +32 B on each descriptor's start address; scale-d = 0 on the tile's first k16 step (k-block 0, k 0).
// Committed as one group and waited for (wait_group 0): when it returns, the stage may be overwritten.
__device__ __forceinline__ void mma_kblock(float (&d)[STEP_NACC], unsigned a_tile, unsigned b_tile, int kb) {
    pin_all(d);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k)
        wgmma_m64n256k16(d, sw128_desc(a_tile + 32 * k), sw128_desc(b_tile + 32 * k), kb | k);
    wgmma_commit_wait0();
    pin_all(d);
}

// f32 -> bf16 bits (cvt.rn.bf16.f32, round to nearest even; PTX ISA 9.7.9.21)
__device__ __forceinline__ unsigned short f32_to_bf16(float x) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float bf16_bits_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

// A warpgroup's 64 x 256 fragment (thread t holds row 16w + g + 8((r >> 1) & 1), column 8(r >> 2) + 2c + (r & 1),
// w = t / 32, g = (t % 32) / 4, c = t % 4; PTX ISA 9.7.15.5.1.1.1) -> bf16, stored to row-major C inside M x N.
__device__ __forceinline__ void store_fragment_bf16(const float (&d)[STEP_NACC], unsigned short* __restrict__ C,
                                                    int M, int N, int row0, int col0, unsigned t) {
    const unsigned w = t / 32, g = (t % 32) / 4, c = t % 4;
#pragma unroll
    for (int r = 0; r < STEP_NACC; r += 2) {
        const int row = row0 + 16 * w + g + 8 * ((r >> 1) & 1), col = col0 + 8 * (r >> 2) + 2 * c;
        if (row >= M || col >= N) continue;
        unsigned short* p = C + (size_t)row * N + col;
        const unsigned short lo = f32_to_bf16(d[r]), hi = f32_to_bf16(d[r + 1]);
        if (col + 1 < N && (N & 1) == 0) {                   // an even N keeps every (row, even col) pair 4-byte aligned
            *reinterpret_cast<unsigned*>(p) = (unsigned)lo | ((unsigned)hi << 16);
        } else {
            p[0] = lo;
            if (col + 1 < N) p[1] = hi;
        }
    }
}

}  // namespace
