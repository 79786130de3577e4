// Used by: lesson 8 (kernel design: the capstone GEMM), tests/test_l08_gemm_emu.py, benchmarks/bench_gemm.py
// (side by side with cuBLAS on the H200, data/l08/gemm_bench.json), h100lab/design/capstone.py (launch shape).
// Proves: a persistent, warp-specialized BF16 GEMM built only from the lessons' parts computes
// C = alpha * A * B^T + beta * C (A: M x K, B: N x K, both K-major bf16; C: M x N row-major bf16; f32 accumulation)
// bit for bit as h100lab.tensorcore.mma chained over k16 steps (emulator) -- and, timed next to cuBLAS, how close a
// from-scratch kernel gets on silicon. Its parts, each from an earlier lesson:
//  * persistent grid (gridDim.x <= SMs): CTA b takes tiles b, b + gridDim.x, ... of a grouped ("swizzled") tile
//    order that walks `group` tile-rows (raster = 0, along M) or tile-columns (raster = 1, along N) before moving on,
//    so neighbouring CTAs share A or B panels in L2 (h100lab.design.schedule);
//  * warp specialization: warpgroup 0 is the TMA producer and gives registers back (setmaxnreg.dec 40, PTX ISA
//    9.7.17.1), warpgroups 1-2 are consumers (setmaxnreg.inc 232): 128 x 40 + 256 x 232 = 64,512 <= 65,536 registers;
//  * an S-stage ring of shared-memory stages, each guarded by a `full` mbarrier (producer's arrive.expect_tx +
//    the TMA's complete_tx bytes, PTX ISA 9.7.13.15) and an `empty` mbarrier (one arrival per consuming warpgroup);
//    ring slot i lives in stage i % S and its phase parity is (i / S) & 1 (h100lab.design.ring);
//  * TMA tiles (cp.async.bulk.tensor.2d, PTX ISA 9.7.9.25.5.1) of 64 K-elements (128 B) x rows with
//    CU_TENSOR_MAP_SWIZZLE_128B; rows past M/N and columns past K are zero-filled by the TMA (OOB fill), and still
//    count in the transaction bytes, so ragged K needs no special case;
//  * SS wgmma.mma_async m64n256k16 (PTX ISA 9.7.15.5.2) on 128B-swizzled K-major descriptors (SBO 1024 B, the
//    K-advance inside the swizzle atom is +32 B on the start address), scale-d = 0 on a tile's first k-step;
//  * consumer variants (compile-time): cooperative (default; a 128 x 256 tile, consumer c owns rows 64c..64c+63,
//    both consume every stage) and -DPINGPONG=1 (64 x 256 tiles; consumer c takes every other tile of the CTA,
//    and an ordered pair of mbarriers lets their mainloops alternate, so one's epilogue hides under the other's
//    mainloop -- and a consumer never waits on a ring slot two laps ahead, the ABA case of h100lab.design.ring);
//  * compile-time switches measured against each other in one benchmark run (defaults = the first form):
//    -DBN_TILE=128 (128-column tiles, m64n128k16, 7 stages: twice the tiles, so a wave-quantized shape loses less
//    of its last wave) and -DINFLIGHT=1 (the mainloop keeps one wgmma group in flight: wait_group 1, then the
//    stage of the k-block before goes back to the producer; the drain waits for 0 after the last k-block; in
//    ping-pong the ordered barrier is handed to the other consumer once the last wgmma is issued, before the
//    drain, so its mainloop issues behind ours instead of after the tensor cores ran dry); ping-pong with
//    -DBN_TILE=128 gives each consumer a 128 x 128 tile (two m64n128k16 per k16 step: 32 KB of A + B per k-block
//    for 2 MFLOP instead of 40 KB with 64 x 256);
//    -DCLUSTER=2 (cooperative): clusters of two CTAs on tiles (2p, n) and (2p + 1, n); each CTA's producer loads
//    its A tile and half of the shared B tile, multicast into both CTAs (cp.async.bulk.tensor .multicast::cluster),
//    so B crosses L2 once per pair; a stage's empty barrier counts the consumer warps of both CTAs (remote arrive
//    through mapa), and a producer leaves only after every stage was released;
//    -DTMA_STORE=1 adds two 64 x 64 staging tiles per consumer and, when beta == 0, sends C out through stmatrix
//    + TMA stores (kernel arguments map_c, tma_epi);
//  * epilogue, in the fixed order of h100lab.design.epilogue.ORDER (each step marked `// epilogue: <op>` below):
//    alpha * acc (__fmul_rn), + beta * C when beta != 0 (__fmaf_rn; BLAS rule: C is not read when beta == 0),
//    + bias[col] when a bias is given (a bf16 vector of N, per column; add.rn.f32), ReLU when relu != 0
//    (max.f32 with 0: exact, so emulator and H200 agree bit for bit; -0 and NaN give +0), cvt.rn.bf16x2.f32; direct
//    global stores with bounds checks for ragged M and N, or the stmatrix + TMA store (-DTMA_STORE=1, beta == 0).
//  * -DFP8=1 (cooperative, BN_TILE 128 or 192): entry gemm_e4m3, A (M x K) and B (N x K) e4m3 bytes, K-major, with
//    per-block scales as DeepSeek-V3 / DeepGEMM: sa one f32 per row of A per 128-K block (1 x 128), stored
//    block-major (sa[kb * M + row]), sb one f32 per 128 x 128 block of B (sb[(col / 128) * nk + kb]). A stage is
//    one scale block: 128 bytes of K per row (the same 128B-swizzled TMA tiles, now 128 e4m3 elements), consumed by
//    four m64n128k32 e4m3 wgmmas (the K-advance is again +32 B) into a partial sum P with scale-d = 0 on the first;
//    then two-level accumulation (DeepSeek-V3 3.3.2, lesson 7's l07_fp8_gemm.cu): acc = fma(P, sa[row] * sb, acc)
//    in f32 on the CUDA cores (epilogue op scale_ab), bit for bit h100lab.tensorcore.accumulate.fp8_gemm with
//    interval 4. Registers: acc and P are 64 f32 each for a 64 x 128 fragment, 128 of the 232 a consumer thread
//    gets (N = 256 would need 128 + 128 = 256 before a single address; two m64 blocks per consumer at N = 128 as
//    well), leaving about 100 for descriptors, scales and the epilogue. P is written by the next block's first
//    wgmma, so a group cannot stay in flight across the promotion (no INFLIGHT): each consumer waits for its group
//    (wait_group 0), gives the stage back at once (P holds what it needed) and promotes while the other consumer
//    warpgroup's wgmmas keep the tensor cores busy. (Two P buffers alternating under wait_group 1 would fit the
//    registers, 3 x 64, but ptxas then serializes every wgmma -- C7514, "non wgmma instructions reading
//    accumulator registers of a wgmma between start and end of the pipeline stage": it does not tell which group
//    wait_group 1 retired.) Scales come by ld.global.nc, prefetched one block ahead (issued
//    after the block's wgmmas, used a block later): three values per thread per block, block-major so a warp's 16
//    rows are 64 contiguous bytes; a TMA of the scales into each stage would cost a third box and layout rules
//    (a 16-byte-multiple stride of M floats) for those three registers. In that first form (SCALE_LEAD 1) the end
//    of the block's `sc = next` compiles to register copies (IMAD.MOV; for B's warp-uniform scales an R2UR into a
//    uniform register) of loads issued in the same block, and a copy waits for its load (nvdisasm): every block
//    lasts at least one global-load round trip. -DSCALE_LEAD=2 or 3: a register ring of that depth, the k-loop
//    unrolled by it so each slot is a fixed set of registers; block kb + SCALE_LEAD's scales are loaded into the
//    slot block kb's promotion has just read, and first read SCALE_LEAD blocks later (no reader of a load before the
//    next full-barrier wait in the SASS; B's scale loads predicated per thread on the row being below M so ptxas
//    keeps them out of uniform registers). Chosen over the producer bringing the scales into shared memory with
//    each stage: a 1-D cp.async.bulk of A's BM scales needs a 16-byte-aligned source (M a multiple of 4) and the
//    size a multiple of 16 B, so ragged M would need a second path; the ring changes nothing but when the loads are
//    issued, and the arithmetic (the output) stays as it was. Measured (data/l08/gemm_bench_fp8_lead, H200): the
//    128 x 128 tile gained 2-8 % with SCALE_LEAD 2 (8192^3: 922 -> 994 TFLOP/s; lost 3 % at 4096^3), the wider
//    tiles lost 2-7 % at every shape with 2 or 3 (128 x 192 at 8192^3: 1184 -> 1127 / 1133) -- the load round trip
//    bounds only the shortest blocks, and the ring's loads, issued between a promotion and the next block's
//    wgmmas rather than under the wgmmas, cost the longer ones something not measured apart. -DSTAGGER=1: the consumers issue their
//    blocks in turn (0's block i after 1's block i - 1, 1's block i after 0's), so the tensor cores run one
//    warpgroup's four wgmmas while the other promotes -- instead of both promoting at once with the tensor cores
//    idle, the lockstep the shared full barrier leaves them in. Measured (data/l08/gemm_bench_fp8_stagger): a few
//    per cent at most, so the lockstep is not what keeps the FP8 form well short of cuBLAS FP8; the 128 x 128 tile
//    is the suspect -- per 128-K block it moves 32 KB into shared memory by TMA and reads 48 KB out of it by wgmma
//    (B once per consumer) for 4 MFLOP, more bytes per FLOP than the bf16 kernel's 128 x 256 tile at twice the FLOP
//    rate, and a 256-column tile does not fit the registers with its partial sum. Two wider tiles that do fit:
//    -DBN_TILE=192 (FP8): 128 x 192 tiles, m64n192k32, 96 + 96 registers for acc and P; a tile at column 192 tn
//    spans two 128-column blocks of B's scales, the second from tile column 128 (tn even) or 64 (tn odd), so each
//    register's scale is picked at compile time in one of two unrolled promotions (promote_split); the second
//    block's index is clamped to B's last (columns past N are never stored). 40 KB stages: 5, or 4 with the TMA
//    store. -DBM_TILE=256 (FP8, BN_TILE 128): 256 x 128 tiles, each consumer runs its two m64 blocks one after the
//    other through the one partial sum (2 x 64 + 64 registers), the stage going back after the second; 48 KB
//    stages, 4. Shared-memory traffic at the tensor rate (h100lab.design.tiles.smem_bytes_per_clock, 128 B/clk
//    available): 128 x 128 needs 96 (wgmma reads) + 64 (TMA writes) = 160 B/clk, 128 x 192 139, 256 x 128 144,
//    the bf16 128 x 256 tile 128. Measured (data/l08/gemm_bench_fp8_n192, _m256; H200): the wider tiles win where
//    waves are full -- 8192^3: 128 x 192 (TMA store) 1202 TFLOP/s, 256 x 128 1114, the best 128 x 128 921-927;
//    cuBLAS FP8 1346 (per-tensor) / 1244 (block scales) -- so 128 x 192 is the FP8 default. The shared-memory
//    bandwidth hypothesis is NOT confirmed as the mechanism: both gains (x1.2-1.3 at 8192^3 and 16384^3) exceed the
//    x1.15 / x1.11 that removing a shared-memory bound could give, and the 128 x 128 form runs at < 50 % of the
//    FP8 dense peak, far under the 80 % its bound allows (the bf16 128 x 128 tile, the same 160 B/clk, reaches
//    ~70 % of the bf16 peak). Those fractions are of the spec's 1830 MHz peaks; under load the H200 ran near
//    1500 MHz (data/l08/clock_under_load, a bf16 run), which would put the FP8 128 x 128 form near 57 % -- still
//    under its bound -- and the bf16 128 x 128 tile near 87 %, above its 80 %: if so, the model counts more
//    shared-memory traffic than the hardware moves (an upper estimate; FP8's own clock was not read). What the
//    wider tiles also cut is fixed cost per FLOP: 128 x 192 has 2/3 of the
//    stages, full-barrier waits, waits for P and promotions per FLOP; 256 x 128 half the stages and barriers, the
//    same waits for P -- these per-stage / per-block costs are the remaining suspect (not measured apart here).
//    The stagger lost 2-10 % at every shape of that run (it won a few per cent at 4096^3 in its own): no dependable
//    gain. Where 128 x 192 tiles leave a wave mostly idle (1408 x 3072: 176 tiles on 132 SMs) 128 x 128 is faster
//    (h100lab.design.capstone.fp8_tile_choice).
// -DTRACE=1 (cooperative, CLUSTER 1 or 2, and ping-pong, whose consumer c writes only the tiles it takes -- every
//    other one -- and leaves the other's slots unwritten; for finding where a k-block's time goes,
//    h100lab.validation.l08.trace_rows, benchmarks/trace_gemm.py): two more kernel arguments,
//    `unsigned long long* trace, int trace_cap`. In CTAs 0 and gridDim.x / 2 (slot 0, 1; a grid of one CTA fills slot 0 only) thread 0 of each warpgroup w writes %clock64
//    (SM cycles) at each event of ring slot `it` (the CTA's k-block counter over its tiles, it < trace_cap) into
//    region (slot * 3 + w) of TRACE_HDR + trace_cap * (TRACE_EV + TRACE_TEV) u64 values: a header (%globaltimer and
//    %clock64 at the warpgroup's start, the same at its end, %smid, k-blocks, tiles, nk), then TRACE_EV values per
//    k-block, then TRACE_TEV per tile (tile start, mainloop end, epilogue end, 0). Producer k-block events: 0 the
//    empty-barrier wait passed, 1 both TMA loads issued. Consumer: 0 the full-barrier wait passed, 1 the wgmmas
//    committed, 2 wait_group returned (INFLIGHT: wait_group 1, the block before retired), 3 the empty-barrier arrive
//    issued, then FP8 only: 4 the block's scales in registers (a store predicated on a scale being NaN -- never --
//    makes the timestamp wait for the loads, as the promotion's first multiply does anyway), 5 promotion done, 6
//    SCALE_LEAD 1: the next block's scales in registers (the same guard; meant to cost nothing, as the end-of-block
//    copy waits for them anyway -- but the H200 trace of the lead-1 forms costs 9-22 % of their time against 4-8 %
//    for the others, data/l08/gemm_trace: this wait is not free there), SCALE_LEAD 2-3: the ring's load for block
//    kb + SCALE_LEAD issued; 7 unused (0). CLUSTER 2: the same events in CTAs 0 and gridDim.x / 2 (each one CTA
//    of its pair); event 3 then follows both arrives, the remote one with its .release.cluster fence (SASS:
//    MEMBAR.ALL.GPU), so released - waited holds the fence -- which also waits for the trace's own timestamp
//    stores before it (the H200 trace of the FP8 pair, data/l08/gemm_trace_cluster: 1030-1360 cycles against 35
//    without the pair, the trace costing the pair 20-41 %), so that interval bounds the untraced fence from above.
//    BM_TILE 256: the
//    second m64 block's times overwrite the first's. Unwritten slots stay as the host set them. Without TRACE the
//    kernel is the same PTX (every TRACE line is inside `#if TRACE` or a TR_ macro that expands to nothing;
//    tests/test_l08_trace.py compiles both). The timestamps are ordered against the code around them by the
//    volatile asm of the clock read; ptxas keeps such a read in program order in the SASS (the usual
//    micro-benchmark assumption, checked here only by the untimed-vs-timed comparison of benchmarks/trace_gemm.py).
// Host rules: K a multiple of 8 (16 for FP8: TMA global strides are multiples of 16 B, CUDA Driver API
// cuTensorMapEncodeTiled); dynamic shared memory = h100lab.design.capstone.Variant.smem_bytes; 384 threads per CTA.
#include <h100lab/tensormap.cuh>

