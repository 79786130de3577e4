// Used by: lesson 2 (chapters/02-clusters-ptx.md, python -m h100lab.measure.l02).
// Proves: what each CTA of a cluster launch reads from the cluster special registers (PTX ISA §10:
// %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid, %cluster_ctarank, %cluster_nctarank,
// %is_explicit_cluster) next to %ctaid, and on which SM it runs (%smid). The lesson checks the rank
// formula rank = x + nx*(y + ny*z) and %ctaid = %clusterid * %cluster_nctaid + %cluster_ctaid against the
// model, and groups SMs into GPCs: SMs that host CTAs of one cluster share a GPC (CUDA C++ Programming
// Guide §"Thread Block Clusters"). The cluster shape is set at launch (cudaLaunchAttributeClusterDimension),
// so one kernel serves every shape; dynamic shared memory controls how many CTAs fit on an SM, and
// spin_ns keeps the CTAs resident long enough for a full wave to be on the GPU together.
//
// out[PROBE_FIELDS * linear_block + k], k = 0..19:
//   smid, ctaid.xyz, clusterid.xyz, nclusterid.xyz, cluster_ctaid.xyz, cluster_nctaid.xyz,
//   cluster_ctarank, cluster_nctarank, is_explicit_cluster
#define PROBE_FIELDS 20

extern "C" __global__ void cluster_probe(unsigned* out, unsigned spin_ns) {
    extern __shared__ unsigned char pad[];   // sized by the launch: limits CTAs per SM
    if (threadIdx.x != 0) return;
    unsigned v[PROBE_FIELDS];
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v[0]));
    v[1] = blockIdx.x; v[2] = blockIdx.y; v[3] = blockIdx.z;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v[4]));
    asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(v[5]));
    asm volatile("mov.u32 %0, %%clusterid.z;" : "=r"(v[6]));
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v[7]));
    asm volatile("mov.u32 %0, %%nclusterid.y;" : "=r"(v[8]));
    asm volatile("mov.u32 %0, %%nclusterid.z;" : "=r"(v[9]));
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(v[10]));
    asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(v[11]));
    asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(v[12]));
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(v[13]));
    asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(v[14]));
    asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(v[15]));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v[16]));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v[17]));
    asm volatile("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(v[18]));
    v[19] = pad[0] * 0u;                     // touch the dynamic shared memory so it is allocated
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    for (int k = 0; k < PROBE_FIELDS; ++k) out[PROBE_FIELDS * block + k] = v[k];
    for (unsigned t = 0; t < spin_ns; t += 1000) __nanosleep(1000);
}
