// Used by: lesson 6 (WGMMA part 1), tests/test_l06_emu.py, h100lab/measure/l06.py, "On real hardware" of
// chapters/06-wgmma.md.
// Proves: (a) gemm_ss: a single-warpgroup 64 x 64 x 64 BF16 -> FP32 GEMM tile. Plain 16-byte copies put A (64 x 64,
// row-major = K-major) and B^T (64 x 64, N x K = K-major) into shared memory in the 128B-swizzled layout (16-byte
// chunk c of row r of a 1024-aligned tile stored at chunk c ^ (r % 8), h100lab.memory.swizzle); fence.proxy.async;
// descriptors with SBO = 1024 B (8 rows x 128 B), layout type 1 (128B); four m64n64k16 wgmmas, the K-advance inside
// the swizzle atom done by adding 32 B (>> 4 = 2) to the start address; commit/wait; every thread writes its 32
// f32 accumulators to D (row-major) by the fragment layout row = 16w + g + 8((r>>1)&1), col = 8(r>>2) + 2c + (r&1)
// (PTX ISA 9.7.15.5.1.1.1). (b) gemm_rs: the same tile with A in registers: ldmatrix.x4 reads each warp's 16 x 16
// A slice per k-step from the swizzled tile (thread t addresses row t%8 of 8x8 matrix t/8), giving exactly the
// RS A fragment (hopper-spec-facts 8.4, 9). (c) ldsm_probe: ldmatrix / stmatrix .x1/.x2/.x4 (.trans) on
// host-chosen row addresses: registers dumped, and the registers stored back with stmatrix to other rows.
// D equals h100lab.tensorcore.mma on the same bits (emulator and H200, bit for bit).

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// byte offset of 16-byte chunk `chunk` of row `row` in a 1024-aligned 128B-swizzled tile of 128-byte rows
__device__ __forceinline__ unsigned sw128(unsigned row, unsigned chunk) {
    return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// a 64 x 64 bf16 row-major matrix (128 B per row) from global into a 128B-swizzled tile
__device__ __forceinline__ void load_tile(unsigned char* tile, const uint4* g) {
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {
        const unsigned row = i / 8, chunk = i % 8;
        *reinterpret_cast<uint4*>(tile + sw128(row, chunk)) = g[i];
    }
}

__device__ __forceinline__ unsigned long long desc_sw128(unsigned addr) {
    // start >> 4 (bits 0-13), LBO 16 B (unused for swizzled K-major; enc 1), SBO 1024 B (enc 64), layout type 1
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void store_d(float* D, const float (&d)[32]) {
    const unsigned t = threadIdx.x, w = t / 32, g = (t % 32) / 4, c = t % 4;
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        const unsigned row = 16 * w + g + 8 * ((r >> 1) & 1), col = 8 * (r >> 2) + 2 * c + (r & 1);
        D[row * 64 + col] = d[r];
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) gemm_ss(const uint4* __restrict__ A, const uint4* __restrict__ Bt,
                                                          float* __restrict__ D) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    unsigned char* sa = dyn + (base - raw);
    unsigned char* sb = sa + 8192;
    load_tile(sa, A);
    load_tile(sb, Bt);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes -> async proxy (wgmma)
    __syncthreads();
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = 0.f;
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const unsigned long long da = desc_sw128(base + 32 * k), db = desc_sw128(base + 8192 + 32 * k);
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(k) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    store_d(D, d);
}

extern "C" __global__ void __launch_bounds__(128) gemm_rs(const uint4* __restrict__ A, const uint4* __restrict__ Bt,
                                                          float* __restrict__ D) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    unsigned char* sa = dyn + (base - raw);
    unsigned char* sb = sa + 8192;
    load_tile(sa, A);
    load_tile(sb, Bt);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const unsigned t = threadIdx.x, w = t / 32, lane = t % 32, mat = lane / 8;
    // ldmatrix.x4 for warp w, k-step k: matrix j = rows 16w + 8(j&1) .. +7, K bytes 16(j>>1) .. +15 of the step
    const unsigned arow = 16 * w + 8 * (mat & 1) + lane % 8;
    float d[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) d[r] = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        unsigned a0, a1, a2, a3;
        const unsigned chunk = 2 * k + (mat >> 1);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(base + sw128(arow, chunk)) : "memory");
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");    // A registers were just written by ldmatrix
        const unsigned long long db = desc_sw128(base + 8192 + 32 * k);
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n\t}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(k) : "memory");
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");   // a0..a3 are rewritten next step
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
    store_d(D, d);
}

// ldmatrix / stmatrix probe: one warp. addr[t] (byte offsets in a 4 KB shared buffer filled from src) are the
// thread's row addresses; mode = num | 8 * trans. regs: 32 x 4 words (unused registers 0); the same registers are
// then stored with stmatrix to the rows st_addr[t] of a zeroed buffer, dumped to dst.
extern "C" __global__ void ldsm_probe(const uint4* __restrict__ src, const unsigned* __restrict__ addr,
                                      const unsigned* __restrict__ st_addr, int mode, unsigned* __restrict__ regs,
                                      uint4* __restrict__ dst) {
    __shared__ __align__(128) unsigned char buf[4096];
    __shared__ __align__(128) unsigned char out[4096];
    const unsigned t = threadIdx.x;
    for (int i = t; i < 256; i += 32) {
        reinterpret_cast<uint4*>(buf)[i] = src[i];
        reinterpret_cast<uint4*>(out)[i] = make_uint4(0, 0, 0, 0);
    }
    __syncwarp();
    const unsigned a = smem_u32(buf) + addr[t], s = smem_u32(out) + st_addr[t];
    unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0;
    switch (mode) {
    case 1: asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a));
            asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(s), "r"(r0) : "memory"); break;
    case 2: asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
            asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(s), "r"(r0), "r"(r1) : "memory"); break;
    case 4: asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                         :: "r"(s), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory"); break;
    case 9: asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a));
            asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(s), "r"(r0) : "memory"); break;
    case 10: asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
             asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" :: "r"(s), "r"(r0), "r"(r1) : "memory"); break;
    case 12: asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                          : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
             asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                          :: "r"(s), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory"); break;
    default: break;
    }
    regs[t * 4 + 0] = r0; regs[t * 4 + 1] = r1; regs[t * 4 + 2] = r2; regs[t * 4 + 3] = r3;
    __syncwarp();
    for (int i = t; i < 256; i += 32) dst[i] = reinterpret_cast<uint4*>(out)[i];
}