#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef BN_TILE
#define BN_TILE 256          // the CTA tile's N = the wgmma N: 256 (default) or 128 (-DBN_TILE=128: twice the tiles)
#endif
#ifndef INFLIGHT
#define INFLIGHT 0           // 1: keep one wgmma group in flight in the mainloop (wait_group 1, release the stage before)
#endif
#ifndef TMA_STORE
#define TMA_STORE 0          // 1: stmatrix + TMA-store epilogue when beta == 0 (map_c given), else the direct stores
#endif
#ifndef CLUSTER
#define CLUSTER 1            // 2: clusters of two CTAs on vertically adjacent tiles; each loads half the B tile and
#endif                       //    multicasts it to both (cooperative only)
#if CLUSTER != 1 && (CLUSTER != 2 || PINGPONG)
#error "CLUSTER is 1, or 2 with the cooperative consumers"
#endif
#ifndef REMOTE_CTA_SCOPE
#define REMOTE_CTA_SCOPE 0   // 1 (CLUSTER 2): the remote empty-barrier arrive with the default .release.cta semantics
#endif                       //    instead of .release.cluster (what CUTLASS-style pipelines issue; measured against it)
#ifndef FP8
#define FP8 0                // 1: e4m3 inputs with per-block scales and two-level accumulation (entry gemm_e4m3)
#endif
#if FP8 && (PINGPONG || (BN_TILE != 128 && BN_TILE != 192) || INFLIGHT)
#error "FP8 is the cooperative kernel with 128- or 192-column tiles and one partial sum in flight at a time"
#endif
#ifndef BM_TILE
#define BM_TILE 128          // the cooperative tile's M: 128, or 256 (FP8, BN_TILE 128: two m64 blocks per consumer)
#endif
#if BM_TILE != 128 && (BM_TILE != 256 || !FP8 || BN_TILE != 128 || PINGPONG)
#error "BM_TILE is 128, or 256 with FP8 and 128-column tiles"
#endif
#ifndef STAGGER
#define STAGGER 0            // 1 (FP8): the two consumers issue their blocks in turn, so one promotes under the other's
#endif                       //    wgmmas (named barriers 3 and 4)
#if STAGGER && (!FP8 || BM_TILE != 128)
#error "STAGGER is an FP8 switch of the 128-row tile"
#endif
#ifndef SCALE_LEAD
#define SCALE_LEAD 1         // FP8: k-blocks ahead a consumer fetches its scales (1; 2 or 3: a register ring, the
#endif                       //    k-loop unrolled by the ring depth)
#if SCALE_LEAD < 1 || SCALE_LEAD > 3 || (SCALE_LEAD != 1 && !FP8)
#error "SCALE_LEAD is 1, 2 or 3, an FP8 switch"
#endif
#ifndef TRACE
#define TRACE 0              // 1: on-device timestamps of every k-block's events (extra kernel arguments trace,
#endif                       //    trace_cap; see "TRACE" at the end of the header note)
#ifndef STAGES
#if PINGPONG
#define STAGES 5
#elif BM_TILE == 256
#define STAGES 4             // 48 KB stages
#elif BN_TILE == 128
#define STAGES (FP8 ? 6 : 7)
#elif BN_TILE == 192
#define STAGES 4             // 40 KB stages: 4 with the TMA-store staging tiles, 5 without
#else
#define STAGES 4
#endif
#endif
#if BN_TILE != 256 && BN_TILE != 128 && !(FP8 && BN_TILE == 192)
#error "BN_TILE is 256 or 128 (or 192 with FP8)"
#endif

