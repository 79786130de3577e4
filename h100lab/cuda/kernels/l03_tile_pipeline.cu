// Used by: lesson 3 (chapters/03-async-barriers.md, its debugging section, and the kernel exercises of
// solutions/03-async-barriers.md, which start from edited copies of it).
// Proves: the smallest complete producer/consumer pipeline with mbarriers: one CTA, warp 0 produces, warp 1
// consumes. The producer warp picks one issuing lane with elect.sync (PTX ISA 9.7.8.x "elect.sync"); that
// lane initialises full[s] (count 1) and empty[s] (count 1) and makes the initialisation visible to the copy
// engine with fence.mbarrier_init.release.cluster (PTX ISA 9.7.13.4 "membar/fence") before __syncthreads; for
// tile t it waits for empty[t % STAGES], arms full[...] with mbarrier.arrive.expect_tx of the tile's bytes and
// issues cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (PTX ISA 9.7.9.25.4.1). The consumer
// warp waits on full with the round's parity, sums the tile's 32-bit words (mod 2^32, shfl reduction) into
// out[t], and hands the buffer back with mbarrier.arrive on empty. Every wait is *bounded*: after MAX_TRIES
// failed mbarrier.try_wait.parity (PTX ISA 9.7.13.15.16) the thread prints which barrier and parity it was
// waiting for and traps, so a hang becomes a message. Compile with -DMAX_TRIES=n to change the bound.
#ifndef MAX_TRIES
#define MAX_TRIES (1 << 22)
#endif
#define STAGES 2
#define MAX_TILE_BYTES 4096

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// elect.sync: exactly one active lane of the warp gets true (the lowest one, PTX says "a leader").
__device__ __forceinline__ bool elect_one() {
    unsigned is_leader;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "elect.sync _|p, 0xffffffff;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(is_leader));
    return is_leader != 0;
}

__device__ __forceinline__ bool try_wait(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}

// The bounded-wait idiom: a wait that gives up loudly instead of hanging the GPU.
__device__ void wait_bounded(unsigned bar, unsigned parity, const char* name, int tile) {
    for (long long tries = 0; !try_wait(bar, parity); ++tries) {
        if (tries == MAX_TRIES) {
            printf("hang: thread %d waited %d times on %s (tile %d) for parity %u\n",
                   static_cast<int>(threadIdx.x), MAX_TRIES, name, tile, parity);
            __trap();
        }
    }
}

extern "C" __global__ void tile_sums(const unsigned* __restrict__ src, int tiles, int tile_bytes,
                                     unsigned* __restrict__ out) {
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    __shared__ __align__(128) unsigned char buf[STAGES * MAX_TILE_BYTES];   // tile_bytes <= MAX_TILE_BYTES
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    if (warp == 0 && elect_one()) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&empty[s])) : "memory");
        }
        // make the initialised barriers visible to the async proxy (the copy engine) and the cluster
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();                                                      // ... and to every warp of the CTA

    if (warp == 0) {                                                      // producer
        if (elect_one()) {
            for (int t = 0; t < tiles; ++t) {
                const int s = t % STAGES;
                const unsigned round = t / STAGES;
                wait_bounded(smem_addr(&empty[s]), (round & 1) ^ 1, "empty", t);   // round 0 passes at once
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                             :: "r"(smem_addr(&full[s])), "r"(tile_bytes) : "memory");
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             :: "r"(smem_addr(buf + s * tile_bytes)),
                                "l"(reinterpret_cast<const unsigned char*>(src) + static_cast<long long>(t) * tile_bytes),
                                "r"(tile_bytes), "r"(smem_addr(&full[s])) : "memory");
            }
        }
    } else if (warp == 1) {                                               // consumer
        for (int t = 0; t < tiles; ++t) {
            const int s = t % STAGES;
            const unsigned round = t / STAGES;
            wait_bounded(smem_addr(&full[s]), round & 1, "full", t);
            const unsigned* tile = reinterpret_cast<const unsigned*>(buf + s * tile_bytes);
            unsigned acc = 0;
            for (int i = lane; i < tile_bytes / 4; i += 32) acc += tile[i];
            for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
            if (lane == 0) out[t] = acc;
            __syncwarp();
            if (lane == 0)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(&empty[s])) : "memory");
        }
    }
}
