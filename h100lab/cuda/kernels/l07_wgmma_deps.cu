// Used by: lesson 7 (WGMMA part 2: async groups), h100lab/measure/l07.py (dataset l07/wgmma_deps),
// tests/test_l07_deps.py, the commit/wait timeline of chapters/07-wgmma-fp8-sparsity.md; calibration and held-out
// data of h100lab/tensorcore/timing.py.
// Proves: whether commit groups in flight (wgmma.wait_group N, PTX ISA 9.7.15.7.3) overlap when the groups
// read-modify-write one accumulator (a chain: each wgmma's D is the next one's C) or work on independent
// accumulators. dep_<mode>_n<N>_a<A>_g<G>: one warpgroup runs `iters` groups of G wgmmas (G a compile-time
// constant: ptxas then marks the group's last HGMMA as the one that closes it — a run-time group size made it add
// an empty HGMMA per commit in l07_wgmma_timing.cu), group i on accumulator set i % A (A = 1, 2 or 4 sets of
// N/2 registers per thread), a wgmma.fence before each group (9.7.15.7.1), wgmma.commit_group after it, then
// wgmma.wait_group `depth` (0..3: at run time through a switch, or a compile-time constant in the _d<depth>
// entry points) and a final wait_group 0. mode `chain`: every wgmma accumulates
// (scale-d = 1: a group depends on the previous group of its set); mode `fresh`: a group's first wgmma
// overwrites its set (scale-d = 0: no read of the earlier result, the same registers written again).
// Thread 0 records clock64 cycles around the loop. Operands: a fixed non-zero byte pattern in shared memory read
// through host-given descriptors (as l07_wgmma_timing.cu). Every form runs 1024 wgmmas (iters = 1024 / G).
// The kernels are instances of one template, deps<Acc, NREG, A, G, CHAIN>() below, with the form's wgmma as a
// function; the entry points are DEP_FORMS in h100lab/measure/l07.py (edit both together).

#include <h100lab/wgmma_probe.cuh>

namespace {

// mma(d, da, db) accumulates (scale-d = 1), mma0(d, da, db) overwrites (scale-d = 0).
template <int A, int G, bool CHAIN, int DEPTH, class Acc, int NREG, class Mma, class Mma0>
__device__ __forceinline__ void deps(unsigned long long da, unsigned long long db, int depth, int iters,
                                     long long* __restrict__ cycles, unsigned* __restrict__ sink, Mma mma,
                                     Mma0 mma0) {
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    unsigned* s = reinterpret_cast<unsigned*>(dyn + (base - raw));
    for (int i = threadIdx.x; i < 40960 / 4; i += blockDim.x) s[i] = 0x3C3A3C38u ^ (i & 0x0101u);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    da += base >> 4;
    db += base >> 4;
    Acc d[A][NREG];
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
        for (int r = 0; r < NREG; ++r) {
            d[a][r] = 0;
            pin(d[a][r]);      // the compiler must not know the zeros (it would feed constants to the first wgmma)
        }
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; i += A) {
#pragma unroll
        for (int a = 0; a < A; ++a) {
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < G; ++j) {
                if (CHAIN || j) mma(d[a], da, db);
                else mma0(d[a], da, db);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            if constexpr (DEPTH >= 0) {
                asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(DEPTH) : "memory");
            } else {
                switch (depth) {
                case 0: asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); break;
                case 1: asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); break;
                case 2: asm volatile("wgmma.wait_group.sync.aligned 2;" ::: "memory"); break;
                default: asm volatile("wgmma.wait_group.sync.aligned 3;" ::: "memory"); break;
                }
            }
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
        for (int r = 0; r < NREG; ++r) pin(d[a][r]);
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    unsigned acc = 0;
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
        for (int r = 0; r < NREG; ++r) acc ^= bits(d[a][r]);
    sink[blockIdx.x * 128 + threadIdx.x] = acc;
}

}  // namespace