namespace {

constexpr int ELEM = FP8 ? 1 : 2;           // bytes per A / B element (e4m3 or bf16)
constexpr int BK = 128 / ELEM;               // K elements per stage: one 128-byte swizzle row (64 bf16, 128 e4m3)
constexpr int BN = BN_TILE;                  // wgmma N
constexpr int NACC = BN / 2;                 // f32 accumulators per thread: 64 x BN over 128 threads
#if PINGPONG
constexpr int BM = BN_TILE == 128 ? 128 : 64;  // one consumer warpgroup per tile: 64 x 256, or 128 x 128 in two m64
constexpr int CONSUMERS_PER_STAGE = 1;
constexpr int MSUB = BM / 64;                // m64 wgmmas per k16 step of one consumer
#else
constexpr int BM = BM_TILE;                  // two consumer warpgroups per tile, 64 (or 128) rows each
constexpr int CONSUMERS_PER_STAGE = 2;
constexpr int MSUB = BM / 128;               // m64 blocks per consumer
#endif
constexpr int A_BYTES = BM * BK * ELEM;
constexpr int B_BYTES = BN * BK * ELEM;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = 64 * 64 * 2;        // one 64 x 64 bf16 staging tile (64 rows of 128 B, 128B-swizzled)
constexpr int EPI_TOTAL = TMA_STORE ? 2 * 2 * EPI_BYTES : 0;   // two staging tiles per consumer warpgroup
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

#if CLUSTER == 2
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// the same barrier in the CTA of cluster rank `rank` (mapa), arrived on with release at cluster scope (the PTX memory
// model's form for another CTA's barrier) or, REMOTE_CTA_SCOPE, with mbarrier.arrive's default .release.cta: the
// stage's reads (wgmmas retired by wait_group) are complete either way. On the H200 the cluster-scope fence, one per
// consumer warp and stage, is what made the pairs slow (data/l08/gemm_bench_cluster2 vs gemm_bench_cluster2_ctascope)
__device__ __forceinline__ void bar_arrive_remote(unsigned bar, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
#if REMOTE_CTA_SCOPE
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
#else
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
#endif
}

__device__ __forceinline__ void tma_load_multicast(unsigned dst, const CUtensorMap* map, int x, int y, unsigned bar,
                                                   unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
                 : "memory");
}
#endif

