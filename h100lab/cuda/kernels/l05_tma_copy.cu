// Used by: lesson 5 (cp.async.bulk), h100lab/measure/l05.py, benchmarks/bench_l04.py, "On real hardware" of
// chapters/05-cp-async-bulk.md.
// Proves: a single thread per CTA can stream a tensor through shared memory with TMA alone -- tensor loads
// completed through one mbarrier per stage (complete_tx::bytes), tensor stores completed through bulk groups
// (commit_group / wait_group.read before a stage is refilled) -- and that with enough stages in flight this
// reaches (or beats) the bandwidth of a plain vectorised device-to-device copy (device_copy below).
// PTX ISA 9.7.9.27.1.2 (cp.async.bulk.tensor), 9.7.9.27.2 (bulk groups), 9.7.13.15 (mbarrier).
#include <h100lab/tensormap.cuh>

#define H100LAB_MAX_STAGES 8

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void load_tile(unsigned dst, const CUtensorMap* m, int x, int y, unsigned bar,
                                          unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(m)), "r"(x), "r"(y), "r"(bar) : "memory");
}

__device__ __forceinline__ void store_tile(const CUtensorMap* m, int x, int y, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<unsigned long long>(m)), "r"(x), "r"(y), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

}  // namespace

// Copy a 2-D tensor tile by tile: tiles of box_x x box_y elements, tiles_x tiles per row, n_tiles in all; CTA
// i takes tiles i, i + gridDim.x, ...; `stages` shared buffers of tile_bytes each, 1024-byte aligned.
extern "C" __global__ void tma_copy(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst,
                                    int box_x, int box_y, int tiles_x, int n_tiles, int stages, int tile_bytes) {
    extern __shared__ unsigned char dyn[];
    __shared__ alignas(8) unsigned long long full[H100LAB_MAX_STAGES];
    if (threadIdx.x != 0) return;
    const unsigned a = smem_u32(dyn);
    const unsigned base = (a + 1023u) & ~1023u;
    const unsigned pitch = (static_cast<unsigned>(tile_bytes) + 1023u) & ~1023u;
    for (int s = 0; s < stages; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    int n = 0;
    for (int t = blockIdx.x; t < n_tiles; t += gridDim.x) ++n;
    auto tile_xy = [&](int i, int* x, int* y) {
        const int t = blockIdx.x + i * gridDim.x;
        *x = (t % tiles_x) * box_x;
        *y = (t / tiles_x) * box_y;
    };
    for (int i = 0; i < n && i < stages; ++i) {
        int x, y;
        tile_xy(i, &x, &y);
        load_tile(base + i * pitch, &src, x, y, smem_u32(&full[i]), tile_bytes);
    }
    for (int i = 0; i < n; ++i) {
        const int s = i % stages;
        int x, y;
        tile_xy(i, &x, &y);
        wait_parity(smem_u32(&full[s]), (i / stages) & 1);
        store_tile(&dst, x, y, base + s * pitch);
        if (i + stages < n) {
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the store has read stage s
            int x2, y2;
            tile_xy(i + stages, &x2, &y2);
            load_tile(base + s * pitch, &src, x2, y2, smem_u32(&full[s]), tile_bytes);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// The reference: a grid-stride copy with 16-byte vector loads and stores (n16 = bytes / 16).
extern "C" __global__ void device_copy(const uint4* __restrict__ in, uint4* __restrict__ out, long long n16) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
        out[i] = a;
        out[i + stride] = b;
        out[i + 2 * stride] = c;
        out[i + 3 * stride] = d;
    }
    for (; i < n16; i += stride) out[i] = in[i];
}
