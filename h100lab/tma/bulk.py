"""The ``cp.async.bulk`` family as operations on (shared memories, global memory, mbarriers, bulk groups).

State is plain and addressable (:mod:`h100lab.sync`): each CTA's shared memory is a
:class:`~h100lab.sync.smem.SharedMemory`, an mbarrier is an :class:`~h100lab.sync.mbarrier.MBarrier`
at an address in it, global memory is a :class:`GlobalMemory` (bytes at a base address), and a
thread's bulk async-groups are a :class:`BulkGroups`. A cluster is the list of its CTAs' shared
memories, indexed by ``%cluster_ctarank``.

Every copy is an :class:`AsyncOp` with three moments — *issue* (operands checked, the source's bytes
noted), *read* (the source is consumed) and *complete* (the destination is written; for mbarrier
completion a ``complete_tx`` of the byte count on the destination's barrier [PTX §9.7.9.25.4.1]; the
copy and the complete-tx are one event here). The ``bulk_*`` / ``tensor_*`` functions issue and complete
at once unless ``deferred=True``, in which case the returned op is completed later (by a
:class:`BulkGroups` wait, or by the simulator of :mod:`h100lab.tma.pipeline`).

Rules [PTX §9.7.9.25 asynchronous copy, §9.7.9.25.4.1 cp.async.bulk, §9.7.9.27 tensor copies; CPG
§10.29.1 Table 9; hopper-spec-facts §6, §12]:

* raw copies move a positive multiple of 16 bytes between 16-byte aligned addresses (else undefined);
* tensor copies need a 128-byte aligned shared operand (else a misaligned-address fault);
* the mbarrier is an 8-byte aligned object in the *destination* CTA's shared memory;
* multicast: ``ctaMask`` bit *i* selects the CTA with ``%cluster_ctarank`` *i*; each selected CTA
  receives the data at the same CTA-relative address and a complete-tx on its own barrier at the
  same offset; the issuing CTA need not be in the mask;
* changing a copy's source before the copy has read it is undefined behaviour (:class:`BulkHazard`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .descriptor import TensorMap
from .enums import promotion_bytes
from .l2 import CachePolicy, L2Cache
from .tensor import (TmaFault, check_tensor_copy, _apply as _reduce_apply, global_segments, load as _tensor_load, reduce as _tensor_reduce,
                     store as _tensor_store)

__all__ = ["GlobalMemory", "BulkCopyError", "BulkHazard", "AsyncOp", "BulkGroups", "bulk_copy_global_to_shared",
           "bulk_copy_shared_to_cluster", "bulk_copy_shared_to_global", "bulk_copy_multicast", "tensor_load",
           "tensor_load_multicast", "tensor_store", "tensor_reduce", "bulk_reduce", "prefetch_bulk",
           "prefetch_tensor", "BULK_REDUCE_TYPES", "mask_ranks"]


class BulkCopyError(ValueError):
    """A bulk copy whose operands break a PTX rule (its behaviour would be undefined)."""


class BulkHazard(BulkCopyError):
    """An asynchronous copy's source changed before the copy read it: undefined [PTX §9.7.9.25.1]."""