__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

__device__ __forceinline__ unsigned long long desc_sw128(unsigned addr) {
    // start >> 4 (bits 0-13), LBO enc 1 (unused for swizzled K-major), SBO 1024 B (enc 64), layout type 1 = 128B
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// the tile at position t of the grouped order: `group` tile-rows (raster 0) or tile-columns (raster 1) at a time
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group, int raster, int& tm, int& tn) {
    const int major = raster ? tiles_n : tiles_m;       // the dimension walked inside a group
    const int minor = raster ? tiles_m : tiles_n;
    const int per_group = group * minor;
    const int g = t / per_group, first = g * group, r = t % per_group;
    const int size = min(major - first, group);
    const int a = first + r % size, b = r / size;
    tm = raster ? b : a;
    tn = raster ? a : b;
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));   // first source -> upper half
    return r;
}

__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

#if BN_TILE == 256
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(scale_d) : "memory");
}

#elif BN_TILE == 128
#if FP8   // k32 e4m3 x e4m3; FP8 takes no transpose immediates (K-major only, PTX ISA 9.7.15.5.2)
#define WGMMA_N128 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
#define WGMMA_IMM "1, 1"                     // imm-scale-a, imm-scale-b
#else
#define WGMMA_N128 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
#define WGMMA_IMM "1, 1, 0, 0"               // imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
#endif
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
                 WGMMA_N128 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, " WGMMA_IMM ";\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(scale_d) : "memory");
}

#else                // BN_TILE 192, FP8 only: m64n192k32, 96 accumulators per thread
__device__ __forceinline__ void wgmma_n192(float (&d)[96], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %98, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(da), "l"(db), "r"(scale_d) : "memory");
}
#endif

__device__ __forceinline__ void wgmma_tile(float (&d)[NACC], unsigned long long da, unsigned long long db, int scale_d) {
#if BN_TILE == 256
    wgmma_n256(d, da, db, scale_d);
#elif BN_TILE == 192
    wgmma_n192(d, da, db, scale_d);
#else
    wgmma_n128(d, da, db, scale_d);
#endif
}

// tell the compiler the accumulators may change here (an empty asm: no instruction), so it keeps no copy of them
// across a wgmma.fence / wait_group (CUTLASS's warpgroup_fence_operand)
__device__ __forceinline__ void fence_acc(float (&d)[NACC]) {
#pragma unroll
    for (int r = 0; r < NACC; ++r) asm volatile("" : "+f"(d[r]) :: "memory");
}

#if !FP8
__device__ __forceinline__ void fence_acc(float (&d)[MSUB][NACC]) {
#pragma unroll
    for (int m = 0; m < MSUB; ++m) fence_acc(d[m]);
}
#endif

#if FP8
// the scales one thread needs to promote one 128-K block: A's for its two rows, B's for the tile's column block
// (BN_TILE 192: the two 128-column blocks of B the tile spans, b2 for the columns from `split` on)
struct BlockScales {
    float lo, hi, b;
#if BN_TILE == 192
    float b2;
#endif
};

// block kb's scales (ld.global.nc; rows past M read nothing and get 0): sa block-major, sbt = sb's row of the tile
// (sbt2: of its second column block, clamped to the last block of B: columns past N are never stored). SCALE_LEAD
// > 1: B's scales too are read only where the thread's first row is below M (else 0: its rows are never stored,
// and its A scales are 0 already) -- a value the same in every thread of a warp (uniform address) ptxas keeps in
// a uniform register, and its R2UR copy, placed right after the load, waits for it as the register copy did;
// the per-thread predicate makes the value per-thread, so it stays in the ring's registers
__device__ __forceinline__ BlockScales load_scales(const float* __restrict__ sa, const float* __restrict__ sbt,
                                                   const float* __restrict__ sbt2, int kb, int M, int rlo) {
    const float* a = sa + (size_t)kb * M;
#if SCALE_LEAD > 1
    const bool in = rlo < M;
#else
    const bool in = true;
#endif
#if BN_TILE == 192
    return {rlo < M ? __ldg(a + rlo) : 0.f, rlo + 8 < M ? __ldg(a + rlo + 8) : 0.f, in ? __ldg(sbt + kb) : 0.f,
            in ? __ldg(sbt2 + kb) : 0.f};
#else
    (void)sbt2;
    return {rlo < M ? __ldg(a + rlo) : 0.f, rlo + 8 < M ? __ldg(a + rlo + 8) : 0.f, in ? __ldg(sbt + kb) : 0.f};
#endif
}

