"""Exercise set 5 (chapter 5, "The cp.async.bulk family").

Every reference answer is computed by the model the chapter teaches (h100lab.tma, h100lab.sync,
h100lab.cluster) or, for a kernel exercise (5.9-5.11), by running the solution kernel on the emulator in the
grader's process — never typed in. The notebook states each exercise's parameters in its text; the same
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


def _mc_source() -> str:
    from h100lab.nvrtc import kernel_source

    return kernel_source("l05_multicast_pipeline")


_MASK_LINE = "    const unsigned short mask = static_cast<unsigned short>((1u << n) - 1);   // every CTA of the cluster\n"
SOLUTION_5_10 = _mc_source()
PROMPT_5_10 = SOLUTION_5_10.replace(_MASK_LINE, "    const unsigned short mask = 0;   // TODO: which CTAs receive each tile?\n")
PLANTED_5_10 = SOLUTION_5_10.replace(_MASK_LINE, "    const unsigned short mask = static_cast<unsigned short>((1u << n) - 2);\n")


def _run_5_10(program):
    from h100lab import emu

    x = np.random.default_rng(510).integers(-8, 8, (6 * 8, 32)).astype(np.float32)
    g = emu.to_device(x)
    m = emu.encode_tiled("FLOAT32", 2, g, [32, 48], [128], [32, 8], [1, 1])
    out, by = emu.zeros((4, 256), np.float32), emu.zeros(4, np.uint32)
    stats = emu.launch(program.function("multicast_sum"), 4, 256, m, np.int32(6), out, by, cluster=(2, 1, 1),
                       max_idle_rounds=50)
    return KernelRun({"sums": out.to_host()}, stats)


def _mask_expr(src):
    import re

    m = re.search(r"const unsigned short mask\s*=\s*([^;]*);", src) if isinstance(src, str) else None
    return m.group(1).replace(" ", "") if m else None


_ISSUER = ("The issuer's own CTA expects the tile on its full barrier but its bit is not in the mask: bit i of "
           "ctaMask selects %cluster_ctarank i, and the issuer receives only if its own bit is set.")
_NOBODY = "With an empty mask no CTA receives anything, yet every CTA expects the tile's bytes."
kernel_exercise("5.10", run=_run_5_10, reference=SOLUTION_5_10, points=3, budget=60,
                properties=[Property(lambda out, st: None if st.copies == 2 * 6 else
                                     f"{st.copies} copies were issued: with multicast each cluster reads each tile once")],
                mistakes=[Mistake(_ISSUER, answer=PLANTED_5_10, when=lambda v, ref: (_mask_expr(v) or "").endswith("-2)")),
                          Mistake(_NOBODY, answer=PROMPT_5_10, when=lambda v, ref: _mask_expr(v) == "0")])

#: 5.11: results written to shared memory by every warp, then stored with one TMA store
SOLUTION_5_11 = r"""
#include <h100lab/tensormap.cuh>
extern "C" __global__ void scale_and_store(const __grid_constant__ CUtensorMap out_map, const float* in, float a) {
    __shared__ alignas(128) float tile[8 * 32];          // the box: 32 fp32 x 8 rows
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x) tile[i] = a * in[blockIdx.x * 256 + i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // every writer: generic writes -> async proxy
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(reinterpret_cast<unsigned long long>(&out_map)), "r"(0), "r"(8 * (int)blockIdx.x),
                        "r"(static_cast<unsigned>(__cvta_generic_to_shared(tile))) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
"""
_FENCE_LINE = '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // every writer: generic writes -> async proxy\n'
PROMPT_5_11 = SOLUTION_5_11.replace(_FENCE_LINE, "")
PLANTED_5_11 = PROMPT_5_11.replace('    if (threadIdx.x == 0) {\n',
                                   '    if (threadIdx.x == 0) {\n        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n')


def _run_5_11(program):
    from h100lab import emu

    x = np.random.default_rng(511).standard_normal(4 * 256).astype(np.float32)
    g = emu.to_device(x)
    y = emu.zeros((32, 32), np.float32)
    m = emu.encode_tiled("FLOAT32", 2, y, [32, 32], [128], [32, 8], [1, 1])
    stats = emu.launch(program.function("scale_and_store"), 4, 128, m, g, np.float32(1.5))
    return KernelRun({"y": y.to_host()}, stats)


def _fence_only_in_thread0(src, ref):
    import re

    return isinstance(src, str) and re.search(r"if\s*\(\s*threadIdx\.x\s*==\s*0\s*\)\s*\{\s*asm\s+volatile\s*\(\s*"
                                              r"\"fence\.proxy\.async", src) is not None


_FENCE_ALL = ("Every warp that wrote the tile must fence its own generic writes (fence.proxy.async) before the "
              "barrier; a fence by the issuing thread covers only its own writes.")
_FENCE_NONE = ("The TMA store reads shared memory through the async proxy: ordinary stores to the tile are not "
               "visible to it until the writers fence them (then synchronise, then store).")
kernel_exercise("5.11", run=_run_5_11, reference=SOLUTION_5_11, points=3, budget=60,
                mistakes=[Mistake(_FENCE_ALL, answer=PLANTED_5_11, when=_fence_only_in_thread0),
                          Mistake(_FENCE_NONE, answer=PROMPT_5_11,
                                  when=lambda v, ref: isinstance(v, str) and "fence.proxy.async" not in v)])
