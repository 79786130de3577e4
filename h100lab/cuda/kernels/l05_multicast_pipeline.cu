// Used by: lesson 5 (cp.async.bulk), "Multicast end to end" of chapters/05-cp-async-bulk.md, exercise 5.10.
// Proves: the whole multicast protocol as one kernel. A cluster of CTAs streams the same K tiles of a tensor
// through S shared-memory stages; only the CTA of rank 0 issues copies -- one
// cp.async.bulk.tensor.2d...multicast::cluster per tile, with ctaMask = every rank of the cluster -- and each
// tile lands at the same offset in every CTA (PTX ISA 9.7.9.27.1.2). Per stage, every CTA has a `full`
// mbarrier (count 1: its own arrive.expect_tx for the bytes IT receives; the copy's complete_tx) and the
// issuer has an `empty` mbarrier (count = cluster size: every CTA arrives remotely, through mapa, once it has
// finished reading the stage). The issuer refills stage s only after empty[s] completed. The barriers are
// initialised and made visible to the cluster (fence.mbarrier_init.release.cluster + barrier.cluster) before
// any byte can arrive, and a last barrier.cluster keeps every CTA alive until no multicast can target it.
// Each CTA adds up the K tiles element by element (out[cluster rank][element]) and counts the bytes its
// barriers expected (bytes[cluster rank]).
#include <h100lab/mbarrier.cuh>
#include <h100lab/tensormap.cuh>

#define BOX_X 32                        // one tile: 32 fp32 x 8 rows = 1024 bytes
#define BOX_Y 8
#define TILE_ELEMS (BOX_X * BOX_Y)
#define TILE_BYTES (TILE_ELEMS * 4)
#define STAGES 2

namespace {

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

}  // namespace

extern "C" __global__ void multicast_sum(const __grid_constant__ CUtensorMap map, int k_tiles,
                                         float* __restrict__ out, unsigned* __restrict__ bytes) {
    __shared__ alignas(1024) float buf[STAGES][TILE_ELEMS];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned rank = cluster_rank(), n = cluster_size();
    const unsigned short mask = static_cast<unsigned short>((1u << n) - 1);   // every CTA of the cluster
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(&empty[s])), "r"(n) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster_sync();                     // (1) every barrier of the cluster exists before any byte arrives
    float acc = 0.0f;
    unsigned expected = 0;
    for (int k = 0; k < k_tiles; ++k) {
        const int s = k % STAGES;
        const unsigned phase = (k / STAGES) & 1;
        if (threadIdx.x == 0) {
            // (2) every receiver expects the bytes it will receive, on its own full barrier
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(smem_u32(&full[s])), "r"(TILE_BYTES) : "memory");
            expected += TILE_BYTES;
            if (rank == 0) {
                // (3) the issuer waits until every CTA has released stage s, then multicasts tile k into it
                if (k >= STAGES) wait_parity(smem_u32(&empty[s]), phase ^ 1);
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                             :: "r"(smem_u32(buf[s])), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(0),
                                "r"(k * BOX_Y), "r"(smem_u32(&full[s])), "h"(mask)
                             : "memory");
            }
        }
        wait_parity(smem_u32(&full[s]), phase);          // (4) receivers wait on their LOCAL barrier only
        acc += buf[s][threadIdx.x];
        __syncthreads();                                 // every thread of this CTA is done with stage s
        if (threadIdx.x == 0) {                          // (5) release stage s on the issuer's empty barrier
            unsigned remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(smem_u32(&empty[s])));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
        }
    }
    out[blockIdx.x * TILE_ELEMS + threadIdx.x] = acc;
    if (threadIdx.x == 0) bytes[blockIdx.x] = expected;
    cluster_sync();                     // (6) nobody exits while a multicast or a remote arrive may target it
}
