"""TMA work in lesson 3's simulator: tensor copies and multicast as operations of the TMA unit, and two
whole programs — a TMA copy stream (the kernel ``l05_tma_copy.cu``) and a multicast pipeline.

The plug-in pattern is the simulator's own (:mod:`h100lab.sim.machine`): reserve the pipes the bytes
cross (the issuing SM's TMA unit, the GPU's HBM), schedule the completion with ``engine.at``, and on
completion perform complete-tx on the destination's mbarrier and append a trace record. Assumptions
of this model (stated, not measured):

* a tensor copy occupies the issuing SM's TMA pipe for its delivered bytes (``tx_bytes``) and the
  issuing CTA's slice of the device memory (:class:`~h100lab.sim.machine.GPU`: bandwidth / CTAs, reads
  and writes both counted) for the bytes the L2 model fetched (all of them without an L2 model). The
  two pipes queue independently (each FIFO from the issue time) and the copy lands when both are done,
  plus the TMA latency (``tma_latency_ns``, data in L2) and, when it read bytes from DRAM,
  ``dram_latency_ns`` (a raw bulk load here always reads DRAM: the copy stream never re-reads); a store frees its shared-memory source when the TMA pipe has read it and
  completes when its slice has written it, plus the latency. The numbers and their calibration:
  :mod:`h100lab.sim.timing`.
* a multicast reads once and lands in every selected CTA at the same time (the cluster crossbar is not
  a resource here); each destination's barrier gets complete-tx when the data lands;
* L2 bandwidth and the crossbar are not modelled: the byte counts (:class:`MulticastResult`) show
  what multicast saves; the time it saves on a real GPU depends on those unmodelled paths.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..sim.machine import GPU, Warp
from ..sim.timing import Timing, default_timing
from ..sync import mbarrier as mb_ops
from ..sync.trace import Record
from .bulk import mask_ranks
from .descriptor import TensorMap
from .enums import promotion_bytes
from .l2 import CachePolicy, L2Cache
from .tensor import check_tensor_copy, global_segments

__all__ = ["tensor_load", "tensor_load_multicast", "tensor_store", "bulk_load", "bulk_store", "CopyStreamResult",
           "simulate_copy_stream", "MulticastResult", "simulate_multicast", "copy_stream_layout"]


def _reserve(tma, hbm, t: float, tma_bytes: int, hbm_bytes: int) -> float:
    """Queue ``tma_bytes`` on the SM's TMA pipe and ``hbm_bytes`` on HBM, each from ``t``; the later finish."""
    _, f1 = tma.reserve(t, tma_bytes)
    if not hbm_bytes:
        return f1
    _, f2 = hbm.reserve(t, hbm_bytes)
    return max(f1, f2)


def _latency(t: Timing, hbm_bytes: int) -> float:
    """Issue-to-landing latency beyond the transfer: L2 latency, plus the DRAM latency if any byte came from DRAM."""
    return t.tma_latency_ns + (t.dram_latency_ns if hbm_bytes else 0.0)


def _hbm_bytes(tm: TensorMap, coords, l2: L2Cache | None, policy: CachePolicy | None) -> int:
    if l2 is None:
        return tm.tx_bytes
    return l2.read_segments(global_segments(tm, coords), promotion=promotion_bytes(tm.l2_promotion),
                            policy=policy).hbm_bytes


def _land(arg) -> None:
    w, t0, sm, dst, nbytes, bar, op, label = arg
    sb = sm.bars.get(bar) or sm.barrier(bar)
    ph = sb.completions
    sb.apply(mb_ops.word_complete_tx, nbytes)
    if w.gpu.trace is not None:
        lane = f"{w.sm.prefix}tma load" if "multicast" not in op else f"{sm.prefix}smem ← multicast"
        w.gpu.trace.append(Record(t0, w.engine.now, w.actor, op, lane, "async", "w", dst, nbytes, bar, ph,
                                  "release", -1, sm.rank, label))


