// Used by: lessons 3 and 5 timing model (h100lab/measure/timing_sweep.py step "stream", h100lab/validation/timing.py,
// h100lab/sim/stream.py).
// Proves: how fast a TMA + mbarrier streaming pipeline runs on the real GPU for every stage count, tile size and
// number of CTAs per SM, in three modes -- 0 load only, 1 load + consume (the consumers read every byte), 2 copy
// (load + TMA store) -- so the simulator's copy path (latency, per-SM and device bandwidth, read vs copy
// ceilings, wait costs) can be calibrated on part of the runs and checked on the rest. The data are checked:
// mode 1's per-CTA checksum and mode 2's copied bytes (verify_copy) against the source, whose 32-bit word i
// holds i (fill_index).
//
// One CTA = 96 threads: warp 0 lane 0 is the producer; warps 1 and 2 are consumers. Per stage s: full[s]
// (count 1: the producer's arrive.expect_tx plus the copy's complete_tx bytes) and empty[s] (count = the
// consumer warps that hand the buffer back: 2 in modes 0 and 1, 1 in mode 2). Tile k of CTA b is source tile
// g = (base_tile + k * gridDim.x + b) mod buf_tiles (neighbouring CTAs read neighbouring tiles), copied with
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (PTX ISA 9.7.9.25.4.1); the consumers wait
// with mbarrier.try_wait.parity (PTX ISA 9.7.13.15.16). Mode 2: warp 1 lane 0 stores the tile to dst + the same
// offset with cp.async.bulk.global.shared::cta.bulk_group, commits, waits until the store has read the buffer
// (cp.async.bulk.wait_group.read, PTX ISA 9.7.9.25.6.2) and only then hands the buffer back.
// flags: bit 0 loads with an L2::evict_first cache policy, bit 1 stores with it (createpolicy.fractional,
// PTX ISA 9.7.9.18), bit 2 (mode 2) hands buffer k-1 back after store k was issued (wait_group.read 1) instead of
// waiting for store k itself (wait_group.read 0).
// Every wait is bounded: past `timeout_ns` of %globaltimer the kernel sets a bit in *err and stops.
// stats[16 * cta + i]: 0/1 %globaltimer at start/end, 2/3 clock64 at start/end (thread 0), 4 consumer warp 1's
// busy cycles, 5 its waiting cycles, 6 producer's cycles waiting on empty, 7 producer's issue cycles
// (arrive.expect_tx + copy), 8 clock64 just before the first copy is issued, 9 clock64 when the first tile's
// wait returned, 10 cycles waiting for stores to read (mode 2), 11 cycles of the final wait_group 0 (mode 2),
// 12 producer's first-to-last issue span (cycles).
#define MAX_STAGES 8
#define NSTATS 16

#include <h100lab/mbarrier.cuh>

