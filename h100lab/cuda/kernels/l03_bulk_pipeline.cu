// Used by: lesson 3 (h100lab/measure/l03.py, h100lab/validation/l03.py, chapters/03-async-barriers.md).
// Proves: a producer thread can keep `stages` shared-memory buffers filled with 1-D bulk copies
// (cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes, PTX ISA 9.7.9.25.4.1) while
// consumer warps wait with mbarrier.try_wait.parity (PTX ISA 9.7.13.15.16) and hand buffers back by
// arriving on an "empty" mbarrier; the data every consumer reads is the data the copy brought (the
// host checks a checksum per CTA), and the time per tile falls with the number of buffers as the
// copy latency is hidden. Per stage s: full[s] (count 1: the producer's arrive.expect_tx plus the
// copy's bytes) and empty[s] (count = consumer warps). Iteration k uses stage k % stages; consumers
// wait on full with parity (k / stages) & 1, the producer on empty with the opposite parity.
// Each consumer thread applies `work` rounds of v = v * 1664525 + 1013904223 (mod 2^32) to every
// 32-bit word it reads and adds the results, so `work` sets the compute time per tile.
// stats[5 * cta + …]: 0 start and 1 end (%globaltimer, ns), 2 busy and 3 waiting clock64 cycles of
// consumer warp 0 (lane 0), 4 its total cycles from first wait to last arrive.
#define MAX_STAGES 16

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("{\n\t.reg .b64 state;\n\t"
                 "mbarrier.arrive.shared::cta.b64 state, [%0];\n\t}" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("{\n\t.reg .b64 state;\n\t"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}"
                 :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT_%=;\n\t}" :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void bulk_pipeline(const unsigned char* __restrict__ src, long long src_tiles,
                                         int tile_bytes, int stages, int iters, int work,
                                         unsigned long long* __restrict__ sums,
                                         unsigned long long* __restrict__ stats) {
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem);   // full[16], empty[16]
    unsigned char* tiles = smem + 1024;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int consumers = (blockDim.x >> 5) - 1;
    const unsigned full0 = smem_addr(bars);
    const unsigned empty0 = smem_addr(bars + MAX_STAGES);
    const unsigned tile0 = smem_addr(tiles);

    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, consumers);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the copy engine sees the barriers
    }
    __syncthreads();                                                     // every warp sees them too
    if (threadIdx.x == 0) stats[5 * blockIdx.x + 0] = global_ns();

    if (warp == 0) {
        if (lane == 0) {
            for (int k = 0; k < iters; ++k) {
                const int s = k % stages;
                const unsigned round = static_cast<unsigned>(k / stages);
                mbar_wait(empty0 + 8 * s, (round & 1u) ^ 1u);
                mbar_arrive_expect_tx(full0 + 8 * s, static_cast<unsigned>(tile_bytes));
                const long long t = (static_cast<long long>(blockIdx.x) * iters + k) % src_tiles;
                bulk_load(tile0 + s * tile_bytes, src + t * tile_bytes, static_cast<unsigned>(tile_bytes),
                          full0 + 8 * s);
            }
        }
        __syncwarp();
    } else {
        const int c = warp - 1;
        const int words = tile_bytes >> 2;
        unsigned long long acc = 0;
        long long busy = 0, waited = 0;
        const long long c0 = clock64();
        for (int k = 0; k < iters; ++k) {
            const int s = k % stages;
            const unsigned round = static_cast<unsigned>(k / stages);
            const long long w0 = clock64();
            mbar_wait(full0 + 8 * s, round & 1u);
            const long long b0 = clock64();
            const unsigned* buf = reinterpret_cast<const unsigned*>(tiles + s * tile_bytes);
            for (int i = c * 32 + lane; i < words; i += consumers * 32) {
                unsigned v = buf[i];
                for (int j = 0; j < work; ++j) v = v * 1664525u + 1013904223u;
                acc += v;
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic reads before the refill
            __syncwarp();
            if (lane == 0) mbar_arrive(empty0 + 8 * s);
            const long long b1 = clock64();
            busy += b1 - b0;
            waited += b0 - w0;
        }
        const long long c1 = clock64();
        atomicAdd(&sums[blockIdx.x], acc);
        if (c == 0 && lane == 0) {
            stats[5 * blockIdx.x + 2] = static_cast<unsigned long long>(busy);
            stats[5 * blockIdx.x + 3] = static_cast<unsigned long long>(waited);
            stats[5 * blockIdx.x + 4] = static_cast<unsigned long long>(c1 - c0);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) stats[5 * blockIdx.x + 1] = global_ns();
}