// wgmma.mma_async (PTX ISA 9.7.15.5.2): scale-d SD (1 accumulate, 0 overwrite), then the immediates scale-a,
// scale-b, tnspA, tnspB; A and B by descriptor.
#define WG_DEP_TEXT(INSTR, SD, D, a, b, ...) "{\n\t" INSTR " " D ", %" #a ", %" #b ", " #SD ", 1, 1, 0, 0;\n\t}"
#define DEP_MMA(NREG, INSTR, SD) \
    [](float (&d)[NREG], unsigned long long da, unsigned long long db) { \
        asm volatile(WG_CALL(WG_DEP_TEXT, (INSTR, SD, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_float, d, 0) : "l"(da), "l"(db) : "memory"); }

#define DEP_ENTRY extern "C" __global__ void __launch_bounds__(128)
#define DEP_PARAMS unsigned long long da, unsigned long long db, int depth, int iters, \
    long long* __restrict__ cycles, unsigned* __restrict__ sink
#define DEP_D(NREG, A, G, CHAIN, DEPTH, INSTR) \
    deps<A, G, CHAIN, DEPTH, float, NREG>(da, db, depth, iters, cycles, sink, DEP_MMA(NREG, INSTR, 1), \
                                          DEP_MMA(NREG, INSTR, 0))
#define DEP(NREG, A, G, CHAIN, INSTR) DEP_D(NREG, A, G, CHAIN, -1, INSTR)
// dep_<mode>_n<N>_a<A>_g<G>_d0 ... _d3: the same loop with the wait depth a compile-time constant (no switch)
#define DEP4(NAME, NREG, A, G, CHAIN, INSTR) \
    DEP_ENTRY NAME##_d0(DEP_PARAMS) { DEP_D(NREG, A, G, CHAIN, 0, INSTR); } \
    DEP_ENTRY NAME##_d1(DEP_PARAMS) { DEP_D(NREG, A, G, CHAIN, 1, INSTR); } \
    DEP_ENTRY NAME##_d2(DEP_PARAMS) { DEP_D(NREG, A, G, CHAIN, 2, INSTR); } \
    DEP_ENTRY NAME##_d3(DEP_PARAMS) { DEP_D(NREG, A, G, CHAIN, 3, INSTR); }
#define BF16_N64 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
#define BF16_N128 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#define BF16_N256 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"

// The entry points dep_<mode>_n<N>_a<A>_g<G>: registers per set, sets, group size, chain?, instruction.
DEP_ENTRY dep_chain_n64_a1_g1(DEP_PARAMS) { DEP(32, 1, 1, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a1_g2(DEP_PARAMS) { DEP(32, 1, 2, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a1_g4(DEP_PARAMS) { DEP(32, 1, 4, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a1_g16(DEP_PARAMS) { DEP(32, 1, 16, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a2_g1(DEP_PARAMS) { DEP(32, 2, 1, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a2_g2(DEP_PARAMS) { DEP(32, 2, 2, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a2_g4(DEP_PARAMS) { DEP(32, 2, 4, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a4_g1(DEP_PARAMS) { DEP(32, 4, 1, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a4_g2(DEP_PARAMS) { DEP(32, 4, 2, true, BF16_N64); }
DEP_ENTRY dep_chain_n64_a4_g4(DEP_PARAMS) { DEP(32, 4, 4, true, BF16_N64); }
DEP_ENTRY dep_fresh_n64_a1_g1(DEP_PARAMS) { DEP(32, 1, 1, false, BF16_N64); }
DEP_ENTRY dep_fresh_n64_a1_g2(DEP_PARAMS) { DEP(32, 1, 2, false, BF16_N64); }
DEP_ENTRY dep_fresh_n64_a1_g4(DEP_PARAMS) { DEP(32, 1, 4, false, BF16_N64); }
DEP_ENTRY dep_chain_n128_a1_g1(DEP_PARAMS) { DEP(64, 1, 1, true, BF16_N128); }
DEP_ENTRY dep_chain_n128_a1_g4(DEP_PARAMS) { DEP(64, 1, 4, true, BF16_N128); }
DEP_ENTRY dep_chain_n128_a1_g16(DEP_PARAMS) { DEP(64, 1, 16, true, BF16_N128); }
DEP_ENTRY dep_chain_n128_a2_g1(DEP_PARAMS) { DEP(64, 2, 1, true, BF16_N128); }
DEP_ENTRY dep_chain_n128_a2_g4(DEP_PARAMS) { DEP(64, 2, 4, true, BF16_N128); }
DEP_ENTRY dep_chain_n256_a1_g1(DEP_PARAMS) { DEP(128, 1, 1, true, BF16_N256); }
DEP_ENTRY dep_chain_n256_a1_g2(DEP_PARAMS) { DEP(128, 1, 2, true, BF16_N256); }
DEP_ENTRY dep_chain_n256_a1_g4(DEP_PARAMS) { DEP(128, 1, 4, true, BF16_N256); }
DEP_ENTRY dep_chain_n256_a1_g16(DEP_PARAMS) { DEP(128, 1, 16, true, BF16_N256); }
DEP_ENTRY dep_fresh_n256_a1_g1(DEP_PARAMS) { DEP(128, 1, 1, false, BF16_N256); }
DEP_ENTRY dep_fresh_n256_a1_g4(DEP_PARAMS) { DEP(128, 1, 4, false, BF16_N256); }

// The same forms with the wait depth fixed at compile time (DEPTH_FORMS in h100lab/measure/l07.py): the run-time
// switch above costs the warp tens of cycles per group (ptxas makes it a jump table or a chain of branches), which
// l07/wgmma_deps measured along with the tensor core.
DEP4(dep_chain_n64_a1_g1, 32, 1, 1, true, BF16_N64)
DEP4(dep_chain_n64_a1_g2, 32, 1, 2, true, BF16_N64)
DEP4(dep_chain_n64_a1_g4, 32, 1, 4, true, BF16_N64)
DEP4(dep_chain_n64_a1_g16, 32, 1, 16, true, BF16_N64)
DEP4(dep_chain_n64_a2_g1, 32, 2, 1, true, BF16_N64)
DEP4(dep_chain_n64_a2_g2, 32, 2, 2, true, BF16_N64)
DEP4(dep_chain_n64_a2_g4, 32, 2, 4, true, BF16_N64)
DEP4(dep_chain_n64_a4_g1, 32, 4, 1, true, BF16_N64)
DEP4(dep_chain_n64_a4_g2, 32, 4, 2, true, BF16_N64)
DEP4(dep_chain_n64_a4_g4, 32, 4, 4, true, BF16_N64)
DEP4(dep_fresh_n64_a1_g1, 32, 1, 1, false, BF16_N64)
DEP4(dep_chain_n128_a1_g1, 64, 1, 1, true, BF16_N128)
DEP4(dep_chain_n128_a1_g4, 64, 1, 4, true, BF16_N128)
DEP4(dep_chain_n128_a2_g1, 64, 2, 1, true, BF16_N128)
DEP4(dep_chain_n128_a2_g4, 64, 2, 4, true, BF16_N128)
DEP4(dep_chain_n256_a1_g1, 128, 1, 1, true, BF16_N256)
DEP4(dep_chain_n256_a1_g2, 128, 1, 2, true, BF16_N256)
DEP4(dep_chain_n256_a1_g4, 128, 1, 4, true, BF16_N256)
DEP4(dep_fresh_n256_a1_g1, 128, 1, 1, false, BF16_N256)
