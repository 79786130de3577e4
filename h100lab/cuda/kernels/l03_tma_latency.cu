// Used by: lessons 3 and 5 timing model (h100lab/measure/timing_sweep.py step "latency", h100lab/validation/timing.py).
// Proves: what one TMA copy costs one thread, measured with clock64 on one SM, so the simulator's copy latency can
// be split into its parts: (1) tma_latency / tma_latency_tensor -- issue -> complete_tx -> try_wait returns, for a
// single cp.async.bulk (PTX ISA 9.7.9.25.4.1) or a single 2-D cp.async.bulk.tensor (9.7.9.27.1.2) of `bytes`,
// cold (the source was never read before: it comes from DRAM) and warm (the same source again at once: from L2),
// and the round trip of an mbarrier phase completed by a plain arrive (no copy) as the baseline; (2) tma_issue --
// the issue cost of `count` back-to-back copies from one thread (cycles until the last is issued) and the time
// until all have landed; (3) mbar_costs -- a try_wait.parity / test_wait.parity on an already completed phase
// (PTX ISA 9.7.13.15.16), a back-to-back mbarrier.arrive, and the wake-up of a waiting warp: warp 1 arrives,
// warp 0 waits, then the other way round (ping-pong), both stamping clock64 (one SM: one counter).
// out[] holds clock64 cycle counts; err bit 1 = a bounded wait timed out (%globaltimer past timeout_ns).
#include <h100lab/mbarrier.cuh>
#include <h100lab/tensormap.cuh>

namespace {

__device__ __forceinline__ void tensor_load(unsigned dst, const CUtensorMap* m, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(m)), "r"(x), "r"(y), "r"(bar) : "memory");
}

}  // namespace

// Single bulk copies: iteration i reads `bytes` at src + (first + i * stride) % span, cold then warm.
// out[3i] cold cycles, out[3i+1] warm cycles, out[3i+2] the same round trip completed by a plain arrive.
extern "C" __global__ void tma_latency(const unsigned char* __restrict__ src, long long span, long long first,
                                       long long stride, int bytes, int iters, long long timeout_ns,
                                       unsigned long long* __restrict__ out, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    const unsigned b = smem_u32(&bar);
    const unsigned dst = smem_u32(smem);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    unsigned phase = 0;
    for (int i = 0; i < iters; ++i) {
        const unsigned char* p = src + (first + static_cast<long long>(i) * stride) % span;
        for (int rep = 0; rep < 2; ++rep) {
            const long long t0 = clock64();
            mbar_arrive_expect_tx(b, static_cast<unsigned>(bytes));
            bulk_load(dst, p, static_cast<unsigned>(bytes), b);
            if (!mbar_wait(b, phase, deadline, err)) return;
            const long long t1 = clock64();
            out[3 * i + rep] = static_cast<unsigned long long>(t1 - t0);
            phase ^= 1u;
        }
        const long long t0 = clock64();
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        if (!mbar_wait(b, phase, deadline, err)) return;
        const long long t1 = clock64();
        out[3 * i + 2] = static_cast<unsigned long long>(t1 - t0);
        phase ^= 1u;
    }
}

// Single 2-D tensor copies of the map's box at (0, (first_row + i * row_stride) % rows), cold then warm (out as above).
extern "C" __global__ void tma_latency_tensor(const __grid_constant__ CUtensorMap map, int rows, int first_row,
                                              int row_stride, int bytes, int iters, long long timeout_ns,
                                              unsigned long long* __restrict__ out, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    const unsigned b = smem_u32(&bar);
    const unsigned dst = (smem_u32(smem) + 1023u) & ~1023u;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    unsigned phase = 0;
    for (int i = 0; i < iters; ++i) {
        const int y = static_cast<int>((static_cast<long long>(first_row) + static_cast<long long>(i) * row_stride) % rows);
        for (int rep = 0; rep < 2; ++rep) {
            const long long t0 = clock64();
            mbar_arrive_expect_tx(b, static_cast<unsigned>(bytes));
            tensor_load(dst, &map, 0, y, b);
            if (!mbar_wait(b, phase, deadline, err)) return;
            const long long t1 = clock64();
            out[3 * i + rep] = static_cast<unsigned long long>(t1 - t0);
            phase ^= 1u;
        }
        const long long t0 = clock64();
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        if (!mbar_wait(b, phase, deadline, err)) return;
        out[3 * i + 2] = static_cast<unsigned long long>(clock64() - t0);
        phase ^= 1u;
    }
}