def tensor_load(w: Warp, tensor_map: TensorMap, coords: Sequence[int], dst: int, bar: int, *,
                l2: L2Cache | None = None, policy: CachePolicy | None = None, cta: int | None = None,
                label: str = "") -> float:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`` issued by warp ``w``.

    Returns the issue cost to ``yield``; the box's ``tx_bytes`` complete-tx on ``bar`` (of CTA ``cta``,
    default the own) when the data lands: issue + transfer + TMA latency later [PTX §9.7.9.27.1.2].
    The destination must be 128-byte aligned (the hardware faults otherwise).
    """
    sm = w.sm if cta is None or cta == w.sm.rank else w.sm.peer(cta)
    op = f"cp.async.bulk.tensor.{tensor_map.rank}d.shared::cluster.global.tile"
    return _tensor_copy(w, tensor_map, coords, dst, bar, [sm], op, [label or f"box {tuple(coords)}"], l2, policy)


def tensor_load_multicast(w: Warp, tensor_map: TensorMap, coords: Sequence[int], dst: int, bar: int, cta_mask: int,
                          *, l2: L2Cache | None = None, policy: CachePolicy | None = None, label: str = "") -> float:
    """The ``.multicast::cluster`` form: one read (one TMA pipe and HBM reservation by the issuer), the
    data and a complete-tx of ``tx_bytes`` landing in every CTA of ``cta_mask`` at offset ``dst`` /
    ``bar`` [PTX §9.7.9.27.1.2; hopper-spec-facts §12]."""
    sms = [w.sm.peer(r) for r in mask_ranks(cta_mask, w.gpu.cluster_size)]
    op = f"cp.async.bulk.tensor.{tensor_map.rank}d.shared::cluster.global.tile.multicast::cluster"
    labels = [label or f"box {tuple(coords)} → cta{sm.rank}" for sm in sms]
    return _tensor_copy(w, tensor_map, coords, dst, bar, sms, op, labels, l2, policy)


def _tensor_copy(w: Warp, tm: TensorMap, coords: Sequence[int], dst: int, bar: int, sms: list, op: str,
                 labels: list[str], l2: L2Cache | None, policy: CachePolicy | None) -> float:
    """One tensor read by the issuing SM's TMA pipe and HBM share, landing at ``dst`` with a complete-tx of
    ``tx_bytes`` on ``bar`` in every SM of ``sms``. The destination must be 128-byte aligned (the hardware
    faults otherwise, CPG §10.29.2 Table 10), and the box must start on a 16-byte granule of dimension 0:
    :func:`h100lab.tma.tensor.check_tensor_copy`, the rule every tensor copy of the package applies."""
    check_tensor_copy(tm, coords, dst, "load")
    for sm in sms:
        sm.smem.check_range(dst, tm.smem_bytes)
        sm.bars.get(bar) or sm.barrier(bar)
    t0 = w.engine.now
    t = w.gpu.timing
    hb = _hbm_bytes(tm, coords, l2, policy)
    if w.gpu.model2:                     # memory model 2: op queue, latency parts (h100lab.sim.timing)
        landed = w.load_done_v2(t0, tm.tx_bytes, dram=hb > 0, hbm_bytes=hb)
    else:
        landed = _reserve(w.sm.tma, w.sm.hbm, t0 + t.tma_issue_ns, tm.tx_bytes, hb) + _latency(t, hb)
    for sm, lab in zip(sms, labels):
        w.engine.at(landed, _land, (w, t0, sm, dst, tm.tx_bytes, bar, op, lab))
    return t.tma_issue_ns


def tensor_store(w: Warp, tensor_map: TensorMap, coords: Sequence[int], src: int, *, label: str = "") -> float:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group``: the simulator's bulk store of the box's
    ``tx_bytes`` from ``src`` (tracked by the warp's bulk groups) [PTX §9.7.9.27.1.2]."""
    check_tensor_copy(tensor_map, coords, src, "store")
    return w.cp_async_bulk_store(src, tensor_map.tx_bytes, label=label or f"store {tuple(coords)}")


# ------------------------------------------------------------------------------------------------
# the TMA copy stream