namespace {

// Wait for the phase with `parity`; false (and err bit 1) once %globaltimer passes `deadline`. This kernel's own
// loop (one try before counting), as measured: h100lab/mbarrier.cuh's mbar_wait counts from the first try.
__device__ __forceinline__ bool stream_wait(unsigned bar, unsigned parity, unsigned long long deadline,
                                            unsigned* err) {
    if (mbar_try(bar, parity)) return true;
    for (unsigned i = 1;; ++i) {
        if (mbar_try(bar, parity)) return true;
        if ((i & 255u) == 0 && global_ns() > deadline) {
            atomicOr(err, 1u);
            return false;
        }
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(96) stream(
        const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, long long buf_tiles,
        long long base_tile, int tile_bytes, int stages, int tiles, int mode, int flags, long long timeout_ns,
        unsigned long long* __restrict__ sums, unsigned long long* __restrict__ stats, unsigned* __restrict__ err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem);   // full[8], empty[8]
    unsigned char* buf = smem + 1024;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const unsigned full0 = smem_u32(bars);
    const unsigned empty0 = smem_u32(bars + MAX_STAGES);
    const unsigned buf0 = smem_u32(buf);
    unsigned long long* st = stats + NSTATS * static_cast<long long>(blockIdx.x);
    const unsigned tb = static_cast<unsigned>(tile_bytes);
    const int consumers = (mode == 2) ? 1 : 2;

    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, consumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    const unsigned long long t_start = global_ns();
    const unsigned long long deadline = t_start + static_cast<unsigned long long>(timeout_ns);
    if (threadIdx.x == 0) {
        st[0] = t_start;
        st[2] = clock64();
    }
    const long long grid = gridDim.x;

    if (warp == 0) {
        if (lane == 0) {
            const bool hint = flags & 1;
            const unsigned long long pol = hint ? evict_first_policy() : 0ull;
            long long waited = 0, issuing = 0, first_issue = 0, last_issue = 0;
            for (int k = 0; k < tiles; ++k) {
                const int s = k % stages;
                const unsigned round = static_cast<unsigned>(k / stages);
                const long long w0 = clock64();
                if (!stream_wait(empty0 + 8 * s, (round & 1u) ^ 1u, deadline, err)) break;
                const long long i0 = clock64();
                const long long g = (base_tile + static_cast<long long>(k) * grid + blockIdx.x) % buf_tiles;
                if (k == 0) st[8] = static_cast<unsigned long long>(i0);
                mbar_arrive_expect_tx(full0 + 8 * s, tb);
                bulk_load(buf0 + s * tb, src + g * tile_bytes, tb, full0 + 8 * s, hint, pol);
                const long long i1 = clock64();
                if (k == 0) first_issue = i0;
                last_issue = i0;
                waited += i0 - w0;
                issuing += i1 - i0;
            }
            st[6] = static_cast<unsigned long long>(waited);
            st[7] = static_cast<unsigned long long>(issuing);
            st[12] = static_cast<unsigned long long>(last_issue - first_issue);
        }
    } else if (mode == 0 || mode == 1) {
        // consumers: wait, (mode 1: read the tile with 16-byte loads and sum its words), hand the buffer back
        const int c = warp - 1;
        unsigned long long acc = 0;
        long long busy = 0, waited = 0;
        const long long c0 = clock64();
        const int vecs = tile_bytes >> 4;
        for (int k = 0; k < tiles; ++k) {
            const int s = k % stages;
            const unsigned round = static_cast<unsigned>(k / stages);
            const long long w0 = clock64();
            bool ok = true;
            if (mode == 1 || lane == 0) ok = stream_wait(full0 + 8 * s, round & 1u, deadline, err);
            if (!__all_sync(0xffffffffu, ok)) break;
            const long long b0 = clock64();
            if (k == 0 && c == 0 && lane == 0) st[9] = static_cast<unsigned long long>(b0);
            if (mode == 1) {
                const uint4* v = reinterpret_cast<const uint4*>(buf + s * tile_bytes);
                for (int i = c * 32 + lane; i < vecs; i += 64) {
                    const uint4 x = v[i];
                    acc += static_cast<unsigned long long>(x.x) + x.y + x.z + x.w;
                }
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic reads before the refill
                __syncwarp();
            }
            if (lane == 0) mbar_arrive(empty0 + 8 * s);
            const long long b1 = clock64();
            busy += b1 - b0;
            waited += b0 - w0;
        }
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (lane == 0 && mode == 1) atomicAdd(&sums[blockIdx.x], acc);
        if (c == 0 && lane == 0) {
            st[4] = static_cast<unsigned long long>(busy);
            st[5] = static_cast<unsigned long long>(waited);
            st[13] = static_cast<unsigned long long>(clock64() - c0);
        }
    } else if (warp == 1 && lane == 0) {
        // mode 2: store each landed tile back with a bulk store, hand the buffer back once the store has read it
        const bool hint = flags & 2;
        const bool lag = (flags & 4) && stages > 1;
        const unsigned long long pol = hint ? evict_first_policy() : 0ull;
        long long busy = 0, waited = 0, store_wait = 0;
        const long long c0 = clock64();
        int k = 0;
        for (; k < tiles; ++k) {
            const int s = k % stages;
            const unsigned round = static_cast<unsigned>(k / stages);
            const long long w0 = clock64();
            if (!stream_wait(full0 + 8 * s, round & 1u, deadline, err)) break;
            const long long b0 = clock64();
            if (k == 0) st[9] = static_cast<unsigned long long>(b0);
            const long long g = (base_tile + static_cast<long long>(k) * grid + blockIdx.x) % buf_tiles;
            bulk_store(dst + g * tile_bytes, buf0 + s * tb, tb, hint, pol);
            const long long r0 = clock64();
            if (lag) {
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");   // store k-1 has read its buffer
                if (k > 0) mbar_arrive(empty0 + 8 * ((k - 1) % stages));
            } else {
                asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // store k has read its buffer
                mbar_arrive(empty0 + 8 * s);
            }
            const long long b1 = clock64();
            store_wait += b1 - r0;
            busy += b1 - b0;
            waited += b0 - w0;
        }
        const long long f0 = clock64();
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");                // every store has completed
        if (lag && k > 0) mbar_arrive(empty0 + 8 * ((k - 1) % stages));
        st[4] = static_cast<unsigned long long>(busy);
        st[5] = static_cast<unsigned long long>(waited);
        st[10] = static_cast<unsigned long long>(store_wait);
        st[11] = static_cast<unsigned long long>(clock64() - f0);
        st[13] = static_cast<unsigned long long>(clock64() - c0);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        st[3] = clock64();
        st[1] = global_ns();
    }
}

// Word i of the buffer holds i (n words).
extern "C" __global__ void fill_index(unsigned* __restrict__ p, long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = static_cast<unsigned>(i);
}

// Count the words w = (first + i) mod buf_words, 0 <= i < n, whose value is not w (a copy of fill_index's data).
extern "C" __global__ void verify_copy(const unsigned* __restrict__ p, long long first, long long n, long long buf_words,
                                       unsigned long long* __restrict__ bad) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    unsigned long long b = 0;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long w = (first + i) % buf_words;
        b += p[w] != static_cast<unsigned>(w);
    }
    for (int o = 16; o > 0; o >>= 1) b += __shfl_down_sync(0xffffffffu, b, o);
    if ((threadIdx.x & 31) == 0 && b) atomicAdd(bad, b);
}
