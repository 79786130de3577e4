// Used by: lesson 4 (tensor maps), h100lab/measure/l04.py, "On real hardware" of chapters/04-tensormap.md.
// Proves: what cp.async.bulk.tensor writes into shared memory, byte for byte -- box traversal order, element
// strides, the swizzle of the absolute shared address, rows padded to the swizzle span (untouched bytes keep
// the sentinel written before the copy), interleaved layouts, out-of-bounds fill (zeros / OOB-NaN) for boxes
// hanging off any edge, and im2col columns -- and what the tensor store and the tensor reductions write to
// global memory (PTX ISA 9.7.9.27.1.2 cp.async.bulk.tensor, 9.7.9.27.1.3 cp.reduce.async.bulk.tensor).
// The host compares every image with h100lab.tma.load / load_im2col / store / reduce.
//
// Shared-memory layout: the dynamic shared memory is rounded up at run time to a 1024-byte aligned base B
// (launch with 1024 bytes of slack); the region [B, B + region) is filled with `sentinel`, the copy targets
// B + dst_offset, and the whole region is copied out. The mbarrier is static shared memory, outside it.
//
// status[0] of a load: 1 if the mbarrier phase completed with exactly tx_bytes delivered -- phase 0 completed
// and, after a pause that lets any further bytes land, one more arrival completes phase 1 too (bytes arriving
// after phase 0 completed would leave phase 1's tx-count negative); 2 if phase 0 completed but more bytes
// followed; 0 if phase 0 never completed (fewer bytes, or more in a single transaction).
#include <h100lab/tensormap.cuh>

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned aligned_base(unsigned char* dyn, unsigned char** gen) {
    const unsigned a = smem_u32(dyn);
    const unsigned b = (a + 1023u) & ~1023u;
    *gen = dyn + (b - a);
    return b;
}

// Bounded wait on phase `parity` of the mbarrier: false if it did not complete (a wrong tx count).
__device__ __forceinline__ bool wait_parity(unsigned bar, unsigned parity) {
    for (int i = 0; i < (1 << 16); ++i) {
        unsigned done;
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        if (done) return true;
    }
    return false;
}

// After phase 0: pause, then arrive once more; phase 1 completes only if no bytes arrived after phase 0 did.
__device__ __forceinline__ int exact_status(unsigned bar, bool phase0) {
    __shared__ int st;
    if (threadIdx.x == 0) {
        for (int i = 0; i < 64; ++i) __nanosleep(1000);   // ~64 us: every byte of the copy has landed
        int r = 0;
        if (phase0) {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
            r = wait_parity(bar, 1) ? 1 : 2;
        } else {
            for (int i = 0; i < 64; ++i) __nanosleep(1000);
        }
        st = r;
    }
    __syncthreads();
    return st;
}

__device__ __forceinline__ void fill_region(unsigned char* base, int region, unsigned char sentinel) {
    for (int i = threadIdx.x; i < region; i += blockDim.x) base[i] = sentinel;
}

__device__ __forceinline__ void copy_out(const unsigned char* base, int region, unsigned char* out) {
    for (int i = threadIdx.x; i < region; i += blockDim.x) out[i] = base[i];
}

}  // namespace

// One tiled load of the box at (c0..c4) to B + dst_offset; status[0] = 1 if the mbarrier phase completed
// with exactly tx_bytes transactions expected.
extern "C" __global__ void tma_load_image(const __grid_constant__ CUtensorMap map, int rank, int c0, int c1, int c2,
                                          int c3, int c4, int dst_offset, int tx_bytes, int region,
                                          unsigned char sentinel, unsigned char* __restrict__ out,
                                          int* __restrict__ status) {
    extern __shared__ unsigned char dyn[];
    __shared__ alignas(8) unsigned long long bar;
    unsigned char* base;
    const unsigned b = aligned_base(dyn, &base);
    const unsigned bar_a = smem_u32(&bar);
    fill_region(base, region, sentinel);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // sentinel and init visible to the async proxy
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned dst = b + static_cast<unsigned>(dst_offset);
        const unsigned long long m = reinterpret_cast<unsigned long long>(&map);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(tx_bytes) : "memory");
        switch (rank) {
            case 1:
                asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2}], [%3];" :: "r"(dst), "l"(m), "r"(c0), "r"(bar_a) : "memory");
                break;
            case 2:
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3}], [%4];" :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(bar_a) : "memory");
                break;
            case 3:
                asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3, %4}], [%5];"
                             :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(bar_a) : "memory");
                break;
            case 4:
                asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3, %4, %5}], [%6];"
                             :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar_a) : "memory");
                break;
            default:
                asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                             :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar_a) : "memory");
                break;
        }
    }
    const bool ok = wait_parity(bar_a, 0);
    __syncthreads();
    const int st = exact_status(bar_a, ok);
    if (threadIdx.x == 0) status[0] = st;
    copy_out(base, region, out);
}

