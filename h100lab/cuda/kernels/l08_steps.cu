// Used by: lesson 8 ("Building the capstone step by step"), h100lab/design/steps.py (the steps, their launch shapes
// and references), tests/test_l08_steps.py, benchmarks/bench_gemm_steps.py (each step timed next to cuBLAS on the
// H200, data/l08/gemm_steps.json).
// Proves: the first three steps towards the capstone GEMM (l08_gemm.cu), each a whole kernel with the capstone's
// conventions -- C = A * B^T, A: M x K and B: N x K both K-major bf16, C: M x N row-major bf16 -- computes what its
// model says, bit for bit (emulator), and how much each idea is worth on silicon:
//  1. gemm_naive: one thread per output element, a chain of K fma.rn.f32 on the CUDA cores (PTX ISA 9.7.3.6) with
//     both operands read from global memory, rounded once to bf16 (cvt.rn.bf16.f32). Its answer is the sequential
//     f32 fma chain in K order (h100lab.design.steps.naive_reference).
//  2. gemm_tma: tensor cores fed by the TMA, one stage. A CTA of two warpgroups owns a 128 x 256 tile of C (warpgroup
//     w rows 64w..64w+63). For each k-block of 64 K-elements one elected thread arms an mbarrier with the block's
//     bytes (mbarrier.arrive.expect_tx, PTX ISA 9.7.13.15.11) and issues two TMA loads (cp.async.bulk.tensor.2d,
//     PTX ISA 9.7.9.25.5.1) into 128B-swizzled shared memory; every thread waits on the barrier's phase, each
//     warpgroup issues four SS wgmma.mma_async m64n256k16 (PTX ISA 9.7.15.5.2), waits for them (wait_group 0), and
//     the CTA meets at __syncthreads before the next load may overwrite the stage: loads and math never overlap.
//  3. gemm_pipeline: the same CTA with a ring of STAGES stages (default 4), one full mbarrier each. The prologue
//     puts k-blocks 0..S-2 in flight; at the top of iteration kb the elected thread loads block kb+S-1 into the stage
//     block kb-1 used (every warp left it at the last __syncthreads), so while block kb is multiplied the next S-1
//     are on their way. Block kb sits in stage kb % S and is the (kb / S)-th use of that stage's barrier, so its wait
//     is on phase parity (kb / S) & 1 (PTX ISA 9.7.13.15.16; h100lab.design.ring). gemm_tma is this ring with one
//     stage -- the same template instantiated with S = 1.
// Steps 2 and 3 are non-persistent (grid = number of tiles, tile b = (b / tiles_n, b % tiles_n)); their answer is the
// capstone's (h100lab.design.capstone.reference: wgmma k16 steps chained on the tensor-core model, K zero-padded to a
// multiple of 64 like the TMA's OOB fill). Steps 4-7 are the capstone itself (h100lab.design.steps).
// Host rules: gemm_naive takes any M, N, K >= 1 (blocks of 32 x 8 threads, grid (ceil(N/32), ceil(M/8))); gemm_tma and
// gemm_pipeline need K a multiple of 8 (a TMA global stride is a multiple of 16 B, cuTensorMapEncodeTiled), 256
// threads, dynamic shared memory h100lab.design.steps.ring_smem_bytes(S).
#include <h100lab/gemm_steps.cuh>

#ifndef STAGES
#define STAGES 4
#endif
#if STAGES < 2
#error "STAGES: the pipeline keeps STAGES - 1 k-blocks in flight, so it has at least two stages"
#endif

// ---- step 1: naive
extern "C" __global__ void __launch_bounds__(256) gemm_naive(const unsigned short* __restrict__ A,
                                                             const unsigned short* __restrict__ B,
                                                             unsigned short* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;     // lanes of a warp: 32 neighbouring columns of C
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const unsigned short* a = A + (size_t)row * K;              // row `row` of A (the same for the whole warp)
    const unsigned short* b = B + (size_t)col * K;              // row `col` of B: 32 rows K elements apart per warp
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc = __fmaf_rn(bf16_bits_to_f32(a[k]), bf16_bits_to_f32(b[k]), acc);
    C[(size_t)row * N + col] = f32_to_bf16(acc);
}

