// Used by: lesson 7 (WGMMA part 2: FP8, scaling, two-level accumulation, stmatrix epilogues),
// h100lab/measure/l07.py, tests/test_l07_emu.py, "On real hardware" of chapters/07-wgmma-fp8-sparsity.md.
// Proves: (a) fp8_gemm_<a>_<b>: a single-warpgroup 64 x 64 x K FP8 GEMM tile (A 64 x K and B as N x K, both
// K-major bytes) with per-block scales as DeepSeek-V3 / DeepGEMM scale: A one f32 scale per row and K-block of
// 32*interval elements (1 x 128 for interval 4), B one per K-block. Each K-block of 128 bytes per row is copied
// into a 128B-swizzled tile (chunk c of row r at c ^ (r % 8)); the four m64n64k32 wgmmas of a block advance the
// descriptors by 32 B. The tensor core accumulates `interval` wgmmas into a partial sum P (scale-d = 0 on the
// first of each window, PTX ISA 9.7.15.5.2); then P is promoted: acc = fma(P, sa[row] * sb, acc) in f32 on the CUDA
// cores (two-level accumulation, DeepSeek-V3 3.3.2). Every thread writes its 32 raw f32 accumulators, and (epi = 1)
// the bf16 tile goes out through the stmatrix + TMA-store epilogue below. (b) epilogue_<t>: the epilogue alone on
// host-given f32 accumulators: cvt to bf16x2 / f16x2 (cvt.rn) or e4m3x2 (cvt.rn.satfinite; the first source
// operand lands in the high byte, PTX ISA 9.7.9.21), stmatrix.x4 (PTX ISA 9.7.14.5.16; lane t addresses row t%8 of
// 8x8 matrix t/8) into a swizzled staging tile (128B for 16-bit outputs: 64 x 128 B; 64B for e4m3: 64 x 64 B),
// fence.proxy.async, one thread's cp.async.bulk.tensor store (PTX ISA 9.7.9.27.1.2) + bulk commit/wait. For e4m3 a
// b16 element is a pair of fp8 values, so the stored columns are permuted within each group of 16
// (h100lab.tensorcore.epilogue.fp8_column_order). All bit-exact with h100lab.tensorcore (emulator and H200).
#include <h100lab/tensormap.cuh>

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned sw128(unsigned row, unsigned chunk) {
    return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

__device__ __forceinline__ unsigned sw64(unsigned row, unsigned chunk) {   // 64-byte rows, Swizzle<2,4,3>
    return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);
}

// K-block `blk` (128 bytes of each of 64 rows, row pitch K bytes) into a 128B-swizzled tile
__device__ __forceinline__ void load_block(unsigned char* tile, const unsigned char* g, int K, int blk) {
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {
        const unsigned row = i / 8, chunk = i % 8;
        *reinterpret_cast<uint4*>(tile + sw128(row, chunk)) =
            *reinterpret_cast<const uint4*>(g + (size_t)row * K + blk * 128 + chunk * 16);
    }
}

__device__ __forceinline__ unsigned long long desc_sw128(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));   // first source -> upper half
    return r;
}

__device__ __forceinline__ unsigned pack_f16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ unsigned pack_e4m3(float lo, float hi) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));   // hi -> byte 1
    return r;
}

__device__ __forceinline__ void stmatrix4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

