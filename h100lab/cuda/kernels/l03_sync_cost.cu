// Used by: lessons 2, 3 and the kernel-design lessons' timing model (h100lab/measure/timing_sweep.py step "sync",
// h100lab/validation/timing.py).
// Proves: what the CTA- and cluster-level synchronisation and the distributed shared memory cost on the real GPU,
// measured with clock64 / %globaltimer: (1) bar_sync_cost -- `iters` bar.sync 0 (__syncthreads, PTX ISA 9.7.13.1)
// by every thread of the block; (2) cluster_barrier_cost -- `iters` round trips of barrier.cluster.arrive
// {.release|.relaxed}.aligned + barrier.cluster.wait.acquire.aligned (PTX ISA 9.7.13.3) by every thread of every
// CTA of one cluster, optionally after each thread stored a word to global memory (what a release must make
// visible); (3) dsmem_chase -- a dependent chain of ld.shared::cluster.u32 through the shared memory of CTA rank
// `target` (mapa, PTX ISA 9.7.9.23) by one thread of rank 0, against the same chain in its own shared memory with
// ld.shared; (4) dsmem_stream -- every thread of every CTA streaming 16-byte loads from the shared memory of the
// next CTA of its cluster (remote = 1) or from its own (remote = 0), the bytes per ns one SM pulls.
// out[]: per CTA the cycle counts (and %globaltimer spans) named at each kernel.

#include <h100lab/mbarrier.cuh>

// out[2 * block + 0] cycles of thread 0 for `iters` __syncthreads, out[2 * block + 1] the %globaltimer span (ns).
extern "C" __global__ void bar_sync_cost(int iters, unsigned long long* __restrict__ out) {
    __syncthreads();
    const unsigned long long g0 = global_ns();
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) asm volatile("bar.sync 0;" ::: "memory");
    const long long t1 = clock64();
    const unsigned long long g1 = global_ns();
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = static_cast<unsigned long long>(t1 - t0);
        out[2 * blockIdx.x + 1] = g1 - g0;
    }
}

// One cluster (grid = cluster). relaxed != 0: barrier.cluster.arrive.relaxed; store != 0: each thread writes one
// word of `scratch` before every arrive. out[2 * block + 0] cycles of thread 0 for `iters` round trips,
// out[2 * block + 1] the %globaltimer span (ns).
extern "C" __global__ void cluster_barrier_cost(int iters, int relaxed, int store, unsigned* __restrict__ scratch,
                                                unsigned long long* __restrict__ out) {
    cluster_sync();
    const unsigned long long g0 = global_ns();
    const long long t0 = clock64();
    unsigned* mine = scratch + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; ++i) {
        if (store) *reinterpret_cast<volatile unsigned*>(mine) = static_cast<unsigned>(i);
        if (relaxed)
            asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
        else
            asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
    const long long t1 = clock64();
    const unsigned long long g1 = global_ns();
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = static_cast<unsigned long long>(t1 - t0);
        out[2 * blockIdx.x + 1] = g1 - g0;
    }
}

// Every CTA fills `words` 32-bit words of its shared memory with the chain next(i) = (i + step) % words; thread 0
// of rank 0 then follows `iters` links in the shared memory of rank `target` (remote != 0: ld.shared::cluster on the
// mapa address, also for target 0; remote == 0: ld.shared on its own copy). out[0] cycles, out[1] the last index
// (keeps the chain alive), out[2] %cluster_nctarank.
extern "C" __global__ void dsmem_chase(int words, int step, int iters, int target, int remote,
                                       unsigned long long* __restrict__ out) {
    extern __shared__ __align__(16) unsigned chain[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) chain[i] = static_cast<unsigned>((i + step) % words);
    __syncthreads();
    cluster_sync();
    if (cluster_rank() == 0 && threadIdx.x == 0) {
        const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(chain));
        unsigned idx = 0;
        long long t0, t1;
        if (remote) {
            const unsigned rbase = mapa(base, static_cast<unsigned>(target));
            t0 = clock64();
            for (int i = 0; i < iters; ++i)
                asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(idx) : "r"(rbase + 4 * idx) : "memory");
            t1 = clock64();
        } else {
            t0 = clock64();
            for (int i = 0; i < iters; ++i)
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(idx) : "r"(base + 4 * idx) : "memory");
            t1 = clock64();
        }
        out[0] = static_cast<unsigned long long>(t1 - t0);
        out[1] = idx;
        out[2] = cluster_size();
    }
    cluster_sync();   // the chain's owner stays alive until the chase is over
}

// Each CTA holds `vecs` 16-byte vectors; every thread reads vector (threadIdx.x + j * blockDim.x) % vecs of the
// next CTA of its cluster (remote != 0, rank (r + 1) % size) or of its own (remote == 0), `iters` times over, four
// loads in flight. out[3 * block + 0] %globaltimer span of the loop (ns, thread 0, between two __syncthreads),
// out[3 * block + 1] clock64 cycles of the same span, out[3 * block + 2] the XOR of what was read (keeps it alive).
extern "C" __global__ void dsmem_stream(int vecs, int iters, int remote, unsigned long long* __restrict__ out) {
    extern __shared__ __align__(16) uint4 data[];
    for (int i = threadIdx.x; i < vecs; i += blockDim.x)
        data[i] = make_uint4(i, i * 3u, i * 5u, blockIdx.x);
    __syncthreads();
    cluster_sync();
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(data));
    const unsigned n = cluster_size();
    const unsigned peer = (cluster_rank() + 1) % n;
    const unsigned src = remote ? mapa(base, peer) : base;
    unsigned acc = 0;
    __syncthreads();
    const unsigned long long g0 = global_ns();
    const long long t0 = clock64();
    const int per = vecs / blockDim.x;
    for (int it = 0; it < iters; ++it) {
        for (int j = 0; j + 3 < per; j += 4) {
            unsigned a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3;
            const unsigned o = src + 16u * (threadIdx.x + j * blockDim.x);
            const unsigned s = 16u * blockDim.x;
            if (remote) {
                asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(o) : "memory");
                asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(o + s) : "memory");
                asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(c0), "=r"(c1), "=r"(c2), "=r"(c3) : "r"(o + 2 * s) : "memory");
                asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(o + 3 * s) : "memory");
            } else {
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(o) : "memory");
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(o + s) : "memory");
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(c0), "=r"(c1), "=r"(c2), "=r"(c3) : "r"(o + 2 * s) : "memory");
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(o + 3 * s) : "memory");
            }
            acc ^= a0 ^ a1 ^ a2 ^ a3 ^ b0 ^ b1 ^ b2 ^ b3 ^ c0 ^ c1 ^ c2 ^ c3 ^ d0 ^ d1 ^ d2 ^ d3;
        }
    }
    __syncthreads();
    const long long t1 = clock64();
    const unsigned long long g1 = global_ns();
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicXor(reinterpret_cast<unsigned*>(&out[3 * blockIdx.x + 2]), acc);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = g1 - g0;
        out[3 * blockIdx.x + 1] = static_cast<unsigned long long>(t1 - t0);
    }
    cluster_sync();   // every peer stays alive until all reads are done
}
