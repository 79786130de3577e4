// Used by: lesson 7 (WGMMA part 2: async groups), h100lab/measure/l07.py, tests/test_l07_emu.py, the commit/wait
// timeline of chapters/07-wgmma-fp8-sparsity.md; calibration data of h100lab/tensorcore/timing.py.
// Proves: how long wgmma takes per type and N, and how many commit groups in flight keep the tensor core busy.
// tim_<type>_n<N>: one warpgroup runs `iters` groups of `per_group` wgmmas chained on one accumulator (a
// wgmma.fence before each group, PTX ISA 9.7.15.7.1), wgmma.commit_group after each group, then
// wgmma.wait_group `depth` (0..3: that many groups may stay in flight, 9.7.15.7.3), and a final wait_group 0.
// Thread 0 records clock64 cycles (PTX ISA 10.x %clock64) around the loop. per_group = 1, depth = 0 measures
// the chain latency; large per_group or depth the issue-limited throughput. Operands: a fixed non-zero byte
// pattern in shared memory read through host-given descriptors; sparse metadata 0x44444444 (positions 0, 1).
// Read from the cubin (cuobjdump -sass): with per_group known only at run time, ptxas closes every group with an
// empty HGMMA (64x8x16, gsb0) and makes each wgmma of the size-mod-4 rest a group of its own, so wait_group 1 here
// waits for every real wgmma — l07_wgmma_deps.cu measures group depth with compile-time group sizes instead
// (h100lab/tensorcore/timing.py models both programs).
// The kernels are instances of one template, timing<Acc, NREG>() below: it is written once and takes the form's
// wgmma as a function. Each entry point at the end of the file is an extern "C" wrapper that names its instruction
// and immediates (TIMING: dense, TIMING_SP: sparse); the entry points are TIMING_FORMS in h100lab/measure/l07.py.

#include <h100lab/wgmma_probe.cuh>

namespace {

// One timing run: NREG accumulator registers of type Acc per thread; mma(d, da, db, meta) issues one wgmma.
template <class Acc, int NREG, class Mma>
__device__ __forceinline__ void timing(unsigned long long da, unsigned long long db, int per_group, int depth,
                                       int iters, long long* __restrict__ cycles, unsigned* __restrict__ sink,
                                       Mma mma) {
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(dyn)), base = (raw + 1023u) & ~1023u;
    unsigned* s = reinterpret_cast<unsigned*>(dyn + (base - raw));
    for (int i = threadIdx.x; i < 40960 / 4; i += blockDim.x) s[i] = 0x3C3A3C38u ^ (i & 0x0101u);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    da += base >> 4;
    db += base >> 4;
    Acc d[NREG];
#pragma unroll
    for (int r = 0; r < NREG; ++r) d[r] = 0;
    const unsigned meta = 0x44444444u;
    (void)meta;
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int r = 0; r < NREG; ++r) pin(d[r]);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int j = 0; j < per_group; ++j) {
            mma(d, da, db, meta);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        switch (depth) {
        case 0: asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); break;
        case 1: asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); break;
        case 2: asm volatile("wgmma.wait_group.sync.aligned 2;" ::: "memory"); break;
        default: asm volatile("wgmma.wait_group.sync.aligned 3;" ::: "memory"); break;
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int r = 0; r < NREG; ++r) pin(d[r]);
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    unsigned acc = 0;
#pragma unroll
    for (int r = 0; r < NREG; ++r) acc ^= bits(d[r]);
    sink[blockIdx.x * 128 + threadIdx.x] = acc;
}

}  // namespace

// wgmma.mma_async (PTX ISA 9.7.15.5.2) with scale-d 1 and the form's immediates (IMMS); A and B by descriptor.
#define WG_TIM_TEXT(INSTR, IMMS, D, a, b, ...) "{\n\t" INSTR " " D ", %" #a ", %" #b ", 1" IMMS ";\n\t}"
// wgmma.mma_async.sp (PTX ISA 9.7.15.6): also the sp-meta register and sparsity selector 0.
#define WG_TIM_SP_TEXT(INSTR, IMMS, D, a, b, m, ...) "{\n\t" INSTR " " D ", %" #a ", %" #b ", %" #m ", 0, 1" IMMS ";\n\t}"

