// Used by: lessons 3 and 5 timing model (h100lab/measure/timing_sweep.py step "latency2",
// h100lab/validation/timing.py, the single-copy latency structure of h100lab/sim/latency.py).
// Proves: what one TMA copy costs one thread when nothing else is in the timed window. l03_tma_latency.cu's cold
// rep times the uniform-register set-up of the copy's addresses (S2UR, ULDC, R2UR before the first UBLKCP) and its
// tma_issue sources were 16-byte but not 128-byte aligned; here (1) every source offset comes from a table the
// host wrote (offs[], any alignment the case asks for), (2) a clock64 stamp right after the issue splits each copy
// into its issue window (expect_tx + cp.async.bulk, PTX ISA 9.7.13.15.12, 9.7.9.25.4.1) and what follows it (first
// byte + fill + the try_wait wake-up, 9.7.13.15.16), and (3) bit 0 of `flags` reads the word at offs[iters + i]
// (the host puts it in the same 2 MiB page, away from every copied line) with ld.global.cg before a cold copy and
// waits for it: the copy then misses L2 but not the TLB.
// copy_latency: per iteration a cold round then `warm` rounds of the same sources (L2 hits), each timed; a round is
// `count` back-to-back copies (count 1: a single copy) completing one mbarrier phase.
// out[]: clock64 cycle counts; err bit 1 = a bounded wait timed out, bit 3 = a touched word had an impossible value.
#include <h100lab/mbarrier.cuh>

namespace {

// ld.global.cg of one word, then a branch on it: the warp cannot pass the branch before the load returned.
__device__ __forceinline__ void touch(const unsigned char* p, unsigned* err) {
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    if (v == 0xFFFFFFFFu) atomicOr(err, 4u);     // fill_index never writes it: the branch only orders
}

// What both kernels start with (thread 0 only): the mbarrier (count 1) made visible to the async proxy, the
// destination at the start of dynamic shared memory, the deadline of every bounded wait.
struct OneThread {
    unsigned bar, dst;
    unsigned long long deadline;
    __device__ OneThread(unsigned long long* b, const unsigned char* smem, long long timeout_ns)
        : bar(smem_u32(b)), dst(smem_u32(smem)) {
        mbar_init(bar, 1);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    }
};

}  // namespace

// Per iteration i a cold round (rep 0) then `warm` rounds of the same sources (L2 hits); a round is one
// expect_tx(count * bytes) and `count` back-to-back copies of `bytes` from consecutive source chunks, then the wait.
// out[3 * ((warm + 1) * i + rep) + 0]: cycles from before the expect_tx to after the first copy's issue,
// + 1: to after the last copy's issue, + 2: until the wait returned.
extern "C" __global__ void copy_latency(const unsigned char* __restrict__ src, const long long* __restrict__ offs,
                                        int bytes, int count, int iters, int warm, int flags, long long timeout_ns,
                                        unsigned long long* __restrict__ out, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    const OneThread c(&bar, smem, timeout_ns);
    const unsigned ub = static_cast<unsigned>(bytes);
    unsigned phase = 0;
    for (int i = 0; i < iters; ++i) {
        const unsigned char* p = src + offs[i];
        if (flags & 1) touch(src + offs[iters + i], err);
#pragma unroll 1
        for (int rep = 0; rep <= warm; ++rep) {
            const long long t0 = clock64();
            mbar_arrive_expect_tx(c.bar, ub * static_cast<unsigned>(count));
            bulk_load(c.dst, p, ub, c.bar);
            const long long t1 = clock64();
#pragma unroll 1
            for (int j = 1; j < count; ++j)
                bulk_load(c.dst + j * ub, p + static_cast<long long>(j) * bytes, ub, c.bar);
            const long long t2 = clock64();
            if (!mbar_wait(c.bar, phase, c.deadline, err)) return;
            const long long t3 = clock64();
            const long long k = 3LL * ((warm + 1LL) * i + rep);
            out[k] = static_cast<unsigned long long>(t1 - t0);
            out[k + 1] = static_cast<unsigned long long>(t2 - t0);
            out[k + 2] = static_cast<unsigned long long>(t3 - t0);
            phase ^= 1u;
        }
    }
}
