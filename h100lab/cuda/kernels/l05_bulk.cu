// Used by: lesson 5 (cp.async.bulk), h100lab/measure/l05.py, "On real hardware" of chapters/05-cp-async-bulk.md.
// Proves: (1) raw cp.async.bulk global->shared with mbarrier complete_tx::bytes and shared->global with bulk
// groups move exactly `size` bytes between 16-byte aligned addresses (PTX ISA 9.7.9.25.4.1); (2) multicast:
// one CTA's cp.async.bulk{.tensor}...multicast::cluster with a ctaMask writes the data at the same offset of
// every CTA whose %cluster_ctarank bit is set, and completes each of those CTAs' own mbarrier at the same
// offset -- the other CTAs see nothing (hopper-spec-facts 12); (3) cp.reduce.async.bulk into global memory
// computes what h100lab.tma.bulk_reduce computes (PTX ISA 9.7.9.25.4.2).
#include <h100lab/tensormap.cuh>

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ bool wait_parity(unsigned bar, unsigned parity) {
    for (int i = 0; i < (1 << 14); ++i) {
        unsigned done;
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        if (done) return true;
    }
    return false;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

}  // namespace

// Round trip: global [src, src+size) -> shared B + dst_offset (mbarrier) -> global out (bulk group).
// status[0] = 1 if the barrier phase completed.
extern "C" __global__ void bulk_round_trip(const unsigned char* __restrict__ src, int size, int dst_offset,
                                           unsigned char* __restrict__ out, int* __restrict__ status) {
    extern __shared__ unsigned char dyn[];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned a = smem_u32(dyn);
    const unsigned b = (a + 1023u) & ~1023u;
    const unsigned bar_a = smem_u32(&bar);
    if (threadIdx.x != 0) return;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(size) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(b + dst_offset), "l"(src), "r"(size), "r"(bar_a) : "memory");
    const bool ok = wait_parity(bar_a, 0);
    status[0] = ok ? 1 : 0;
    if (!ok) return;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(out), "r"(b + dst_offset), "r"(size) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Multicast in a cluster: every CTA inits its barrier at the same offset and, if its rank is in `mask`,
// expects `bytes`; after a cluster barrier the CTA of rank `issuer` issues one multicast copy (tensor map
// box at (x, y) when use_tensor != 0, else raw bytes from src). Every CTA then waits (bounded) and dumps
// [B, B + region) to out + rank * region; status[rank] = 1 if its phase completed.
extern "C" __global__ void multicast_image(const __grid_constant__ CUtensorMap map, const unsigned char* __restrict__ src,
                                           int use_tensor, int x, int y, int bytes, int mask, int issuer,
                                           int dst_offset, int region, unsigned char sentinel,
                                           unsigned char* __restrict__ out, int* __restrict__ status) {
    extern __shared__ unsigned char dyn[];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned a = smem_u32(dyn);
    const unsigned b = (a + 1023u) & ~1023u;
    unsigned char* base = dyn + (b - a);
    const unsigned bar_a = smem_u32(&bar);
    const unsigned rank = cluster_rank();
    const bool selected = (mask >> rank) & 1;
    for (int i = threadIdx.x; i < region; i += blockDim.x) base[i] = sentinel;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        if (selected)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(bytes) : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    cluster_sync();   // every barrier initialised and expecting before any bytes arrive
    if (threadIdx.x == 0 && rank == static_cast<unsigned>(issuer)) {
        const unsigned short m16 = static_cast<unsigned short>(mask);
        if (use_tensor) {
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                         :: "r"(b + dst_offset), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y),
                            "r"(bar_a), "h"(m16)
                         : "memory");
        } else {
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                         " [%0], [%1], %2, [%3], %4;"
                         :: "r"(b + dst_offset), "l"(src), "r"(bytes), "r"(bar_a), "h"(m16) : "memory");
        }
    }
    bool ok = true;
    if (selected) ok = wait_parity(bar_a, 0);
    __syncthreads();
    if (threadIdx.x == 0) status[rank] = selected ? (ok ? 1 : 0) : 2;   // 2: not selected, never waited
    for (int i = threadIdx.x; i < region; i += blockDim.x) out[rank * region + i] = base[i];
    cluster_sync();   // no CTA exits while a multicast may still target it
}

// cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>.<type> [dst], [shared copy of `in`], size.
// code: 0 add.u32, 1 add.s32, 2 add.u64, 3 add.f32, 4 add.f64, 5 add.noftz.f16, 6 add.noftz.bf16,
// 7 min.s32, 8 max.u32, 9 min.bf16, 10 inc.u32, 11 dec.u32, 12 and.b32, 13 or.b64, 14 xor.b32, 15 max.s64
extern "C" __global__ void bulk_reduce_global(const unsigned char* __restrict__ in, unsigned char* __restrict__ dst,
                                              int size, int code) {
    extern __shared__ unsigned char dyn[];
    const unsigned a = smem_u32(dyn);
    const unsigned b = (a + 127u) & ~127u;
    unsigned char* base = dyn + (b - a);
    for (int i = threadIdx.x; i < size; i += blockDim.x) base[i] = in[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x != 0) return;
#define H100LAB_BRED(SUFFIX)                                                                      \
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group" SUFFIX " [%0], [%1], %2;" \
                 :: "l"(dst), "r"(b), "r"(size) : "memory")
    switch (code) {
        case 0: H100LAB_BRED(".add.u32"); break;
        case 1: H100LAB_BRED(".add.s32"); break;
        case 2: H100LAB_BRED(".add.u64"); break;
        case 3: H100LAB_BRED(".add.f32"); break;
        case 4: H100LAB_BRED(".add.f64"); break;
        case 5: H100LAB_BRED(".add.noftz.f16"); break;
        case 6: H100LAB_BRED(".add.noftz.bf16"); break;
        case 7: H100LAB_BRED(".min.s32"); break;
        case 8: H100LAB_BRED(".max.u32"); break;
        case 9: H100LAB_BRED(".min.bf16"); break;
        case 10: H100LAB_BRED(".inc.u32"); break;
        case 11: H100LAB_BRED(".dec.u32"); break;
        case 12: H100LAB_BRED(".and.b32"); break;
        case 13: H100LAB_BRED(".or.b64"); break;
        case 14: H100LAB_BRED(".xor.b32"); break;
        default: H100LAB_BRED(".max.s64"); break;
    }
#undef H100LAB_BRED
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
