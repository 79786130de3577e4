// Used by: h100lab.cuda's own tests; lesson 4 (tensor maps) uses the same path.
// Proves: a tensor map encoded on the host by cuTensorMapEncodeTiled and passed by value as a
// const __grid_constant__ CUtensorMap parameter drives a 2-D TMA load (cp.async.bulk.tensor.2d, PTX ISA
// 9.7.9.25.5.1) into shared memory, completed through an mbarrier transaction count (PTX ISA 9.7.13.15).
// The block then copies the shared-memory image of the box, byte for byte, to out, so the host sees
// the exact layout the TMA wrote (swizzled or not).
#include <h100lab/tensormap.cuh>

extern "C" __global__ void tma_load_2d(const __grid_constant__ CUtensorMap map, int x0, int y0,
                                       unsigned char* __restrict__ out, int box_bytes) {
    __shared__ alignas(1024) unsigned char tile[8192];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    const unsigned tile_addr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_addr), "r"(box_bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_addr), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x0), "r"(y0),
                        "r"(bar_addr)
                     : "memory");
    }
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
        "@!done bra WAIT_%=;\n\t}"
        :: "r"(bar_addr) : "memory");
    for (int i = threadIdx.x; i < box_bytes; i += blockDim.x) out[i] = tile[i];
}
