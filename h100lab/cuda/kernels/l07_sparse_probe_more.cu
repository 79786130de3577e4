// Used by: lesson 7 (WGMMA part 2: 2:4 sparsity), h100lab/measure/l07.py, tests/test_l07_emu.py, "On real hardware"
// of chapters/07-wgmma-fp8-sparsity.md.
// Proves: what wgmma.mma_async.sp computes (PTX ISA 9.7.15.6) for every sparse type — f16 (f16 and f32 D), bf16,
// tf32, the four fp8 pairings, s8/u8 — with A packed to K/2 through a descriptor (SS) or in registers (RS), the
// per-thread sp-meta registers given by the host (valid metadata, metadata only in the lanes sp-sel names with
// garbage elsewhere, and invalid codes), and each sparsity selector a type allows. The host builds the shared-memory
// image (packed A, dense B), descriptors relative to the image, C, the sp-meta registers and (RS) the A registers;
// each CTA runs `steps` chained sparse wgmmas and writes every thread's raw D registers. Compared bit for bit with
// h100lab.tensorcore.sparsity by h100lab/validation/l07.py.
// This file: the tf32 and register-A (RS) forms, apart so that a JIT refusal of one cannot lose the others.
// The kernels are instances of one template, sparse_probe<Acc, NREG>() below (the same probe as
// l06_wgmma_probe.cu, plus the sp-meta register): it is written once and takes the form's wgmma as a function.
// Each entry point at the end of the file is an extern "C" wrapper that names its instruction, sparsity selector
// and immediates (SPARSE_SS: A and B through descriptors; SPARSE_RS: A from four registers); the entry points are
// the forms of SPARSE_FORMS in h100lab/measure/l07.py (sparse_module() says which file); edit both together.

// The dynamic shared memory each CTA copies its image into.
extern __shared__ __align__(16) unsigned char dyn[];

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned load_image(unsigned char* dyn, const uint4* img, int img_bytes) {
    const unsigned raw = smem_u32(dyn);
    const unsigned base = (raw + 1023u) & ~1023u;
    uint4* dst = reinterpret_cast<uint4*>(dyn + (base - raw));
    const uint4* src = img + (size_t)blockIdx.x * (img_bytes / 16);
    for (int i = threadIdx.x; i < img_bytes / 16; i += blockDim.x) dst[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes read by wgmma (PTX 9.7.15.4)
    __syncthreads();
    return base;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

__device__ __forceinline__ void wgmma_commit_wait0() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// Accumulator registers: f32 D in float registers ("+f"), f16x2 and s32 D as raw 32-bit registers ("+r").
__device__ __forceinline__ void pin(float& x) { asm volatile("" : "+f"(x) :: "memory"); }
__device__ __forceinline__ void pin(unsigned& x) { asm volatile("" : "+r"(x) :: "memory"); }
__device__ __forceinline__ void set_bits(float& x, unsigned u) { x = __uint_as_float(u); }
__device__ __forceinline__ void set_bits(unsigned& x, unsigned u) { x = u; }
__device__ __forceinline__ unsigned bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned bits(unsigned x) { return x; }

// One probe: NREG accumulator registers of type Acc per thread; mma(d, ar, da, db, me_meta, sd) issues the form's
// sparse wgmma.
template <class Acc, int NREG, class Mma>
__device__ __forceinline__ void sparse_probe(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out, Mma mma) {
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    Acc d[NREG];
#pragma unroll
    for (int r = 0; r < NREG; ++r) set_bits(d[r], c_in[me * NREG + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < NREG; ++r) pin(d[r]);
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        mma(d, ar, da, db, me_meta, sd);
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < NREG; ++r) pin(d[r]);
    }
#pragma unroll
    for (int r = 0; r < NREG; ++r) pin(d[r]);
#pragma unroll
    for (int r = 0; r < NREG; ++r) d_out[me * NREG + r] = bits(d[r]);
}

}  // namespace

