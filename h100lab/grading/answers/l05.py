"""Exercise set 5 (chapter 5, "The cp.async.bulk family").

Every reference answer is computed by the model the chapter teaches (h100lab.tma, h100lab.sync,
h100lab.cluster) or, for a kernel exercise, by running the solution kernel on the emulator in the grader's
process (5.9) or from what the kernel must compute (5.10: each CTA's sum of its column's tiles; 5.11: the scaled
tile) — never typed in. The kernels include the book's shared helpers (h100lab/mbarrier.cuh) rather than restate them. The notebook states each exercise's parameters in its text; the same
values are defined here for the reference. The student edition imports nothing from this module.
"""
from __future__ import annotations

import numpy as np

from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/05-cp-async-bulk.md) -----------------------------
#: 5.1: one stage of a cluster GEMM: A box (64 × 128 bf16, multicast to this CTA) + B box (64 × 256 bf16, own load)
A_MAP = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[4096, 4096], global_strides=[8192],
             box_dim=[64, 128], element_strides=[1, 1], swizzle="128B")
B_MAP = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[4096, 4096], global_strides=[8192],
             box_dim=[64, 256], element_strides=[1, 1], swizzle="128B")
#: 5.2: barriers and tiles of a 3-stage pipeline
PLAN_BARRIERS = ["full[0]", "full[1]", "full[2]", "empty[0]", "empty[1]", "empty[2]"]
PLAN_TILES = [("A", 16 * 1024, "128B"), ("B", 8 * 1024, "64B")]
PLAN_STAGES = 3
#: 5.3: a 2 × 4 cluster; the tile goes to the CTAs whose %cluster_ctaid.x is 1
CLUSTER_SHAPE = (2, 4, 1)
#: 5.4: raw global → shared copies (dst, src, size): which are defined?
RAW_CANDIDATES = [(1024, 0, 4096), (1040, 48, 4096), (1024, 16, 100), (1032, 0, 64), (2048, 96, 16),
                  (4096, 4104, 512)]
#: 5.5: four stores, one per committed group, then cp.async.bulk.wait_group.read 1
STORES = 4
WAIT_N = 1
#: 5.6: a 64-line L2 holding 16 lines of weights (no hint); then 8 × 16 lines streamed with the given policy
L2_LINES, WEIGHT_LINES, STREAM_BATCHES = 64, 16, 8
#: 5.7: cp.reduce.async.bulk.global....inc.u32: old values in global memory and the shared operand
INC_OLD = [0, 3, 7, 9, 5, 0, 100, 4]
INC_VAL = [4, 3, 8, 2, 0, 0, 200, 4]
#: 5.8: a cluster of 8, mask 0b11110000, 10 boxes of A_MAP streamed
MC_CLUSTER, MC_MASK, MC_BOXES = 8, 0b11110000, 10


def raw_copy_is_defined(dst: int, src: int, size: int) -> bool:
    """Whether the model accepts ``cp.async.bulk`` global→shared with these operands."""
    from h100lab import tma
    from h100lab.sync.mbarrier import MBarrier
    from h100lab.sync.smem import SharedMemory

    s = SharedMemory(16384)
    MBarrier(s, 0).init(1)
    g = tma.GlobalMemory(16384)
    try:
        tma.bulk_copy_global_to_shared(s, dst, g, g.base + src, size, 0)
    except tma.BulkCopyError:
        return False
    return True


def groups_read_after_wait(stores: int = STORES, n: int = WAIT_N) -> int:
    """Committed groups whose sources are guaranteed read after ``wait_group.read n``."""
    from h100lab import tma
    from h100lab.sync.smem import SharedMemory

    s, g, grp = SharedMemory(16384), tma.GlobalMemory(16384), tma.BulkGroups()
    ops = []
    for i in range(stores):
        ops.append(tma.bulk_copy_shared_to_global(g, g.base + 256 * i, s, 256 * i, 256, grp))
        grp.commit_group()
    grp.wait_group(n, read=True)
    return sum(op.state in ("read", "complete") for op in ops)