// the epilogue: 32 f32 accumulators per thread (m64n64 fragment) -> staging tile -> TMA store at (0, y)
// kind 0 bf16, 1 f16 (128B swizzle, 64 x 128 B), 2 e4m3 (64B swizzle, 64 x 64 B)
__device__ __forceinline__ void epilogue(const float (&v)[32], int kind, unsigned stage, const CUtensorMap* map, int y) {
    const unsigned t = threadIdx.x, w = t / 32, lane = t % 32, q = lane / 8;
    const unsigned row = 16 * w + (lane % 8) + 8 * (q & 1);        // the row this lane addresses
    if (kind < 2) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {            // column blocks 2jj, 2jj+1 (16 columns = 32 B)
            const int a = 8 * jj, b = 8 * jj + 4;
            unsigned r0, r1, r2, r3;
            if (kind == 0) {
                r0 = pack_bf16(v[a], v[a + 1]); r1 = pack_bf16(v[a + 2], v[a + 3]);
                r2 = pack_bf16(v[b], v[b + 1]); r3 = pack_bf16(v[b + 2], v[b + 3]);
            } else {
                r0 = pack_f16(v[a], v[a + 1]); r1 = pack_f16(v[a + 2], v[a + 3]);
                r2 = pack_f16(v[b], v[b + 1]); r3 = pack_f16(v[b + 2], v[b + 3]);
            }
            stmatrix4(stage + sw128(row, 2 * jj + (q >> 1)), r0, r1, r2, r3);
        }
    } else {
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {            // column blocks 4jj .. 4jj+3 (32 fp8 columns = 32 B)
            const int a = 16 * jj;
            const unsigned r0 = pack_e4m3(v[a], v[a + 1]) | (pack_e4m3(v[a + 4], v[a + 5]) << 16);
            const unsigned r1 = pack_e4m3(v[a + 2], v[a + 3]) | (pack_e4m3(v[a + 6], v[a + 7]) << 16);
            const unsigned r2 = pack_e4m3(v[a + 8], v[a + 9]) | (pack_e4m3(v[a + 12], v[a + 13]) << 16);
            const unsigned r3 = pack_e4m3(v[a + 10], v[a + 11]) | (pack_e4m3(v[a + 14], v[a + 15]) << 16);
            stmatrix4(stage + sw64(row, 2 * jj + (q >> 1)), r0, r1, r2, r3);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // stmatrix (generic) -> TMA (async proxy)
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(0), "r"(y), "r"(stage) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

}  // namespace

// The dynamic shared memory: the A and B tiles, then the epilogue's staging tile (each 1024-aligned).
extern __shared__ __align__(16) unsigned char dyn[];

// wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 (and the other FP8 pairings, one entry point each below):
// FP8_WGMMA(INSTR) is the wgmma of a fp8_gemm_<a>_<b>, scale-d from a predicate set from `sd`.
#define FP8_WGMMA(INSTR) [](float (&p)[32], unsigned long long da, unsigned long long db, int sd) { \
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %34, 0;\n\t" \
                 INSTR " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, q, 1, 1;\n\t}" \
                 : "+f"(p[0]), "+f"(p[1]), "+f"(p[2]), "+f"(p[3]), "+f"(p[4]), "+f"(p[5]), "+f"(p[6]), "+f"(p[7]), "+f"(p[8]), "+f"(p[9]), "+f"(p[10]), "+f"(p[11]), "+f"(p[12]), "+f"(p[13]), "+f"(p[14]), "+f"(p[15]), "+f"(p[16]), "+f"(p[17]), "+f"(p[18]), "+f"(p[19]), "+f"(p[20]), "+f"(p[21]), "+f"(p[22]), "+f"(p[23]), "+f"(p[24]), "+f"(p[25]), "+f"(p[26]), "+f"(p[27]), "+f"(p[28]), "+f"(p[29]), "+f"(p[30]), "+f"(p[31]) \
                 : "l"(da), "l"(db), "r"(sd) : "memory"); }

