// Used by: lesson 5's copy-kernel performance goal (h100lab/measure/timing_sweep.py step "copyrace",
// benchmarks/bench_timing.py): the TMA copy against cuMemcpyDtoDAsync in the same run.
// Proves: whether a copy that never makes its loads wait for its stores is faster. In l05_copy_tune.cu and
// l05_tma_copy.cu one thread issues both: it blocks in cp.async.bulk.wait_group.read (PTX ISA 9.7.9.25.6.2) before
// it may refill a buffer, and in try_wait before it may store one, so loads and stores take turns. Here two warps
// share the ring (warp specialisation): lane 0 of warp 0 only loads (into buffer s once `empty[s]` says its last
// store has read it; the load completes `full[s]` through complete_tx, PTX ISA 9.7.13.15), lane 0 of warp 1 only
// stores (waits `full[s]`, issues the bulk store in its own bulk group, and after `lag` younger groups
// wait_group.read `lag` tells it the store of buffer s has read shared memory: it arrives on `empty[s]`).
// copy_ws moves non-tensor bulk copies (cp.async.bulk, 9.7.9.25.4); tensor_copy_ws moves the tiles of a 2-D tensor
// map (cp.async.bulk.tensor, 9.7.9.27.1.2), whose L2 promotion the host chooses. flags: bit 0/1 .L2::cache_hint
// evict_first on loads / stores (copy_ws only), bit 2 one contiguous chunk of tiles per CTA (else interleaved).
// Every wait is bounded: past `timeout_ns` of %globaltimer the kernel sets bit 0 of *err and stops.
#include <h100lab/mbarrier.cuh>
#include <h100lab/tensormap.cuh>

#define H100LAB_WS_MAX_STAGES 16

namespace {

// cp.async.bulk.wait_group.read takes an immediate: one instruction per lag the kernels accept.
__device__ __forceinline__ void ws_wait_read(int lag) {
    switch (lag) {
        case 0: asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); break;
        case 1: asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); break;
        case 2: asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory"); break;
        default: asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory"); break;
    }
}

// Which tiles a CTA copies: tiles first, first + step, ... (n of them).
struct Tiles {
    long long first, step, n;
    __device__ Tiles(long long n_all, bool contiguous) {
        const long long grid = gridDim.x, b = blockIdx.x;
        if (contiguous) {
            const long long per = (n_all + grid - 1) / grid;
            first = b * per;
            const long long last = first + per < n_all ? first + per : n_all;
            n = last > first ? last - first : 0;
            step = 1;
        } else {
            first = b;
            step = grid;
            n = b < n_all ? (n_all - 1 - b) / grid + 1 : 0;
        }
    }
    __device__ long long operator[](long long i) const { return first + i * step; }
};

// The non-tensor mover: tile t is bytes [t * tile, (t + 1) * tile) of src / dst.
struct BulkMover {
    const unsigned char* src;
    unsigned char* dst;
    unsigned tile;
    bool hint_ld, hint_st;
    unsigned long long pol;
    __device__ void load(long long t, unsigned buf, unsigned bar) const {
        mbar_arrive_expect_tx(bar, tile);
        bulk_load(buf, src + t * tile, tile, bar, hint_ld, pol);
    }
    __device__ void store(long long t, unsigned buf) const {
        bulk_store(dst + t * tile, buf, tile, hint_st, pol);
    }
};

// The tensor mover: tile t is the box at ((t % tiles_x) * box_x, (t / tiles_x) * box_y) of a 2-D map.
struct TensorMover {
    const CUtensorMap* src;
    const CUtensorMap* dst;
    int box_x, box_y, tiles_x;
    unsigned tile;
    __device__ void load(long long t, unsigned buf, unsigned bar) const {
        const int x = static_cast<int>(t % tiles_x) * box_x, y = static_cast<int>(t / tiles_x) * box_y;
        mbar_arrive_expect_tx(bar, tile);
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(buf), "l"(reinterpret_cast<unsigned long long>(src)), "r"(x), "r"(y), "r"(bar) : "memory");
    }
    __device__ void store(long long t, unsigned buf) const {
        const int x = static_cast<int>(t % tiles_x) * box_x, y = static_cast<int>(t / tiles_x) * box_y;
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(reinterpret_cast<unsigned long long>(dst)), "r"(x), "r"(y), "r"(buf) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
};