def weights_resident(stream_policy: str | None) -> int:
    """Weight lines still in L2 after the stream (weights loaded without a hint, i.e. evict_normal)."""
    from h100lab import tma

    l2 = tma.L2Cache(L2_LINES * 128)
    l2.read(0, WEIGHT_LINES * 128)
    pol = tma.createpolicy_fractional(stream_policy) if stream_policy else None
    for k in range(STREAM_BATCHES):
        l2.read((k + 1) << 20, WEIGHT_LINES * 128, policy=pol)
    return sum(l2.contains(a) for a in range(0, WEIGHT_LINES * 128, 128))


def inc_result() -> list[int]:
    from h100lab import tma

    m = tma.encode_tiled("UINT32", 1, 0, [8], [], [8], [1])
    g = np.array(INC_OLD, np.uint32)
    s = np.zeros(256, np.uint8)
    s[:32].view(np.uint32)[:] = INC_VAL
    tma.reduce(m, s, [0], g, "inc")
    return [int(v) for v in g]


def multicast_requests() -> list[int]:
    """Bytes requested from L2: [one load per receiver, multicast]."""
    from h100lab import tma
    from h100lab.tma.pipeline import simulate_multicast

    tm = tma.encode_tiled(**A_MAP)
    out = []
    for mc in (False, True):
        r = simulate_multicast(MC_CLUSTER, MC_MASK, tm, iters=MC_BOXES, multicast=mc, trace=False, issuer=4)
        out.append(r.l2_request_bytes)
    return out


# ---- reference answers --------------------------------------------------------------------------
@exercise("5.1", points=2, hint="A CTA expects every byte that lands in its shared memory for the stage, whoever "
          "issued the copy.", mistakes=[Mistake("The multicast A box lands in this CTA too: its bytes complete on "
                                                 "this CTA's barrier.", answer=64 * 256 * 2),
                                         Mistake("Count bytes, not elements.", answer=64 * 128 + 64 * 256)])
def _expect_tx():
    from h100lab import tma

    return tma.encode_tiled(**A_MAP).tx_bytes + tma.encode_tiled(**B_MAP).tx_bytes


@exercise("5.2", points=2, hint="Barriers first (8 B each), then A[0], B[0], A[1], ... each placed at the next "
          "multiple of its swizzle pattern's period.")
def _plan():
    from h100lab import tma

    return tma.plan_smem(PLAN_BARRIERS, PLAN_TILES, stages=PLAN_STAGES).offset("B[2]")


@exercise("5.3", points=1, hint="Bit i of ctaMask selects the CTA whose %cluster_ctarank is i; the rank counts x "
          "fastest.", mistakes=[Mistake("The rank counts x fastest, not y: rank = x + nx·(y + ny·z).",
                                        answer=0b11110000)])
def _mask():
    from h100lab.cluster import cta_rank

    return sum(1 << cta_rank((1, y, 0), CLUSTER_SHAPE) for y in range(CLUSTER_SHAPE[1]))


@exercise("5.4", points=2, unordered=True, hint="Size a positive multiple of 16; source and destination 16-byte "
          "aligned.")
def _raw_valid():
    return [i for i, c in enumerate(RAW_CANDIDATES) if raw_copy_is_defined(*c)]


@exercise("5.5", points=1, hint="wait_group.read N leaves at most the N most recent committed groups pending.",
          mistakes=[Mistake("N counts the groups that may still be pending, not the ones that are done.", answer=1)])
def _groups():
    return groups_read_after_wait()


@exercise("5.6", points=2, hint="Without a hint every line is evict_normal and the least recently used go first — "
          "the weights. With evict_first the streamed lines are always the first victims.")
def _hints():
    return [weights_resident(None), weights_resident("evict_first")]


@exercise("5.7", points=1, hint=".inc: new = (old >= value) ? 0 : old + 1.")
def _inc():
    return inc_result()


@exercise("5.8", points=2, hint="Count the receivers in the mask; each ordinary load requests its own copy of the "
          "box.", mistakes=[Mistake("The mask 0b11110000 selects 4 CTAs, not 8.", answer=[8 * 10 * 16384, 10 * 16384])])
def _multicast():
    return multicast_requests()


# ---- kernel exercises (graded on the emulator in the grader's process) ---------------------------
from ..kernels import KernelRun, Property, Symptom, kernel_exercise  # noqa: E402

