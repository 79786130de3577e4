// h100lab/wgmma_probe.cuh -- what the wgmma probe kernels of lessons 6 and 7 share (l06_wgmma_probe.cu,
// l07_sparse_probe.cu, l07_sparse_probe_more.cu, l07_wgmma_timing.cu): the dynamic shared memory, the image copy,
// the wgmma fence/commit/wait, the accumulator-register helpers, the sparse probe template and the operand macros
// of the inline PTX. Everything is an inline function, a template or a macro: a kernel file compiles to the same
// code as when each of them was written out in it.
#pragma once

// The dynamic shared memory each CTA copies its image (or operand pattern) into.
extern __shared__ __align__(16) unsigned char dyn[];

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy this CTA's image into the first 1024-aligned byte of dynamic shared memory; returns that address.
__device__ __forceinline__ unsigned load_image(unsigned char* dyn, const uint4* img, int img_bytes) {
    const unsigned raw = smem_u32(dyn);
    const unsigned base = (raw + 1023u) & ~1023u;
    uint4* dst = reinterpret_cast<uint4*>(dyn + (base - raw));
    const uint4* src = img + (size_t)blockIdx.x * (img_bytes / 16);
    for (int i = threadIdx.x; i < img_bytes / 16; i += blockDim.x) dst[i] = src[i];
    // generic-proxy writes, read next by the async proxy (wgmma): fence.proxy.async (PTX ISA 9.7.15.4)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
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

// One sparse probe (l07_sparse_probe*.cu; the same probe as l06_wgmma_probe.cu, plus the sp-meta register): NREG
// accumulator registers of type Acc per thread; mma(d, ar, da, db, me_meta, sd) issues the form's sparse wgmma.
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
// are numbered from NREG on (WG_NEXT_<NREG>: seven numbers, the most any form needs; each *_TEXT macro ignores
// those it does not use).
#define WG_D8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define WG_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define WG_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_D128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define WG_NEXT_8 8, 9, 10, 11, 12, 13, 14
#define WG_NEXT_16 16, 17, 18, 19, 20, 21, 22
#define WG_NEXT_32 32, 33, 34, 35, 36, 37, 38
#define WG_NEXT_64 64, 65, 66, 67, 68, 69, 70
#define WG_NEXT_128 128, 129, 130, 131, 132, 133, 134
#define WG_ACC4(C, d, i) C(d[i]), C(d[i + 1]), C(d[i + 2]), C(d[i + 3])
#define WG_ACC8(C, d, i) WG_ACC4(C, d, i), WG_ACC4(C, d, i + 4)
#define WG_ACC16(C, d, i) WG_ACC4(C, d, i), WG_ACC4(C, d, i + 4), WG_ACC4(C, d, i + 8), WG_ACC4(C, d, i + 12)
#define WG_ACC32(C, d, i) WG_ACC16(C, d, i), WG_ACC16(C, d, i + 16)
#define WG_ACC64(C, d, i) WG_ACC32(C, d, i), WG_ACC32(C, d, i + 32)
#define WG_ACC128(C, d, i) WG_ACC64(C, d, i), WG_ACC64(C, d, i + 64)
#define WG_C_float "+f"
#define WG_C_unsigned "+r"
#define WG_CALL(m, args) m args

// The sparse probes' wgmma.mma_async.sp (PTX ISA 9.7.15.6): D, A, B, the sp-meta register, the sparsity selector
// SEL, scale-d from a predicate set from `sd`, then the form's immediates (IMMS). SS: A and B by descriptor.
#define WG_SP_SS_TEXT(INSTR, SEL, IMMS, D, a, b, m, sd, ...) \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #sd ", 0;\n\t" INSTR " " D ", %" #a ", %" #b ", %" #m ", " #SEL \
    ", p" IMMS ";\n\t}"
// RS: A from four registers, B by descriptor.
#define WG_SP_RS_TEXT(INSTR, SEL, IMMS, D, a0, a1, a2, a3, b, m, sd, ...) \
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
