// Used by: lesson 3 (chapters/03-async-barriers.md, "Release and acquire" and "Proxies and races").
// Proves: (1) message passing between two warps of a CTA through shared memory (PTX ISA §8 "Memory Consistency
// Model"): warp 0 writes `data` then sets `flag`; warp 1 spins on `flag` then reads `data`. mp_relaxed uses
// strong (.volatile = .relaxed.sys) accesses with no release/acquire: PTX allows warp 1 to see flag == 1 and the
// old data, and the emulator's racecheck reports the data race. mp_release_acquire uses st.release /
// ld.acquire (PTX ISA 9.7.9.8/9.7.9.9), mp_fences the fence patterns fence.acq_rel + st.relaxed and
// ld.relaxed + fence.acq_rel (§8.8 "Release and acquire patterns", 9.7.13.4): both are race-free.
// mp_once reads flag once and data once (no spin) and records both, to tabulate which interleavings a
// scheduler produces. Every mp_* kernel writes out[2·blockIdx.x …], so many CTAs run the test at once on a GPU
// (python -m h100lab.measure.l03 --litmus). (2) proxy_race: a thread writes a shared-memory word with st.shared (generic proxy) and a
// bulk copy (async proxy) then writes the same bytes; with fence_first = 0 nothing orders the two writes, a
// race PTX leaves undefined (§8.6 "Proxies"); with fence_first = 1 a fence.proxy.async orders them, and the
// mbarrier wait makes the copy's bytes visible to the generic read after it.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- message passing -------------------------------------------------------------------------------------
extern "C" __global__ void mp_relaxed(unsigned* out) {
    __shared__ unsigned data, flag;
    out += 2 * blockIdx.x;
    if (threadIdx.x == 0) { data = 0; flag = 0; }
    __syncthreads();
    if (threadIdx.x == 0) {
        data = 42;                                                       // weak store
        asm volatile("st.volatile.shared.u32 [%0], 1;" :: "r"(smem_addr(&flag)) : "memory");
    } else if (threadIdx.x == 32) {
        unsigned f = 0;
        while (f == 0) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(f) : "r"(smem_addr(&flag)) : "memory");
        out[0] = data;                                                   // weak load: may be the old 0
    }
}

extern "C" __global__ void mp_release_acquire(unsigned* out) {
    __shared__ unsigned data, flag;
    out += 2 * blockIdx.x;
    if (threadIdx.x == 0) { data = 0; flag = 0; }
    __syncthreads();
    if (threadIdx.x == 0) {
        data = 42;
        asm volatile("st.release.cta.shared.u32 [%0], 1;" :: "r"(smem_addr(&flag)) : "memory");
    } else if (threadIdx.x == 32) {
        unsigned f = 0;
        while (f == 0) asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(f) : "r"(smem_addr(&flag)) : "memory");
        out[0] = data;                                                   // ordered after the acquire: 42
    }
}

extern "C" __global__ void mp_fences(unsigned* out) {
    __shared__ unsigned data, flag;
    out += 2 * blockIdx.x;
    if (threadIdx.x == 0) { data = 0; flag = 0; }
    __syncthreads();
    if (threadIdx.x == 0) {
        data = 42;
        asm volatile("fence.acq_rel.cta;\n\t"
                     "st.relaxed.cta.shared.u32 [%0], 1;" :: "r"(smem_addr(&flag)) : "memory");
    } else if (threadIdx.x == 32) {
        unsigned f = 0;
        while (f == 0) asm volatile("ld.relaxed.cta.shared.u32 %0, [%1];" : "=r"(f) : "r"(smem_addr(&flag)) : "memory");
        asm volatile("fence.acq_rel.cta;" ::: "memory");
        out[0] = data;
    }
}

extern "C" __global__ void mp_once(unsigned* out) {
    __shared__ unsigned data, flag;
    out += 2 * blockIdx.x;
    if (threadIdx.x == 0) { data = 0; flag = 0; }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("st.relaxed.cta.shared.u32 [%0], 42;" :: "r"(smem_addr(&data)) : "memory");
        asm volatile("st.relaxed.cta.shared.u32 [%0], 1;" :: "r"(smem_addr(&flag)) : "memory");
    } else if (threadIdx.x == 32) {
        unsigned f, d;
        asm volatile("ld.relaxed.cta.shared.u32 %0, [%1];" : "=r"(f) : "r"(smem_addr(&flag)) : "memory");
        asm volatile("ld.relaxed.cta.shared.u32 %0, [%1];" : "=r"(d) : "r"(smem_addr(&data)) : "memory");
        out[0] = f;
        out[1] = d;
    }
}

// ---- a generic write and an async write to the same bytes --------------------------------------------------
extern "C" __global__ void proxy_race(const unsigned* __restrict__ src, int fence_first, unsigned* out) {
    __shared__ __align__(128) unsigned tile[32];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        tile[0] = 7;                                                     // generic write
        if (fence_first) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;" :: "r"(smem_addr(&bar)) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 128, [%2];"
                     :: "r"(smem_addr(tile)), "l"(src), "r"(smem_addr(&bar)) : "memory");   // async write
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(smem_addr(&bar)) : "memory");
        out[0] = tile[0];                                                // the copy's word, after the wait
    }
}