// Inline PTX names operands by number only (NVRTC rejects %[name]): the NREG accumulators are operands
// %0..%NREG-1 (WG_D<NREG> in the instruction, WG_ACC<NREG> in the operand list) and the operands after them
// are numbered from NREG on (WG_NEXT_<NREG>).
#define WG_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_NEXT_32 32, 33, 34, 35, 36, 37, 38
#define WG_ACC4(C, d, i) C(d[i]), C(d[i + 1]), C(d[i + 2]), C(d[i + 3])
#define WG_ACC16(C, d, i) WG_ACC4(C, d, i), WG_ACC4(C, d, i + 4), WG_ACC4(C, d, i + 8), WG_ACC4(C, d, i + 12)
#define WG_ACC32(C, d, i) WG_ACC16(C, d, i), WG_ACC16(C, d, i + 16)
#define WG_C_float "+f"
#define WG_C_unsigned "+r"
#define WG_CALL(m, args) m args

// wgmma.mma_async.sp (PTX ISA 9.7.15.6): D, A, B, the sp-meta register, the sparsity selector SEL, scale-d from a
// predicate set from `sd`, then the form's immediates (IMMS). SS: A and B by descriptor.
#define WG_SP_SS_TEXT(INSTR, SEL, IMMS, D, a, b, m, sd, ...) \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #sd ", 0;\n\t" INSTR " " D ", %" #a ", %" #b ", %" #m ", " #SEL \
    ", p" IMMS ";\n\t}"
// RS: A from four registers, B by descriptor.
#define WG_SP_RS_TEXT(INSTR, SEL, IMMS, D, a0, a1, a2, a3, b, m, sd) \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #sd ", 0;\n\t" INSTR " " D ", {%" #a0 ", %" #a1 ", %" #a2 ", %" #a3 \
    "}, %" #b ", %" #m ", " #SEL ", p" IMMS ";\n\t}"

#define SPARSE_ENTRY extern "C" __global__ void __launch_bounds__(128)
#define SPARSE_PARAMS \
    const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps, \
    const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in, \
    int scale_d, unsigned* __restrict__ d_out
#define SPARSE_ARGS img, img_bytes, descs, steps, a_regs, meta, c_in, scale_d, d_out
#define SPARSE_SS(Acc, NREG, INSTR, SEL, IMMS) \
    sparse_probe<Acc, NREG>(SPARSE_ARGS, [](Acc (&d)[NREG], const unsigned (&ar)[4], unsigned long long da, \
                                            unsigned long long db, unsigned me_meta, int sd) { \
        (void)ar; \
        asm volatile(WG_CALL(WG_SP_SS_TEXT, (INSTR, SEL, IMMS, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_##Acc, d, 0) : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory"); })
#define SPARSE_RS(Acc, NREG, INSTR, SEL, IMMS) \
    sparse_probe<Acc, NREG>(SPARSE_ARGS, [](Acc (&d)[NREG], const unsigned (&ar)[4], unsigned long long da, \
                                            unsigned long long db, unsigned me_meta, int sd) { \
        (void)da; \
        asm volatile(WG_CALL(WG_SP_RS_TEXT, (INSTR, SEL, IMMS, WG_D##NREG, WG_NEXT_##NREG)) \
                     : WG_ACC##NREG(WG_C_##Acc, d, 0) \
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(me_meta), "r"(sd) : "memory"); })

// The entry points: accumulator type and registers, instruction, sp-sel, immediates after scale-d.
SPARSE_ENTRY sp_ss_n64_f32_tf32_s0(SPARSE_PARAMS)
{ SPARSE_SS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 0, ", 1, 1"); }
SPARSE_ENTRY sp_ss_n64_f32_tf32_s1(SPARSE_PARAMS)
{ SPARSE_SS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 1, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_f32_bf16_s0(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16", 0, ", 1, 1, 0"); }
SPARSE_ENTRY sp_rs_n64_f32_tf32_s1(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 1, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_f32_e4m3_e4m3_s0(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3", 0, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_s32_s8_s8_s0(SPARSE_PARAMS)
{ SPARSE_RS(unsigned, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8", 0, ""); }