class GlobalMemory:
    """Global memory as bytes: ``nbytes`` bytes starting at device address ``base``."""

    def __init__(self, nbytes: int, base: int = 0x7F00_0000_0000):
        if nbytes <= 0 or base < 0 or base % 256:
            raise ValueError("global memory needs a positive size and a 256-byte aligned base (cudaMalloc's alignment)")
        self.base = int(base)
        self.array = np.zeros(int(nbytes), dtype=np.uint8)

    def __repr__(self) -> str:
        return f"GlobalMemory({self.array.size} B at 0x{self.base:x})"

    @classmethod
    def holding(cls, data: np.ndarray, base: int = 0x7F00_0000_0000) -> "GlobalMemory":
        """A global memory whose bytes start with ``data``'s bytes (``data`` at address ``base``)."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        g = cls(max(raw.size, 1), base)
        g.array[:raw.size] = raw
        return g

    def _off(self, addr: int, n: int) -> int:
        off = int(addr) - self.base
        if off < 0 or off + n > self.array.size:
            raise BulkCopyError(f"global range [0x{addr:x}, 0x{addr + n:x}) is outside the allocation "
                                f"[0x{self.base:x}, 0x{self.base + self.array.size:x}): an illegal address")
        return off

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        off = self._off(addr, nbytes)
        return self.array[off:off + nbytes].copy()

    def write(self, addr: int, data) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        off = self._off(addr, raw.size)
        self.array[off:off + raw.size] = raw

    def view(self, addr: int, nbytes: int | None = None) -> np.ndarray:
        """The bytes from ``addr`` on (a writable view), e.g. the array a tensor map describes."""
        n = self.array.size - (int(addr) - self.base) if nbytes is None else nbytes
        off = self._off(addr, n)
        return self.array[off:off + n]


# ------------------------------------------------------------------------------------------------

@dataclass
class AsyncOp:
    """One asynchronous bulk operation: what it moves and what completing it does.

    ``nbytes`` is the data delivered to *each* destination; ``destinations`` the CTA ranks written (or
    ``()`` for a global destination); ``hbm_bytes`` what the L2 model fetched from HBM for it (``None``
    without an L2 model). ``read()`` consumes the source (checking it was not changed since issue),
    ``complete()`` writes the destination and signals completion.
    """

    kind: str
    nbytes: int
    destinations: tuple[int, ...] = ()
    hbm_bytes: int | None = None
    _snapshot: Callable[[], bytes] | None = field(default=None, repr=False)
    _source_at_issue: bytes | None = field(default=None, repr=False)
    _data: bytes | None = field(default=None, repr=False)
    _do: Callable[[bytes | None], None] | None = field(default=None, repr=False)
    state: str = "issued"

    @property
    def delivered_bytes(self) -> int:
        """Bytes that land in shared or global memory: ``nbytes`` per destination."""
        return self.nbytes * max(1, len(self.destinations))

    def read(self) -> None:
        """The copy reads its source; raises :class:`BulkHazard` if the source changed since issue."""
        if self.state != "issued":
            return
        if self._snapshot is not None:
            self._data = self._snapshot()
        if self._snapshot is not None and self._data != self._source_at_issue:
            raise BulkHazard(f"{self.kind}: the source was modified after the copy was issued and before it was "
                             "read; modifying the source of an asynchronous copy before it completes is undefined "
                             "(PTX §9.7.9.25.1)")
        self.state = "read"

    def complete(self) -> None:
        """The destination is written and completion is signalled (complete-tx / group completion)."""
        if self.state == "complete":
            return
        self.read()
        if self._do is not None:
            self._do(self._data)
        self.state = "complete"


def _issue(op: AsyncOp, snapshot: Callable[[], bytes] | None, do: Callable[[bytes | None], None],
           deferred: bool) -> AsyncOp:
    """Record the source at issue; ``do(data)`` writes the destination from the bytes read."""
    op._snapshot = snapshot
    op._source_at_issue = snapshot() if snapshot is not None else None
    op._do = do
    if not deferred:
        op.complete()
    return op


class BulkGroups:
    """The bulk async-groups of one thread, with the data effects of their ops.

    The group bookkeeping is lesson 3's :class:`h100lab.sync.groups.BulkGroups` (``.state``);
    this class adds what completing an op *does* (its :class:`AsyncOp`). ``commit_group`` batches every
    uncommitted ``.bulk_group`` op of the thread into a new group (an empty group if there are none);
    ``wait_group(N)`` returns when at most the ``N`` most recent groups are pending — the older ops are
    complete; with ``read=True`` only their *sources* are guaranteed read (so shared memory can be reused)
    [PTX §9.7.9.27.2.1–2]. Ops within a group are unordered.
    """

    def __init__(self):
        from ..sync.groups import BulkGroups as _State

        self.state = _State()
        self._ops: dict[int, AsyncOp] = {}

    def __repr__(self) -> str:
        return f"BulkGroups({len(self.state.groups)} committed, {len(self.state.uncommitted)} uncommitted)"

    def add(self, op: AsyncOp) -> None:
        """A ``.bulk_group`` op was issued by this thread: it joins the uncommitted set."""
        k = len(self._ops)
        self._ops[k] = op
        self.state.issue(k)

    @property
    def uncommitted(self) -> list[AsyncOp]:
        return [self._ops[k] for k in self.state.uncommitted]

    @property
    def groups(self) -> list[list[AsyncOp]]:
        return [[self._ops[k] for k in g] for g in self.state.groups]

    def commit_group(self) -> int:
        """``cp.async.bulk.commit_group``; returns the new group's index."""
        return self.state.commit()

    @property
    def pending(self) -> int:
        """Committed groups not yet complete."""
        return self.state.pending()

    def wait_group(self, n: int, *, read: bool = False) -> None:
        """``cp.async.bulk.wait_group{.read} N``: all but the ``N`` most recent committed groups finish
        (``read``: finish reading their sources)."""
        for k in self.state.waits_for(n, read=read):
            op = self._ops[k]
            if read:
                op.read()
            else:
                op.complete()
            self.state.complete(k, read_only=read)


