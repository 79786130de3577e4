// Used by: the PTX emulator's conversions (h100lab/emu/alu.py reads data/l01/cvt_bits), lesson 1's FP8 bytes, via
// h100lab/measure/timing_sweep.py step "cvt".
// Proves: the exact bits the H200 produces for the cvt forms the emulator implements, for a list of inputs that
// covers the corner cases: FP8 conversions with and without .relu (cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32,
// f16x2}, PTX ISA 9.7.9.21), FP8 decoding to f16x2 (NaN codes included), f32 -> f16 / bf16 in every rounding mode
// (NaN payloads: which mantissa bits survive), f16 / bf16 -> f32, f32 -> tf32. For the pair forms the first
// operand is a[i] (it lands in the high half), the second b[i]. Every thread i writes out[i] = the result bits
// (16-bit results zero-extended). Op codes are the case labels below; h100lab.measure.timing_sweep.CVT_OPS
// lists them in the same order. The forms after H100LAB_CVT_CORE_ONLY need a newer PTX ISA; a compiler that
// refuses them is retried with -DH100LAB_CVT_CORE_ONLY (those ops then write 0xDEADBEEF).

#define H100LAB_F32X2_B16(OP)                                                                          \
    do {                                                                                               \
        unsigned short d;                                                                              \
        asm volatile(OP " %0, %1, %2;" : "=h"(d) : "f"(__uint_as_float(x)), "f"(__uint_as_float(y))); \
        r = d;                                                                                         \
    } while (0)
#define H100LAB_B32_B16(OP)                                   \
    do {                                                      \
        unsigned short d;                                     \
        asm volatile(OP " %0, %1;" : "=h"(d) : "r"(x));       \
        r = d;                                                \
    } while (0)
#define H100LAB_B16_B32(OP)                                                             \
    do {                                                                                \
        unsigned d;                                                                     \
        asm volatile(OP " %0, %1;" : "=r"(d) : "h"(static_cast<unsigned short>(x)));    \
        r = d;                                                                          \
    } while (0)
#define H100LAB_F32_B16(OP)                                                      \
    do {                                                                         \
        unsigned short d;                                                        \
        asm volatile(OP " %0, %1;" : "=h"(d) : "f"(__uint_as_float(x)));        \
        r = d;                                                                   \
    } while (0)
#define H100LAB_F32X2_B32(OP)                                                                          \
    do {                                                                                               \
        unsigned d;                                                                                    \
        asm volatile(OP " %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(x)), "f"(__uint_as_float(y))); \
        r = d;                                                                                         \
    } while (0)
#define H100LAB_B16_F32(OP)                                                              \
    do {                                                                                 \
        float d;                                                                         \
        asm volatile(OP " %0, %1;" : "=f"(d) : "h"(static_cast<unsigned short>(x)));     \
        r = __float_as_uint(d);                                                          \
    } while (0)
#define H100LAB_F32_B32(OP)                                                  \
    do {                                                                     \
        unsigned d;                                                          \
        asm volatile(OP " %0, %1;" : "=r"(d) : "f"(__uint_as_float(x)));    \
        r = d;                                                               \
    } while (0)

extern "C" __global__ void cvt_probe(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                     unsigned* __restrict__ out, int n, int op) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i];
    unsigned r = 0xDEADBEEFu;
    switch (op) {
        case 0: H100LAB_F32X2_B16("cvt.rn.satfinite.e4m3x2.f32"); break;
        case 1: H100LAB_F32X2_B16("cvt.rn.satfinite.relu.e4m3x2.f32"); break;
        case 2: H100LAB_F32X2_B16("cvt.rn.satfinite.e5m2x2.f32"); break;
        case 3: H100LAB_F32X2_B16("cvt.rn.satfinite.relu.e5m2x2.f32"); break;
        case 4: H100LAB_B32_B16("cvt.rn.satfinite.e4m3x2.f16x2"); break;
        case 5: H100LAB_B32_B16("cvt.rn.satfinite.relu.e4m3x2.f16x2"); break;
        case 6: H100LAB_B32_B16("cvt.rn.satfinite.e5m2x2.f16x2"); break;
        case 7: H100LAB_B32_B16("cvt.rn.satfinite.relu.e5m2x2.f16x2"); break;
        case 8: H100LAB_B16_B32("cvt.rn.f16x2.e4m3x2"); break;
        case 9: H100LAB_B16_B32("cvt.rn.relu.f16x2.e4m3x2"); break;
        case 10: H100LAB_B16_B32("cvt.rn.f16x2.e5m2x2"); break;
        case 11: H100LAB_B16_B32("cvt.rn.relu.f16x2.e5m2x2"); break;
        case 12: H100LAB_F32_B16("cvt.rn.f16.f32"); break;
        case 13: H100LAB_F32_B16("cvt.rn.relu.f16.f32"); break;
        case 14: H100LAB_F32_B16("cvt.rz.f16.f32"); break;
        case 15: H100LAB_F32_B16("cvt.rm.f16.f32"); break;
        case 16: H100LAB_F32_B16("cvt.rp.f16.f32"); break;
        case 17: H100LAB_F32_B16("cvt.rn.bf16.f32"); break;
        case 18: H100LAB_F32_B16("cvt.rn.relu.bf16.f32"); break;
        case 19: H100LAB_F32_B16("cvt.rz.bf16.f32"); break;
        case 20: H100LAB_F32X2_B32("cvt.rn.f16x2.f32"); break;
        case 21: H100LAB_F32X2_B32("cvt.rn.relu.f16x2.f32"); break;
        case 22: H100LAB_F32X2_B32("cvt.rn.bf16x2.f32"); break;
        case 23: H100LAB_F32X2_B32("cvt.rn.relu.bf16x2.f32"); break;
        case 24: H100LAB_B16_F32("cvt.f32.f16"); break;
        case 25: H100LAB_B16_F32("cvt.f32.bf16"); break;
        case 26: H100LAB_F32_B32("cvt.rna.tf32.f32"); break;
#ifndef H100LAB_CVT_CORE_ONLY
        case 27: H100LAB_F32_B16("cvt.rn.satfinite.f16.f32"); break;
        case 28: H100LAB_F32_B16("cvt.rn.relu.satfinite.f16.f32"); break;
        case 29: H100LAB_F32_B16("cvt.rn.satfinite.bf16.f32"); break;
        case 30: H100LAB_F32X2_B32("cvt.rn.satfinite.f16x2.f32"); break;
        case 31: H100LAB_F32X2_B32("cvt.rn.satfinite.bf16x2.f32"); break;
        case 32: H100LAB_F32_B32("cvt.rna.satfinite.tf32.f32"); break;
        case 33: H100LAB_F32_B32("cvt.rn.tf32.f32"); break;
#endif
        default: break;
    }
    out[i] = r;
}
