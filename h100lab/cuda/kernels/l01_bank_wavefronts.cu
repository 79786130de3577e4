// Used by: lesson 1 (h100lab/measure/l01.py --bank-wavefronts, h100lab/validation/l01.py,
// chapters/01-architecture.md "On real hardware").
// Proves: h100lab.memory.banks.wavefronts gives exactly the number of shared-memory wavefronts Nsight
// Compute counts (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld/st) for one warp-wide access.
// One warp runs; lane t, if bit t of `active` is set, performs exactly ONE shared-memory access at byte
// offset offset[t] of a static shared array: `mode` selects ld.shared/st.shared of .b32, .v2.b32 or
// .v4.b32 (0..2 loads of 4/8/16 B, 3..5 stores of 4/8/16 B); any other mode performs no shared access
// (the per-launch baseline). Nothing else in the kernel touches shared memory: the offsets come from
// global memory and the loaded values go to global `sink`, so the counters see one instruction only.
#define SMEM_BYTES 32768

extern "C" __global__ void bank_wavefronts(const unsigned* __restrict__ offset, unsigned active, int mode,
                                           unsigned* __restrict__ sink) {
    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];   // 1024-aligned: offsets are bank- and swizzle-exact
    const unsigned lane = threadIdx.x & 31u;
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + offset[lane];
    unsigned a = lane, b = lane + 32u, c = lane + 64u, d = lane + 96u;
    if ((active >> lane) & 1u) {
        switch (mode) {
        case 0:
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(a) : "r"(addr) : "memory");
            break;
        case 1:
            asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "r"(addr) : "memory");
            break;
        case 2:
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr) : "memory");
            break;
        case 3:
            asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(a) : "memory");
            break;
        case 4:
            asm volatile("st.shared.v2.b32 [%0], {%1, %2};" :: "r"(addr), "r"(a), "r"(b) : "memory");
            break;
        case 5:
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
                         :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
            break;
        default:
            break;
        }
    }
    sink[threadIdx.x] = a ^ b ^ c ^ d;
}
