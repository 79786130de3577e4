// Used by: lesson 6 (WGMMA part 1), h100lab/measure/l06.py, tests/test_l06_emu.py, "On real hardware" of
// chapters/06-wgmma.md.
// Proves: one generic probe per wgmma.mma_async form (PTX ISA 9.7.15.5.2). The host builds a shared-memory image
// (any layout), the 64-bit matrix descriptors with start addresses relative to the image (the kernel adds the
// image's 1024-aligned shared address >> 4, as CuTe adds to the descriptor's low word), the per-thread accumulator
// registers C (raw bits) and, for the RS forms, the per-thread A registers; each CTA of the grid runs `steps`
// wgmmas (a chain accumulating into the same registers; scale-d of the first from the argument) and writes every
// thread's raw D registers. With one-hot / iota inputs this dumps (1) the accumulator fragment layout
// (hopper-spec-facts 8.3), (2) the RS A-fragment layout (8.4), (3) which shared-memory bytes a descriptor reads
// for each swizzle mode, K/MN-major, LBO/SBO/base offset (8.2); with random inputs (4) the numerics of every
// type combination (10.4). Compared bit for bit with h100lab.tensorcore by h100lab/validation/l06.py.
// The kernels are instances of one template, probe<Acc, NREG>() below: it is written once (image, accumulators,
// the chain of `steps` wgmmas, the dump) and takes the form's wgmma as a function. Each entry point at the end of
// the file is an extern "C" wrapper that names its instruction and immediates (PROBE_SS: A and B through
// descriptors; PROBE_RS: A from four registers); the entry points are the forms of PROBE_FORMS in
// h100lab/measure/l06.py; edit both together.

#include <h100lab/wgmma_probe.cuh>

namespace {

// One probe: NREG accumulator registers of type Acc per thread; mma(d, ar, da, db, sd) issues the form's wgmma.
template <class Acc, int NREG, class Mma>
__device__ __forceinline__ void probe(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ c_in, int scale_d, unsigned* __restrict__ d_out,
        Mma mma) {
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    Acc d[NREG];
#pragma unroll
    for (int r = 0; r < NREG; ++r) set_bits(d[r], c_in[me * NREG + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];   // RS: A registers written before the fence that orders them for the wgmma
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        (void)da; (void)ar;
        // a fence each step: the compiler may move accumulators between registers around the loop, and a
        // wgmma must see every earlier register access ordered before it (PTX ISA 9.7.15.7.1)
#pragma unroll
        for (int r = 0; r < NREG; ++r) pin(d[r]);
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        mma(d, ar, da, db, sd);
    }
    wgmma_commit_wait0();
    // pin every accumulator after the wait: without this the compiler may copy them out before it
    // (CUTLASS warpgroup_fence_operand); reading them earlier is undefined (PTX ISA 9.7.15.5.2)
#pragma unroll
    for (int r = 0; r < NREG; ++r) pin(d[r]);
#pragma unroll
    for (int r = 0; r < NREG; ++r) d_out[me * NREG + r] = bits(d[r]);
}

}  // namespace

// wgmma.mma_async (PTX ISA 9.7.15.5.2) with scale-d from a predicate set from `sd`, then the form's immediates
// (IMMS: imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b as the type allows). SS: A and B by descriptor.
#define WG_SS_TEXT(INSTR, IMMS, D, a, b, sd, ...) \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #sd ", 0;\n\t" INSTR " " D ", %" #a ", %" #b ", p" IMMS ";\n\t}"
// RS: A from four registers, B by descriptor.
#define WG_RS_TEXT(INSTR, IMMS, D, a0, a1, a2, a3, b, sd, ...) \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #sd ", 0;\n\t" INSTR " " D ", {%" #a0 ", %" #a1 ", %" #a2 ", %" #a3 \
    "}, %" #b ", p" IMMS ";\n\t}"

#define PROBE_ENTRY extern "C" __global__ void __launch_bounds__(128)
#define PROBE_PARAMS \
    const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps, \
    const unsigned* __restrict__ a_regs, const unsigned* __restrict__ c_in, int scale_d, unsigned* __restrict__ d_out