// one 128-K block of the stage at a / b (shared addresses): four k32 wgmmas into P, scale-d = 0 on the first (P
// restarts), committed as one group
__device__ __forceinline__ void fp8_block(float (&p)[NACC], unsigned a, unsigned b) {
    fence_acc(p);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) wgmma_tile(p, desc_sw128(a + 32 * k), desc_sw128(b + 32 * k), k);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

#if BN_TILE == 128
// two-level accumulation: acc = fma(P, sa[row] * sb, acc) in f32 (rows 16w + g and 8 below: r & 2)
__device__ __forceinline__ void promote(float (&d)[NACC], const float (&p)[NACC], BlockScales sc) {
    const float s_lo = __fmul_rn(sc.lo, sc.b), s_hi = __fmul_rn(sc.hi, sc.b);
#pragma unroll
    for (int r = 0; r < NACC; ++r)                                  // epilogue: scale_ab
        d[r] = __fmaf_rn(p[r], (r & 2) ? s_hi : s_lo, d[r]);
}

#else
// the same for a 192-column tile: its columns 8(r >> 2) + .. below SPLIT take B's first block scale, the rest the
// second (the split is a multiple of 64, so it falls between two registers' 8-column groups); SPLIT a template
// argument so each register's scale is chosen at compile time
template <int SPLIT>
__device__ __forceinline__ void promote_split(float (&d)[NACC], const float (&p)[NACC], BlockScales sc) {
    const float s_lo = __fmul_rn(sc.lo, sc.b), s_hi = __fmul_rn(sc.hi, sc.b);
    const float t_lo = __fmul_rn(sc.lo, sc.b2), t_hi = __fmul_rn(sc.hi, sc.b2);
#pragma unroll
    for (int r = 0; r < NACC; ++r)                                  // epilogue: scale_ab
        d[r] = __fmaf_rn(p[r], 8 * (r >> 2) < SPLIT ? ((r & 2) ? s_hi : s_lo) : ((r & 2) ? t_hi : t_lo), d[r]);
}

// a 192-column tile at column 192 tn starts at 0 (tn even) or 64 (tn odd) inside a 128-column block of B: it spans
// exactly two blocks, the second from tile column 128 or 64 on
__device__ __forceinline__ void promote(float (&d)[NACC], const float (&p)[NACC], BlockScales sc, int split) {
    if (split == 128) promote_split<128>(d, p, sc);
    else promote_split<64>(d, p, sc);
}
#endif
#endif

// the epilogue's steps after beta * C for the values of columns col and col + 1 (a column at or past N has none):
// + bias[col] (bf16 -> f32, add.rn.f32) when a bias is given, then ReLU (max.f32 with 0) when relu != 0
__device__ __forceinline__ void bias_act(float& v0, float& v1, const unsigned short* __restrict__ bias, int col,
                                         int N, int relu) {
    if (bias != nullptr) {                                          // epilogue: bias
        if (col < N) v0 = __fadd_rn(v0, bf16_to_f32(__ldg(bias + col)));
        if (col + 1 < N) v1 = __fadd_rn(v1, bf16_to_f32(__ldg(bias + col + 1)));
    }
    if (relu) {                                                     // epilogue: activation
        v0 = fmaxf(v0, 0.f);
        v1 = fmaxf(v1, 0.f);
    }
}

// acc (this warpgroup's 64 x BN fragment: row 16w + g + 8((r >> 1) & 1), column 8(r >> 2) + 2c + (r & 1),
// PTX ISA 9.7.15.5.1.1.1) -> alpha * acc + beta * C (+ bias, ReLU) -> bf16, stored straight to global memory
// within M x N
__device__ __forceinline__ void epilogue(const float (&d)[NACC], unsigned short* __restrict__ C, int M, int N,
                                         int row0, int col0, float alpha, float beta,
                                         const unsigned short* __restrict__ bias, int relu, unsigned t) {
    const unsigned w = t / 32, g = (t % 32) / 4, c = t % 4;
    const bool even = (N & 1) == 0;              // then every (row, even column) pair is 4-byte aligned
#pragma unroll
    for (int r = 0; r < NACC; r += 2) {
        const int row = row0 + 16 * w + g + 8 * ((r >> 1) & 1);
        const int col = col0 + 8 * (r >> 2) + 2 * c;
        if (row >= M || col >= N) continue;
        unsigned short* p = C + (size_t)row * N + col;
        float v0 = __fmul_rn(alpha, d[r]), v1 = __fmul_rn(alpha, d[r + 1]);   // epilogue: alpha
        if (col + 1 < N) {
            if (beta != 0.f) {                                                 // epilogue: beta_c
                const unsigned short o0 = p[0], o1 = p[1];
                v0 = __fmaf_rn(beta, bf16_to_f32(o0), v0);
                v1 = __fmaf_rn(beta, bf16_to_f32(o1), v1);
            }
            bias_act(v0, v1, bias, col, N, relu);
            const unsigned packed = pack_bf16(v0, v1);
            if (even) {
                *reinterpret_cast<unsigned*>(p) = packed;
            } else {
                p[0] = (unsigned short)(packed & 0xFFFFu);
                p[1] = (unsigned short)(packed >> 16);
            }
        } else {
            if (beta != 0.f) v0 = __fmaf_rn(beta, bf16_to_f32(p[0]), v0);
            bias_act(v0, v1, bias, col, N, relu);                              // col + 1 = N: v1 is not stored
            p[0] = (unsigned short)(pack_bf16(v0, 0.f) & 0xFFFFu);
        }
    }
}

#if TMA_STORE
__device__ __forceinline__ void stmatrix4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

// alpha * acc (+ bias, ReLU) of the values of columns col, col + 1 of one row -> bf16x2 (the TMA store: beta == 0)
__device__ __forceinline__ unsigned epi_pair(float a0, float a1, float alpha, const unsigned short* __restrict__ bias,
                                             int col, int N, int relu) {
    float v0 = __fmul_rn(alpha, a0), v1 = __fmul_rn(alpha, a1);       // epilogue: alpha
    bias_act(v0, v1, bias, col, N, relu);
    return pack_bf16(v0, v1);
}

