// Used by: h100lab.cuda's own tests; lessons 1-2 read the same special registers.
// Proves: inline PTX reads the special registers %smid, %nsmid, %ctaid, %clusterid, %cluster_ctaid,
// %cluster_ctarank, %cluster_nctarank and %is_explicit_cluster (PTX ISA 10 "Special Registers"), and
// that a cluster launch sets them: rank = x + nx*(y + ny*z) and ctaid = clusterid*cluster_nctaid +
// cluster_ctaid (checked by tests/test_cuda_gpu.py for 1-D and 3-D clusters).
//
// Thread 0 of each block writes 12 words at out[12 * linear_block_id]:
//   smid, nsmid, ctaid.x, ctaid.y, ctaid.z, clusterid.x, cluster_ctaid.x, cluster_ctaid.y,
//   cluster_ctaid.z, cluster_ctarank, cluster_nctarank, is_explicit_cluster
extern "C" __global__ void read_ids(unsigned* out) {
    if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;
    unsigned r[12];
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r[0]));
    asm volatile("mov.u32 %0, %%nsmid;" : "=r"(r[1]));
    asm("mov.u32 %0, %%ctaid.x;" : "=r"(r[2]));
    asm("mov.u32 %0, %%ctaid.y;" : "=r"(r[3]));
    asm("mov.u32 %0, %%ctaid.z;" : "=r"(r[4]));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(r[5]));
    asm("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(r[6]));
    asm("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(r[7]));
    asm("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(r[8]));
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r[9]));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(r[10]));
    asm("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r[11]));
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    for (int k = 0; k < 12; ++k) out[12 * block + k] = r[k];
}
