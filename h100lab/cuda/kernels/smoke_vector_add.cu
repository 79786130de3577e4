// Used by: h100lab.cuda's own tests and the "model vs silicon" appendix (no lesson).
// Proves: the backend's whole path works -- NVRTC compiles for sm_90a, the cubin loads, pointer and
// scalar parameters arrive, a 1-D grid covers n elements (CUDA C++ Programming Guide, "Kernels" and
// "Thread Hierarchy"), and results come back to NumPy.
extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
