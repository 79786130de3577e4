// Used by: h100lab.cuda's own tests (cluster launch); lesson 2 builds on the same instructions.
// Proves: a cluster launch through cuLaunchKernelEx co-schedules the cluster's blocks so that they can
// read each other's shared memory (distributed shared memory): each block stores a token in its own
// shared memory, the cluster barrier (barrier.cluster.arrive.release / wait.acquire, PTX ISA 9.7.13.3)
// publishes it, and each block reads its neighbour's token through mapa + ld.shared::cluster
// (PTX ISA 9.7.9.23 "mapa"). A second cluster barrier keeps every block alive until its neighbour has read.
//
// out[linear_block_id] = token of cluster rank (rank + 1) % nrank of the same cluster,
// where a block's token is 1000 * (its linear block id) + its rank.
extern "C" __global__ void cluster_ring(unsigned* out) {
    __shared__ unsigned token;
    unsigned rank, nrank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (threadIdx.x == 0) token = 1000u * block + rank;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (threadIdx.x == 0) {
        unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(&token));
        unsigned remote, got;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % nrank));
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(got) : "r"(remote) : "memory");
        out[block] = got;
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
