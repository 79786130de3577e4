// Used by: lesson 5's copy-kernel performance goal (h100lab/measure/timing_sweep.py step "copytune",
// benchmarks/bench_timing.py): the TMA copy (bulk load + bulk store) against cuMemcpyDtoDAsync in the same run.
// Proves: which way of driving the TMA unit copies global memory fastest -- one thread per CTA streams `total_bytes`
// through `stages` shared-memory buffers of `tile_bytes` with non-tensor bulk copies
// (cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes, PTX ISA 9.7.9.25.4.1) and bulk stores
// (cp.async.bulk.global.shared::cta.bulk_group, completed through bulk groups, PTX ISA 9.7.9.25.6), and the tuning
// knobs change only the schedule, never the bytes (the copy is checked word by word by verify_copy of
// l03_stream.cu):
//   lag    -- buffer j is refilled after store j + lag was issued: cp.async.bulk.wait_group.read `lag` (PTX ISA
//             9.7.9.25.6.2) waits only until store j has read shared memory, so up to lag + 1 stores overlap the
//             next loads (lag = 0: the refill waits for the store just issued, as l05_tma_copy.cu does); lag < stages;
//   flags  -- bit 0: loads carry .L2::cache_hint with a createpolicy.fractional.L2::evict_first policy (PTX ISA
//             9.7.9.18), bit 1: stores carry it; bit 2: each CTA copies one contiguous chunk (else tiles
//             interleaved over the grid: tile b, b + gridDim.x, ...); bit 3: cp.async.bulk.prefetch.L2 of the tile
//             `stages` tiles beyond the loads in flight (PTX ISA 9.7.9.25.5.1), more bytes in flight without shared
//             memory.
// Several CTAs per SM come from the grid and the dynamic shared memory (1 KiB header + stages x tile_bytes).
// Every wait is bounded: past `timeout_ns` of %globaltimer the kernel sets bit 0 of *err and stops.
#include <h100lab/mbarrier.cuh>
#include <h100lab/partition.cuh>

#define H100LAB_COPY_MAX_STAGES 16

namespace {

__device__ __forceinline__ void load_tile(unsigned dst, const unsigned char* src, unsigned bytes, unsigned bar,
                                          bool hint, unsigned long long pol) {
    mbar_arrive_expect_tx(bar, bytes);
    bulk_load(dst, src, bytes, bar, hint, pol);
}

// cp.async.bulk.wait_group.read takes an immediate: every lag the kernel accepts has its own instruction.
__device__ __forceinline__ void wait_read(int lag) {
    switch (lag) {
        case 0: asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); break;
        case 1: asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); break;
        case 2: asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory"); break;
        case 3: asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory"); break;
        case 4: asm volatile("cp.async.bulk.wait_group.read 4;" ::: "memory"); break;
        case 5: asm volatile("cp.async.bulk.wait_group.read 5;" ::: "memory"); break;
        case 6: asm volatile("cp.async.bulk.wait_group.read 6;" ::: "memory"); break;
        default: asm volatile("cp.async.bulk.wait_group.read 7;" ::: "memory"); break;
    }
}

}  // namespace

// Copy total_bytes (a multiple of tile_bytes, itself a multiple of 16) from src to dst.
extern "C" __global__ void __launch_bounds__(32) copy_tune(
        const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, long long total_bytes, int tile_bytes,
        int stages, int lag, int flags, long long timeout_ns, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x != 0) return;
    if (stages < 1 || stages > H100LAB_COPY_MAX_STAGES || lag < 0 || lag >= stages || lag > 7 || tile_bytes <= 0 ||
        (tile_bytes & 15) || total_bytes % tile_bytes) {
        atomicOr(err, 2u);                                       // a launch the host should never make
        return;
    }
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem);
    const unsigned buf0 = smem_u32(smem + 1024);
    const unsigned tb = static_cast<unsigned>(tile_bytes);
    const long long n_all = total_bytes / tile_bytes;
    const TileRange range = cta_tiles(n_all, gridDim.x, blockIdx.x, flags & 4);   // chunk per CTA, or interleaved
    const long long first = range.first, step = range.step, n = range.n;
    for (int s = 0; s < stages; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the inits, before the TMA unit signals them
    const bool hint_ld = flags & 1, hint_st = flags & 2, prefetch = flags & 8;
    unsigned long long pol = 0;
    if (hint_ld || hint_st) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0;" : "=l"(pol));   // fraction 1.0
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    auto offset = [&](long long i) { return (first + i * step) * static_cast<long long>(tile_bytes); };

    for (long long i = 0; i < n && i < stages; ++i)
        load_tile(buf0 + i * tb, src + offset(i), tb, smem_u32(&full[i]), hint_ld, pol);
    if (prefetch)
        for (long long i = stages; i < n && i < 2 * stages; ++i)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(src + offset(i)), "r"(tb) : "memory");
    for (long long i = 0; i < n; ++i) {
        const int s = static_cast<int>(i % stages);
        if (!mbar_wait(smem_u32(&full[s]), static_cast<unsigned>((i / stages) & 1), deadline, err)) break;
        bulk_store(dst + offset(i), buf0 + s * tb, tb, hint_st, pol);
        if (prefetch && i + 2 * stages < n)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
                         :: "l"(src + offset(i + 2 * stages)), "r"(tb) : "memory");
        const long long j = i - lag;                             // the buffer whose store is `lag` groups old
        if (j >= 0 && j + stages < n) {
            wait_read(lag);                                      // store j has read buffer j % stages
            const int sj = static_cast<int>(j % stages);
            load_tile(buf0 + sj * tb, src + offset(j + stages), tb, smem_u32(&full[sj]), hint_ld, pol);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");   // every store has completed
}
