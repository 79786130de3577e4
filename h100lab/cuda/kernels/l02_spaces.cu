// Used by: lesson 2 (python -m h100lab.measure.l02; h100lab.validation.l02).
// Proves: the generic-addressing rules of h100lab.memory.spaces on real hardware (PTX ISA §6.4.1.1
// "Generic Addressing", cvta and isspacep): a shared, a local, a global and a constant variable each
// answer isspacep true for their own state space only; cvta.to.shared of a shared variable's generic
// address is a small offset, and cvta.shared turns it back into the same generic address; a peer CTA's
// shared variable, reached through the generic form of mapa, is in .shared::cluster but not in
// .shared::cta. Launched as clusters of 2 CTAs.
//
// out[OUT_FIELDS * linear_block + k]:
//  0: isspacep bits of &shared   (bit 0 .shared::cta, 1 .shared::cluster, 2 .global, 3 .local, 4 .const)
//  1: isspacep bits of &local_array[i]
//  2: isspacep bits of a global pointer
//  3: isspacep bits of &constant_var
//  4: isspacep bits of the peer's shared variable (generic mapa)
//  5: cvta.to.shared of &shared (32-bit offset)
//  6: 1 if cvta.shared(cvta.to.shared(&shared)) == &shared
//  7, 8: low / high 32 bits of the generic address of &shared
//  9, 10: low / high 32 bits of the generic address of the peer's shared variable
//  11, 12: low / high 32 bits of the generic address of &local_array[0]
#define OUT_FIELDS 13

__constant__ unsigned constant_var[4];

__device__ unsigned space_bits(const void* p) {
    unsigned long long g = (unsigned long long)p;
    unsigned r = 0, t;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.shared::cta q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}" : "=r"(t) : "l"(g));
    r |= t;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.shared::cluster q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}" : "=r"(t) : "l"(g));
    r |= t << 1;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.global q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}" : "=r"(t) : "l"(g));
    r |= t << 2;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.local q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}" : "=r"(t) : "l"(g));
    r |= t << 3;
    asm volatile("{\n\t.reg .pred q;\n\tisspacep.const q, %1;\n\tselp.u32 %0, 1, 0, q;\n\t}" : "=r"(t) : "l"(g));
    r |= t << 4;
    return r;
}

extern "C" __global__ void spaces_probe(unsigned* gbuf, unsigned* out, int pick) {
    __shared__ unsigned shared_var;
    volatile unsigned local_array[8];
    if (threadIdx.x == 0) shared_var = blockIdx.x;
    for (int k = 0; k < 8; ++k) local_array[k] = k * pick;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (threadIdx.x == 0) {
        unsigned rank, nrank;
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
        asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
        unsigned long long peer;
        asm volatile("mapa.u64 %0, %1, %2;" : "=l"(peer) : "l"((unsigned long long)&shared_var), "r"((rank + 1) % nrank));
        unsigned long long back;
        unsigned off;
        asm volatile("{\n\t.reg .u64 w;\n\tcvta.to.shared.u64 w, %1;\n\tcvt.u32.u64 %0, w;\n\t}"
                     : "=r"(off) : "l"((unsigned long long)&shared_var));
        asm volatile("{\n\t.reg .u64 w;\n\tcvt.u64.u32 w, %1;\n\tcvta.shared.u64 %0, w;\n\t}" : "=l"(back) : "r"(off));
        unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        unsigned* o = out + OUT_FIELDS * block;
        o[0] = space_bits(&shared_var);
        o[1] = space_bits((const void*)&local_array[pick & 7]);
        o[2] = space_bits(gbuf);
        o[3] = space_bits(&constant_var[pick & 3]);
        o[4] = space_bits((const void*)peer);
        o[5] = off;
        o[6] = back == (unsigned long long)&shared_var;
        unsigned long long g = (unsigned long long)&shared_var, l = (unsigned long long)&local_array[0];
        o[7] = (unsigned)g; o[8] = (unsigned)(g >> 32);
        o[9] = (unsigned)peer; o[10] = (unsigned)(peer >> 32);
        o[11] = (unsigned)l; o[12] = (unsigned)(l >> 32);
        gbuf[block] = local_array[(pick + 1) & 7] + constant_var[0];
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
