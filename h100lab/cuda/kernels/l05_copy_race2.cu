// Used by: lesson 5's copy-kernel performance goal, second race (h100lab/measure/copy_race2.py, data/l05/copy_race2):
// copies not tried in l05/copy_race, against cuMemcpyDtoDAsync in the same run.
// Proves: whether a copy issued from the SMs can match the driver's device-to-device memcpy when it is written the
// way a plain copy kernel is, or with cache policies the TMA copies never used:
//   reg_copy_<ld>_<st>_u<U>  every thread keeps U independent 16-byte loads in flight, then stores the U vectors.
//       ld: plain  ld.global.v4.u32 (PTX ISA 9.7.9.8);
//           nc     ld.global.nc.L1::no_allocate.v4.u32 (the read-only path, no L1 line);
//           pf     ld.global.nc.L1::no_allocate.L2::256B.v4.u32 (a 256-byte L2 prefetch with each load);
//       st: wb     st.global.v4.u32 (write-back, PTX ISA 9.7.9.10);
//           cs     st.global.cs.v4.u32 (streaming, "likely accessed once").
//       (L2 policies on these loads and stores, .L2::cache_hint, are left to bulk_copy_pol: the emulator does not
//       take the policy operand of ld/st yet.)
//       part 0: vectors interleaved over the grid (thread t of the grid copies vectors t, t + T, ..., T = all
//       threads); part 1: block b copies one contiguous chunk (1/gridDim.x of the vectors, whole rounds of
//       blockDim.x * U vectors), its threads interleaved inside it.
//       The book's copy kernel (chapter 5; data/l05/copy_race2_b: 1.010x cuMemcpyDtoDAsync) is reg_copy_nc_cs_u1,
//       part 0, launched with one thread per vector: 256 threads per block, n16 / 256 blocks, its loop runs once.
//   bulk_copy_pol  the one-thread bulk copy of l05_copy_tune.cu (cp.async.bulk loads into `stages` buffers of
//       `tile_bytes`, bulk stores in bulk groups, refill after wait_group.read `lag`) whose loads and stores each
//       carry their own L2 policy: pol_ld / pol_st 0 none, 1 evict_first, 2 evict_last, 3 evict_normal,
//       4 evict_unchanged (createpolicy.fractional.L2::<p>.b64 with fraction 1.0), part as above (tiles).
//   lsu_tma_copy_u<U>  the two paths mixed, loads by the LSU and stores by the TMA: each warp copies chunks of
//       U x 512 bytes (chunk c = warp w of the grid, w + W, ..., W = the grid's warps): its lanes load the chunk with
//       ld.global.nc.L1::no_allocate.v4.u32 (U per lane in flight), write it to one of the warp's two shared buffers
//       (st.shared.v4.u32), fence.proxy.async.shared::cta (PTX ISA 9.7.13.11: the writes, before the async proxy
//       reads them), and lane 0 stores it with one cp.async.bulk.global.shared::cta.bulk_group; a buffer is
//       rewritten after cp.async.bulk.wait_group.read 1 says the store before the last has read it.
//   tma_lsu_copy_u<U>  the other way round: lane 0 of each warp loads the warp's next chunk with cp.async.bulk
//       into one of two buffers (its own mbarrier, complete_tx), the lanes wait on it (try_wait.parity), read the
//       chunk with ld.shared.v4.u32 and store it with st.global.cs.v4.u32; lane 0 then refills the buffer with the
//       chunk two ahead. Dynamic shared memory: 1 KiB of barriers (2 per warp) + 2 x U x 512 bytes per warp.
//       Both need n16 a multiple of U x 32 (whole chunks).
//   occupy  every thread spins on %globaltimer for `ns` nanoseconds: launched on the legacy stream over every SM,
//       it shows whether cuMemcpyDtoDAsync on another stream needs the SMs (it then waits) or not (a copy engine).
// n16 = bytes / 16. Every copy is checked word by word by the caller (verify_copy of l03_stream.cu). Bad launch
// parameters set bit 1 of *err; a bulk wait past `timeout_ns` of %globaltimer sets bit 0 and stops.
#include <h100lab/mbarrier.cuh>
#include <h100lab/partition.cuh>

