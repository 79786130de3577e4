// Used by: lesson 2 (python -m h100lab.measure.l02; h100lab.validation.l02).
// Proves: the bit-level packing of h100lab.ptx.types. For each pair (a, b) of f32 inputs the kernel runs
// cvt.rn.{f16x2,bf16x2}.f32 d, a, b and cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b (PTX ISA §9.7.9.21:
// the first source lands in the upper half) and packs the two bf16 halves again with mov.b32 d, {lo, hi}
// (the first vector element lands in bits 0-15).
//
// out[5 * i + k]: f16x2, bf16x2, e4m3x2 (16 bits), e5m2x2 (16 bits), mov.b32 {lo16(bf16x2), hi16(bf16x2)}
extern "C" __global__ void pack_probe(const float* a, const float* b, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    unsigned h2, bf2, re;
    unsigned short e4, e5;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h2) : "f"(x), "f"(y));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bf2) : "f"(x), "f"(y));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(e4) : "f"(x), "f"(y));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(e5) : "f"(x), "f"(y));
    unsigned short lo = (unsigned short)(bf2 & 0xFFFFu), hi = (unsigned short)(bf2 >> 16);
    asm("mov.b32 %0, {%1, %2};" : "=r"(re) : "h"(lo), "h"(hi));
    out[5 * i + 0] = h2; out[5 * i + 1] = bf2; out[5 * i + 2] = e4; out[5 * i + 3] = e5; out[5 * i + 4] = re;
}
