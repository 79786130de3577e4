// Used by: lesson 4 (tensor maps), "Editing a map on the device" of chapters/04-tensormap.md, tests/test_emu_tensormap.py.
// Proves: a kernel can re-point one host-encoded tensor map at other tensors (grouped GEMM, ragged batches):
// each CTA copies the map into its own 128-byte slot in global memory, edits two fields there with
// tensormap.replace (PTX ISA 9.7.9.28: .global_address, and .global_dim of dimension 1 = the tensor's row
// count), publishes the edit to the tensormap proxy (fence.proxy.tensormap::generic.release.gpu), acquires it
// before use (fence.proxy.tensormap::generic.acquire.gpu [map], 128 -- PTX ISA 9.7.13.4.3), prefetches it
// (prefetch.tensormap), and TMA-loads a box through it. Rows past the edited row count arrive as the map's
// out-of-bounds fill, so every CTA's image tells which fields the TMA really used. The host compares the
// images with h100lab.tma.load on maps encoded with the edited parameters.
#include <h100lab/tensormap.cuh>

#define BOX_X 32          // box: 32 fp32 (128 bytes) x 8 rows = 1024 bytes, no swizzle
#define BOX_Y 8
#define BOX_BYTES (BOX_X * BOX_Y * 4)

extern "C" __global__ void tma_batched_rows(const __grid_constant__ CUtensorMap map, CUtensorMap* __restrict__ slots,
                                            const unsigned long long* __restrict__ bases,
                                            const int* __restrict__ rows, float* __restrict__ tiles) {
    __shared__ alignas(128) float tile[BOX_X * BOX_Y];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned bar_a = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    CUtensorMap* mine = slots + blockIdx.x;                                  // this CTA's copy of the map
    if (threadIdx.x == 0) {
        const uint4* from = reinterpret_cast<const uint4*>(&map);
        uint4* to = reinterpret_cast<uint4*>(mine);
        for (int i = 0; i < 8; ++i) to[i] = from[i];                          // 128 bytes, generic stores
        asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;"
                     :: "l"(mine), "l"(bases[blockIdx.x]) : "memory");        // where this CTA's tensor is
        asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;"
                     :: "l"(mine), "r"(rows[blockIdx.x]) : "memory");         // how many rows it has
        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(mine) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(mine) : "memory");     // a hint: fetch the map early
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(BOX_BYTES) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(dst), "l"(mine), "r"(0), "r"(0), "r"(bar_a) : "memory");
    }
    __syncthreads();
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT_%=;\n\t}"
                 :: "r"(bar_a) : "memory");
    for (int i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x) tiles[blockIdx.x * BOX_X * BOX_Y + i] = tile[i];
}