# ------------------------------------------------------------------------------------------------
# raw copies

def _check_raw(dst: int, src: int, size: int, what: str) -> None:
    if not isinstance(size, (int, np.integer)) or size <= 0 or size % 16:
        raise BulkCopyError(f"{what}: size {size} B is not a positive multiple of 16 bytes (PTX §9.7.9.25.4.1: "
                            "bulk copies move multiples of 16 bytes)")
    for nm, a in (("destination", dst), ("source", src)):
        if a % 16:
            raise BulkCopyError(f"{what}: {nm} address 0x{a:x} is not 16-byte aligned (PTX §9.7.9.25.4.1; CPG "
                                "§10.29.1 Table 9)")


def _mbar(smem, addr: int):
    from ..sync.mbarrier import MBarrier

    return MBarrier(smem, addr)


def _l2_read(l2: L2Cache | None, segs, promotion: int, policy: CachePolicy | None) -> int | None:
    if l2 is None:
        return None
    return l2.read_segments(segs, promotion=promotion, policy=policy).hbm_bytes


def bulk_copy_global_to_shared(smem, dst: int, gmem: GlobalMemory, src: int, size: int, mbar: int, *,
                               l2: L2Cache | None = None, policy: CachePolicy | None = None,
                               deferred: bool = False) -> AsyncOp:
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]``.

    Copies ``size`` bytes from global ``src`` to shared ``dst`` and performs complete-tx(size) on the
    mbarrier at ``mbar`` of the same CTA [PTX §9.7.9.25.4.1]. ``policy`` is the optional
    ``.L2::cache_hint`` operand (a :class:`~h100lab.tma.l2.CachePolicy`), applied in ``l2``.
    """
    _check_raw(dst, src, size, "cp.async.bulk global→shared")
    gmem._off(src, size)
    smem.check_range(dst, size)
    bar = _mbar(smem, mbar)
    hbm = _l2_read(l2, [(src, size)], 32, policy)
    op = AsyncOp("cp.async.bulk.shared::cluster.global", size, (smem.cta_rank,), hbm)

    def do(data):
        smem.write(dst, np.frombuffer(data, np.uint8))
        bar.complete_tx(size)

    return _issue(op, lambda: gmem.read(src, size).tobytes(), do, deferred)


def bulk_copy_shared_to_cluster(src_smem, src: int, dst_smem, dst: int, size: int, mbar: int, *,
                                deferred: bool = False) -> AsyncOp:
    """``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]``.

    Copies from the executing CTA's shared memory to a CTA of its cluster (distributed shared memory);
    the mbarrier ``mbar`` is in the *destination* CTA and receives complete-tx(size) [PTX §9.7.9.25.4.1].
    """
    _check_raw(dst, src, size, "cp.async.bulk shared::cta→shared::cluster")
    src_smem.check_range(src, size)
    dst_smem.check_range(dst, size)
    bar = _mbar(dst_smem, mbar)
    op = AsyncOp("cp.async.bulk.shared::cluster.shared::cta", size, (dst_smem.cta_rank,))

    def do(data):
        dst_smem.write(dst, np.frombuffer(data, np.uint8))
        bar.complete_tx(size, rank=src_smem.cta_rank)

    return _issue(op, lambda: src_smem.read(src, size).tobytes(), do, deferred)


def bulk_copy_shared_to_global(gmem: GlobalMemory, dst: int, smem, src: int, size: int, groups: BulkGroups, *,
                               l2: L2Cache | None = None, policy: CachePolicy | None = None) -> AsyncOp:
    """``cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size``.

    Added to ``groups`` (the issuing thread's bulk async-groups); it completes at a ``wait_group`` after
    ``commit_group`` [PTX §9.7.9.25.4.1, §9.7.9.27.2].
    """
    _check_raw(dst, src, size, "cp.async.bulk shared→global")
    gmem._off(dst, size)
    smem.check_range(src, size)
    op = AsyncOp("cp.async.bulk.global.shared::cta", size, ())

    def do(data):
        gmem.write(dst, np.frombuffer(data, np.uint8))
        if l2 is not None:
            l2.write(dst, size, policy=policy)

    _issue(op, lambda: smem.read(src, size).tobytes(), do, deferred=True)
    groups.add(op)
    return op


def mask_ranks(cta_mask: int, cluster_size: int) -> tuple[int, ...]:
    """The ``%cluster_ctarank`` values a ``ctaMask`` selects (bit *i* → rank *i*) [PTX §9.7.9.25.4.1; HW]."""
    if not isinstance(cta_mask, (int, np.integer)) or not 0 <= cta_mask < (1 << 16):
        raise BulkCopyError(f"ctaMask {cta_mask!r} is not a 16-bit value (PTX §9.7.9.25.4.1)")
    if cta_mask == 0:
        raise BulkCopyError("ctaMask 0 selects no CTA: a multicast copy needs at least one destination")
    ranks = tuple(i for i in range(16) if cta_mask >> i & 1)
    if ranks[-1] >= cluster_size:
        raise BulkCopyError(f"ctaMask 0x{cta_mask:x} selects rank {ranks[-1]}, but the cluster has {cluster_size} "
                            f"CTAs (ranks 0..{cluster_size - 1}); bit i names %cluster_ctarank i")
    return ranks


def bulk_copy_multicast(cluster: Sequence, dst: int, gmem: GlobalMemory, src: int, size: int, mbar: int,
                        cta_mask: int, *, issuer: int = 0, l2: L2Cache | None = None,
                        policy: CachePolicy | None = None, deferred: bool = False) -> AsyncOp:
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [dst], [src], size, [mbar], ctaMask``.

    Reads ``size`` bytes once and writes them at CTA-relative address ``dst`` of every CTA in
    ``cta_mask``; each of those CTAs' mbarrier at offset ``mbar`` receives complete-tx(size). The
    issuing CTA (``issuer``) need not be selected. sm_90a [PTX §9.7.9.25.4.1; hopper-spec-facts §6, §12].
    """
    _check_raw(dst, src, size, "cp.async.bulk multicast")
    ranks = mask_ranks(cta_mask, len(cluster))
    if not 0 <= issuer < len(cluster):
        raise BulkCopyError(f"issuer rank {issuer} is not in the cluster of {len(cluster)} CTAs")
    gmem._off(src, size)
    bars = []
    for r in ranks:
        cluster[r].check_range(dst, size)
        bars.append(_mbar(cluster[r], mbar))
    hbm = _l2_read(l2, [(src, size)], 32, policy)
    op = AsyncOp("cp.async.bulk.shared::cluster.global.multicast::cluster", size, ranks, hbm)

    def do(data):
        for r, b in zip(ranks, bars):
            cluster[r].write(dst, np.frombuffer(data, np.uint8))
            b.complete_tx(size, rank=issuer)

    return _issue(op, lambda: gmem.read(src, size).tobytes(), do, deferred)


# ------------------------------------------------------------------------------------------------
# tensor copies with completion

def _tensor_gmem(tm: TensorMap, gmem) -> np.ndarray:
    if isinstance(gmem, GlobalMemory):
        return gmem.view(tm.global_address)
    return gmem


def tensor_load(tensor_map: TensorMap, gmem, coords: Sequence[int], smem, dst: int, mbar: int, *,
                l2: L2Cache | None = None, policy: CachePolicy | None = None, deferred: bool = False) -> AsyncOp:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, coords], [mbar]``.

    The image of :func:`h100lab.tma.load` lands at ``dst`` and the barrier receives complete-tx of
    ``tensor_map.tx_bytes`` — the box's data size even when part of it is out of bounds [HW]. With an
    L2 model the rows are requested at the map's ``l2Promotion`` granularity.
    """
    g = _tensor_gmem(tensor_map, gmem)
    check_tensor_copy(tensor_map, coords, dst, "load")          # the hardware's faults, at issue
    bar = _mbar(smem, mbar)
    smem.check_range(dst, tensor_map.smem_bytes)
    hbm = _l2_read(l2, global_segments(tensor_map, coords), promotion_bytes(tensor_map.l2_promotion), policy)
    op = AsyncOp(f"cp.async.bulk.tensor.{tensor_map.rank}d.shared::cluster.global.tile", tensor_map.tx_bytes,
                 (smem.cta_rank,), hbm)

    def do(_):
        _tensor_load(tensor_map, g, coords, smem=smem, dst=dst)
        bar.complete_tx(tensor_map.tx_bytes)

    return _issue(op, None, do, deferred)


def tensor_load_multicast(tensor_map: TensorMap, gmem, coords: Sequence[int], cluster: Sequence, dst: int, mbar: int,
                          cta_mask: int, *, issuer: int = 0, l2: L2Cache | None = None,
                          policy: CachePolicy | None = None, deferred: bool = False) -> AsyncOp:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster``.

    One read of the box (the L2 model sees it once), the same image in every CTA of ``cta_mask`` at
    ``dst``, and complete-tx(``tx_bytes``) on each selected CTA's barrier at offset ``mbar`` [PTX
    §9.7.9.27.1.2]. Every selected CTA must have expected those bytes (``mbarrier.expect_tx``) itself.
    """
    g = _tensor_gmem(tensor_map, gmem)
    ranks = mask_ranks(cta_mask, len(cluster))
    check_tensor_copy(tensor_map, coords, dst, "load")
    bars = [_mbar(cluster[r], mbar) for r in ranks]
    for r in ranks:
        cluster[r].check_range(dst, tensor_map.smem_bytes)
    hbm = _l2_read(l2, global_segments(tensor_map, coords), promotion_bytes(tensor_map.l2_promotion), policy)
    op = AsyncOp(f"cp.async.bulk.tensor.{tensor_map.rank}d.shared::cluster.global.tile.multicast::cluster",
                 tensor_map.tx_bytes, ranks, hbm)

    def do(_):
        for r, b in zip(ranks, bars):
            _tensor_load(tensor_map, g, coords, smem=cluster[r], dst=dst)
            b.complete_tx(tensor_map.tx_bytes, rank=issuer)

    return _issue(op, None, do, deferred)