#: 5.9: a raw bulk copy of n floats global -> shared, bounded wait, status 1 when the phase completed
SOLUTION_5_9 = r"""
extern "C" __global__ void stage_in(const float* src, int n, float* out, int* status) {
    __shared__ alignas(128) float buf[1024];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    const unsigned bytes = n * sizeof(float);            // complete_tx counts bytes
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(buf))), "l"(src), "r"(bytes), "r"(b)
                     : "memory");
    }
    __syncthreads();
    unsigned done = 0;
    for (int i = 0; i < 32 && !done; ++i)                // a bounded wait
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(b) : "memory");
    if (threadIdx.x == 0) status[0] = done;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = 2.0f * buf[i];
}
"""
PROMPT_5_9 = SOLUTION_5_9.replace("    const unsigned bytes = n * sizeof(float);            // complete_tx counts bytes\n",
                                  "    const unsigned bytes = n;\n")
PLANTED_5_9 = SOLUTION_5_9.replace('"r"(b), "r"(bytes) : "memory");', '"r"(b), "r"(n) : "memory");')


def _run_5_9(program):
    from h100lab import emu

    x = np.random.default_rng(59).standard_normal(800).astype(np.float32)
    g = emu.to_device(x)
    out, st = emu.zeros(800, np.float32), emu.zeros(1, np.int32)
    stats = emu.launch(program.function("stage_in"), 1, 128, g, np.int32(800), out, st)
    return KernelRun({"out": out.to_host(), "status": st.to_host()}, stats)


_CT_HINT = ("The barrier's phase did not complete: the count announced with expect_tx and the size of the copy are "
            "both in bytes, and they must be equal.")
kernel_exercise("5.9", run=_run_5_9, reference=SOLUTION_5_9, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: int(out["status"][0]) == 0, _CT_HINT),
                          Symptom(lambda out, ref, st: not np.array_equal(out["out"][200:], ref["out"][200:]),
                                  "Only part of the data arrived: the copy's size operand is in bytes.")],
                properties=[Property(lambda out, st: None if st.tma_bytes == 3200 else
                                     f"the copy delivered {st.tma_bytes} bytes, not the {3200} of the input")],
                mistakes=[Mistake(_CT_HINT, answer=PLANTED_5_9),
                          Mistake("Only part of the data arrived: the copy's size operand is in bytes.",
                                  answer=PROMPT_5_9)])


#: 5.10: a cluster of n CTAs in rows of `cols`; the first row's CTAs multicast one stream each to their column
SOLUTION_5_10 = r"""
// Lesson 5 exercise: a cluster of n CTAs seen as rows of `cols` CTAs. CTA rank r belongs to column r % cols and
// sums that column's stream of K tiles (tile k of stream c is the box at row (c * K + k) * 8 of the tensor).
// The CTAs of the first row are the issuers: rank c multicasts every tile of stream c, once, to every CTA of
// column c, through two shared-memory stages. Every CTA expects the bytes it receives on its own `full`
// barrier; issuer c's `empty` barrier counts the CTAs of its column releasing a stage (remote arrives, mapa).
// out[CTA] = the CTA's element-wise sum of its K tiles; masks[CTA] = the ctaMask it computed.
#include <h100lab/tensormap.cuh>
#include <h100lab/mbarrier.cuh>        // smem_u32, cluster_rank, cluster_size, cluster_sync (the book's helpers)

#define BOX_X 32                        // one tile: 32 fp32 x 8 rows = 1024 bytes
#define BOX_Y 8
#define TILE_ELEMS (BOX_X * BOX_Y)
#define TILE_BYTES (TILE_ELEMS * 4)
#define STAGES 2

namespace {

// the wait of lesson 5's cluster pipelines: acquire at cluster scope (the releases are remote arrives)
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

}  // namespace

extern "C" __global__ void column_multicast(const __grid_constant__ CUtensorMap map, int k_tiles, int cols,
                                            float* __restrict__ out, unsigned* __restrict__ masks) {
    __shared__ alignas(1024) float buf[STAGES][TILE_ELEMS];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned rank = cluster_rank(), n = cluster_size();
    const unsigned col = rank % cols;                   // this CTA's column; its issuer is the CTA of rank `col`
    // the ctaMask of the multicasts this CTA issues (when it is an issuer): which ranks receive stream `col`
    unsigned short mask = 0;
    for (unsigned r = col; r < n; r += cols) mask |= 1u << r;        // bit r: %cluster_ctarank r receives
    if (threadIdx.x == 0) masks[blockIdx.x] = mask;                   // (the grader reads the masks)
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[s])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(&empty[s])), "r"(n / cols) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster_sync();                     // every barrier of the cluster exists before any byte arrives
    float acc = 0.0f;
    for (int k = 0; k < k_tiles; ++k) {
        const int s = k % STAGES;
        const unsigned phase = (k / STAGES) & 1;
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(smem_u32(&full[s])), "r"(TILE_BYTES) : "memory");
            if (rank == col) {          // an issuer: wait until its column released stage s, then multicast tile k
                if (k >= STAGES) wait_parity(smem_u32(&empty[s]), phase ^ 1);
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                             :: "r"(smem_u32(buf[s])), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(0),
                                "r"((static_cast<int>(col) * k_tiles + k) * BOX_Y), "r"(smem_u32(&full[s])), "h"(mask)
                             : "memory");
            }
        }
        wait_parity(smem_u32(&full[s]), phase);
        acc += buf[s][threadIdx.x];
        __syncthreads();                                 // every thread of this CTA is done with stage s
        if (threadIdx.x == 0) {                          // release stage s on the issuer's empty barrier
            unsigned remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(&empty[s])), "r"(col));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
        }
    }
    out[blockIdx.x * TILE_ELEMS + threadIdx.x] = acc;
    cluster_sync();                     // nobody exits while a multicast or a remote arrive may target it
}
"""
_MASK_LOOP = "    for (unsigned r = col; r < n; r += cols) mask |= 1u << r;        // bit r: %cluster_ctarank r receives\n"
_MASK_DECL = "    unsigned short mask = 0;\n"
assert _MASK_LOOP in SOLUTION_5_10 and _MASK_DECL in SOLUTION_5_10
PROMPT_5_10 = SOLUTION_5_10.replace(_MASK_DECL + _MASK_LOOP, "    unsigned short mask = 0;   // TODO: which ranks receive "
                                                             "stream `col`?\n")
