// Used by: lesson 1 (chapters/01-architecture.md, h100lab/measure/l01.py, h100lab/validation/l01.py).
// Proves: h100lab.occupancy.occupancy equals the driver's cudaOccupancyMaxActiveBlocksPerMultiprocessor.
// The body keeps NACC accumulators live across a loop, so it wants more registers than any cap; compiled
// with --maxrregcount=R it uses (about) R registers, which Kernel.attributes()["num_regs"] reports. Static
// shared memory is STATIC_SMEM bytes (compile with -DSTATIC_SMEM=n; 0 = none). The kernel is never
// launched by the measurement, only asked about; launching it is harmless (it writes one float per thread).
#ifndef NACC
#define NACC 256
#endif
#ifndef STATIC_SMEM
#define STATIC_SMEM 0
#endif

extern "C" __global__ void occupancy_probe(const float* __restrict__ in, float* __restrict__ out, int iters) {
#if STATIC_SMEM > 0
    __shared__ float stage[(STATIC_SMEM + 3) / 4];
    stage[threadIdx.x % ((STATIC_SMEM + 3) / 4)] = in[threadIdx.x];
    __syncthreads();
#endif
    float acc[NACC];
#pragma unroll
    for (int j = 0; j < NACC; ++j) acc[j] = in[(threadIdx.x + 7 * j) & 1023];
    for (int i = 0; i < iters; ++i) {
        float x = in[(blockIdx.x + i) & 1023];
#pragma unroll
        for (int j = 0; j < NACC; ++j) acc[j] = fmaf(acc[j], x, acc[(j + 1) % NACC]);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NACC; ++j) s += acc[j] * (float)(j + 1);
#if STATIC_SMEM > 0
    s += stage[(threadIdx.x + 1) % ((STATIC_SMEM + 3) / 4)];
#endif
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
