// h100lab/mbarrier.cuh -- the mbarrier, bulk-copy, cluster and timer helpers that the lesson 3 and 5 kernels share
// (l03_tma_latency.cu, l03_stream.cu, l03_sync_cost.cu, l05_copy_tune.cu, l05_multicast_pipeline.cu). Each is an
// inline function around one PTX instruction (or a bounded wait loop): a kernel file compiles to the same code as
// when each of them was written out in it.
#pragma once

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// %globaltimer in ns (PTX ISA 10.x): the clock every bounded wait compares its deadline with.
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// mbarrier (PTX ISA 9.7.13.15): init, arrive, arrive.expect_tx, try_wait.parity.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ bool mbar_try(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}

// Wait for the phase with `parity`; false (and err bit 1) once %globaltimer passes `deadline` (checked every 256
// tries).
__device__ __forceinline__ bool mbar_wait(unsigned bar, unsigned parity, unsigned long long deadline, unsigned* err) {
    for (unsigned i = 0;; ++i) {
        if (mbar_try(bar, parity)) return true;
        if ((i & 255u) == 255u && global_ns() > deadline) {
            atomicOr(err, 1u);
            return false;
        }
    }
}

// cp.async.bulk global -> shared, completed on the mbarrier `bar` (PTX ISA 9.7.9.25.4.1).
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// The same, with .L2::cache_hint and the policy `pol` when `hint` (PTX ISA 9.7.9.18).
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar, bool hint,
                                          unsigned long long pol) {
    if (hint)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                     " [%0], [%1], %2, [%3], %4;"
                     :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(pol) : "memory");
    else
        bulk_load(dst, src, bytes, bar);
}

// cp.async.bulk shared -> global in a bulk group (.L2::cache_hint with `pol` when `hint`), then commit_group
// (PTX ISA 9.7.9.25.4.2, 9.7.9.25.6.1).
__device__ __forceinline__ void bulk_store(void* dst, unsigned src, unsigned bytes, bool hint, unsigned long long pol) {
    if (hint)
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                     :: "l"(dst), "r"(src), "r"(bytes), "l"(pol) : "memory");
    else
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(dst), "r"(src), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// createpolicy.fractional.L2::evict_first, fraction 1.0 (PTX ISA 9.7.9.18).
__device__ __forceinline__ unsigned long long evict_first_policy() {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

// Clusters (PTX ISA 10.x %cluster_ctarank, %cluster_nctarank; barrier.cluster 9.7.13.3; mapa 9.7.9.23).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned cluster_size() {
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned mapa(unsigned addr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

}  // namespace