PLANTED_5_10_ALL = SOLUTION_5_10.replace(_MASK_LOOP, "    mask = static_cast<unsigned short>((1u << n) - 1);\n")
PLANTED_5_10_CONTIG = SOLUTION_5_10.replace(_MASK_LOOP, "    mask = static_cast<unsigned short>(((1u << (n / cols)) - 1) << "
                                                        "(col * (n / cols)));\n")
PLANTED_5_10_NOSELF = SOLUTION_5_10.replace(_MASK_LOOP, "    for (unsigned r = col + cols; r < n; r += cols) mask |= 1u << r;\n")
PLANTED_5_10_SELF = SOLUTION_5_10.replace(_MASK_LOOP, "    mask = static_cast<unsigned short>(1u << rank);\n")
PLANTED_5_10_GRID = SOLUTION_5_10.replace(_MASK_LOOP, "    for (unsigned r = blockIdx.x; r < gridDim.x; r += cols) mask |= 1u << r;\n")
#: (cluster size, cols, clusters, tiles per stream) of the grader's launches
E10_CASES = ((4, 2, 2, 5), (8, 4, 1, 3))
_UNSET = 0xFFFFFFFF


def _tensor_5_10(i: int) -> np.ndarray:
    n, cols, _, k = E10_CASES[i]
    return np.random.default_rng(510 + i).integers(-8, 8, (cols * k * 8, 32)).astype(np.float32)


def _run_5_10(program):
    from h100lab import emu
    from h100lab.emu.errors import EmuError

    out, stats, seen = {}, [], {}
    for i, (n, cols, clusters, k) in enumerate(E10_CASES):
        x = _tensor_5_10(i)
        g = emu.to_device(x)
        m = emu.encode_tiled("FLOAT32", 2, g, [32, x.shape[0]], [128], [32, 8], [1, 1])
        sums = emu.zeros((n * clusters, 256), np.float32)
        masks = emu.to_device(np.full(n * clusters, _UNSET, np.uint32))      # a ctaMask is 16 bits
        try:
            stats.append(emu.launch(program.function("column_multicast"), n * clusters, 256, m, np.int32(k),
                                    np.int32(cols), sums, masks, cluster=(n, 1, 1), max_idle_rounds=50))
        except EmuError as exc:      # the masks the CTAs computed before the run stopped tell the symptoms why
            seen[i] = masks.to_host()
            exc.masks = seen
            raise
        seen[i] = masks.to_host()
        out[f"sums{i}"], out[f"masks{i}"] = sums.to_host(), seen[i]
    return KernelRun(out, stats)