// Back-to-back issue: per iteration one arrive.expect_tx(count * bytes), then `count` copies of `bytes` (to
// consecutive shared slots, from consecutive source chunks at src + (first + i * stride) % span), then the wait.
// out[2i] cycles from before the expect_tx to after the last issue, out[2i+1] cycles until the phase completed.
extern "C" __global__ void tma_issue(const unsigned char* __restrict__ src, long long span, long long first,
                                     long long stride, int bytes, int count, int iters, long long timeout_ns,
                                     unsigned long long* __restrict__ out, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    const unsigned b = smem_u32(&bar);
    const unsigned dst = smem_u32(smem);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    const unsigned ub = static_cast<unsigned>(bytes);
    unsigned phase = 0;
    for (int i = 0; i < iters; ++i) {
        const unsigned char* p = src + (first + static_cast<long long>(i) * stride) % span;
        const long long t0 = clock64();
        mbar_arrive_expect_tx(b, ub * static_cast<unsigned>(count));
        for (int j = 0; j < count; ++j) bulk_load(dst + j * ub, p + static_cast<long long>(j) * bytes, ub, b);
        const long long t1 = clock64();
        if (!mbar_wait(b, phase, deadline, err)) return;
        const long long t2 = clock64();
        out[2 * i] = static_cast<unsigned long long>(t1 - t0);
        out[2 * i + 1] = static_cast<unsigned long long>(t2 - t0);
        phase ^= 1u;
    }
}

// mbarrier costs (block of 64 threads: warps 0 and 1, lane 0 of each), cycles for `iters` operations:
// out[0] try_wait.parity on a completed phase (the loop a consumer runs), out[1] test_wait.parity on it,
// out[2] back-to-back mbarrier.arrive (on a barrier of count 2^20 - 1, never completing),
// out[3] `iters` ping-pong round trips (warp 1 arrives on A, warp 0 waits on A and arrives on B, warp 1 waits on B),
// out[4] the sum over round trips of (warp 0's clock when its wait on A returned - warp 1's clock before arriving),
// out[5] an empty loop of `iters` iterations with the same counter (the loop overhead).
extern "C" __global__ void mbar_costs(int iters, long long timeout_ns, unsigned long long* __restrict__ out,
                                      unsigned* __restrict__ err) {
    __shared__ alignas(8) unsigned long long bars[4];
    __shared__ volatile long long stamp[2];
    const unsigned done = smem_u32(&bars[0]), big = smem_u32(&bars[1]), a = smem_u32(&bars[2]),
                   b = smem_u32(&bars[3]);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(done) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(big), "r"((1u << 20) - 1u) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(a) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(done) : "memory");   // phase 0 completes
    }
    __syncthreads();
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    if (warp == 0 && lane == 0) {
        unsigned acc = 0;
        long long t0 = clock64();
        for (int i = 0; i < iters; ++i) {
            while (!mbar_try(done, 0)) {}
            acc += 1;
        }
        long long t1 = clock64();
        out[0] = static_cast<unsigned long long>(t1 - t0);
        t0 = clock64();
        for (int i = 0; i < iters; ++i) {
            unsigned d;
            asm volatile("{\n\t.reg .pred p;\n\t"
                         "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(d) : "r"(done) : "memory");
            acc += d;
        }
        t1 = clock64();
        out[1] = static_cast<unsigned long long>(t1 - t0);
        const int n_arrive = iters < (1 << 19) ? iters : (1 << 19);
        t0 = clock64();
        for (int i = 0; i < n_arrive; ++i)
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(big) : "memory");
        t1 = clock64();
        out[2] = static_cast<unsigned long long>(t1 - t0) * static_cast<unsigned long long>(iters) /
                 static_cast<unsigned long long>(n_arrive);
        t0 = clock64();
        for (int i = 0; i < iters; ++i) asm volatile("add.u32 %0, %0, 1;" : "+r"(acc));
        t1 = clock64();
        out[5] = static_cast<unsigned long long>(t1 - t0);
        if (acc == 0x7fffffffu) out[6] = acc;   // keep acc alive
    }
    __syncthreads();
    // ping-pong between warp 0 and warp 1 (lane 0 of each)
    if (lane == 0 && warp < 2) {
        long long one_way = 0;
        const long long t0 = clock64();
        for (int i = 0; i < iters; ++i) {
            const unsigned par = static_cast<unsigned>(i) & 1u;
            if (warp == 1) {
                stamp[0] = clock64();
                asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(a) : "memory");
                if (!mbar_wait(b, par, deadline, err)) break;
            } else {
                if (!mbar_wait(a, par, deadline, err)) break;
                one_way += clock64() - stamp[0];
                asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
            }
        }
        if (warp == 0) {
            out[3] = static_cast<unsigned long long>(clock64() - t0);
            out[4] = static_cast<unsigned long long>(one_way);
        }
    }
}
