// Used by: lesson 7 (WGMMA part 2: 2:4 sparsity), h100lab/measure/l07.py, tests/test_l07_emu.py, "On real hardware"
// of chapters/07-wgmma-fp8-sparsity.md.
// Proves: what wgmma.mma_async.sp computes (PTX ISA 9.7.15.6) for every sparse type — f16 (f16 and f32 D), bf16,
// tf32, the four fp8 pairings, s8/u8 — with A packed to K/2 through a descriptor (SS) or in registers (RS), the
// per-thread sp-meta registers given by the host (valid metadata, metadata only in the lanes sp-sel names with
// garbage elsewhere, and invalid codes), and each sparsity selector a type allows. The host builds the shared-memory
// image (packed A, dense B), descriptors relative to the image, C, the sp-meta registers and (RS) the A registers;
// each CTA runs `steps` chained sparse wgmmas and writes every thread's raw D registers. Compared bit for bit with
// h100lab.tensorcore.sparsity by h100lab/validation/l07.py.
// Generated from SPARSE_FORMS in h100lab/measure/l07.py (same template as l06_wgmma_probe.cu); edit both together.

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned load_image(unsigned char* dyn, const uint4* img, int img_bytes) {
    const unsigned raw = smem_u32(dyn);
    const unsigned base = (raw + 1023u) & ~1023u;
    uint4* dst = reinterpret_cast<uint4*>(dyn + (base - raw));
    const uint4* src = img + (size_t)blockIdx.x * (img_bytes / 16);
    for (int i = threadIdx.x; i < img_bytes / 16; i += blockDim.x) dst[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes read by wgmma (PTX 9.7.15.4)
    __syncthreads();
    return base;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

__device__ __forceinline__ void wgmma_commit_wait0() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

}  // namespace

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_f16_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16, sp-sel 1
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_f16_s1(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 1, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f16.f16.f16, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f16_f16_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) d[r] = (c_in[me * 16 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %19, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f16.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, %18, 0, p, 1, 1, 0, 0;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 16; ++r) d_out[me * 16 + r] = (d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_bf16_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16, sp-sel 1
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_bf16_s1(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 1, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n256_f32_bf16_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[128];
#pragma unroll
    for (int r = 0; r < 128; ++r) d[r] = __uint_as_float(c_in[me * 128 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 128; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %131, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, %130, 0, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 128; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 128; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 128; ++r) d_out[me * 128 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_e4m3_e4m3_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e5m2, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_e4m3_e5m2_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e5m2 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e5m2.e4m3, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_e5m2_e4m3_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e5m2.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e5m2.e5m2, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_e5m2_e5m2_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = __uint_as_float(c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e5m2.e5m2 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = __float_as_uint(d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f16.e4m3.e4m3, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f16_e4m3_e4m3_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) d[r] = (c_in[me * 16 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %19, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f16.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, %18, 0, p, 1, 1;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 16; ++r) d_out[me * 16 + r] = (d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_s32_s8_s8_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = (c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = (d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.u8, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_s32_s8_u8_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = (c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.u8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = (d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.u8.s8, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_s32_u8_s8_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = (c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.s32.u8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = (d[r]);
}

// wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.u8.u8, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_s32_u8_u8_s0(
        const uint4* __restrict__ img, int img_bytes, const unsigned long long* __restrict__ descs, int steps,
        const unsigned* __restrict__ a_regs, const unsigned* __restrict__ meta, const unsigned* __restrict__ c_in,
        int scale_d, unsigned* __restrict__ d_out) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned base = load_image(dyn, img, img_bytes);
    const size_t me = (size_t)blockIdx.x * 128 + threadIdx.x;
    unsigned d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = (c_in[me * 32 + r]);
    for (int s = 0; s < steps; ++s) {
        const unsigned long long* ds = descs + ((size_t)blockIdx.x * steps + s) * 2;
        const unsigned long long da = ds[0] + (base >> 4), db = ds[1] + (base >> 4);
        unsigned ar[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) ar[j] = a_regs ? a_regs[(me * steps + s) * 4 + j] : 0u;
        unsigned me_meta = meta[me * steps + s];       // this thread's sp-meta register for step s
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(ar[j]) :: "memory");
        asm volatile("" : "+r"(me_meta) :: "memory");
        (void)da; (void)ar;
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
        wgmma_fence();
        const int sd = s ? 1 : scale_d;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.s32.u8.u8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                     : "l"(da), "l"(db), "r"(me_meta), "r"(sd) : "memory");
        // retire each step before the loop moves the accumulators (a chain either way: D feeds the next C)
        wgmma_commit_wait0();
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+r"(d[r]) :: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) d_out[me * 32 + r] = (d[r]);
}