def _expect_5_10():
    """CTA b of a cluster sums, element by element, the tiles of stream (rank % cols) in order."""
    out = {}
    for i, (n, cols, clusters, k) in enumerate(E10_CASES):
        tiles = _tensor_5_10(i).reshape(cols, k, 256)
        acc = np.zeros((cols, 256), np.float32)
        for j in range(k):
            acc = acc + tiles[:, j]
        out[f"sums{i}"] = np.stack([acc[b % n % cols] for b in range(n * clusters)])
    return out


def _issuer_masks(out, err):
    """(cluster size, cols, issuer rank, its mask) of every issuer the run computed a mask for."""
    seen = ({i: out[f"masks{i}"] for i in range(len(E10_CASES)) if f"masks{i}" in out} if out is not None
            else getattr(err, "masks", {}))
    for i, masks in seen.items():
        n, cols, clusters, _ = E10_CASES[i]
        for c in range(clusters):
            for r in range(cols):
                if int(masks[c * n + r]) != _UNSET:      # a CTA the run stopped before it computed its mask
                    yield n, cols, r, int(masks[c * n + r])


def _column(n, cols, r):
    return sum(1 << q for q in range(r, n, cols))


def _masks_where(test):
    return lambda out, ref, err: any(test(n, cols, r, m) for n, cols, r, m in _issuer_masks(out, err))


_NOBODY = "With an empty ctaMask no CTA receives the tile, yet every CTA of the issuer's column expects its bytes."
_RANK = ("ctaMask selects CTAs of the issuer's own cluster: bit r names %cluster_ctarank r, not the CTA's index in the "
         "grid.")
_EXTRA = ("The mask selects a CTA outside the issuer's column: that CTA receives a stream it does not expect, on top of "
          "its own, into the same stage. A column is the CTAs whose rank leaves the same remainder modulo cols — "
          "they are not neighbours.")
_ISSUER = ("The issuer waits for the tile on its own full barrier, but its own bit is not in the mask: the issuer "
           "receives its multicast only if it selects itself.")
_MISSING = ("CTAs of the issuer's column wait for tiles that never come: every CTA that reads the stream needs its bit "
            "in the issuer's mask, not only the issuer.")
kernel_exercise("5.10", run=_run_5_10, expect=_expect_5_10, points=3, budget=60,
                symptoms=[Symptom(_masks_where(lambda n, cols, r, m: m >> n != 0), _RANK),
                          Symptom(_masks_where(lambda n, cols, r, m: m == 0), _NOBODY),
                          Symptom(_masks_where(lambda n, cols, r, m: m & ~_column(n, cols, r) != 0), _EXTRA),
                          Symptom(_masks_where(lambda n, cols, r, m: not m >> r & 1), _ISSUER),
                          Symptom(_masks_where(lambda n, cols, r, m: m != _column(n, cols, r)), _MISSING)],
                properties=[Property(lambda out, st: None if sum(s.copies for s in st) == sum(
                    cols * clusters * k for _, cols, clusters, k in E10_CASES) else
                    f"{sum(s.copies for s in st)} copies were issued: with multicast each cluster reads each tile once")],
                mistakes=[Mistake(_NOBODY, answer=PROMPT_5_10), Mistake(_EXTRA, answer=PLANTED_5_10_ALL),
                          Mistake(_EXTRA, answer=PLANTED_5_10_CONTIG), Mistake(_ISSUER, answer=PLANTED_5_10_NOSELF),
                          Mistake(_MISSING, answer=PLANTED_5_10_SELF), Mistake(_RANK, answer=PLANTED_5_10_GRID)])

