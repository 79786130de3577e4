"""One thread's TMA copies, issue to wake-up: the single-copy latency model (issue 13).

The streaming pipeline (:mod:`h100lab.sim.stream`) sees a copy through a loop of mbarrier waits; a single copy timed
with ``clock64`` around it sees the thread's issue window, the copy's first byte and its fill. The two share the
SM's fill rate (the streaming fit and this one land on the same ~200 B/ns) but not their fixed costs, which
belong to the code around the copy — so each has its own structure, and this one is:

* **Issue.** The thread spends ``issue_first_ns`` on ``mbarrier.arrive.expect_tx`` and its first
  ``cp.async.bulk`` (PTX ISA 9.7.13.15.12, 9.7.9.25.4.1) and ``issue_next_ns`` on each further one. The TMA unit
  holds at most ``queue_copies`` copies it has not finished: an issue past that waits until the oldest has filled.
* **Fill.** The unit moves one copy at a time, in issue order, starting each when it was issued and the one
  before it has filled: ``bytes / fill_bytes_per_ns`` from a source that starts on a 128-byte line,
  ``bytes / fill_misaligned_bytes_per_ns`` from one that does not (every line of it is split).
* **Landing.** The last copy's bytes complete the mbarrier phase and the waiting thread resumes
  ``first_byte_ns`` after the unit finished filling (the L2 round trip of the last request plus the ``try_wait``
  wake-up), plus ``dram_extra_ns`` when the source comes from DRAM (cold) and its page's TLB entry is warm,
  plus ``tlb_miss_ns`` when it is not; a 2-D tensor copy adds ``tensor_extra_ns`` (the box's address generation).
  The DRAM part grows with the copy up to ``dram_ramp_bytes`` by ``dram_ramp_ns`` (linearly; the H200: ~200 ns
  more than L2 for a 16-byte copy, ~260 ns from 4 KiB on — a copy's first lines come from DRAM more slowly than
  the unit asks for them, until its requests overlap).
* **A dirty L2.** Right after a step fills or zeroes its buffer the L2 holds that write's dirty lines, and a miss
  that allocates a line evicts one, whose write-back goes to DRAM with the copy's own reads. Structure (an
  assumption, not read off any document): a cold round's last read waits behind the write-backs queued before it —
  ``dirty_ns_per_kib`` per KiB of the lines the round brings in — up to ``dirty_cap_ns``, where the write-back queue
  is full and drains as fast as new victims arrive (:func:`dirty_extra`; the round's bytes, not a step at a size).
  Calibrated with everything else on the single-copy calibration records, each in the state it was measured in
  (:func:`h100lab.validation.micro.dirty_l2`); the H200: ~3.3 ns per KiB up to ~41 ns (reached at ~12 KiB). What
  it stands for: ``l03/tma_latency_cold2_noflush``'s first pass against the flushed runs around it
  (``l03/tma_latency_cold2`` and its repeat) lands rounds of ≥ 4 KiB +15 to +134 ns later (median ~55), nothing
  measurable below; step latency2 run without and with a clean-out (``l03/tma_latency_clean_noflush`` against
  ``_flushed``/``_flushed_repeat``, held out) lands single copies ~2 ns later at 4–16 KiB, 0–50 ns at 32 KiB and
  45–104 ns at 64–128 KiB (misaligned ones about twice aligned ones): the excess grows with the copy and levels off.
  The form fitted to those differences alone would be ~1 ns per KiB up to ~74 ns
  (:func:`h100lab.validation.micro.dirty_trio`): later and higher than the calibration's — the two dirty states
  (a 2 GiB fill, a 21.5 GiB memset) differ, and the model keeps the calibration's. On a clean L2 the DRAM part
  stops growing at ~4 KiB (~245 ns over warm on the flushed runs, 4 KiB and 16 KiB alike); a ramp fitted to dirty
  records without this term ran on to ~285 ns at 8 KiB and predicted the flushed 16 KiB × 4 rounds 10 % slow.
  ``dirty_cap_ns`` 0 turns this off. History: a flat ~26 ns for rounds of ≥ 4 KiB came first (same calibration);
  the trio showed the step it assumed at 4 KiB is not there.
* **Lines read before.** A "cold" source whose lines the same run already read is still in L2 with a probability
  that falls with what the run read since (:func:`l2_kept`: ``1 / (1 + exp((d − l2_keep_bytes) / l2_keep_width_bytes))``
  of ``d`` bytes of lines read for the first time in between). Assumption, from ``l03/tma_latency_clean``'s
  replayed cursor: the run's lines crowd the first 128 KiB of 2 MiB pages, so they compete for part of the L2's
  sets, and what it keeps halves well before its 60 MiB. A round's samples are then a mixture: warm ones (kept)
  and cold ones spread evenly over ``cold ± cold_spread_ns`` (DRAM's own spread); :func:`kept_median` is the
  mixture's median — warm once half the samples are kept, else inside the cold ones' lower half (a median near
  the switch is unstable: 32 samples decide it). ``l2_keep_bytes`` 0 turns this off.
* **A second level of what is kept.** A re-read sample the L2 no longer hits at the warm time is not always a DRAM
  trip: ``l03/tma_latency_cold``'s re-read pass (and its repeat) lands most samples of copies ≥ 4 KiB read 18–32 MiB
  before ~80–135 ns over their warm time — about half their DRAM part, below every fresh sample of those sizes — and
  that share falls back to none by ~55 MiB. Structure (an assumption; what holds them is not shown): a line is still
  at a second, slower level with the probability :func:`l2_kept2` (``1 / (1 + exp((d − l2_keep2_bytes) /
  l2_keep2_width_bytes))``, never below :func:`l2_kept`), and such a sample lands evenly over ``warm + kept2_ns ±
  kept2_spread_ns`` (below the cold samples: at most their own range). Fitted on that pass alone
  (:func:`h100lab.validation.micro.fit_l2_keep`); the H200: half at ~33 MiB (near one L2 half, 30 of its 60 MiB — an
  interpretation: the SM's own half keeps what it read, the other half a line it evicted), ~120 ns. :func:`kept_median`
  is then the median of three kinds of samples: warm, second level, cold. ``l2_keep2_bytes`` 0 turns this off.

* **The measurement kernel's issue loop** (:class:`LatencyKernel`, read off its machine code). What a kernel runs
  between its clock reads and its copies is the kernel's, not the TMA unit's: set-up before the first copy, the
  loop's entry before the second, one trip per further copy. A loop the compiler unrolled by ``unroll`` copies runs
  two code paths: rounds of fewer copies go through the remainder loop alone; rounds of ``unroll`` or more through
  the unrolled body, whose copies step ``issue_next_ns`` apart, whose trip boundary and exit both wait for the loop
  test (``loop_exit_ns``), and whose clock read after the last copy therefore comes ``loop_exit_ns`` after that copy
  left — the copy is on its way meanwhile, so the round lands that much sooner after the stamp. ``l03_tma_latency.cu``'s
  ``tma_issue`` is such a loop (:data:`OLD_KERNEL`; SASS in :class:`LatencyKernel`).

:func:`round_trip` returns the three times a kernel can stamp: after the first issue, after the last, and when the
wait returned. :class:`LatencyKernel` holds what a particular measurement kernel adds inside its timed window
(uniform-register set-up that the compiler placed after the first clock read, :mod:`h100lab.validation.timing`
documents which); :data:`H200_LATENCY` are order-of-magnitude starting values until
:func:`h100lab.validation.timing.fit_latency` calibrates them. Times in ns, rates in B/ns.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Sequence

__all__ = ["CopyLatency", "H200_LATENCY", "LatencyKernel", "OLD_KERNEL", "CLEAN_KERNEL", "round_trip",
           "issue_schedule", "LINE", "l2_kept", "l2_kept2", "kept_median", "dirty_extra"]

#: bytes of an L2 line: a source offset that is not a multiple of it is "misaligned"
LINE = 128


@dataclass(frozen=True)
class CopyLatency:
    """The parameters of the single-copy model (module docstring)."""

    issue_first_ns: float = 20.0
    issue_next_ns: float = 28.0
    queue_copies: int = 16
    first_byte_ns: float = 130.0
    dram_extra_ns: float = 250.0
    tlb_miss_ns: float = 100.0
    fill_bytes_per_ns: float = 200.0
    fill_misaligned_bytes_per_ns: float = 100.0
    tensor_extra_ns: float = 10.0
    dram_ramp_ns: float = 40.0
    dram_ramp_bytes: float = 4096.0
    dirty_ns_per_kib: float = 0.0
    dirty_cap_ns: float = 0.0
    l2_keep_bytes: float = 0.0
    l2_keep_width_bytes: float = float(8 << 20)
    cold_spread_ns: float = 100.0
    l2_keep2_bytes: float = 0.0
    l2_keep2_width_bytes: float = float(8 << 20)
    kept2_ns: float = 120.0
    kept2_spread_ns: float = 30.0

    def with_values(self, **kw) -> "CopyLatency":
        return replace(self, **kw)

    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))


H200_LATENCY = CopyLatency()


@dataclass(frozen=True)
class LatencyKernel:
    """What a measurement kernel adds to its own timed window (ns): ``cold_setup_ns`` before a cold copy
    (``l03_tma_latency.cu``'s first rep computes the copy's uniform registers after its first clock read),
    ``issue_setup_ns`` before the first copy of ``tma_issue`` (constant loads and uniform set-up of its issue
    loop), ``loop_entry_ns`` before the second copy of a round (the issue loop's entry: a constant load of the
    count, a branch, the loop's uniform registers — ``l03_copy_latency.cu`` has only this one), and
    ``issue_next_ns``, what one trip of its issue loop costs (its address arithmetic and the ``ELECT`` loop around
    ``UBLKCP``: the code's, not the TMA unit's; 0 = the model's ``issue_next_ns``).

    ``unroll`` > 1: the compiler unrolled the issue loop by that many copies (module docstring, "The measurement
    kernel's issue loop"). A round of fewer copies runs the remainder loop alone: its first copy after
    ``issue_setup_ns``, its second ``loop_entry_ns + issue_next_ns`` later, each further one ``loop_entry_ns +
    issue_next_ns`` (the remainder code recomputes every address). A round of ``unroll`` or more runs the unrolled
    body: its first copy after ``unrolled_setup_ns``, the next ones ``issue_next_ns`` apart, ``loop_exit_ns`` more at
    each trip boundary (assumption: the loop back waits for the same loop test as the exit — the same four
    instructions in the SASS), copies past the last whole trip through the remainder loop, and the stamp after the
    last copy of a whole trip ``loop_exit_ns`` after it.

    ``l03_tma_latency.cu``'s ``tma_issue`` (nvdisasm of the cubin for ``sm_90a``: NVRTC 13.5 and nvcc/ptxas 13.0, the
    release that compiled the measured runs, give the same SASS): ``for (j < count) bulk_load`` is unrolled by
    four. From the clock read (``CS2R SR_CLOCKLO``) a round of 4, 8, 16 or 32 copies runs ~24 instructions of set-up
    (``S2UR``, ``ULDC``, ``UIADD3``, ``ULEA``) to its first ``UBLKCP``, then ~8 between copies (``UIADD3`` and the
    ``ELECT``/``BRA.U.ANY`` loop around each ``UBLKCP``), and after every fourth copy the loop test ``UIADD3 →
    UIADD3 → ISETP → BRA``; after the last one that test, a second one (``count & 3``, taken to the clock read) and
    then the stamp. A round of 1 or 2 copies branches to the remainder code: ~30 instructions, one more taken branch
    and a longer ``UIMAD`` chain to its first copy, ~18 between copies, and after the last only ``PLOP3; BRA`` to the
    stamp. ``l03_copy_latency.cu``'s loop is not unrolled (``#pragma unroll 1``): :data:`CLEAN_KERNEL`."""

    cold_setup_ns: float = 0.0
    issue_setup_ns: float = 0.0
    loop_entry_ns: float = 0.0
    issue_next_ns: float = 0.0
    unroll: int = 0
    unrolled_setup_ns: float = 0.0
    loop_exit_ns: float = 0.0


OLD_KERNEL = LatencyKernel(40.0, 70.0, 20.0, 28.0, unroll=4, unrolled_setup_ns=60.0, loop_exit_ns=20.0)
CLEAN_KERNEL = LatencyKernel()


def issue_schedule(m: CopyLatency, count: int, kernel: LatencyKernel | None = None) -> tuple[float, list[float], float]:
    """``(first, gaps, lag)`` of a round of ``count`` copies issued by ``kernel`` (:class:`LatencyKernel`; ``None``: the
    model's own issue costs): the first issue's end (ns from before the ``expect_tx``, the kernel's set-up
    included), the ``count − 1`` times from one issue to the next, and how long after the last issue the kernel reads
    its clock (0 but on an unrolled loop's path). Raises ValueError for no copy."""
    if count < 1:
        raise ValueError("a round has at least one copy")
    if kernel is None:
        return m.issue_first_ns, [m.issue_next_ns] * (count - 1), 0.0
    step = kernel.issue_next_ns if kernel.issue_next_ns > 0 else m.issue_next_ns
    u = int(kernel.unroll)
    if u <= 1 or count < u:                      # the plain loop, or an unrolled loop's remainder path alone
        gaps = [step + (kernel.loop_entry_ns if j == 1 or u > 1 else 0.0) for j in range(1, count)]
        return m.issue_first_ns + kernel.issue_setup_ns, gaps, 0.0
    whole = count // u * u
    gaps = []
    for j in range(1, count):
        if j < whole:                            # the unrolled body; a trip boundary waits for the loop test
            gaps.append(step + (kernel.loop_exit_ns if j % u == 0 else 0.0))
        else:                                    # past the last whole trip: the remainder code
            gaps.append(step + kernel.loop_entry_ns + (kernel.loop_exit_ns if j == whole else 0.0))
    return m.issue_first_ns + kernel.unrolled_setup_ns, gaps, kernel.loop_exit_ns if whole == count else 0.0


def round_trip(m: CopyLatency, nbytes: int, count: int = 1, *, cold: bool = False, tlb: bool = True,
               aligned: bool = True, tensor: bool = False, kernel: LatencyKernel | None = None,
               fresh: int | None = None, dirty: bool = False) -> dict[str, float]:
    """``{"first", "issue", "total"}`` (ns from before the ``expect_tx``): the end of the first issue, the kernel's
    clock read after the last issue, and the waiting thread's wake-up, for ``count`` back-to-back copies of ``nbytes``
    completing one mbarrier phase (module docstring). ``cold``: the bytes come from DRAM; ``tlb``: the page's TLB
    entry is warm; ``aligned``: each source starts on a 128-byte line; ``kernel``: the measurement kernel's issue
    loop (its set-up, entry, trips and unrolled path, :func:`issue_schedule`); ``fresh``: on a cold round, the last
    copy that asks DRAM for bytes of its own — later ones read what an earlier copy's request brings
    (:func:`h100lab.validation.micro.fresh_copy`) and land like warm ones (default: every copy); ``dirty``: the L2 still
    holds a fill's or memset's dirty lines (a cold round lands :func:`dirty_extra` later: the write-backs of the
    victims its lines evict, module docstring). Raises ValueError for no bytes or no copy."""
    if nbytes <= 0 or count < 1:
        raise ValueError("a copy moves at least one byte, and a round has at least one copy")
    fill = nbytes / (m.fill_bytes_per_ns if aligned else m.fill_misaligned_bytes_per_ns)
    q = max(1, int(round(m.queue_copies)))
    first, gaps, lag = issue_schedule(m, count, kernel)
    step = kernel.issue_next_ns if kernel is not None and kernel.issue_next_ns > 0 else m.issue_next_ns
    issued: list[float] = []
    filled: list[float] = []
    for j in range(count):
        e = first if j == 0 else issued[-1] + gaps[j - 1]
        if j >= q:
            e = max(e, filled[j - q] + step)                # the unit is full: the issue waits for a slot
        issued.append(e)
        start = max(e, filled[-1]) if filled else e
        filled.append(start + fill)
    land = filled[-1] + m.first_byte_ns + (m.tensor_extra_ns if tensor else 0.0)
    if cold:
        ramp = m.dram_ramp_ns * min(1.0, nbytes / m.dram_ramp_bytes) if m.dram_ramp_bytes > 0 else 0.0
        extra = m.dram_extra_ns + ramp + (0.0 if tlb else m.tlb_miss_ns)
        if dirty:
            extra += dirty_extra(m, nbytes, count, aligned)
        k = count - 1 if fresh is None else min(max(int(fresh), 0), count - 1)
        land = max(land, filled[k] + m.first_byte_ns + (m.tensor_extra_ns if tensor else 0.0) + extra)
    stamp = issued[-1] + lag
    return {"first": issued[0], "issue": stamp, "total": max(land, stamp)}


def dirty_extra(m: CopyLatency, nbytes: int, count: int = 1, aligned: bool = True) -> float:
    """What a dirty L2 adds to a cold round of ``count`` copies of ``nbytes`` from consecutive source bytes (ns; module
    docstring, "A dirty L2"): ``dirty_ns_per_kib`` per KiB of the 128-byte lines the round brings in (its sources
    span ``ceil(bytes / 128)`` lines, one more when they do not start on a line), at most ``dirty_cap_ns`` — each
    such line evicts a dirty victim whose write-back queues at DRAM before the round's last read, and a write-back
    queue of bounded depth stops that wait growing. Raises ValueError for no bytes or no copy."""
    if nbytes <= 0 or count < 1:
        raise ValueError("a copy moves at least one byte, and a round has at least one copy")
    lines = -(-nbytes * count // LINE) + (0 if aligned else 1)
    return max(0.0, min(m.dirty_cap_ns, m.dirty_ns_per_kib * lines * LINE / 1024.0))


def l2_kept(m: CopyLatency, distance: float) -> float:
    """The probability that a line the run read before, ``distance`` bytes of newly read lines ago, is still in L2
    (module docstring, "Lines read before"): 0 for a line never read (``inf``) or with ``l2_keep_bytes`` 0. Raises
    ValueError for a negative distance."""
    if distance < 0:
        raise ValueError(f"a reuse distance is a number of bytes ≥ 0, got {distance}")
    if m.l2_keep_bytes <= 0 or math.isinf(distance):
        return 0.0
    z = (distance - m.l2_keep_bytes) / max(m.l2_keep_width_bytes, 1.0)
    return 1.0 / (1.0 + math.exp(min(z, 700.0)))


def l2_kept2(m: CopyLatency, distance: float) -> float:
    """The probability that a line the run read before, ``distance`` bytes of newly read lines ago, is still at either
    level of what is kept (module docstring, "A second level of what is kept"): the larger of the second level's
    logistic and :func:`l2_kept`; :func:`l2_kept` alone with ``l2_keep2_bytes`` 0. Raises ValueError for a negative
    distance."""
    k = l2_kept(m, distance)
    if m.l2_keep2_bytes <= 0 or math.isinf(distance):
        return k
    z = (distance - m.l2_keep2_bytes) / max(m.l2_keep2_width_bytes, 1.0)
    return max(k, 1.0 / (1.0 + math.exp(min(z, 700.0))))


def kept_median(m: CopyLatency, cold_ns: float, warm_ns: float, distances: Sequence[float] | None) -> float:
    """The median of a cold round's samples when they re-read lines ``distances`` bytes after the run last read them
    (one per sample; ``None`` or empty: none re-read): with ``K`` the samples' mean kept fraction (:func:`l2_kept`),
    ``warm_ns`` when ``K`` ≥ ½; without a second level (``l2_keep2_bytes`` 0), else the ``(½ − K) / (1 − K)`` quantile
    of the cold samples, even over ``cold_ns ± cold_spread_ns``, and never below ``warm_ns`` (module docstring). With
    it, ``K2`` (the mean of :func:`l2_kept2`) − ``K`` of the samples lie evenly over ``warm_ns + kept2_ns ±
    kept2_spread_ns`` (each end at most the cold samples' own) and ``1 − K2`` are cold: the median of that mixture,
    never below ``warm_ns`` — it never rises when a sample's line was read more recently."""
    if not distances:
        return cold_ns
    k = sum(l2_kept(m, d) for d in distances) / len(distances)
    if k >= 0.5:
        return warm_ns
    s = m.cold_spread_ns
    k2 = sum(l2_kept2(m, d) for d in distances) / len(distances) if m.l2_keep2_bytes > 0 else k
    if k2 <= k:
        q = (0.5 - k) / (1.0 - k)
        return max(warm_ns, cold_ns - s + 2.0 * s * q)
    lo2 = min(warm_ns + m.kept2_ns - m.kept2_spread_ns, cold_ns - s)
    hi2 = min(warm_ns + m.kept2_ns + m.kept2_spread_ns, cold_ns + s)

    def even(t: float, a: float, b: float) -> float:
        return float(t >= a) if b <= a else min(1.0, max(0.0, (t - a) / (b - a)))

    def cdf(t: float) -> float:          # warm samples (K), second level (K2 − K), cold (1 − K2)
        return k * float(t >= warm_ns) + (k2 - k) * even(t, lo2, hi2) + (1.0 - k2) * even(t, cold_ns - s, cold_ns + s)

    a, b = min(lo2, cold_ns - s, warm_ns), cold_ns
    for _ in range(100):                 # the cdf is at least ½ at cold_ns (the cold samples' own median)
        mid = 0.5 * (a + b)
        if cdf(mid) >= 0.5:
            b = mid
        else:
            a = mid
    return max(warm_ns, b)