def tensor_store(tensor_map: TensorMap, smem, src: int, gmem, coords: Sequence[int], groups: BulkGroups, *,
                 l2: L2Cache | None = None, policy: CachePolicy | None = None) -> AsyncOp:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, coords], [src]``; completes via ``groups``."""
    g = _tensor_gmem(tensor_map, gmem)
    check_tensor_copy(tensor_map, coords, src, "store")          # negative corner, granule, alignment
    n = tensor_map.smem_bytes
    op = AsyncOp(f"cp.async.bulk.tensor.{tensor_map.rank}d.global.shared::cta.tile", tensor_map.tx_bytes, ())

    def do(data):
        img = np.zeros(src + n, np.uint8)
        img[src:] = np.frombuffer(data, np.uint8)
        _tensor_store(tensor_map, img, coords, g, src=src)
        if l2 is not None:
            for a, nb in global_segments(tensor_map, coords):
                l2.write(a, nb, policy=policy)

    _issue(op, lambda: smem.read(src, n).tobytes(), do, deferred=True)
    groups.add(op)
    return op


def tensor_reduce(tensor_map: TensorMap, smem, src: int, gmem, coords: Sequence[int], op: str,
                  groups: BulkGroups) -> AsyncOp:
    """``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>.tile.bulk_group [map, coords], [src]``.

    Element semantics and the allowed op/type pairs are :func:`h100lab.tma.reduce`'s [PTX §9.7.9.27.1.3].
    """
    from .tensor import reduce_type

    reduce_type(op, tensor_map.dtype)
    check_tensor_copy(tensor_map, coords, src, "reduce")
    g = _tensor_gmem(tensor_map, gmem)
    n = tensor_map.smem_bytes
    aop = AsyncOp(f"cp.reduce.async.bulk.tensor.{tensor_map.rank}d.global.shared::cta.{op}.tile",
                  tensor_map.tx_bytes, ())
    def do(data):
        img = np.zeros(src + n, np.uint8)
        img[src:] = np.frombuffer(data, np.uint8)
        _tensor_reduce(tensor_map, img, coords, g, op, src=src)

    _issue(aop, lambda: smem.read(src, n).tobytes(), do, deferred=True)
    groups.add(aop)
    return aop


#: (destination, redOp) → PTX types of the non-tensor ``cp.reduce.async.bulk`` [PTX §9.7.9.25.4.2]
BULK_REDUCE_TYPES = {
    ("shared::cluster", "add"): ("u32", "s32", "u64"),
    ("shared::cluster", "min"): ("u32", "s32"), ("shared::cluster", "max"): ("u32", "s32"),
    ("shared::cluster", "inc"): ("u32",), ("shared::cluster", "dec"): ("u32",),
    ("shared::cluster", "and"): ("b32",), ("shared::cluster", "or"): ("b32",), ("shared::cluster", "xor"): ("b32",),
    ("global", "add"): ("u32", "s32", "u64", "f32", "f64", "f16", "bf16"),
    ("global", "min"): ("u32", "s32", "u64", "s64", "f16", "bf16"),
    ("global", "max"): ("u32", "s32", "u64", "s64", "f16", "bf16"),
    ("global", "inc"): ("u32",), ("global", "dec"): ("u32",),
    ("global", "and"): ("b32", "b64"), ("global", "or"): ("b32", "b64"), ("global", "xor"): ("b32", "b64"),
}


def _np_type(t: str) -> np.dtype:
    if t == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"u32": "<u4", "s32": "<i4", "u64": "<u8", "s64": "<i8", "f32": "<f4", "f64": "<f8", "f16": "<f2",
                     "b32": "<u4", "b64": "<u8"}[t])


def bulk_reduce(dst_space: str, op: str, ptx_type: str, src_smem, src: int, size: int, *, gmem: GlobalMemory | None = None,
                dst: int = 0, dst_smem=None, mbar: int | None = None, groups: BulkGroups | None = None,
                noftz: bool = False, deferred: bool = False) -> AsyncOp:
    """``cp.reduce.async.bulk.<dst>.shared::cta.<completion>.<op>.<type> [dst], [src], size``.

    ``dst_space`` is ``"global"`` (``.bulk_group`` completion, ``groups`` required) or
    ``"shared::cluster"`` (``.mbarrier::complete_tx::bytes``, ``dst_smem`` and ``mbar`` required). Only the
    op/type pairs of [PTX §9.7.9.25.4.2] are accepted; ``.add.f16`` / ``.add.bf16`` need ``.noftz``.
    """
    allowed = BULK_REDUCE_TYPES.get((dst_space, op))
    if allowed is None:
        raise BulkCopyError(f"cp.reduce.async.bulk to .{dst_space} has no .{op} (PTX §9.7.9.25.4.2)")
    if ptx_type not in allowed:
        raise BulkCopyError(f"cp.reduce.async.bulk.{dst_space}.{op} takes {', '.join('.' + t for t in allowed)}, "
                            f"not .{ptx_type} (PTX §9.7.9.25.4.2)")
    if op == "add" and ptx_type in ("f16", "bf16") and not noftz:
        raise BulkCopyError(f"cp.reduce.async.bulk .add.{ptx_type} requires the .noftz qualifier (PTX §9.7.9.25.4.2)")
    _check_raw(dst, src, size, "cp.reduce.async.bulk")
    dt = _np_type(ptx_type)
    src_smem.check_range(src, size)
    name = f"cp.reduce.async.bulk.{dst_space}.shared::cta.{op}.{ptx_type}"

    def combine(old_bytes: np.ndarray, new_bytes: np.ndarray) -> np.ndarray:
        return _reduce_apply(op, ptx_type, old_bytes.view(dt), new_bytes.view(dt)).view(np.uint8)

    if dst_space == "global":
        if gmem is None or groups is None:
            raise BulkCopyError("a reduction into global memory needs gmem and the thread's bulk groups")
        gmem._off(dst, size)
        aop = AsyncOp(name, size, ())
        _issue(aop, lambda: src_smem.read(src, size).tobytes(),
               lambda data: gmem.write(dst, combine(gmem.read(dst, size), np.frombuffer(data, np.uint8))),
               deferred=True)
        groups.add(aop)
        return aop
    if dst_smem is None or mbar is None:
        raise BulkCopyError("a reduction into shared::cluster needs the destination CTA's memory and its mbarrier")
    dst_smem.check_range(dst, size)
    bar = _mbar(dst_smem, mbar)
    aop = AsyncOp(name, size, (dst_smem.cta_rank,))

    def do(data):
        dst_smem.write(dst, combine(dst_smem.read(dst, size), np.frombuffer(data, np.uint8)))
        bar.complete_tx(size, rank=src_smem.cta_rank)

    return _issue(aop, lambda: src_smem.read(src, size).tobytes(), do, deferred)


# ------------------------------------------------------------------------------------------------
# prefetch

def prefetch_bulk(l2: L2Cache, addr: int, size: int, *, policy: CachePolicy | None = None) -> int:
    """``cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [addr], size``: warm the L2; returns HBM bytes.

    ``size`` a multiple of 16, ``addr`` 16-byte aligned; a hint only — nothing is delivered and no
    completion is tracked [PTX §9.7.9.25.4.3].
    """
    _check_raw(addr, addr, size, "cp.async.bulk.prefetch")
    return l2.read(addr, size, policy=policy).hbm_bytes


def prefetch_tensor(l2: L2Cache, tensor_map: TensorMap, coords: Sequence[int], *,
                    policy: CachePolicy | None = None) -> int:
    """``cp.async.bulk.prefetch.tensor.Nd.L2.global.tile [map, coords]``: bring the box's rows into L2.

    The rows are those a load would read, at the map's promotion granularity; the swizzle does not
    matter to L2 (seed lesson 5 §13) [PTX §9.7.9.27.1.4]. Returns the bytes fetched from HBM.
    """
    return l2.read_segments(global_segments(tensor_map, coords), promotion=promotion_bytes(tensor_map.l2_promotion),
                            policy=policy).hbm_bytes