// One im2col load (rank 3..5): tensor coordinates (c0..c4) and im2col offsets (o0..o2, one per spatial dim).
extern "C" __global__ void tma_load_im2col_image(const __grid_constant__ CUtensorMap map, int rank, int c0, int c1,
                                                 int c2, int c3, int c4, int o0, int o1, int o2, int dst_offset,
                                                 int tx_bytes, int region, unsigned char sentinel,
                                                 unsigned char* __restrict__ out, int* __restrict__ status) {
    extern __shared__ unsigned char dyn[];
    __shared__ alignas(8) unsigned long long bar;
    unsigned char* base;
    const unsigned b = aligned_base(dyn, &base);
    const unsigned bar_a = smem_u32(&bar);
    fill_region(base, region, sentinel);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned dst = b + static_cast<unsigned>(dst_offset);
        const unsigned long long m = reinterpret_cast<unsigned long long>(&map);
        const unsigned short h0 = static_cast<unsigned short>(o0), h1 = static_cast<unsigned short>(o1),
                             h2 = static_cast<unsigned short>(o2);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(tx_bytes) : "memory");
        if (rank == 3) {
            asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4}], [%5], {%6};"
                         :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(bar_a), "h"(h0) : "memory");
        } else if (rank == 4) {
            asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
                         :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar_a), "h"(h0), "h"(h1)
                         : "memory");
        } else {
            asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};"
                         :: "r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar_a), "h"(h0),
                            "h"(h1), "h"(h2)
                         : "memory");
        }
    }
    const bool ok = wait_parity(bar_a, 0);
    __syncthreads();
    const int st = exact_status(bar_a, ok);
    if (threadIdx.x == 0) status[0] = st;
    copy_out(base, region, out);
}

// Store (op < 0) or reduce (op = 0 add, 1 min, 2 max, 3 inc, 4 dec, 5 and, 6 or, 7 xor) the shared image `in`
// (region bytes, placed at B) from B + src_offset into the tensor at (c0..c4). Ranks 1..5 for stores,
// 2 for reductions.
extern "C" __global__ void tma_store_image(const __grid_constant__ CUtensorMap map, int rank, int c0, int c1, int c2,
                                           int c3, int c4, int src_offset, int region, int op,
                                           const unsigned char* __restrict__ in) {
    extern __shared__ unsigned char dyn[];
    unsigned char* base;
    const unsigned b = aligned_base(dyn, &base);
    for (int i = threadIdx.x; i < region; i += blockDim.x) base[i] = in[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes -> visible to the TMA
    __syncthreads();
    if (threadIdx.x != 0) return;
    const unsigned src = b + static_cast<unsigned>(src_offset);
    const unsigned long long m = reinterpret_cast<unsigned long long>(&map);
    if (op < 0) {
        switch (rank) {
            case 1:
                asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%1}], [%2];"
                             :: "l"(m), "r"(c0), "r"(src) : "memory");
                break;
            case 2:
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                             :: "l"(m), "r"(c0), "r"(c1), "r"(src) : "memory");
                break;
            case 3:
                asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
                             :: "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(src) : "memory");
                break;
            case 4:
                asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];"
                             :: "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src) : "memory");
                break;
            default:
                asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group"
                             " [%0, {%1, %2, %3, %4, %5}], [%6];"
                             :: "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(src) : "memory");
                break;
        }
    } else {
#define H100LAB_RED(OP)                                                                                         \
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta." OP ".tile.bulk_group [%0, {%1, %2}], [%3];" \
                 :: "l"(m), "r"(c0), "r"(c1), "r"(src) : "memory")
        switch (op) {
            case 0: H100LAB_RED("add"); break;
            case 1: H100LAB_RED("min"); break;
            case 2: H100LAB_RED("max"); break;
            case 3: H100LAB_RED("inc"); break;
            case 4: H100LAB_RED("dec"); break;
            case 5: H100LAB_RED("and"); break;
            case 6: H100LAB_RED("or"); break;
            default: H100LAB_RED("xor"); break;
        }
#undef H100LAB_RED
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
