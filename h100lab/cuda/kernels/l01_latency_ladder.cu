// Used by: lesson 1 (chapters/01-architecture.md "The latency and bandwidth ladder", h100lab/measure/l01.py
// --only ladder, h100lab/validation/l01.py ladder_report).
// Proves: each level of the memory hierarchy — registers, shared memory, L1, L2, HBM — has its own latency and
// bandwidth, and they differ by orders of magnitude (h100lab.memory.ladder holds the model's side).
//
// Latency: one thread follows a dependent chain, so every step waits for the one before (a pointer chase):
//   fma_chain      `x = fma(x, a, b)` STEPS times, in registers (inline PTX so nothing is folded away);
//   chase_shared   `p = *p` through shared memory: the chain of 32-bit shared addresses lies in dynamic
//                  shared memory (copied there from global first);
//   chase_ca       `p = *p` through global memory with ld.global.ca (cached in L1 and L2);
//   chase_cg       the same with ld.global.cg (cached in L2 only, so an L1 hit is impossible).
// Each chase first walks `warm` steps untimed (filling the caches with the chain, or just starting), then
// times `steps` further steps: cycles[0] = clock64() cycles, cycles[1] = %globaltimer nanoseconds over the
// timed steps (so cycles / ns is the SM clock it ran at); sink[0] keeps the last pointer so nothing is dead
// code. The global chain holds absolute 64-bit addresses (chase_relocate turns the host's
// slot indices into them), so each step is a single load with no address arithmetic.
//
// Bandwidth: every thread of a full grid streams, summing what it reads so nothing is dead code:
//   stream_shared  ld.shared.v4 over a 32 KiB per-block buffer, REPS passes (conflict-free: a warp reads
//                  512 contiguous bytes, four wavefronts);
//   stream_read    ld.global.cg.v4 over n4 float4 of global memory (grid-stride), reps passes — a 16 MiB
//                  buffer stays in the 60 MiB L2, a 2 GiB one streams from HBM.
__device__ __forceinline__ long long ns_now() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void fma_chain(float a, float b, int steps, long long* __restrict__ cycles,
                                     float* __restrict__ sink) {
    float x = a;
    long long n0 = ns_now(), t0 = clock64();
    for (int s = 0; s < steps; s += 16) {
#pragma unroll
        for (int u = 0; u < 16; ++u) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    }
    long long t1 = clock64(), n1 = ns_now();
    cycles[0] = t1 - t0;
    cycles[1] = n1 - n0;
    sink[0] = x;
}

extern "C" __global__ void chase_relocate(unsigned long long* __restrict__ chain, long long n) {
    // slot i holds the index of the next slot; make it that slot's address
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        chain[i] = (unsigned long long)(chain + chain[i]);
}

extern "C" __global__ void chase_shared(const unsigned* __restrict__ chain, int words, int warm, int steps,
                                        long long* __restrict__ cycles, unsigned* __restrict__ sink) {
    extern __shared__ __align__(16) unsigned smem[];
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = base + 4u * chain[i];
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned p = base;
    for (int s = 0; s < warm; ++s) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");
    long long n0 = ns_now(), t0 = clock64();
    for (int s = 0; s < steps; ++s) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");
    long long t1 = clock64(), n1 = ns_now();
    cycles[0] = t1 - t0;
    cycles[1] = n1 - n0;
    sink[0] = p - base;
}

#define CHASE(NAME, OP)                                                                                          \
extern "C" __global__ void NAME(const unsigned long long* __restrict__ start, int warm, int steps,               \
                                long long* __restrict__ cycles, unsigned long long* __restrict__ sink) {         \
    unsigned long long p = (unsigned long long)start;                                                            \
    for (int s = 0; s < warm; ++s) asm volatile(OP " %0, [%0];" : "+l"(p) :: "memory");                          \
    long long n0 = ns_now(), t0 = clock64();                                                                     \
    for (int s = 0; s < steps; ++s) asm volatile(OP " %0, [%0];" : "+l"(p) :: "memory");                         \
    long long t1 = clock64(), n1 = ns_now();                                                                     \
    cycles[0] = t1 - t0;                                                                                         \
    cycles[1] = n1 - n0;                                                                                         \
    sink[0] = p - (unsigned long long)start;                                                                     \
}
CHASE(chase_ca, "ld.global.ca.u64")
CHASE(chase_cg, "ld.global.cg.u64")

#define SHARED_STREAM_BYTES 32768
extern "C" __global__ void stream_shared(int reps, float* __restrict__ sink) {
    __shared__ __align__(16) float4 buf[SHARED_STREAM_BYTES / 16];
    for (int i = threadIdx.x; i < SHARED_STREAM_BYTES / 16; i += blockDim.x)
        buf[i] = make_float4(i, 1.0f, 2.0f, 3.0f);
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
#pragma unroll 4
        for (int i = threadIdx.x; i < SHARED_STREAM_BYTES / 16; i += blockDim.x) {
            float4 v = buf[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    }
    sink[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

extern "C" __global__ void stream_read(const float4* __restrict__ p, long long n4, int reps,
                                       float* __restrict__ sink) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
#pragma unroll 4
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
            float4 v = __ldcg(p + i);
            acc += (v.x + v.y) + (v.z + v.w);
        }
    }
    sink[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
