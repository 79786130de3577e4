// Used by: lesson 1 (chapters/01-architecture.md "A first kernel: copy or compute?", h100lab/measure/l01.py
// --only roofline, h100lab/validation/l01.py roofline_report).
// Proves: a kernel's time is set by whichever of its two costs is larger — the bytes it moves over the HBM
// bandwidth or the FLOPs it does over the SMs' FP32 peak — which is the roofline (Williams, Waterman and
// Patterson, CACM 52(4), 2009). Each thread reads float4 elements of x (grid-stride loop), applies K rounds of
// v = fma(v, a, b) to each of the four lanes — four independent chains, so a warp always has an FMA ready —
// and writes y. Per float4: 32 bytes moved (16 read + 16 written), 8·K FLOPs (an FMA counts 2), so the
// arithmetic intensity is K / 4 FLOP per byte: K = 0 is a pure copy kernel, K = 1024 a compute kernel.
// Thread 0 of block 0 also records its SM's clock64() and %globaltimer over its whole loop, so the measurement
// knows the SM clock the FP32 peak (SMs × 128 lanes × 2 FLOP × clock) should use.
extern "C" __global__ void fma_stream(const float4* __restrict__ x, float4* __restrict__ y, long long n4, int k,
                                      float a, float b, unsigned long long* __restrict__ clocks) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned long long c0 = clock64(), t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (; i < n4; i += stride) {
        float4 v = x[i];
#pragma unroll 8
        for (int j = 0; j < k; ++j) {
            v.x = fmaf(v.x, a, b);
            v.y = fmaf(v.y, a, b);
            v.z = fmaf(v.z, a, b);
            v.w = fmaf(v.w, a, b);
        }
        y[i] = v;
    }
    if (clocks != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned long long t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        clocks[0] = clock64() - c0;
        clocks[1] = t1 - t0;
    }
}
