// Used by: lesson 2 (chapters/02-clusters-ptx.md "Why swizzling").
// Proves: the 128-byte swizzle (CU_TENSOR_MAP_SWIZZLE_128B, CuTe Swizzle<3,4,3>: byte address a ->
// a ^ (((a >> 7) & 7) << 4)) makes a *16-byte* column of 8 consecutive 128-byte rows conflict-free, and only
// thins a 32-row column of narrow elements from 32 wavefronts to 4. One warp, one tile of 64 × 64 bf16
// (128-byte rows) in shared memory; `mode` picks the access each lane t makes (then the emulator's and Nsight
// Compute's wavefront counts can be compared with h100lab.memory.banks):
//   0  column 0, rows 0..31, 2-byte elements, plain layout       (every lane in bank 0: 32 wavefronts)
//   1  the same column in the swizzled layout                    (8 distinct chunks: 4 wavefronts)
//   2  16-byte chunk 0 of rows 0..31, plain  (ld.shared.v4: 4 quarter-warp phases of 8 lanes, 8-way each)
//   3  the same chunks swizzled                                  (one wavefront per phase: 4, the minimum)
// out[t] receives what lane t read (the tile holds element index r·64 + c as a 16-bit value).
extern "C" __global__ void swizzle_read(int mode, unsigned* __restrict__ out) {
    __shared__ __align__(1024) unsigned short tile[64 * 64];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 64; i += blockDim.x) {             // store element i at its (swizzled) place
        const unsigned a = 2u * i;
        const unsigned s = (mode & 1) ? a ^ (((a >> 7) & 7u) << 4) : a;
        tile[s / 2] = (unsigned short)i;
    }
    __syncthreads();
    const unsigned base = (unsigned)__cvta_generic_to_shared(tile);
    unsigned a = 128u * t;                                      // row t, byte 0 of the row
    if (mode & 1) a ^= ((a >> 7) & 7u) << 4;
    if (mode < 2) {
        unsigned short v;
        asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(base + a));
        out[t] = v;
    } else {
        unsigned v0, v1, v2, v3;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(base + a));
        out[t] = v0 & 0xFFFFu;                                    // the chunk's first element
    }
}
