// Used by: lesson 7 (WGMMA part 2: 2:4 sparsity), h100lab/measure/l07.py, tests/test_l07_emu.py, "On real hardware"
// of chapters/07-wgmma-fp8-sparsity.md.
// Proves: what wgmma.mma_async.sp computes (PTX ISA 9.7.15.6) for every sparse type — f16 (f16 and f32 D), bf16,
// tf32, the four fp8 pairings, s8/u8 — with A packed to K/2 through a descriptor (SS) or in registers (RS), the
// per-thread sp-meta registers given by the host (valid metadata, metadata only in the lanes sp-sel names with
// garbage elsewhere, and invalid codes), and each sparsity selector a type allows. The host builds the shared-memory
// image (packed A, dense B), descriptors relative to the image, C, the sp-meta registers and (RS) the A registers;
// each CTA runs `steps` chained sparse wgmmas and writes every thread's raw D registers. Compared bit for bit with
// h100lab.tensorcore.sparsity by h100lab/validation/l07.py.
// This file: the tf32 and register-A (RS) forms, apart so that a JIT refusal of one cannot lose the others.
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

// wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32, sp-sel 0
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_tf32_s0(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 0, p, 1, 1;\n\t}"
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

// wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32, sp-sel 1
extern "C" __global__ void __launch_bounds__(128) sp_ss_n64_f32_tf32_s1(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %35, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, %34, 1, p, 1, 1;\n\t}"
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

// wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16, sp-sel 0 (A from registers)
extern "C" __global__ void __launch_bounds__(128) sp_rs_n64_f32_bf16_s0(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %38, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, %37, 0, p, 1, 1, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(me_meta), "r"(sd) : "memory");
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

// wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32, sp-sel 1 (A from registers)
extern "C" __global__ void __launch_bounds__(128) sp_rs_n64_f32_tf32_s1(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %38, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, %37, 1, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(me_meta), "r"(sd) : "memory");
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

// wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3, sp-sel 0 (A from registers)
extern "C" __global__ void __launch_bounds__(128) sp_rs_n64_f32_e4m3_e4m3_s0(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %38, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, %37, 0, p, 1, 1;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(me_meta), "r"(sd) : "memory");
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

// wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8, sp-sel 0 (A from registers)
extern "C" __global__ void __launch_bounds__(128) sp_rs_n64_s32_s8_s8_s0(
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
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %38, 0;\n\twgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, %37, 0, p;\n\t}"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(me_meta), "r"(sd) : "memory");
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