// The body of every fp8_gemm_<a>_<b> (entry points below): per-block scales, promotion every `interval` wgmmas;
// mma(p, da, db, sd) issues the pairing's wgmma.
template <class Mma>
__device__ __forceinline__ void fp8_gemm(
        const unsigned char* __restrict__ A, const unsigned char* __restrict__ B, const float* __restrict__ sa,
        const float* __restrict__ sb, int K, int interval, unsigned* __restrict__ acc_out,
        const CUtensorMap& out_map, int epi, Mma mma) {
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    unsigned char* ta = dyn + (base - raw);
    unsigned char* tb = ta + 8192;
    const unsigned stage = base + 16384;
    const size_t cta = blockIdx.x;
    A += cta * 64 * (size_t)K;
    B += cta * 64 * (size_t)K;
    const int nblk = K / 32 / interval;               // scale blocks along K
    sa += cta * 64 * (size_t)nblk;
    sb += cta * (size_t)nblk;
    const unsigned t = threadIdx.x, w = t / 32, g = (t % 32) / 4;
    float acc[32], p[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) acc[r] = 0.f, p[r] = 0.f;
    int n = 0;                                        // wgmmas issued so far
    for (int blk = 0; blk < K / 128; ++blk) {
        __syncthreads();                              // every warp is done with the previous block
        load_block(ta, A, K, blk);
        load_block(tb, B, K, blk);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#pragma unroll
            for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(p[r]) :: "memory");
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            const unsigned long long da = desc_sw128(base + 32 * k), db = desc_sw128(base + 8192 + 32 * k);
            const int sd = (n % interval) != 0;       // a fresh partial sum at the start of each window
            mma(p, da, db, sd);
            ++n;
            if (n % interval == 0) {                  // promote P to the f32 accumulator on the CUDA cores
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
                for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(p[r]) :: "memory");
                const int s = n / interval - 1;
                const float sbv = sb[s];
#pragma unroll
                for (int r = 0; r < 32; ++r) {
                    const unsigned row = 16 * w + g + 8 * ((r >> 1) & 1);
                    acc[r] = __fmaf_rn(p[r], __fmul_rn(sa[row * nblk + s], sbv), acc[r]);
                }
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");   // the tiles are overwritten next block
#pragma unroll
        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(p[r]) :: "memory");
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) acc_out[(cta * 128 + t) * 32 + r] = __float_as_uint(acc[r]);
    if (epi) epilogue(acc, 0, stage, &out_map, 64 * (int)cta);
}

#define FP8_GEMM_ENTRY extern "C" __global__ void __launch_bounds__(128)
#define FP8_GEMM_PARAMS \
        const unsigned char* __restrict__ A, const unsigned char* __restrict__ B, const float* __restrict__ sa, \
        const float* __restrict__ sb, int K, int interval, unsigned* __restrict__ acc_out, \
        const __grid_constant__ CUtensorMap out_map, int epi
#define FP8_GEMM_ARGS A, B, sa, sb, K, interval, acc_out, out_map, epi

FP8_GEMM_ENTRY fp8_gemm_e4m3_e4m3(FP8_GEMM_PARAMS)
{ fp8_gemm(FP8_GEMM_ARGS, FP8_WGMMA("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3")); }

// wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2, per-block scales, promotion every `interval` wgmmas
FP8_GEMM_ENTRY fp8_gemm_e4m3_e5m2(FP8_GEMM_PARAMS)
{ fp8_gemm(FP8_GEMM_ARGS, FP8_WGMMA("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2")); }
// wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3, per-block scales, promotion every `interval` wgmmas
FP8_GEMM_ENTRY fp8_gemm_e5m2_e4m3(FP8_GEMM_PARAMS)
{ fp8_gemm(FP8_GEMM_ARGS, FP8_WGMMA("wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3")); }
// wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2, per-block scales, promotion every `interval` wgmmas
FP8_GEMM_ENTRY fp8_gemm_e5m2_e5m2(FP8_GEMM_PARAMS)
{ fp8_gemm(FP8_GEMM_ARGS, FP8_WGMMA("wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2")); }

// the epilogue alone: kind 0 (bf16), 1 (f16), 2 (e4m3) on host-given accumulators.
namespace {

// The body of every epilogue_<t> (kind as in epilogue()).
__device__ __forceinline__ void epilogue_only(const unsigned* __restrict__ acc_in, const CUtensorMap& out_map,
                                              int kind) {
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    float v[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) v[r] = __uint_as_float(acc_in[((size_t)blockIdx.x * 128 + threadIdx.x) * 32 + r]);
    epilogue(v, kind, base, &out_map, 64 * (int)blockIdx.x);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) epilogue_bf16(const unsigned* __restrict__ acc_in,
                                                                  const __grid_constant__ CUtensorMap out_map)
{ epilogue_only(acc_in, out_map, 0); }
extern "C" __global__ void __launch_bounds__(128) epilogue_f16(const unsigned* __restrict__ acc_in,
                                                                 const __grid_constant__ CUtensorMap out_map)
{ epilogue_only(acc_in, out_map, 1); }
extern "C" __global__ void __launch_bounds__(128) epilogue_e4m3(const unsigned* __restrict__ acc_in,
                                                                  const __grid_constant__ CUtensorMap out_map)
{ epilogue_only(acc_in, out_map, 2); }