namespace {

__device__ __forceinline__ unsigned long long make_policy(int p) {
    unsigned long long pol = 0;
    switch (p) {
        case 1: asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol)); break;
        case 2: asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol)); break;
        case 3: asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol)); break;
        case 4: asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(pol)); break;
        default: break;
    }
    return pol;
}

template <int LD>
__device__ __forceinline__ uint4 ld16(const uint4* p) {
    uint4 r;
    if (LD == 0)
        asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    else if (LD == 1)
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    else
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}

template <int ST>
__device__ __forceinline__ void st16(uint4* p, uint4 v) {
    if (ST == 0)
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                     : "memory");
    else
        asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                     : "memory");
}

// LD 0 plain, 1 nc, 2 pf; ST 0 wb, 1 cs (as above).
template <int LD, int ST, int U>
__device__ __forceinline__ void reg_copy(const uint4* __restrict__ in, uint4* __restrict__ out, long long n16, int part,
                                         unsigned* __restrict__ err) {
    if (part < 0 || part > 1 || n16 < 0) {
        if (threadIdx.x == 0) atomicOr(err, 2u);
        return;
    }
    long long i, end, stride;
    if (part == 0) {
        stride = static_cast<long long>(gridDim.x) * blockDim.x;
        i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        end = n16;
    } else {
        const long long round = static_cast<long long>(blockDim.x) * U;
        const long long per = (n16 + gridDim.x - 1) / gridDim.x;
        const long long chunk = (per + round - 1) / round * round;
        const long long first = static_cast<long long>(blockIdx.x) * chunk;
        stride = blockDim.x;
        i = first + threadIdx.x;
        end = first + chunk < n16 ? first + chunk : n16;
    }
    for (; i + (U - 1) * stride < end; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<LD>(in + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) st16<ST>(out + i + u * stride, v[u]);
    }
    for (; i < end; i += stride) st16<ST>(out + i, ld16<LD>(in + i));
}

// cp.async.bulk.wait_group.read takes an immediate: one instruction per lag the kernel accepts.
__device__ __forceinline__ void pol_wait_read(int lag) {
    switch (lag) {
        case 0: asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); break;
        case 1: asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); break;
        case 2: asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory"); break;
        default: asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory"); break;
    }
}

}  // namespace

#define H100LAB_REG(NAME, LD, ST, U)                                                                            \
    extern "C" __global__ void NAME(const uint4* __restrict__ in, uint4* __restrict__ out, long long n16,       \
                                    int part, unsigned* __restrict__ err) {                                      \
        reg_copy<LD, ST, U>(in, out, n16, part, err);                                                            \
    }

H100LAB_REG(reg_copy_plain_wb_u1, 0, 0, 1)
H100LAB_REG(reg_copy_nc_cs_u1, 1, 1, 1)
H100LAB_REG(reg_copy_plain_wb_u2, 0, 0, 2)
H100LAB_REG(reg_copy_plain_wb_u4, 0, 0, 4)
H100LAB_REG(reg_copy_plain_wb_u8, 0, 0, 8)
H100LAB_REG(reg_copy_plain_wb_u16, 0, 0, 16)
H100LAB_REG(reg_copy_plain_cs_u8, 0, 1, 8)
H100LAB_REG(reg_copy_nc_wb_u8, 1, 0, 8)
H100LAB_REG(reg_copy_nc_cs_u4, 1, 1, 4)
H100LAB_REG(reg_copy_nc_cs_u8, 1, 1, 8)
H100LAB_REG(reg_copy_nc_cs_u16, 1, 1, 16)
H100LAB_REG(reg_copy_pf_wb_u8, 2, 0, 8)
H100LAB_REG(reg_copy_pf_cs_u8, 2, 1, 8)
H100LAB_REG(reg_copy_nc_cs_u2, 1, 1, 2)
H100LAB_REG(reg_copy_plain_cs_u4, 0, 1, 4)
H100LAB_REG(reg_copy_pf_cs_u16, 2, 1, 16)