def copy_stream_layout(stages: int, tile_bytes: int) -> dict[str, list[int]]:
    """Shared addresses of the copy stream: ``full`` barriers, then 1024-aligned tile buffers (as the kernel)."""
    pitch = -(-tile_bytes // 1024) * 1024
    return {"full": [8 * s for s in range(stages)], "buffers": [1024 + s * pitch for s in range(stages)]}


@dataclass
class CopyStreamResult:
    """A simulated copy: time, bytes copied, bandwidth (read + written bytes per ns = GB/s), TMA utilisation."""

    tile_bytes: int
    stages: int
    ctas: int
    tiles_per_cta: int
    total_ns: float
    copied_bytes: int
    tma_utilization: float
    hbm_utilization: float
    trace: list | None = field(default=None, repr=False)

    @property
    def bandwidth_gbps(self) -> float:
        """(bytes read + bytes written) / time, in GB/s (1 B/ns = 1 GB/s)."""
        return 2 * self.copied_bytes / self.total_ns


def bulk_load(w: Warp, dst: int, nbytes: int, bar: int, *, label: str = "") -> float:
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`` with independent pipe queues
    (see the module docstring); complete-tx(``nbytes``) on ``bar`` when the data lands [PTX §9.7.9.25.4.1]."""
    if nbytes <= 0 or nbytes % 16 or dst % 16:
        raise ValueError(f"cp.async.bulk of {nbytes} B to {dst:#x}: a positive multiple of 16 B to a 16-byte aligned "
                         "address (PTX §9.7.9.25.4.1)")
    w.sm.smem.check_range(dst, nbytes)
    w.sm.bars.get(bar) or w.sm.barrier(bar)
    t0 = w.engine.now
    t = w.gpu.timing
    if w.gpu.model2:
        landed = w.load_done_v2(t0, nbytes, dram=True)
    else:
        landed = _reserve(w.sm.tma, w.sm.hbm, t0 + t.tma_issue_ns, nbytes, nbytes) + _latency(t, nbytes)
    w.engine.at(landed, _land, (w, t0, w.sm, dst, nbytes, bar, "cp.async.bulk.shared::cluster.global", label))
    return t.tma_issue_ns


def bulk_store(w: Warp, src: int, nbytes: int, *, label: str = ""):
    """``cp.async.bulk.global.shared::cta.bulk_group`` with independent pipe queues. Returns
    ``(issue_ns, read, done)``: yield ``issue_ns`` now; ``read`` (an event) fires when the TMA unit has read
    the shared source — what ``wait_group.read`` waits for — and ``done`` when the write has completed
    [PTX §9.7.9.25.4.1, §9.7.9.27.2]."""
    if nbytes <= 0 or nbytes % 16 or src % 16:
        raise ValueError(f"cp.async.bulk of {nbytes} B from {src:#x}: a positive multiple of 16 B from a 16-byte "
                         "aligned address (PTX §9.7.9.25.4.1)")
    w.sm.smem.check_range(src, nbytes)
    t0 = w.engine.now
    t = w.gpu.timing
    if w.gpu.model2:
        f_read, t_done = w.store_done_v2(t0, nbytes)
    else:
        _, f_read = w.sm.tma.reserve(t0 + t.tma_issue_ns, nbytes)
        _, f_hbm = w.sm.hbm.reserve(t0 + t.tma_issue_ns, nbytes)
        t_done = max(f_read, f_hbm) + t.tma_latency_ns
    read, done = w.engine.event(f"{w.actor} store read"), w.engine.event(f"{w.actor} store done")
    w.engine.at(f_read, read.succeed, None)
    w.engine.at(t_done, done.succeed, None)
    if w.gpu.trace is not None:
        w.gpu.trace.append(Record(t0, t_done, w.actor, "cp.async.bulk.global.shared::cta.bulk_group",
                                  f"{w.sm.prefix}tma store", "async", "r", src, nbytes, -1, -1, "", -1, w.sm.rank,
                                  label))
    return t.tma_issue_ns, read, done


def _copy_program(w: Warp, stages: int, tile: int, n: int, lay):
    for s in range(stages):
        yield w.init(lay["full"][s], 1, f"full[{s}]")
    for i in range(min(stages, n)):
        yield w.arrive_expect_tx(lay["full"][i], tile)
        yield bulk_load(w, lay["buffers"][i], tile, lay["full"][i], label=f"load {i}")
    stores = []
    for i in range(n):
        s = i % stages
        yield w.wait(lay["full"][s], (i // stages) & 1)
        issue, read, done = bulk_store(w, lay["buffers"][s], tile, label=f"store {i}")
        stores.append(done)
        yield issue
        if i + stages < n:
            yield read                                  # cp.async.bulk.wait_group.read 0
            yield w.arrive_expect_tx(lay["full"][s], tile)
            yield bulk_load(w, lay["buffers"][s], tile, lay["full"][s], label=f"load {i + stages}")
    for d in stores:                                    # cp.async.bulk.wait_group 0
        yield d


def simulate_copy_stream(tile_bytes: int, stages: int, *, ctas: int = 132, tiles_per_cta: int = 12,
                         tiles: int | None = None, ctas_per_sm: int = 1, symmetric: bool = True,
                         timing: Timing | None = None, trace: bool = False) -> CopyStreamResult:
    """Simulate the kernel ``tma_copy`` of ``l05_tma_copy.cu``: on each of ``ctas`` CTAs one thread loads
    tiles into ``stages`` buffers (mbarrier completion), stores each tile back (bulk group), and refills a
    buffer once its store has read it (``wait_group.read 0``). ``ctas_per_sm`` CTAs share an SM's TMA
    unit; all CTAs share the device memory in equal slices [model: hopper-spec-facts §6 for the
    operations; times and the memory model from :mod:`h100lab.sim.timing`].

    ``tiles`` (optional): the kernel's whole tensor in tiles, spread over the CTAs by its grid-stride loop
    (CTA ``i`` copies tiles ``i, i + ctas, …``); the run then lasts as long as the CTAs with the most tiles,
    ``ceil(tiles / ctas)``, and ``copied_bytes`` counts ``tiles`` tiles. Otherwise each CTA copies
    ``tiles_per_cta``. ``symmetric`` simulates the CTAs of one SM only: with equal memory slices every
    SM's CTAs run the same timeline, so this is exact and 132× cheaper (``symmetric=False`` runs them all).
    """
    if stages < 1 or stages > 8:
        raise ValueError(f"stages = {stages}: the kernel has 1 .. 8 buffers")
    if ctas < 1 or ctas_per_sm < 1 or ctas % ctas_per_sm:
        raise ValueError(f"{ctas} CTAs cannot be placed {ctas_per_sm} per SM")
    lay = copy_stream_layout(stages, tile_bytes)
    if ctas_per_sm * (lay["buffers"][-1] + tile_bytes) > 232_448:
        raise ValueError(f"{ctas_per_sm} × {stages} buffers of {tile_bytes} B do not fit the 227 KB of shared "
                         "memory a CTA may use or an SM holds (CPG §20.8.3)")
    if tiles is not None:
        if tiles < 1:
            raise ValueError(f"tiles = {tiles}: at least one tile")
        tiles_per_cta = -(-tiles // ctas)
    if tiles_per_cta < 1:
        raise ValueError(f"tiles_per_cta = {tiles_per_cta}: at least one tile")
    n_sim = ctas_per_sm if symmetric else ctas
    gpu = GPU(timing if timing is not None else default_timing(), num_sms=n_sim, trace=trace, cta_threads=32,
              ctas_per_sm=ctas_per_sm, hbm_sharers=ctas)
    for sm in gpu.sms:
        sm.spawn("thread0", _copy_program, stages, tile_bytes, tiles_per_cta, lay)
    total = gpu.run()
    copied = (tiles if tiles is not None else ctas * tiles_per_cta) * tile_bytes
    return CopyStreamResult(tile_bytes, stages, ctas, tiles_per_cta, total, copied,
                            gpu.sms[0].tma.utilization(total), gpu.hbm_utilization(total), gpu.trace)


# ------------------------------------------------------------------------------------------------
# multicast

@dataclass
class MulticastResult:
    """Bytes and time of a multicast pipeline (or of its unicast baseline)."""

    cluster_size: int
    receivers: tuple[int, ...]
    multicast: bool
    iters: int
    tile_bytes: int
    total_ns: float
    hbm_bytes: int
    l2_request_bytes: int
    delivered_bytes: int
    trace: list | None = field(default=None, repr=False)

    @property
    def saving(self) -> float:
        """Fraction of the delivered bytes that did not have to be requested from L2: ``1 - requests/delivered``."""
        return 1.0 - self.l2_request_bytes / self.delivered_bytes if self.delivered_bytes else 0.0


FULL, EMPTY, BUF = 0, 256, 1024


def _receiver(w: Warp, stages: int, iters: int, tm: TensorMap, compute_ns: float, issuer: int):
    for s in range(stages):
        yield w.init(FULL + 8 * s, 1, f"full[{s}]")
    for k in range(iters):
        s = k % stages
        yield w.arrive_expect_tx(FULL + 8 * s, tm.tx_bytes)
        yield w.wait(FULL + 8 * s, (k // stages) & 1)
        yield w.compute(compute_ns, label=f"tile {k}")
        yield w.arrive(EMPTY + 8 * s, cta=issuer)


def _producer(w: Warp, stages: int, iters: int, tm: TensorMap, mask: int, nrecv: int, multicast: bool, l2, counts):
    for s in range(stages):
        yield w.init(EMPTY + 8 * s, nrecv, f"empty[{s}]")
    ranks = [r for r in range(16) if mask >> r & 1]
    pitch = -(-tm.smem_bytes // 1024) * 1024
    for k in range(iters):
        s = k % stages
        coords = [0] * tm.rank
        coords[-1] = k * tm.box_dim[-1] % max(1, tm.global_dim[-1])
        yield w.wait(EMPTY + 8 * s, ((k // stages) & 1) ^ 1)
        if multicast:
            before = l2.hbm_read_bytes if l2 is not None else 0
            yield tensor_load_multicast(w, tm, coords, BUF + s * pitch, FULL + 8 * s, mask, l2=l2, label=f"tile {k}")
            counts["requests"] += tm.tx_bytes
            counts["hbm"] += (l2.hbm_read_bytes - before) if l2 is not None else tm.tx_bytes
        else:
            for r in ranks:
                before = l2.hbm_read_bytes if l2 is not None else 0
                yield tensor_load(w, tm, coords, BUF + s * pitch, FULL + 8 * s, l2=l2, cta=r,
                                  label=f"tile {k} → cta{r}")
                counts["requests"] += tm.tx_bytes
                counts["hbm"] += (l2.hbm_read_bytes - before) if l2 is not None else tm.tx_bytes


def simulate_multicast(cluster_size: int, cta_mask: int, tensor_map: TensorMap, *, stages: int = 2, iters: int = 8,
                       compute_ns: float = 1000.0, multicast: bool = True, issuer: int = 0,
                       l2: L2Cache | None = None, timing: Timing | None = None, trace: bool = True) -> MulticastResult:
    """One cluster: CTA ``issuer`` streams ``iters`` boxes of ``tensor_map`` into ``stages`` buffers of every
    CTA in ``cta_mask``; each receiving CTA expects the bytes on its own ``full`` barrier, computes, and
    releases the buffer by arriving on the issuer's ``empty`` barrier (count = receivers) — the seed's
    multicast protocol (lesson 5 §9, §11) [PTX §9.7.9.27.1.2, §9.7.13.15.8]. With ``multicast=False`` the
    issuer makes one ordinary load per receiver instead (the same bytes delivered, each requested).
    ``l2``: an :class:`~h100lab.tma.l2.L2Cache` so that repeated requests hit L2 (HBM bytes then differ
    from requested bytes)."""
    ranks = mask_ranks(cta_mask, cluster_size)
    if not 0 <= issuer < cluster_size:
        raise ValueError(f"issuer rank {issuer} is outside the cluster of {cluster_size}")
    gpu = GPU(timing if timing is not None else default_timing(), num_sms=cluster_size, trace=trace,
              cluster_size=cluster_size, cta_threads=64)
    counts = {"requests": 0, "hbm": 0}
    for r in ranks:
        gpu.sms[r].spawn("consumer", _receiver, stages, iters, tensor_map, compute_ns, issuer)
    gpu.sms[issuer].spawn("producer", _producer, stages, iters, tensor_map, cta_mask, len(ranks), multicast, l2,
                          counts)
    total = gpu.run()
    return MulticastResult(cluster_size, ranks, multicast, iters, tensor_map.tx_bytes, total, counts["hbm"],
                           counts["requests"], iters * tensor_map.tx_bytes * len(ranks), gpu.trace)
