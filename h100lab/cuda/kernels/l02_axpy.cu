// Used by: lesson 2 (chapters/02-clusters-ptx.md "PTX and its place in the toolchain").
// Proves: nothing about the hardware; it is the small kernel whose PTX (NVRTC, committed as
// h100lab/cuda/snapshots/l02_axpy.ptx) and SASS (cuobjdump/nvdisasm on a GPU machine,
// data/l02/l02_axpy.sass) the chapter shows: CUDA C++ -> PTX -> SASS. One statement is inline PTX
// (fma.rn.f32), so the PTX also shows the "begin inline asm" markers.
extern "C" __global__ void axpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float r;
        asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(x[i]), "f"(y[i]));
        y[i] = r;
    }
}