#undef H100LAB_REG

#define H100LAB_POL_MAX_STAGES 16

// Copy total_bytes (a multiple of tile_bytes, itself a multiple of 16) from src to dst, one thread per CTA.
extern "C" __global__ void __launch_bounds__(32) bulk_copy_pol(
        const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, long long total_bytes, int tile_bytes,
        int stages, int lag, int pol_ld, int pol_st, int part, long long timeout_ns, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x != 0) return;
    if (stages < 1 || stages > H100LAB_POL_MAX_STAGES || lag < 0 || lag >= stages || lag > 3 || tile_bytes <= 0 ||
        (tile_bytes & 15) || total_bytes % tile_bytes || pol_ld < 0 || pol_ld > 4 || pol_st < 0 || pol_st > 4 ||
        part < 0 || part > 1) {
        atomicOr(err, 2u);                                       // a launch the host should never make
        return;
    }
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem);
    const unsigned buf0 = smem_u32(smem + 1024);
    const unsigned tb = static_cast<unsigned>(tile_bytes);
    const long long n_all = total_bytes / tile_bytes;
    const TileRange range = cta_tiles(n_all, gridDim.x, blockIdx.x, part == 1);   // chunk per CTA, or interleaved
    const long long first = range.first, step = range.step, n = range.n;
    for (int s = 0; s < stages; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the inits, before the TMA unit signals them
    const unsigned long long pl = make_policy(pol_ld), ps = make_policy(pol_st);
    const bool hl = pol_ld != 0, hs = pol_st != 0;
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    auto offset = [&](long long i) { return (first + i * step) * static_cast<long long>(tile_bytes); };

    for (long long i = 0; i < n && i < stages; ++i) {
        mbar_arrive_expect_tx(smem_u32(&full[i]), tb);
        bulk_load(buf0 + i * tb, src + offset(i), tb, smem_u32(&full[i]), hl, pl);
    }
    for (long long i = 0; i < n; ++i) {
        const int s = static_cast<int>(i % stages);
        if (!mbar_wait(smem_u32(&full[s]), static_cast<unsigned>((i / stages) & 1), deadline, err)) break;
        bulk_store(dst + offset(i), buf0 + s * tb, tb, hs, ps);
        const long long j = i - lag;                             // the buffer whose store is `lag` groups old
        if (j >= 0 && j + stages < n) {
            pol_wait_read(lag);                                  // store j has read buffer j % stages
            const int sj = static_cast<int>(j % stages);
            mbar_arrive_expect_tx(smem_u32(&full[sj]), tb);
            bulk_load(buf0 + sj * tb, src + offset(j + stages), tb, smem_u32(&full[sj]), hl, pl);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");   // every store has completed
}

template <int U>
__device__ __forceinline__ void lsu_tma_copy(const uint4* __restrict__ in, unsigned char* __restrict__ out,
                                             long long n16, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr unsigned C = U * 512;
    if (n16 < 0 || n16 % (U * 32)) {
        if (threadIdx.x == 0) atomicOr(err, 2u);
        return;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned char* buf = smem + warp * 2 * C;
    const long long nch = n16 / (U * 32), W = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    int b = 0;
    long long k = 0;
    for (long long c = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + warp; c < nch; c += W, ++k) {
        unsigned char* bb = buf + b * C;
        if (k >= 2) {                                            // the store of chunk k - 2 has read buffer b
            if (lane == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            __syncwarp();
        }
        const uint4* src = in + c * (U * 32);
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<1>(src + u * 32 + lane);
#pragma unroll
        for (int u = 0; u < U; ++u)
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};"
                         :: "r"(smem_u32(bb + (u * 32 + lane) * 16)), "r"(v[u].x), "r"(v[u].y), "r"(v[u].z), "r"(v[u].w)
                         : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncwarp();
        if (lane == 0) bulk_store(out + c * C, smem_u32(bb), C, false, 0ull);
        b ^= 1;
    }
    if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

template <int U>
__device__ __forceinline__ void tma_lsu_copy(const unsigned char* __restrict__ in, uint4* __restrict__ out,
                                             long long n16, long long timeout_ns, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr unsigned C = U * 512;
    if (n16 < 0 || n16 % (U * 32) || blockDim.x > 1024) {
        if (threadIdx.x == 0) atomicOr(err, 2u);
        return;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem) + 2 * warp;
    const unsigned buf = smem_u32(smem + 1024 + warp * 2 * C);
    const long long nch = n16 / (U * 32), W = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    const long long c0 = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + warp;
    const long long n = c0 < nch ? (nch - 1 - c0) / W + 1 : 0;
    if (lane == 0) {
        mbar_init(smem_u32(&bars[0]), 1);
        mbar_init(smem_u32(&bars[1]), 1);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the inits, before the TMA unit signals them
        for (long long k = 0; k < n && k < 2; ++k) {
            mbar_arrive_expect_tx(smem_u32(&bars[k]), C);
            bulk_load(buf + k * C, in + (c0 + k * W) * C, C, smem_u32(&bars[k]));
        }
    }
    __syncwarp();
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    for (long long k = 0; k < n; ++k) {
        const int b = static_cast<int>(k & 1);
        if (!mbar_wait(smem_u32(&bars[b]), static_cast<unsigned>((k >> 1) & 1), deadline, err)) break;
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                         : "r"(buf + b * C + (u * 32 + lane) * 16) : "memory");
        uint4* dst = out + (c0 + k * W) * (U * 32);
#pragma unroll
        for (int u = 0; u < U; ++u) st16<1>(dst + u * 32 + lane, v[u]);
        __syncwarp();                                            // every lane has read buffer b
        if (lane == 0 && k + 2 < n) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            mbar_arrive_expect_tx(smem_u32(&bars[b]), C);
            bulk_load(buf + b * C, in + (c0 + (k + 2) * W) * C, C, smem_u32(&bars[b]));
        }
    }
}

extern "C" __global__ void lsu_tma_copy_u4(const uint4* __restrict__ in, unsigned char* __restrict__ out, long long n16,
                                           unsigned* __restrict__ err) {
    lsu_tma_copy<4>(in, out, n16, err);
}
extern "C" __global__ void lsu_tma_copy_u8(const uint4* __restrict__ in, unsigned char* __restrict__ out, long long n16,
                                           unsigned* __restrict__ err) {
    lsu_tma_copy<8>(in, out, n16, err);
}
extern "C" __global__ void tma_lsu_copy_u4(const unsigned char* __restrict__ in, uint4* __restrict__ out, long long n16,
                                           long long timeout_ns, unsigned* __restrict__ err) {
    tma_lsu_copy<4>(in, out, n16, timeout_ns, err);
}
extern "C" __global__ void tma_lsu_copy_u8(const unsigned char* __restrict__ in, uint4* __restrict__ out, long long n16,
                                           long long timeout_ns, unsigned* __restrict__ err) {
    tma_lsu_copy<8>(in, out, n16, timeout_ns, err);
}

// Every thread spins until `ns` nanoseconds of %globaltimer have passed since it started (at most 1 s), then
// adds one to *done (thread 0 of each block).
extern "C" __global__ void occupy(long long ns, unsigned* __restrict__ done) {
    const unsigned long long t0 = global_ns();
    const unsigned long long span = ns < 0 ? 0ull : ns > 1000000000ll ? 1000000000ull : static_cast<unsigned long long>(ns);
    while (global_ns() - t0 < span) {
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(done, 1u);
}