// the 64 x BN fragment (alpha * acc (+ bias, ReLU) -> bf16) goes out in 64-column chunks: stmatrix.x4 (PTX ISA 9.7.14.5.16) into one
// of this warpgroup's two 128B-swizzled staging tiles, fence.proxy.async (generic writes -> the TMA), and one thread's
// cp.async.bulk.tensor store (PTX ISA 9.7.9.27.1.2; rows/columns past M/N are clipped by the TMA). Before a tile is
// rewritten, wait_group.read 1 lets the store issued from it two chunks ago finish reading it.
__device__ __forceinline__ void epilogue_tma(const float (&d)[NACC], const CUtensorMap* map_c, unsigned stage0,
                                             int row0, int col0, float alpha, const unsigned short* __restrict__ bias,
                                             int relu, int N, unsigned t, int named) {
    const unsigned w = t / 32, lane = t % 32, q = lane / 8, c = t % 4;
    const unsigned row = 16 * w + (lane % 8) + 8 * (q & 1);             // the staging row this lane addresses
#pragma unroll
    for (int cb = 0; cb < BN / 64; ++cb) {
        const unsigned stage = stage0 + (cb & 1) * EPI_BYTES;
        if (t == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        asm volatile("bar.sync %0, 128;" :: "r"(named) : "memory");      // the staging tile is free
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {                                // columns 16jj..16jj+15 of the chunk
            const int a = 32 * cb + 8 * jj, b = a + 4;
            const int col = col0 + 64 * cb + 16 * jj + 2 * (int)c;       // d[a], d[a + 1]; d[b].. 8 columns on
            const unsigned r0 = epi_pair(d[a], d[a + 1], alpha, bias, col, N, relu);
            const unsigned r1 = epi_pair(d[a + 2], d[a + 3], alpha, bias, col, N, relu);
            const unsigned r2 = epi_pair(d[b], d[b + 1], alpha, bias, col + 8, N, relu);
            const unsigned r3 = epi_pair(d[b + 2], d[b + 3], alpha, bias, col + 8, N, relu);
            const unsigned chunk = 2 * jj + (q >> 1);
            stmatrix4(stage + row * 128u + ((chunk ^ (row & 7u)) << 4), r0, r1, r2, r3);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // stmatrix (generic) -> TMA store (async)
        asm volatile("bar.sync %0, 128;" :: "r"(named) : "memory");
        if (t == 0) {
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(reinterpret_cast<unsigned long long>(map_c)), "r"(col0 + 64 * cb), "r"(row0),
                            "r"(stage) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
#endif

#if TRACE
constexpr int TRACE_HDR = 8;     // per traced warpgroup: globaltimer, clock64 (start); the same (end); smid, k-blocks,
constexpr int TRACE_EV = 8;      //    tiles, nk; then TRACE_EV values per k-block, TRACE_TEV per tile
constexpr int TRACE_TEV = 4;

__device__ __forceinline__ unsigned long long trace_clock() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(v) :: "memory");
    return v;
}

__device__ __forceinline__ unsigned long long trace_ns() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v) :: "memory");
    return v;
}

// a store of 0 to `slot` guarded by v != v (false for every non-NaN scale): it reads v, so it waits for v's load,
// and the timestamp written to `slot` after it is taken once v has landed
__device__ __forceinline__ void trace_after(unsigned long long* slot, float v) {
    asm volatile("{\n\t.reg .pred q;\n\t.reg .b64 z;\n\tsetp.ne.f32 q, %1, %1;\n\tmov.b64 z, 0;\n\t"
                 "@q st.global.u64 [%0], z;\n\t}" :: "l"(slot), "f"(v) : "memory");
}

#if FP8
__device__ __forceinline__ float trace_sum(const BlockScales& sc) {
#if BN_TILE == 192
    return sc.lo + sc.hi + sc.b + sc.b2;
#else
    return sc.lo + sc.hi + sc.b;
#endif
}
#endif
#define TR_EV(i, e) do { if (trk != nullptr && (i) < trace_cap) trk[(size_t)(i) * TRACE_EV + (e)] = trace_clock(); } while (0)
#define TR_TILE(jj, e) do { if (trt != nullptr && (jj) < trace_cap) trt[(size_t)(jj) * TRACE_TEV + (e)] = trace_clock(); } while (0)
#define TR_AFTER(i, e, v) do { if (trk != nullptr && (i) < trace_cap) { trace_after(trk + (size_t)(i) * TRACE_EV + (e), (v)); trk[(size_t)(i) * TRACE_EV + (e)] = trace_clock(); } } while (0)
#define TR_END(blocks, ntiles) do { if (tr != nullptr) { tr[2] = trace_ns(); tr[3] = trace_clock(); tr[4] = trace_smid(); tr[5] = (blocks); tr[6] = (ntiles); tr[7] = nk; } } while (0)

__device__ __forceinline__ unsigned trace_smid() {
    unsigned v;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
    return v;
}
#else
#define TR_EV(i, e) do { } while (0)
#define TR_TILE(jj, e) do { } while (0)
#define TR_AFTER(i, e, v) do { } while (0)
#define TR_END(blocks, ntiles) do { } while (0)
#endif

}  // namespace

#if FP8
#define GEMM_ENTRY gemm_e4m3
#else
#define GEMM_ENTRY gemm_bf16
#endif

// map_a: A (K x M elements, dims {K, M}), box {BK, BM}; map_b: B (dims {K, N}), box {BK, BN / CLUSTER}; both bf16
// (FP8: uint8 e4m3 bytes), CU_TENSOR_MAP_SWIZZLE_128B, zero OOB fill. group >= 1 tiles per raster group, raster 0
// (along M) or 1 (along N). bias: N bf16 values or nullptr (none); relu: 0 or 1. FP8: sa, sb the block scales.
extern "C" __global__ void __launch_bounds__(384, 1) GEMM_ENTRY(
        const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
        unsigned short* __restrict__ C, int M, int N, int K, float alpha, float beta, int group, int raster,
        const unsigned short* __restrict__ bias, int relu
#if FP8
        , const float* __restrict__ sa, const float* __restrict__ sb   // sa[kb * M + row], sb[(n / 128) * nk + kb]
#endif
#if TMA_STORE
        , const __grid_constant__ CUtensorMap map_c, int tma_epi   // map_c: C (dims {N, M}), box {64, 64}, SWIZZLE_128B
#endif
#if TRACE
        , unsigned long long* __restrict__ trace, int trace_cap    // the timestamps (see TRACE in the header note)
#endif
        ) {
    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;    // 128B swizzle: 1024-aligned tiles
    const unsigned a_base = base, b_base = base + STAGES * A_BYTES;
    const unsigned epi_base = b_base + STAGES * B_BYTES;                   // TMA_STORE: 2 x 2 staging tiles
    const unsigned bars = epi_base + EPI_TOTAL;                             // full[S], empty[S], order[2]
    const int wg = threadIdx.x / 128;
    const unsigned t = threadIdx.x % 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int nk = (K + BK - 1) / BK;
#if TRACE
    const int tslot = blockIdx.x == 0 ? 0 : (blockIdx.x == gridDim.x / 2 ? 1 : -1);
    unsigned long long* const tr = tslot >= 0 && t == 0 && trace != nullptr
        ? trace + (size_t)(tslot * 3 + wg) * (TRACE_HDR + (size_t)trace_cap * (TRACE_EV + TRACE_TEV)) : nullptr;
    unsigned long long* const trk = tr != nullptr ? tr + TRACE_HDR : nullptr;
    unsigned long long* const trt = tr != nullptr ? trk + (size_t)trace_cap * TRACE_EV : nullptr;
    if (tr != nullptr) {
        tr[0] = trace_ns();
        tr[1] = trace_clock();
    }
#endif
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(bars + 8 * s, 1);                                      // the producer's arrive.expect_tx
            bar_init(bars + 8 * (STAGES + s), 4 * CONSUMERS_PER_STAGE * CLUSTER);   // per consumer warp (of the cluster)
        }
        bar_init(bars + 8 * (2 * STAGES), 1);
        bar_init(bars + 8 * (2 * STAGES + 1), 1);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // initialised barriers -> the TMA (async proxy)