// ---- steps 2 and 3: TMA + wgmma through a ring of S stages (S = 1: one stage, no overlap)
template <int S>
__device__ __forceinline__ void gemm_ring(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                          unsigned short* __restrict__ C, int M, int N, int K) {
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;   // 128B swizzle: 1024-aligned tiles
    const unsigned a_base = base, b_base = base + S * STEP_A_BYTES;
    const unsigned full = b_base + S * STEP_B_BYTES;                     // S mbarriers of 8 bytes
    const int tiles_n = (N + STEP_BN - 1) / STEP_BN;
    const int tm = blockIdx.x / tiles_n, tn = blockIdx.x % tiles_n;     // one tile per CTA, row-major tile order
    const int nk = (K + STEP_BK - 1) / STEP_BK;
    const int wg = threadIdx.x / 128;
    const unsigned t = threadIdx.x % 128;
    const bool elected = threadIdx.x == 0;
    if (elected) {
        for (int s = 0; s < S; ++s) mbar_init(full + 8 * s, 1);          // one arrival: the elected thread's expect_tx
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");     // the initialised barriers -> the TMA
    }
    __syncthreads();
    // k-block kb -> stage kb % S: arm the stage's barrier with its bytes (rows past M or N and columns past K are
    // zero-filled by the TMA and still counted), then the A and B boxes
    auto load = [&](int kb) {
        if (kb >= nk) return;
        const int s = kb % S;
        mbar_arrive_expect_tx(full + 8 * s, STEP_A_BYTES + STEP_B_BYTES);
        tma_load_2d(a_base + s * STEP_A_BYTES, map_a, kb * STEP_BK, tm * STEP_BM, full + 8 * s);
        tma_load_2d(b_base + s * STEP_B_BYTES, map_b, kb * STEP_BK, tn * STEP_BN, full + 8 * s);
    };
    if (elected)
        for (int kb = 0; kb < S - 1; ++kb) load(kb);                     // prologue: S - 1 k-blocks in flight
    float d[STEP_NACC];
#pragma unroll
    for (int r = 0; r < STEP_NACC; ++r) d[r] = 0.f;
    for (int kb = 0; kb < nk; ++kb) {
        if (elected) load(kb + S - 1);              // into the stage of block kb - 1, which every warp has left
        const int s = kb % S;
        mbar_wait_parity(full + 8 * s, (unsigned)(kb / S) & 1u);        // block kb's bytes have landed
        mma_kblock(d, a_base + s * STEP_A_BYTES + wg * 64 * 128, b_base + s * STEP_B_BYTES, kb);
        __syncthreads();                            // both warpgroups are done reading stage s
    }
    store_fragment_bf16(d, C, M, N, tm * STEP_BM + 64 * wg, tn * STEP_BN, t);
}

// map_a: A (dims {K, M}), box {64, 128}; map_b: B (dims {K, N}), box {64, 256}; bf16, CU_TENSOR_MAP_SWIZZLE_128B,
// zero OOB fill (h100lab.design.capstone.tensor_maps with a 128 x 256 x 64 tile).
extern "C" __global__ void __launch_bounds__(256, 1) gemm_tma(const __grid_constant__ CUtensorMap map_a,
                                                              const __grid_constant__ CUtensorMap map_b,
                                                              unsigned short* __restrict__ C, int M, int N, int K) {
    gemm_ring<1>(&map_a, &map_b, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(256, 1) gemm_pipeline(const __grid_constant__ CUtensorMap map_a,
                                                                   const __grid_constant__ CUtensorMap map_b,
                                                                   unsigned short* __restrict__ C, int M, int N, int K) {
    gemm_ring<STAGES>(&map_a, &map_b, C, M, N, K);
}
