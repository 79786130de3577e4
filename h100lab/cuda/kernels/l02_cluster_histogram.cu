// Used by: lesson 2 (chapters/02-clusters-ptx.md "A complete cluster kernel: a DSMEM histogram",
// h100lab/measure/l02.py --only histogram, h100lab/validation/l02.py histogram_report).
// Proves: distributed shared memory lets a cluster keep a histogram too large for one CTA's shared memory
// on chip. Three kernels count hist[v] over data[0..n) (values v < nbins), each thread grid-striding over
// the data:
//   hist_global   one global atomicAdd per element (red.global.add): every count travels to L2;
//   hist_shared   each CTA counts into its own copy of all nbins in shared memory (atom.shared.add), then adds
//                 its non-zero bins into hist — only when nbins · 4 bytes fit one CTA (227 KB);
//   hist_cluster  the bins are split over the CTAs of the cluster: the CTA of rank r owns bins
//                 [r·per, (r + 1)·per) with per = ceil(nbins / cluster size). A thread maps the owner's copy of
//                 its bin with mapa (PTX ISA §9.7.9.23) and adds with red.shared::cluster.add (PTX ISA, "red").
//                 Two cluster barriers (barrier.cluster.arrive.release + wait.acquire, §9.7.13.3): the first so no
//                 CTA adds into a slice before its owner has zeroed it, the second so every add has landed
//                 before the owner reads its slice — and no CTA's shared memory is touched after it exits.
// Dynamic shared memory: nbins · 4 bytes (hist_shared), per · 4 bytes (hist_cluster).
extern "C" __global__ void hist_global(const unsigned* __restrict__ data, long long n, unsigned* __restrict__ hist) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&hist[data[i]], 1u);
}

extern "C" __global__ void hist_shared(const unsigned* __restrict__ data, long long n, unsigned* __restrict__ hist,
                                       int nbins) {
    extern __shared__ unsigned bins[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) bins[b] = 0u;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}

extern "C" __global__ void hist_cluster(const unsigned* __restrict__ data, long long n, unsigned* __restrict__ hist,
                                        int nbins) {
    extern __shared__ unsigned bins[];
    unsigned rank, nrank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    const int per = (nbins + (int)nrank - 1) / (int)nrank;           // bins owned by each CTA
    for (int b = threadIdx.x; b < per; b += blockDim.x) bins[b] = 0u;
    // 1: every slice is zeroed (every CTA has started) before anyone adds into it
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    const unsigned base = (unsigned)__cvta_generic_to_shared(bins);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned v = data[i];
        const unsigned owner = v / per, slot = base + 4u * (v - owner * per);
        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(slot), "r"(owner));
        asm volatile("red.shared::cluster.add.u32 [%0], 1;" :: "r"(remote) : "memory");
    }
    // 2: every add has landed in its owner's slice before the owner reads it
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    for (int b = threadIdx.x; b < per; b += blockDim.x) {
        const int bin = (int)rank * per + b;
        if (bin < nbins && bins[b]) atomicAdd(&hist[bin], bins[b]);
    }
}
