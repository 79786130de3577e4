// Used by: lesson 2 (chapters/02-clusters-ptx.md "On real hardware", python -m h100lab.measure.l02).
// Proves: distributed shared memory works the way h100lab.cluster.dsmem models it. Every CTA of a cluster
// pushes a value into the shared memory of its right neighbour (rank + 1) % n — mapa.shared::cluster
// (PTX ISA §9.7.9.23) takes a *rank* — with st.shared::cluster, then reads what its left neighbour pushed;
// every CTA also adds (rank + 1) into rank 0's counter with atom.shared::cluster.add. Two cluster barriers
// (barrier.cluster.arrive.release + wait.acquire, PTX ISA §9.7.13.3) make it correct: the first so no CTA
// writes into a neighbour that has not started, the second so the writes and atomics are visible before
// the reads — and, because no remote access follows it, no CTA's shared memory is touched after it exits.
// Also records the raw addresses: the .shared::cta offset of the slot (__cvta_generic_to_shared, i.e.
// cvta.to.shared), the .shared::cluster address mapa returns, and getctarank of it.
//
// out[RING_FIELDS * linear_block + k]: received, sent, local_addr, mapa_addr, getctarank(mapa_addr),
// counter (rank 0 only, else 0), rank, nrank
#define RING_FIELDS 8

extern "C" __global__ void dsmem_ring(unsigned* out) {
    __shared__ unsigned slot;
    __shared__ unsigned counter;
    unsigned rank, nrank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned sent = 7919u * block + 13u;
    if (threadIdx.x == 0) { slot = 0; counter = 0; }
    // 1: every CTA of the cluster has started (and initialised its slot) before anyone writes into it
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    unsigned local = 0, remote = 0, owner = 0;
    if (threadIdx.x == 0) {
        local = (unsigned)__cvta_generic_to_shared(&slot);
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % nrank));
        asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(remote));
        asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(remote), "r"(sent) : "memory");
        unsigned c0 = (unsigned)__cvta_generic_to_shared(&counter), r0;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(r0) : "r"(c0));
        asm volatile("red.shared::cluster.add.u32 [%0], %1;" :: "r"(r0), "r"(rank + 1) : "memory");
    }
    // 2: the pushes (and the atomics) are visible to their targets
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (threadIdx.x == 0) {
        unsigned* o = out + RING_FIELDS * block;
        o[0] = slot; o[1] = sent; o[2] = local; o[3] = remote; o[4] = owner;
        o[5] = rank == 0 ? counter : 0u; o[6] = rank; o[7] = nrank;
    }
}