// The ring: shared memory = 1 KiB of barriers (full[16], empty[16]) + stages buffers of `pitch` bytes.
template <class Mover>
__device__ void ring_copy(const Mover& m, const Tiles& tiles, int stages, int lag, unsigned pitch,
                          long long timeout_ns, unsigned* err) {
    extern __shared__ __align__(1024) unsigned char smem[];
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem);
    unsigned long long* empty = full + H100LAB_WS_MAX_STAGES;
    const unsigned buf0 = smem_u32(smem + 1024);
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(smem_u32(&full[s]), 1);
            mbar_init(smem_u32(&empty[s]), 1);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // the inits, before the TMA unit signals them
    }
    __syncthreads();
    const unsigned long long deadline = global_ns() + static_cast<unsigned long long>(timeout_ns);
    const long long n = tiles.n;
    if (threadIdx.x == 0) {                                            // the loader
        for (long long i = 0; i < n; ++i) {
            const int s = static_cast<int>(i % stages);
            const long long round = i / stages;
            if (round > 0 && !mbar_wait(smem_u32(&empty[s]), static_cast<unsigned>((round - 1) & 1), deadline, err))
                return;
            m.load(tiles[i], buf0 + s * pitch, smem_u32(&full[s]));
        }
    } else if (threadIdx.x == 32) {                                    // the storer
        for (long long i = 0; i < n; ++i) {
            const int s = static_cast<int>(i % stages);
            if (!mbar_wait(smem_u32(&full[s]), static_cast<unsigned>((i / stages) & 1), deadline, err)) return;
            m.store(tiles[i], buf0 + s * pitch);
            const long long j = i - lag;                               // the store that is `lag` groups old
            if (j >= 0 && j + stages < n) {
                ws_wait_read(lag);                                     // store j has read buffer j % stages
                mbar_arrive(smem_u32(&empty[j % stages]));
            }
        }
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");     // every store has completed
    }
}

__device__ __forceinline__ bool ws_args_ok(int stages, int lag, unsigned* err) {
    if (stages < 1 || stages > H100LAB_WS_MAX_STAGES || lag < 0 || lag > 3 || lag >= stages) {
        if (threadIdx.x == 0) atomicOr(err, 2u);                       // a launch the host should never make
        return false;
    }
    return true;
}

}  // namespace

// Copy total_bytes (a multiple of tile_bytes, itself a multiple of 16) from src to dst; block of 64 threads.
extern "C" __global__ void __launch_bounds__(64) copy_ws(
        const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, long long total_bytes, int tile_bytes,
        int stages, int lag, int flags, long long timeout_ns, unsigned* __restrict__ err) {
    if (!ws_args_ok(stages, lag, err)) return;
    if (tile_bytes <= 0 || (tile_bytes & 15) || total_bytes % tile_bytes) {
        if (threadIdx.x == 0) atomicOr(err, 2u);
        return;
    }
    BulkMover m{src, dst, static_cast<unsigned>(tile_bytes), (flags & 1) != 0, (flags & 2) != 0, 0ull};
    if (flags & 3) m.pol = evict_first_policy();
    ring_copy(m, Tiles(total_bytes / tile_bytes, (flags & 4) != 0), stages, lag,
              (static_cast<unsigned>(tile_bytes) + 1023u) & ~1023u, timeout_ns, err);
}

// Copy a 2-D tensor tile by tile (tiles of box_x x box_y elements, tiles_x per row, n_tiles in all, tile_bytes
// each); block of 64 threads.
extern "C" __global__ void __launch_bounds__(64) tensor_copy_ws(
        const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst, int box_x, int box_y,
        int tiles_x, int n_tiles, int tile_bytes, int stages, int lag, int flags, long long timeout_ns,
        unsigned* __restrict__ err) {
    if (!ws_args_ok(stages, lag, err)) return;
    TensorMover m{&src, &dst, box_x, box_y, tiles_x, static_cast<unsigned>(tile_bytes)};
    ring_copy(m, Tiles(n_tiles, (flags & 4) != 0), stages, lag, (static_cast<unsigned>(tile_bytes) + 1023u) & ~1023u,
              timeout_ns, err);
}