#if CLUSTER == 2
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");   // ... and -> the other CTA
#endif
    }
    __syncthreads();
#if CLUSTER == 2
    // every barrier of the cluster exists before the other CTA's multicast or remote arrive can reach it
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    const unsigned crank = cluster_rank();
    (void)tiles;
    const int tiles_iter = ((tiles_m + 1) / 2) * tiles_n;                  // tile pairs: rows 2p, 2p + 1 of tiles
    const int first_tile = blockIdx.x / 2, tile_step = gridDim.x / 2;
#else
    const int tiles_iter = tiles, first_tile = blockIdx.x, tile_step = gridDim.x;
#endif
    // the tile at position `tile` of the grouped order (CLUSTER 2: of tile pairs; this CTA takes row 2p + rank)
    auto my_tile = [&](int tile, int& tm, int& tn) {
#if CLUSTER == 2
        tile_coords(tile, (tiles_m + 1) / 2, tiles_n, group, raster, tm, tn);
        tm = 2 * tm + (int)crank;
#else
        tile_coords(tile, tiles_m, tiles_n, group, raster, tm, tn);
#endif
    };
    // a consumer warp is done with a stage: both CTAs' producers write it (CLUSTER 2), so both hear of it
    auto release = [&](unsigned empty) {
        bar_arrive(empty);
#if CLUSTER == 2
        bar_arrive_remote(empty, crank ^ 1u);
#endif
    };

    if (wg == 0) {                                                          // ---- producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (t == 0) {
            asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<unsigned long long>(&map_a)) : "memory");
            asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<unsigned long long>(&map_b)) : "memory");
            int it = 0;                                                     // ring slot: stage it % S, lap it / S
            for (int tile = first_tile; tile < tiles_iter; tile += tile_step) {
                int tm, tn;
                my_tile(tile, tm, tn);
                for (int kb = 0; kb < nk; ++kb, ++it) {
                    const int s = it % STAGES;
                    const unsigned lap = (unsigned)(it / STAGES) & 1u;
                    bar_wait(bars + 8 * (STAGES + s), lap ^ 1u);            // lap 0 passes: the slot starts empty
                    TR_EV(it, 0);
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                                 :: "r"(bars + 8 * s), "r"(STAGE_BYTES) : "memory");
                    tma_load(a_base + s * A_BYTES, &map_a, kb * BK, tm * BM, bars + 8 * s);
#if CLUSTER == 2
                    // our half of the shared B tile, into the same place of both CTAs (their full barriers count it)
                    tma_load_multicast(b_base + s * B_BYTES + crank * (B_BYTES / 2), &map_b, kb * BK,
                                       tn * BN + (int)crank * (BN / 2), bars + 8 * s, (unsigned short)3);
#else
                    tma_load(b_base + s * B_BYTES, &map_b, kb * BK, tn * BN, bars + 8 * s);
#endif
                    TR_EV(it, 1);
                }
            }
            TR_END(it, it / (nk > 0 ? nk : 1));
#if CLUSTER == 2
            // no exit while the other CTA may still arrive on our empty barriers: wait until every stage is released
            for (int i = 0; i < STAGES; ++i, ++it)
                bar_wait(bars + 8 * (STAGES + it % STAGES), ((unsigned)(it / STAGES) & 1u) ^ 1u);
#endif
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));   // ---- consumer warpgroups
    const int c = wg - 1;
    float d[MSUB][NACC];                                                    // MSUB m64 x BN accumulator blocks
#pragma unroll
    for (int m = 0; m < MSUB; ++m)
#pragma unroll
        for (int r = 0; r < NACC; ++r) d[m][r] = 0.f;
#if FP8
    float p[1][NACC];                                                       // one 128-K block's partial sum