#define PROBE_ARGS img, img_bytes, descs, steps, a_regs, c_in, scale_d, d_out
#define PROBE_SS(Acc, NREG, INSTR, IMMS) \
    probe<Acc, NREG>(PROBE_ARGS, [](Acc (&d)[NREG], const unsigned (&ar)[4], unsigned long long da, \
                                    unsigned long long db, int sd) { \
        (void)ar; \
        asm volatile(WG_CALL(WG_SS_TEXT, (INSTR, IMMS, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_##Acc, d, 0) : "l"(da), "l"(db), "r"(sd) : "memory"); })
#define PROBE_RS(Acc, NREG, INSTR, IMMS) \
    probe<Acc, NREG>(PROBE_ARGS, [](Acc (&d)[NREG], const unsigned (&ar)[4], unsigned long long da, \
                                    unsigned long long db, int sd) { \
        (void)da; \
        asm volatile(WG_CALL(WG_RS_TEXT, (INSTR, IMMS, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_##Acc, d, 0) \
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(sd) : "memory"); })

// The entry points: accumulator type and registers, instruction, immediates after scale-d.
PROBE_ENTRY probe_ss_n64_f32_bf16(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
PROBE_ENTRY probe_ss_n64_f32_bf16_nega(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", ", -1, 1, 0, 0"); }
PROBE_ENTRY probe_ss_n256_f32_bf16(PROBE_PARAMS)
{ PROBE_SS(float, 128, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0"); }
PROBE_ENTRY probe_ss_n64_f32_f16(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", ", 1, 1, 0, 0"); }
PROBE_ENTRY probe_ss_n64_f32_f16_ta(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", ", 1, 1, 1, 0"); }
PROBE_ENTRY probe_ss_n64_f32_f16_tb(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", ", 1, 1, 0, 1"); }
PROBE_ENTRY probe_ss_n64_f16_f16(PROBE_PARAMS)
{ PROBE_SS(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16", ", 1, 1, 0, 0"); }
PROBE_ENTRY probe_ss_n64_f32_tf32(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f32_e4m3_e4m3(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f16_e4m3_e4m3(PROBE_PARAMS)
{ PROBE_SS(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f32_e4m3_e5m2(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f16_e4m3_e5m2(PROBE_PARAMS)
{ PROBE_SS(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e5m2", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f32_e5m2_e4m3(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f16_e5m2_e4m3(PROBE_PARAMS)
{ PROBE_SS(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e4m3", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f32_e5m2_e5m2(PROBE_PARAMS)
{ PROBE_SS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_f16_e5m2_e5m2(PROBE_PARAMS)
{ PROBE_SS(unsigned, 16, "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e5m2", ", 1, 1"); }
PROBE_ENTRY probe_ss_n64_s32_s8_s8(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8", ""); }
PROBE_ENTRY probe_ss_n64_s32_s8_u8(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.u8", ""); }
PROBE_ENTRY probe_ss_n64_s32_u8_s8(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8", ""); }
PROBE_ENTRY probe_ss_n64_s32_u8_u8(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8", ""); }
PROBE_ENTRY probe_ss_n64_s32_s8_s8_sat(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.satfinite.s32.s8.s8", ""); }
PROBE_ENTRY probe_ss_n64_s32_b1(PROBE_PARAMS)
{ PROBE_SS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k256.s32.b1.b1.and.popc", ""); }
PROBE_ENTRY probe_rs_n64_f32_bf16(PROBE_PARAMS)
{ PROBE_RS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", ", 1, 1, 0"); }
PROBE_ENTRY probe_rs_n64_f32_tf32(PROBE_PARAMS)
{ PROBE_RS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", ", 1, 1"); }
PROBE_ENTRY probe_rs_n64_f32_e4m3_e4m3(PROBE_PARAMS)
{ PROBE_RS(float, 32, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", ", 1, 1"); }
PROBE_ENTRY probe_rs_n64_s32_s8_s8(PROBE_PARAMS)
{ PROBE_RS(unsigned, 32, "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8", ""); }
