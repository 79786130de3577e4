// Used by: lesson 1 (h100lab/measure/l01.py, h100lab/validation/l01.py, chapters/01-architecture.md).
// Proves: a warp-wide shared-memory load takes longer the more wavefronts h100lab.memory.banks.wavefronts
// says it needs. One warp runs a dependent chain of ITERS loads (each address adds the previous value,
// which is 0, so the loads cannot overlap) with lane t reading offset[t] bytes into shared memory, and
// times the chain with clock64(). WIDTH (4, 8 or 16 bytes, -DWIDTH=n) selects ld.shared.u32/.v2/.v4.
#ifndef WIDTH
#define WIDTH 4
#endif
#define SMEM_WORDS 16384   // 64 KiB of dynamic shared memory, zero-filled

extern "C" __global__ void bank_latency(const unsigned* __restrict__ offset, int iters,
                                        long long* __restrict__ cycles, unsigned* __restrict__ sink) {
    extern __shared__ __align__(16) unsigned smem[];
    for (int i = threadIdx.x; i < SMEM_WORDS; i += blockDim.x) smem[i] = 0u;
    __syncthreads();
    const unsigned lane = threadIdx.x & 31u;
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + offset[lane];
    unsigned acc = 0u;
    long long t0 = 0;
    for (int pass = 0; pass < 2; ++pass) {          // pass 0 warms up, pass 1 is timed
        __syncwarp();
        t0 = clock64();
        for (int i = 0; i < iters; ++i) {
#if WIDTH == 4
            unsigned v;
            asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
#elif WIDTH == 8
            unsigned v, w;
            asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v), "=r"(w) : "r"(addr) : "memory");
            v |= w;
#else
            unsigned v, w, x, y;
            asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v), "=r"(w), "=r"(x), "=r"(y) : "r"(addr) : "memory");
            v |= w | x | y;
#endif
            addr += v;      // v == 0: a true dependence, the next load waits for this one
            acc += v;
        }
        __syncwarp();
    }
    long long t1 = clock64();
    if (lane == 0) cycles[0] = t1 - t0;
    sink[threadIdx.x] = acc;
}
