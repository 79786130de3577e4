"""Exercise set 5 (chapter 5, "The cp.async.bulk family").

Every reference answer is computed by the model the chapter teaches (h100lab.tma, h100lab.sync,
h100lab.cluster), never typed in. The exercises' data is defined here and imported by the solutions.
"""
from __future__ import annotations

import numpy as np

from ..registry import exercise

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
          "issued the copy: tx_bytes of the A box plus tx_bytes of the B box.")
def _expect_tx():
    from h100lab import tma

    return tma.encode_tiled(**A_MAP).tx_bytes + tma.encode_tiled(**B_MAP).tx_bytes


@exercise("5.2", points=2, hint="Barriers first (8 B each), then A[0], B[0], A[1], ... each at its swizzle's "
          "alignment (1024 for 128B, 512 for 64B): plan_smem(...).offset('B[2]').")
def _plan():
    from h100lab import tma

    return tma.plan_smem(PLAN_BARRIERS, PLAN_TILES, stages=PLAN_STAGES).offset("B[2]")


@exercise("5.3", points=1, hint="rank = x + nx·(y + ny·z); bit rank of ctaMask selects a CTA.")
def _mask():
    from h100lab.cluster import cta_rank

    return sum(1 << cta_rank((1, y, 0), CLUSTER_SHAPE) for y in range(CLUSTER_SHAPE[1]))


@exercise("5.4", points=2, unordered=True, hint="Size a positive multiple of 16; source and destination 16-byte "
          "aligned.")
def _raw_valid():
    return [i for i, c in enumerate(RAW_CANDIDATES) if raw_copy_is_defined(*c)]


@exercise("5.5", points=1, hint="wait_group.read N: all but the N most recent committed groups have read their "
          "sources.")
def _groups():
    return groups_read_after_wait()


@exercise("5.6", points=2, hint="Without a hint every line is evict_normal and the least recently used go first — "
          "the weights. With evict_first the streamed lines are always the first victims.")
def _hints():
    return [weights_resident(None), weights_resident("evict_first")]


@exercise("5.7", points=1, hint=".inc: new = (old >= value) ? 0 : old + 1.")
def _inc():
    return inc_result()


@exercise("5.8", points=2, hint="Four receivers; one box of 16 KB each time: unicast requests it four times.")
def _multicast():
    return multicast_requests()
