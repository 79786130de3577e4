// Used by: h100lab.cuda's own tests; lesson 1's shared-memory limits.
// Proves: dynamic shared memory above 48 KiB works once the kernel opts in
// (cudaFuncAttributeMaxDynamicSharedMemorySize; CUDA C++ Programming Guide, "Shared Memory" for compute
// capability 9.0: up to 227 KiB per block). The block stages n words through shared memory and writes
// them back reversed: out[i] = in[n - 1 - i], n = dynamic shared bytes / 4.
extern "C" __global__ void reverse_through_smem(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n) {
    extern __shared__ unsigned buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}