#: 5.11: a warp-specialised epilogue: warps 1-3 write the tile and arrive on an mbarrier, warp 0 waits on it and
#: issues the TMA store. The fence belongs to each writer, after its writes and before its arrive — there is no
#: __syncthreads between the writes and the store here, and the one before the writes is where the chapter's kernel
#: (fence, then __syncthreads, then the store) would put it.
SOLUTION_5_11 = r"""
#include <h100lab/tensormap.cuh>
// y (rows of 32 fp32) = a * in, block b storing rows 8b .. 8b + 7 through the tensor map (box 32 x 8); 128 threads:
// warps 1-3 compute the tile, warp 0 stores it once every writer has arrived on `ready`
extern "C" __global__ void scale_and_store(const __grid_constant__ CUtensorMap out_map, const float* in, float a) {
    __shared__ alignas(128) float tile[8 * 32];
    __shared__ alignas(8) unsigned long long ready;
    const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&ready));
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 96;" :: "r"(bar) : "memory");
    __syncthreads();
    if (threadIdx.x >= 32) {                            // the writers: 96 threads
        for (int i = threadIdx.x - 32; i < 8 * 32; i += 96) tile[i] = a * in[blockIdx.x * 256 + i];
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
    } else if (threadIdx.x == 0) {                      // the issuer
        asm volatile("{\n\t.reg .pred p;\nW_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t"
                     "@!p bra W_%=;\n\t}" :: "r"(bar) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(reinterpret_cast<unsigned long long>(&out_map)), "r"(0), "r"(8 * (int)blockIdx.x),
                        "r"(static_cast<unsigned>(__cvta_generic_to_shared(tile))) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
"""
_FENCE_LINE = '        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n'
_ARRIVE_5_11 = '        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");\n'
_STORE_5_11 = '        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group'
assert SOLUTION_5_11.count(_FENCE_LINE) == 1 and _ARRIVE_5_11 in SOLUTION_5_11 and _STORE_5_11 in SOLUTION_5_11
PROMPT_5_11 = SOLUTION_5_11.replace(_FENCE_LINE, "")
#: the chapter's place: every thread fences, then __syncthreads — here before the writes
SYNC_5_11 = PROMPT_5_11.replace("    __syncthreads();\n", "    " + _FENCE_LINE.lstrip() + "    __syncthreads();\n", 1)
#: the issuer fences, after its wait, before the store
ISSUER_5_11 = PROMPT_5_11.replace(_STORE_5_11, _FENCE_LINE + _STORE_5_11, 1)
assert len({PROMPT_5_11, SYNC_5_11, ISSUER_5_11}) == 3
# (A writer fencing after its arrive is wrong too — nothing orders that fence before the issuer's store — but the
# emulator checks the bytes when the store is issued, and in every schedule tried (seeds 0-11, quantum 1) the
# writers' fences had run by then, so it is no planted mistake here: the emulator cannot be shown to reject it.)


def _run_5_11(program):
    from h100lab import emu
    from h100lab.emu.errors import EmuError

    x = np.random.default_rng(511).standard_normal(4 * 256).astype(np.float32)
    g = emu.to_device(x)
    y = emu.zeros((32, 32), np.float32)
    m = emu.encode_tiled("FLOAT32", 2, y, [32, 32], [128], [32, 8], [1, 1])
    try:
        stats = emu.launch(program.function("scale_and_store"), 4, 128, m, g, np.float32(1.5))
    except EmuError as exc:     # the symptoms tell a missing fence from a misplaced one by the compiled PTX
        exc.has_proxy_fence = "fence.proxy.async" in program.ptx
        raise
    return KernelRun({"y": y.to_host()}, stats)


def _expect_5_11():
    x = np.random.default_rng(511).standard_normal(4 * 256).astype(np.float32)
    return {"y": (np.float32(1.5) * x).reshape(32, 32)}


def _unfenced(present: bool):
    def test(out, ref, err):
        return (out is None and type(err).__name__ == "ProxyFenceError" and "ordinary stores" in str(err)
                and err.has_proxy_fence == present)
    return test


_FENCE_WHERE = ("fence.proxy.async orders, for the async proxy, the writes its own thread made before it. Here the "
                "issuer learns that the tile is complete from the writers' arrivals on the barrier — so whose fence, "
                "between which two of their steps, orders the writes before the store?")
_FENCE_NONE = ("The TMA store reads shared memory through the async proxy: ordinary stores to the tile are not "
               "visible to it until the writers fence them, before they signal that the tile is ready.")
kernel_exercise("5.11", run=_run_5_11, expect=_expect_5_11, points=3, budget=60,
                symptoms=[Symptom(_unfenced(True), _FENCE_WHERE), Symptom(_unfenced(False), _FENCE_NONE)],
                mistakes=[Mistake(_FENCE_NONE, answer=PROMPT_5_11), Mistake(_FENCE_WHERE, answer=SYNC_5_11),
                          Mistake(_FENCE_WHERE, answer=ISSUER_5_11)])