#endif
    int j = 0;                                                              // this CTA's tile counter
    for (int tile = first_tile; tile < tiles_iter; tile += tile_step, ++j) {
#if PINGPONG
        if ((j & 1) != c) continue;                                         // consumer c takes every other tile
        const int q = j >> 1;
        const unsigned order_mine = bars + 8 * (2 * STAGES + c), order_other = bars + 8 * (2 * STAGES + (c ^ 1));
        if (c == 1 || q > 0) bar_wait(order_mine, (unsigned)(c == 0 ? q - 1 : q) & 1u);   // the other's mainloop ended
        const unsigned a_off = 0;
        const int row0_in_tile = 0;
#else
        const unsigned a_off = c * (BM / 2) * 128;                          // rows (BM / 2)c.. of the A tile
        const int row0_in_tile = (BM / 2) * c;
#endif
        int tm, tn;
        my_tile(tile, tm, tn);
        int it = j * nk;
        TR_TILE(j, 0);
#if FP8
        // this thread's first row (16w + g; the second is 8 below) and the tile's row of B's scales
        const int rlo = tm * BM + row0_in_tile + 16 * (int)(t / 32) + (int)(t % 32) / 4;
#if BN_TILE == 192
        const int sb0 = tn * BN / 128, sb1 = min(sb0 + 1, (N - 1) / 128);   // the two column blocks of B's scales
        const int split = 128 * (sb0 + 1) - tn * BN;                      // tile column where the second begins
        const float* sbt = sb + (size_t)sb0 * nk;
        const float* sbt2 = sb + (size_t)sb1 * nk;
#else
        const float* sbt = sb + (size_t)tn * nk;
        const float* sbt2 = sbt;
#endif
#pragma unroll
        for (int m = 0; m < MSUB; ++m)
#pragma unroll
            for (int r = 0; r < NACC; ++r) d[m][r] = 0.f;                   // the f32 accumulator starts at 0
        // the scale ring: ring[u] holds the scales of the next block kb with kb % SCALE_LEAD == u; blocks 0 ..
        // SCALE_LEAD - 1 loaded here (a block past nk loads nothing)
        BlockScales ring[SCALE_LEAD][MSUB];
#pragma unroll
        for (int u = 0; u < SCALE_LEAD; ++u)
#pragma unroll
            for (int m = 0; m < MSUB; ++m)
                ring[u][m] = u == 0 || u < nk ? load_scales(sa, sbt, sbt2, u, M, rlo + 64 * m) : BlockScales{};
        // unrolled by the ring depth, so ring[u] is a fixed set of registers (never indexed at run time, never
        // copied): a load into it is issued after the promotion that last read it and first read SCALE_LEAD blocks
        // later
        for (int kb0 = 0; kb0 < nk; kb0 += SCALE_LEAD) {
#pragma unroll
        for (int u = 0; u < SCALE_LEAD; ++u) {
            const int kb = kb0 + u;
            if (kb >= nk) break;
            const int s = it % STAGES;
            bar_wait(bars + 8 * s, (unsigned)(it / STAGES) & 1u);           // the stage's bytes have landed
            TR_EV(it, 0);
#if STAGGER
            // consumer 0 issues block `it` after consumer 1 issued block it - 1, consumer 1 after consumer 0 issued
            // block it (named barrier 3 + c: 128 threads bar.arrive, the other 128 bar.sync); the last block of the
            // CTA's last tile sends no arrival nobody would wait for
            const bool last = tile + tile_step >= tiles_iter && kb == nk - 1;
            if (c == 1 || it > 0) asm volatile("bar.sync %0, 256;" :: "r"(3 + c) : "memory");
#endif
            // BM_TILE 256: the consumer's two m64 blocks one after the other through the one partial sum (the
            // other consumer's wgmmas run while this one promotes); the stage goes back after the last
#pragma unroll
            for (int m = 0; m < MSUB; ++m) {
                fp8_block(p[0], a_base + s * A_BYTES + a_off + m * 64 * 128, b_base + s * B_BYTES);
                TR_EV(it, 1);
#if STAGGER
                if (c == 0 || !last) asm volatile("bar.arrive %0, 256;" :: "r"(3 + (c ^ 1)) : "memory");
#endif
#if SCALE_LEAD == 1
                // the next block's scales, loaded while the wgmmas run and used one block later (the copy into
                // ring[0] at the end waits for these loads: every block lasts at least one load round trip)
                const BlockScales next = kb + 1 < nk ? load_scales(sa, sbt, sbt2, kb + 1, M, rlo + 64 * m)
                                                     : ring[0][m];
#endif
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                fence_acc(p[0]);
                TR_EV(it, 2);
                if (m == MSUB - 1 && t % 32 == 0) release(bars + 8 * (STAGES + s));   // P holds what the stage gave
                TR_EV(it, 3);
                TR_AFTER(it, 4, trace_sum(ring[u][m]));
#if BN_TILE == 192
                promote(d[m], p[0], ring[u][m], split);
#else
                promote(d[m], p[0], ring[u][m]);
#endif
                TR_EV(it, 5);
#if SCALE_LEAD == 1
                ring[0][m] = next;
                TR_AFTER(it, 6, trace_sum(ring[0][m]));
#else
                // block kb + SCALE_LEAD's scales into the registers this promotion just read
                if (kb + SCALE_LEAD < nk) ring[u][m] = load_scales(sa, sbt, sbt2, kb + SCALE_LEAD, M, rlo + 64 * m);
                TR_EV(it, 6);
#endif
            }
            ++it;
        }
        }
#else
        for (int kb = 0; kb < nk; ++kb, ++it) {
            const int s = it % STAGES;
            bar_wait(bars + 8 * s, (unsigned)(it / STAGES) & 1u);           // the stage's bytes have landed
            TR_EV(it, 0);
            fence_acc(d);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const unsigned long long db = desc_sw128(b_base + s * B_BYTES + 32 * k);
#pragma unroll
                for (int m = 0; m < MSUB; ++m) {                            // rows 64m.. of this consumer's A rows
                    const unsigned long long da = desc_sw128(a_base + s * A_BYTES + a_off + m * 64 * 128 + 32 * k);
                    wgmma_tile(d[m], da, db, kb | k);                       // scale-d = 0 on the tile's first k-step
                }
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            TR_EV(it, 1);
#if INFLIGHT
            // this k-block's group stays in flight while the next stage is awaited and issued; the one before it
            // has retired, so its stage goes back to the producer
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            fence_acc(d);
            TR_EV(it, 2);
            if (kb > 0 && t % 32 == 0) release(bars + 8 * (STAGES + (it - 1) % STAGES));
            TR_EV(it, 3);
#else
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            fence_acc(d);
            TR_EV(it, 2);
            if (t % 32 == 0) release(bars + 8 * (STAGES + s));              // this warp is done with the stage
            TR_EV(it, 3);
#endif
        }
#endif  // FP8
#if INFLIGHT
#if PINGPONG
        if (t == 0) bar_arrive(order_other);   // every wgmma is issued: the other consumer may issue its mainloop now
#endif
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");    // drain: the last group retires
        fence_acc(d);
        if (t % 32 == 0) release(bars + 8 * (STAGES + (it - 1) % STAGES));
#elif PINGPONG
        if (t == 0) bar_arrive(order_other);                                // the other consumer may start its mainloop
#endif
        TR_TILE(j, 1);
#if TMA_STORE
        if (tma_epi) {
#pragma unroll
            for (int m = 0; m < MSUB; ++m)
                epilogue_tma(d[m], &map_c, epi_base + c * 2 * EPI_BYTES, tm * BM + row0_in_tile + 64 * m, tn * BN,
                             alpha, bias, relu, N, t, 1 + c);
            TR_TILE(j, 2);
            continue;
        }
#endif
#pragma unroll
        for (int m = 0; m < MSUB; ++m)
            epilogue(d[m], C, M, N, tm * BM + row0_in_tile + 64 * m, tn * BN, alpha, beta, bias, relu, t);
        TR_TILE(j, 2);
    }
#if TMA_STORE
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");   // the last stores are done with shared memory
#endif
    TR_END(j * nk, j);
}
