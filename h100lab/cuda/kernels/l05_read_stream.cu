// Used by: lesson 5 and the roofline's measured ceilings (h100lab/measure/timing_sweep.py step "ceilings",
// h100lab/roofline.py measured_ceilings, benchmarks/bench_timing.py).
// Proves: how fast the SMs can read device memory with plain vector loads, so the TMA read stream (l03_stream.cu,
// mode 0) and the TMA copy can be compared with the best load-based stream measured in the same run. read_v4_*:
// a grid-stride loop of 16-byte loads (ld.global.v4.u32, PTX ISA 9.7.9.8), U independent loads in flight per
// thread (U = 2, 4, 8), in three cache variants: `plain` (ld.global.v4.u32), `nc` (ld.global.nc.v4.u32, the
// read-only path) and `pf` (ld.global.L1::no_allocate.L2::256B.v4.u32: no L1 line, a 256-byte L2 prefetch). The
// words are XOR-ed and written only if the result is an unlikely value (so nothing is stored and nothing is
// optimised away). n16 = bytes / 16; the grid covers it in strides of gridDim.x * blockDim.x * U vectors.

namespace {

template <int V>
__device__ __forceinline__ uint4 ld16(const uint4* p) {
    uint4 r;
    if (V == 0)
        asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    else if (V == 1)
        asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    else
        asm volatile("ld.global.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}

template <int V, int U>
__device__ __forceinline__ void read_stream(const uint4* __restrict__ in, long long n16, unsigned* __restrict__ sink) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<V>(in + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) {
        const uint4 x = ld16<V>(in + i);
        acc ^= x.x ^ x.y ^ x.z ^ x.w;
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}

}  // namespace

#define H100LAB_READ(NAME, V, U)                                                                               \
    extern "C" __global__ void NAME(const uint4* __restrict__ in, long long n16, unsigned* __restrict__ sink) { \
        read_stream<V, U>(in, n16, sink);                                                                      \
    }

H100LAB_READ(read_v4_plain_u2, 0, 2)
H100LAB_READ(read_v4_plain_u4, 0, 4)
H100LAB_READ(read_v4_plain_u8, 0, 8)
H100LAB_READ(read_v4_nc_u2, 1, 2)
H100LAB_READ(read_v4_nc_u4, 1, 4)
H100LAB_READ(read_v4_nc_u8, 1, 8)
H100LAB_READ(read_v4_pf_u2, 2, 2)
H100LAB_READ(read_v4_pf_u4, 2, 4)
H100LAB_READ(read_v4_pf_u8, 2, 8)

#undef H100LAB_READ