#define TIMING_ENTRY extern "C" __global__ void __launch_bounds__(128)
#define TIMING_PARAMS unsigned long long da, unsigned long long db, \
    int per_group, int depth, int iters, long long* __restrict__ cycles, unsigned* __restrict__ sink
#define TIMING_ARGS da, db, per_group, depth, iters, cycles, sink
#define TIMING_WITH(TEXT, Acc, NREG, INSTR, IMMS) \
    timing<Acc, NREG>(TIMING_ARGS, [](Acc (&d)[NREG], unsigned long long da, unsigned long long db, unsigned meta) { \
        asm volatile(WG_CALL(TEXT, (INSTR, IMMS, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_##Acc, d, 0) : "l"(da), "l"(db), "r"(meta) : "memory"); })
#define TIMING(Acc, NREG, INSTR, IMMS) TIMING_WITH(WG_TIM_TEXT, Acc, NREG, INSTR, IMMS)
#define TIMING_SP(Acc, NREG, INSTR, IMMS) TIMING_WITH(WG_TIM_SP_TEXT, Acc, NREG, INSTR, IMMS)

// The entry points tim_<type>_n<N>: accumulator type and registers, instruction, immediates after scale-d.
TIMING_ENTRY tim_bf16_n16(TIMING_PARAMS)
{ TIMING(float, 8, "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_bf16_n32(TIMING_PARAMS)
{ TIMING(float, 16, "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_bf16_n64(TIMING_PARAMS)
{ TIMING(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_bf16_n128(TIMING_PARAMS)
{ TIMING(float, 64, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_bf16_n256(TIMING_PARAMS)
{ TIMING(float, 128, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_tf32_n16(TIMING_PARAMS)
{ TIMING(float, 8, "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32", ", 1, 1"); }
TIMING_ENTRY tim_tf32_n32(TIMING_PARAMS)
{ TIMING(float, 16, "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32", ", 1, 1"); }
TIMING_ENTRY tim_tf32_n64(TIMING_PARAMS)
{ TIMING(float, 32, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", ", 1, 1"); }
TIMING_ENTRY tim_tf32_n128(TIMING_PARAMS)
{ TIMING(float, 64, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32", ", 1, 1"); }
TIMING_ENTRY tim_tf32_n256(TIMING_PARAMS)
{ TIMING(float, 128, "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", ", 1, 1"); }
TIMING_ENTRY tim_e4m3_n16(TIMING_PARAMS)
{ TIMING(float, 8, "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3", ", 1, 1"); }
TIMING_ENTRY tim_e4m3_n32(TIMING_PARAMS)
{ TIMING(float, 16, "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3", ", 1, 1"); }
TIMING_ENTRY tim_e4m3_n64(TIMING_PARAMS)
{ TIMING(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", ", 1, 1"); }
TIMING_ENTRY tim_e4m3_n128(TIMING_PARAMS)
{ TIMING(float, 64, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", ", 1, 1"); }
TIMING_ENTRY tim_e4m3_n256(TIMING_PARAMS)
{ TIMING(float, 128, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", ", 1, 1"); }
TIMING_ENTRY tim_s8_n16(TIMING_PARAMS)
{ TIMING(unsigned, 8, "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8", ""); }
TIMING_ENTRY tim_s8_n32(TIMING_PARAMS)
{ TIMING(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8", ""); }
TIMING_ENTRY tim_s8_n64(TIMING_PARAMS)
{ TIMING(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8", ""); }
TIMING_ENTRY tim_s8_n128(TIMING_PARAMS)
{ TIMING(unsigned, 64, "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8", ""); }
TIMING_ENTRY tim_s8_n256(TIMING_PARAMS)
{ TIMING(unsigned, 128, "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8", ""); }
TIMING_ENTRY tim_sp_bf16_n16(TIMING_PARAMS)
{ TIMING_SP(float, 8, "wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_sp_bf16_n32(TIMING_PARAMS)
{ TIMING_SP(float, 16, "wgmma.mma_async.sp.sync.aligned.m64n32k32.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_sp_bf16_n64(TIMING_PARAMS)
{ TIMING_SP(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_sp_bf16_n128(TIMING_PARAMS)
{ TIMING_SP(float, 64, "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16", ", 1, 1, 0, 0"); }
TIMING_ENTRY tim_sp_bf16_n256(TIMING_PARAMS)
{ TIMING_SP(float, 128, "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16", ", 1, 1, 0, 0"); }
