"""The one calibrated table of latencies and bandwidths the simulator draws every number from.

Each entry is a :class:`Param` with its value, unit, *status* and *source*:

* ``spec``       — a documented or device-reported number (reference facts, CUDA guide, H200 query);
* ``derived``    — computed from ``spec`` numbers (the derivation is in the source text);
* ``estimate``   — an order-of-magnitude starting value with no primary source; to be replaced by
  calibration. Luo et al. (arXiv:2402.13499, arXiv:2501.12084) microbenchmark these paths on
  H800/H100 and are the published reference for their size; their tables were not read for this
  table, so no number here is attributed to them;
* ``calibrated`` — fitted to this project's own measurements in ``data/`` by :func:`calibrate`
  (the source text names the dataset and the records).

The memory model the copy numbers belong to (:mod:`h100lab.sim.machine`,
:mod:`h100lab.sim.resources`) separates what limits one CTA's copy stream from what limits the GPU:

1. **One copy** costs ``tma_issue_ns`` to issue, then moves its bytes at the SM's bulk-copy rate
   ``tma_bytes_per_ns`` and lands ``tma_latency_ns`` after its last byte — the latency of data that
   sits in L2 — plus ``dram_latency_ns`` when its bytes come from DRAM (lesson 5's copy stream reads
   512 MiB, far more than the 60 MiB L2; lesson 3's single-CTA runs re-read 4–8 MiB, which stays there;
   the lesson-3 pipeline's copies use ``tma_latency_ns`` alone).
   Copies are pipelined: any number may be in flight (no limit per SM or per TMA unit is modelled;
   the datasets have at most 6 copies in flight per CTA, 12 per SM, and show none). The CTAs of one
   SM share its TMA unit.
2. **The memory** moves ``hbm_bytes_per_ns`` bytes per ns device-wide, reads and writes counted
   together (a copy of N bytes costs 2N), shared *equally* among the simulated CTAs: each CTA has a
   private FIFO slice of ``hbm_bytes_per_ns / CTAs`` (a static processor-sharing approximation:
   exact when every CTA streams all the time, pessimistic when some idle, because an idle CTA's
   slice is not lent). So a copy's transfer takes ``bytes / min(tma_bytes_per_ns, hbm / CTAs)``:
   one CTA alone is limited by its SM (``tma_bytes_per_ns``), 132 CTAs by their slice of memory.
   The loaded latency a full GPU shows is this queueing in the slice, not a different latency.
3. L2 hits, the crossbar and the DRAM page policy are not modelled.

Step 1 of :func:`calibrate` fits (1) on one CTA (``data/l03/bulk_pipeline``); step 2,
:func:`calibrate_hbm`, fits (2) on whole-GPU copies (``data/l05/copy_bandwidth``).
:func:`default_timing` returns the table calibrated on whichever datasets exist and the estimates
otherwise. Times are in ns, bandwidths in units per ns (1 B/ns = 1 GB/s).

**Memory model 2** (``memory_model = 2``; the table above is model 1, which every default still uses, so
every result computed so far stays bit-identical). The suspects of model 1 — one bandwidth ceiling for
reads and copies, fixed equal per-CTA slices, one latency number for every copy, no issue limit per SM, and
synchronisation and DSMEM costs that are placeholders — become parameters whose values the measurements of
``python -m h100lab.measure.timing_sweep`` decide (:mod:`h100lab.validation.timing` fits them on a documented
subset and reports the held-out rest). Assumptions of model 2, each a parameter that can be switched off:

a. **Two memory ceilings.** Reads stream at most ``hbm_read_bytes_per_ns`` device-wide; a copy moves at most
   ``hbm_bytes_per_ns`` read + written bytes. One FIFO server of rate R = ``hbm_read_bytes_per_ns`` serves both:
   a read byte costs 1, a written byte ``w = 2R / C − 1`` (:func:`write_cost`), so a read stream runs at R and a
   copy at C. ``hbm_read_bytes_per_ns = 0`` falls back to one ceiling (w = 1).
b. **One shared memory queue** (``memory_shared = 1``): every CTA's transfers queue in one device-wide FIFO; an
   idle CTA leaves its share to the others, and one CTA's latency overlaps another's transfer. ``0``: model 1's
   fixed equal slices. A simulation of a symmetric subset of the grid (``hbm_sharers``) scales the shared
   server's rate to the subset's share.
c. **The copy latency in parts.** A copy lands ``tma_latency_ns`` (data in L2) + ``dram_latency_ns`` (when it
   reads DRAM) + ``tma_latency_per_kb_ns`` × KiB after its last byte left the slowest pipe; the per-KiB part does
   not occupy any unit (it is pipelined), the transfer does.
d. **An issue limit per SM.** The SM's TMA unit accepts one copy every ``tma_op_ns`` (loads and stores, all CTAs
   of the SM), whatever its size; ``0`` = no limit. The issuing thread spends ``tma_issue_ns`` per copy.
c'. **The issue overlaps the travel** (``tma_issue_overlap = 1``, what :func:`h100lab.validation.timing.fit` uses):
   the TMA unit starts on a copy when its issuing instruction begins; the thread still spends ``tma_issue_ns``.
   (First read of ``data/l03/tma_latency`` — a copy landing ~54 ns after ~100 ns of issue — was the measurement
   kernel's set-up inside its window; ``data/l03/tma_latency_clean`` shows a ~26 ns issue and a ~130 ns landing
   after it, :mod:`h100lab.sim.latency`. The streaming fit keeps the overlap: it fits those runs better.)
e. **Store read-back.** A bulk store reads its shared-memory source at ``tma_store_bytes_per_ns`` (0: at
   ``tma_bytes_per_ns``), occupying the SM's TMA unit that long, and has read it (``cp.async.bulk.wait_group.read``)
   ``tma_store_read_ns`` later. The data: one CTA's copy stream costs ~8 ns more per extra KiB of tile up to
   16 KiB and ~20 ns beyond, while a load-only stream's time per tile does not grow with the tile
   (``data/l03/stream_sweep``, scope ``cta``): the store's read, not the load, sets a copy's pace.
f. **Waits.** ``wait_hit_ns`` is a ``try_wait`` that finds its phase complete (measured directly on the
   H200, not the per-tile wait of a kernel loop), ``wait_wake_ns`` the wake-up of a suspended one.
g. **CTA and cluster barriers.** ``bar.sync`` releases ``bar_sync_ns + bar_sync_per_warp_ns × warps`` after
   the last arrival; ``barrier.cluster.wait`` releases ``cluster_barrier_ns + cluster_barrier_per_cta_ns ×
   CTAs + cluster_barrier_per_warp_ns × warps per CTA`` after the last arrive; an arrive costs its issuing warp
   ``cluster_arrive_release_ns + cluster_arrive_release_per_warp_ns × warps`` (``.release``: it waits for the
   earlier memory operations) or ``cluster_arrive_relaxed_ns``. ``mbarrier.arrive.expect_tx`` costs the thread
   ``mbarrier_expect_tx_ns`` (a plain arrive ``mbarrier_arrive_ns``).
i. **A smooth maximum** (closed form only, :func:`soft_period`): the steady period of the streaming pipeline is
   the k-norm of its bounds (``period_sharpness`` = k; 0 = the hard maximum the simulator's events give). The
   data: a 2-stage stream runs ~25 ns per tile slower than half its 1-stage round trip even where the consumers
   are not the bound — bounds that are nearly equal delay each other, as a queue near saturation does.
h. **DSMEM.** A load from another CTA's shared memory (``ld.shared::cluster``) returns
   ``dsmem_latency_ns`` + bytes / ``dsmem_bytes_per_ns`` (one pipe per SM) after issue; a local one
   ``smem_latency_ns`` + bytes / ``smem_bytes_per_ns``.
g'. **Cluster barrier shape** (second revision, from ``data/l03/sync_cost``): the release delay also grows with the
   squared warp count (``cluster_barrier_per_warp2_ns``; a ``.release`` arrive has its own squared term) and with
   log2 of the cluster's CTAs up to 8 (``cluster_barrier_per_doubling_ns``; the H200's clusters of 8 and 16 cost
   the same, which is where the cap at 8 comes from — so the cluster-16 records do not test the cap independently).
h'. **DSMEM shape**: ``ld.shared::cluster`` on the own rank costs ``dsmem_self_latency_ns`` (the instruction takes
   the cluster path whatever the target; the H200: 38 clocks against ld.shared's 29); while every cluster of the
   GPU streams DSMEM, one SM gets ``dsmem_loaded_bytes_per_ns``.

In model 1 every parameter of (a)–(h) that model 1 lacks has the value that reproduces model 1 (0 or the
existing cost), and :meth:`Timing.model2` returns a model-2 table with the estimates below until
:func:`h100lab.validation.timing.fit` replaces them.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Iterable

__all__ = ["Param", "Timing", "H200_ESTIMATES", "default_timing", "calibrate", "calibrate_hbm", "copy_stream_period",
           "fit_latency_bandwidth", "write_cost", "read_ceiling", "store_rate", "soft_period", "soft_periods",
           "MODEL2_ESTIMATES", "MODEL2_PARAMS"]


@dataclass(frozen=True)
class Param:
    """One number of the table: value, unit, status (spec/derived/estimate/calibrated), source."""

    value: float
    unit: str
    status: str
    source: str


_CLOCK = 1.98   # GHz, H200 max SM clock reported by the device (reference facts §1.1 [HW])

_H200 = {
    "clock_ghz": Param(_CLOCK, "GHz", "spec",
                       "H200 max SM clock 1980 MHz, cudaDevAttrClockRate / nvidia-smi (reference facts §1.1 [HW])"),
    "num_sms": Param(132, "SMs", "spec", "H200 multiProcessorCount = 132 (reference facts §1.1 [HW])"),
    "issue_ns": Param(round(1 / _CLOCK, 4), "ns", "derived",
                      "one instruction issue = 1 SM clock at 1.98 GHz (a warp scheduler issues ≤ 1 "
                      "instruction per clock, CPG §5.2.3 hardware multithreading)"),
    "smem_bytes_per_ns": Param(round(128 * _CLOCK, 2), "B/ns", "derived",
                               "32 banks × 4 B per clock per SM (CPG §20.4.3; reference facts §1.2, §2) "
                               "× 1.98 GHz = 253 B/ns"),
    "smem_latency_ns": Param(15.0, "ns", "estimate",
                             "ld.shared round trip, ~30 clocks; order of magnitude only"),
    "hbm_peak_bytes_per_ns": Param(4810.0, "B/ns", "derived",
                                   "H200 HBM3e peak: 2 × 3.201 GHz × 752 B (6016-bit bus) = 4.81 TB/s "
                                   "(reference facts §1.1 [HW]); a ceiling, never reached by a kernel"),
    "hbm_bytes_per_ns": Param(4810.0, "B/ns", "estimate",
                              "device-wide DRAM bandwidth a copy kernel achieves, bytes read + bytes written "
                              "(as the copy kernels count it); starting value the peak; calibrated from "
                              "data/l05/copy_bandwidth by calibrate_hbm(). The simulator divides it equally "
                              "among the CTAs it runs (machine.GPU: a static fair share)"),
    "tma_bytes_per_ns": Param(128.0, "B/ns", "estimate",
                              "one SM's bulk-copy (TMA) unit throughput, loads and stores together, when it "
                              "has the memory to itself; starting value 64 B/clock; calibrated from "
                              "data/l03/bulk_pipeline (one CTA)"),
    "tma_issue_ns": Param(round(4 / _CLOCK, 4), "ns", "estimate",
                          "issuing one cp.async.bulk (address operands, a few instructions)"),
    "tma_latency_ns": Param(600.0, "ns", "estimate",
                            "issue → last byte lands and complete_tx reaches the mbarrier, beyond the "
                            "bandwidth term; hundreds of ns (seed lesson 3 §4.1); calibrated from "
                            "data/l03/bulk_pipeline"),
    "dram_latency_ns": Param(0.0, "ns", "estimate",
                             "extra latency of a copy whose bytes come from DRAM rather than L2 (tma_latency_ns "
                             "is measured on tiles that stay in L2); starting value 0; calibrated from "
                             "data/l05/copy_bandwidth by calibrate_hbm()"),
    "mbarrier_arrive_ns": Param(round(8 / _CLOCK, 4), "ns", "estimate",
                                "mbarrier.arrive, a shared-memory atomic on the 8-byte object"),
    "wait_wake_ns": Param(40.0, "ns", "estimate",
                          "phase completion → a suspended try_wait returns True and the warp resumes; not "
                          "fitted: calibrate() absorbs it into tma_latency_ns"),
    "wait_hit_ns": Param(round(8 / _CLOCK, 4), "ns", "estimate",
                         "try_wait on an already-completed phase"),
    "bar_sync_ns": Param(round(20 / _CLOCK, 4), "ns", "estimate",
                         "bar.sync release after the last arrival"),
    "fence_ns": Param(round(8 / _CLOCK, 4), "ns", "estimate", "fence.proxy.async / fence.acq_rel"),
    "tensor_macs_per_ns": Param(round(2048 * 1.83, 1), "MAC/ns", "derived",
                                "BF16 dense: 989.4 TFLOPS / 132 SMs / 2 = 2048 MAC per clock per SM at "
                                "the 1.83 GHz tensor clock (reference facts §1.1, [WP] secondary)"),
    "wgmma_latency_ns": Param(round(64 / _CLOCK, 4), "ns", "estimate",
                              "wgmma pipeline depth beyond its throughput term"),
    "cluster_barrier_ns": Param(round(150 / _CLOCK, 4), "ns", "estimate",
                                "barrier.cluster arrive → wait release across SMs of a GPC"),
    # ---- memory model 2 (module docstring, assumptions a-h); the values here reproduce model 1 -------------
    "memory_model": Param(1, "model", "spec",
                          "1: one memory ceiling, fixed equal per-CTA slices, one copy latency (the model every "
                          "result so far used); 2: the assumptions a-h of the module docstring"),
    "hbm_read_bytes_per_ns": Param(0.0, "B/ns", "estimate",
                                   "(a) device-wide read ceiling of a read-only stream; 0 = the single ceiling "
                                   "hbm_bytes_per_ns for reads too"),
    "memory_shared": Param(0, "flag", "estimate",
                           "(b) 1: one device-wide FIFO memory queue shared by all CTAs; 0: fixed equal per-CTA slices"),
    "tma_latency_per_kb_ns": Param(0.0, "ns/KiB", "estimate",
                                   "(c) latency a copy adds per KiB beyond its transfer (pipelined, occupies no unit)"),
    "tma_op_ns": Param(0.0, "ns", "estimate",
                       "(d) one SM's TMA unit accepts one copy per tma_op_ns (issue limit per SM); 0 = no limit"),
    "tma_store_read_ns": Param(0.0, "ns", "estimate",
                               "(e) bulk store: TMA moved the bytes → wait_group.read sees the source read"),
    "bar_sync_per_warp_ns": Param(0.0, "ns/warp", "estimate", "(g) bar.sync release cost per participating warp"),
    "cluster_barrier_per_cta_ns": Param(0.0, "ns/CTA", "estimate", "(g) barrier.cluster release cost per CTA"),
    "cluster_barrier_per_warp_ns": Param(0.0, "ns/warp", "estimate",
                                         "(g) barrier.cluster release cost per warp of each CTA"),
    "cluster_arrive_release_ns": Param(round(1 / _CLOCK, 4), "ns", "derived",
                                       "(g) barrier.cluster.arrive.release, issuing warp's cost (model 1: one issue)"),
    "cluster_arrive_relaxed_ns": Param(round(1 / _CLOCK, 4), "ns", "derived",
                                       "(g) barrier.cluster.arrive.relaxed, issuing warp's cost (model 1: one issue)"),
    "cluster_arrive_release_per_warp_ns": Param(0.0, "ns/warp", "estimate",
                                                "(g) barrier.cluster.arrive.release: extra cost per warp of the CTA "
                                                "(the release orders every warp's earlier accesses)"),
    "mbarrier_expect_tx_ns": Param(round(8 / _CLOCK, 4), "ns", "estimate",
                                   "(f) mbarrier.arrive.expect_tx, issuing thread's cost (model 1 charges "
                                   "mbarrier_arrive_ns)"),
    "tma_store_bytes_per_ns": Param(0.0, "B/ns", "estimate",
                                    "(e) rate at which one bulk store reads its shared-memory source (what "
                                    "cp.async.bulk.wait_group.read waits for); 0 = tma_bytes_per_ns"),
    "tma_issue_overlap": Param(0, "flag", "estimate",
                               "(c') 1: the TMA unit starts on a copy when its issuing instruction begins, so the "
                               "issue cost overlaps the copy's travel (what the streaming fit uses: it fits those runs "
                               "better; the single copy's own issue and landing are h100lab.sim.latency's); "
                               "0: the copy starts after the issue cost (model 1)"),
    "period_sharpness": Param(0.0, "exponent", "estimate",
                              "(i) the closed form's period is the k-norm of its bounds (a smooth maximum: a resource "
                              "near saturation still delays the others); 0 = the hard maximum (the simulator's)"),
    "dsmem_latency_ns": Param(round(200 / _CLOCK, 4), "ns", "estimate",
                              "(h) ld.shared::cluster from another CTA's shared memory, round trip; order of "
                              "magnitude only"),
    "dsmem_bytes_per_ns": Param(round(32 * _CLOCK, 2), "B/ns", "estimate",
                                "(h) one SM's DSMEM read bandwidth from a peer's shared memory; starting value "
                                "32 B per clock, order of magnitude only"),
    # ---- model 2, second revision (issue 13): the shapes the H200's sync data asks for; 0 reproduces the above ---
    "cluster_barrier_per_warp2_ns": Param(0.0, "ns/warp²", "estimate",
                                          "(g') barrier.cluster release cost per squared warp count of a CTA (the "
                                          "round trip grows faster than linearly in warps on the H200)"),
    "cluster_arrive_release_per_warp2_ns": Param(0.0, "ns/warp²", "estimate",
                                                 "(g') barrier.cluster.arrive.release: extra cost per squared warp "
                                                 "count"),
    "cluster_barrier_per_doubling_ns": Param(0.0, "ns", "estimate",
                                             "(g') barrier.cluster release cost per doubling of the cluster, up to 8 "
                                             "CTAs (log2 of min(CTAs, 8))"),
    "dsmem_self_latency_ns": Param(0.0, "ns", "estimate",
                                   "(h') ld.shared::cluster on the CTA's own rank (a mapa address): the cluster "
                                   "path's latency, not ld.shared's; 0 = the local smem_latency_ns"),
    "dsmem_loaded_bytes_per_ns": Param(0.0, "B/ns", "estimate",
                                       "(h') one SM's DSMEM read bandwidth while every cluster of the GPU streams "
                                       "DSMEM at once, clusters of 1; 0 = dsmem_bytes_per_ns"),
    "dsmem_loaded_per_doubling_bytes_per_ns": Param(0.0, "B/ns", "estimate",
                                                    "(h') change of the loaded DSMEM rate per doubling of the cluster, "
                                                    "up to 8 CTAs (log2 of min(CTAs, 8))"),
}

#: the parameters model 2 adds or reinterprets; :func:`h100lab.validation.timing.fit` fits these
MODEL2_PARAMS = ("hbm_read_bytes_per_ns", "hbm_bytes_per_ns", "tma_bytes_per_ns", "tma_issue_ns", "tma_op_ns",
                 "mbarrier_expect_tx_ns", "cluster_arrive_release_per_warp_ns",
                 "tma_latency_ns", "dram_latency_ns", "tma_latency_per_kb_ns", "tma_store_read_ns", "wait_hit_ns",
                 "wait_wake_ns", "mbarrier_arrive_ns", "bar_sync_ns", "bar_sync_per_warp_ns", "cluster_barrier_ns",
                 "cluster_barrier_per_cta_ns", "cluster_barrier_per_warp_ns", "cluster_arrive_release_ns",
                 "cluster_arrive_relaxed_ns", "dsmem_latency_ns", "dsmem_bytes_per_ns", "smem_latency_ns",
                 "cluster_barrier_per_warp2_ns", "cluster_arrive_release_per_warp2_ns",
                 "cluster_barrier_per_doubling_ns", "dsmem_self_latency_ns", "dsmem_loaded_bytes_per_ns",
                 "dsmem_loaded_per_doubling_bytes_per_ns")


class Timing:
    """A table of :class:`Param`; attribute access returns the value (``t.tma_latency_ns``)."""

    def __init__(self, params: dict[str, Param], name: str):
        object.__setattr__(self, "params", dict(params))
        object.__setattr__(self, "name", name)

    def __getattr__(self, key: str) -> float:
        try:      # through __dict__: a table being unpickled has no params yet (no recursion, an AttributeError)
            return self.__dict__["params"][key].value
        except KeyError:
            raise AttributeError(f"timing table has no parameter {key!r}") from None

    def __setattr__(self, key, value):
        raise AttributeError("Timing is immutable: use .with_values(...)")

    def __repr__(self) -> str:
        return f"Timing({self.name!r}, {len(self.params)} parameters)"

    def with_values(self, *, status: str = "estimate", source: str = "set by the caller",
                    name: str | None = None, **values: float) -> "Timing":
        """A copy with some values replaced (their status/source given by the keywords)."""
        p = dict(self.params)
        for k, v in values.items():
            if k not in p:
                raise KeyError(f"timing table has no parameter {k!r}")
            p[k] = replace(p[k], value=float(v), status=status, source=source)
        return Timing(p, name or self.name)

    def rows(self) -> list[tuple[str, float, str, str, str]]:
        """``(name, value, unit, status, source)`` for every parameter, for a table in the book."""
        return [(k, v.value, v.unit, v.status, v.source) for k, v in self.params.items()]

    def ns_per_clock(self) -> float:
        """Length of one SM clock in ns."""
        return 1.0 / self.clock_ghz

    def model2(self, **values: float) -> "Timing":
        """This table switched to memory model 2 (module docstring): ``memory_model = 2``, the memory queue
        shared, the read ceiling equal to the copy ceiling unless given; ``values`` override any parameter."""
        base = {"memory_model": 2, "memory_shared": 1,
                "hbm_read_bytes_per_ns": self.hbm_read_bytes_per_ns or self.hbm_bytes_per_ns}
        base.update(values)
        return self.with_values(status="estimate", source="model 2 starting value (Timing.model2)",
                                name=f"{self.name}, model 2", **base)


H200_ESTIMATES = Timing(_H200, "H200 (specification and estimates)")


#: the estimates switched to memory model 2 (starting values of :func:`h100lab.validation.timing.fit`)
MODEL2_ESTIMATES = H200_ESTIMATES.model2()


def read_ceiling(t: Timing) -> float:
    """The device's read ceiling R (B/ns): ``hbm_read_bytes_per_ns``, or ``hbm_bytes_per_ns`` when it is 0."""
    r = t.hbm_read_bytes_per_ns
    return r if r > 0 else t.hbm_bytes_per_ns


def store_rate(t: Timing) -> float:
    """Rate (B/ns) at which one bulk store reads its shared-memory source (assumption e):
    ``tma_store_bytes_per_ns``, or the SM's bulk-copy rate ``tma_bytes_per_ns`` when it is 0 (model 1)."""
    r = t.params["tma_store_bytes_per_ns"].value if "tma_store_bytes_per_ns" in t.params else 0.0
    return r if r > 0 else t.tma_bytes_per_ns


def soft_period(terms, t: Timing) -> float:
    """The steady period of a pipeline from its per-tile bounds (assumption i): the hard maximum when
    ``period_sharpness`` is 0, else their k-norm ``(Σ bᵏ)^(1/k)`` — a smooth maximum, ≥ the largest bound and
    within a factor ``n^(1/k)`` of it (n bounds), so two nearly equal bounds slow each other as a queue near
    saturation does. Raises ValueError for a negative bound."""
    b = [float(x) for x in terms]
    if any(x < 0 for x in b):
        raise ValueError("a pipeline bound is a time: it cannot be negative")
    k = t.params["period_sharpness"].value if "period_sharpness" in t.params else 0.0
    m = max(b)
    if k <= 0 or m == 0:
        return m
    return m * sum((x / m) ** k for x in b) ** (1.0 / k)


def soft_periods(bounds, t: Timing):
    """:func:`soft_period` of many pipelines at once: ``bounds`` is an array (bounds × pipelines), the result one
    period per pipeline (a NumPy array), bit for bit :func:`soft_period` of each column — the maximum and the
    divisions are exact in NumPy, the powers go through :func:`math.pow` (C's ``pow``, what Python's ``**`` calls;
    NumPy's SIMD ``power`` may round differently in the last bit) and the sum runs in the bounds' order. Raises
    ValueError for a negative bound."""
    import numpy as np

    b = np.asarray(bounds, dtype=float)
    if b.ndim != 2:
        raise ValueError("bounds: a 2-D array, one row per bound, one column per pipeline")
    if (b < 0).any():
        raise ValueError("a pipeline bound is a time: it cannot be negative")
    k = t.params["period_sharpness"].value if "period_sharpness" in t.params else 0.0
    m = b.max(axis=0)
    if k <= 0:
        return m
    zero = m == 0
    r = b / np.where(zero, 1.0, m)
    p = np.fromiter(map(math.pow, r.ravel().tolist(), itertools.repeat(k)), float, r.size).reshape(r.shape)
    s = p[0].copy()
    for row in p[1:]:
        s += row
    root = np.fromiter(map(math.pow, s.tolist(), itertools.repeat(1.0 / k)), float, s.size)
    return np.where(zero, m, m * root)


def write_cost(t: Timing) -> float:
    """Cost of one written byte in read-byte units of the memory server (assumption a): ``2R / C − 1``, so a
    read stream runs at R and a copy (N read, N written) at C read + written bytes per ns. 1 with one ceiling.
    Raises ValueError when C > 2R (a copy cannot beat twice the read ceiling in this model)."""
    r, c = read_ceiling(t), t.hbm_bytes_per_ns
    w = 2.0 * r / c - 1.0
    if w <= 0:
        raise ValueError(f"copy ceiling {c:g} B/ns is at least twice the read ceiling {r:g} B/ns: no write cost fits")
    return w


def fit_latency_bandwidth(points: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares fit of ``time = latency + bytes / bandwidth`` to ``(bytes, time_ns)`` points;
    returns ``(latency_ns, bandwidth_B_per_ns)``. Needs two distinct sizes."""
    pts = list(points)
    xs = {x for x, _ in pts}
    if len(xs) < 2:
        raise ValueError("fitting latency and bandwidth needs points at two or more sizes")
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    slope = sxy / sxx
    if slope <= 0:
        raise ValueError("the fitted time does not grow with size: cannot infer a bandwidth")
    return my - slope * mx, 1.0 / slope


def calibrate(records: list[dict], base: Timing = H200_ESTIMATES,
              copy_records: list[dict] | None = None) -> Timing:
    """Calibrate the table on this project's measurements, in two steps (module docstring).

    **Step 1 — one CTA's copy path, from** ``data/l03/bulk_pipeline`` ``records``. Copy latency
    ``tma_latency_ns`` and the per-SM bulk-copy bandwidth ``tma_bytes_per_ns`` come from the
    single-CTA, single-stage runs without work (``ctas == 1, stages == 1, work == 0``). There every
    tile is one full round trip — the producer wakes on the empty slot, arrives with expect_tx, issues
    the copy, the bytes land, the consumer wakes, reads, arrives — so the time per tile minus the
    consumer's own measured busy time is ``2·wake + arrive + issue + latency + bytes/bandwidth``
    (:mod:`h100lab.sim.pipeline`); a least-squares line over the tile sizes gives both. One CTA has
    the memory system to itself, so this is the latency and bandwidth of *one SM's* stream. The same
    dataset gives ``wait_hit_ns``: the consumers' measured wait per tile in the single-CTA runs with
    ≥ 2 buffers, where the data has always arrived (records with ``wait_ns_per_iter``).

    The full-GPU runs of that dataset are *not* used for the HBM bandwidth: their consumers are busy
    ~690 ns per 16 KB tile and they run within 3 % of the single-CTA time per tile, so they measure
    the consumers, not the memory (132 × 16 KB / 868 ns = 2.5 TB/s of reads is what the consumers
    let through).

    **Step 2 — the device's memory bandwidth, from** ``data/l05/copy_bandwidth`` ``copy_records``
    (when given): :func:`calibrate_hbm`.
    """
    pts = [(r["tile_bytes"], r["ns_per_iter"] - r.get("busy_ns_per_iter", 0.0)) for r in records
           if r.get("ctas") == 1 and r.get("stages") == 1 and r.get("work") == 0 and r.get("ok")]
    lat, bw = fit_latency_bandwidth(pts)
    b = base
    fixed = 2 * b.wait_wake_ns + b.mbarrier_arrive_ns + b.tma_issue_ns
    sizes = sorted({x for x, _ in pts})
    src = (f"fitted to data/l03/bulk_pipeline, records ctas=1, stages=1, work=0 (tiles "
           f"{', '.join(str(x // 1024) + ' KB' for x in sizes)}): time per tile − consumer busy time = "
           "2·wake + arrive + issue + L + bytes/BW, least squares over the tile sizes; one CTA alone on the GPU")
    out = b.with_values(tma_latency_ns=max(lat - fixed, 0.0), tma_bytes_per_ns=bw, status="calibrated",
                        source=src, name="H200 (calibrated on data/l03)")
    hits = sorted(r["wait_ns_per_iter"] for r in records if r.get("ctas") == 1 and r.get("stages", 1) >= 2
                  and r.get("ok") and r.get("wait_ns_per_iter") is not None)
    if hits:
        out = out.with_values(wait_hit_ns=hits[len(hits) // 2], status="calibrated", source=(
            f"data/l03/bulk_pipeline, median wait_ns_per_iter of its {len(hits)} records with ctas=1, stages≥2: "
            "there the tile has always landed when a consumer waits (the round trip is shorter than the stages' "
            "busy time, in the model too), so the kernel's measured wait per tile is what a try_wait.parity "
            "that finds its phase complete costs (loop and clock reads included)"))
    if copy_records:
        out = calibrate_hbm(copy_records, out)
    return out


def copy_stream_period(tile_bytes: int, ctas: int, t: Timing) -> float:
    """Time per tile of one CTA of the single-buffer TMA copy stream (``l05_tma_copy.cu`` with
    ``stages == 1``) in the simulator's memory model, when the CTA's memory slice is its bottleneck:
    the store of tile *i* and the load of tile *i + 1* (issued once the store has read the buffer,
    ``cp.async.bulk.wait_group.read``, PTX §9.7.9.25.6.2) queue in the CTA's slice
    ``hbm_bytes_per_ns / ctas``, 2·tile bytes in all; the load lands after the L2 and DRAM latencies;
    the thread's ``try_wait`` wakes and issues the next store::

        period = tma_issue + 2 · tile / (hbm / ctas) + tma_latency + dram_latency + wait_wake

    (:func:`h100lab.tma.pipeline.simulate_copy_stream` gives the same; ``tests/test_l05_pipeline.py``).
    Raises ValueError when the slice is not the bottleneck (the form does not apply)."""
    if tile_bytes <= 0 or ctas < 1:
        raise ValueError("a positive tile size and at least one CTA")
    slice_bw = t.hbm_bytes_per_ns / ctas
    if slice_bw > t.tma_bytes_per_ns / 2:
        raise ValueError(f"{ctas} CTAs: each memory slice ({slice_bw:.0f} B/ns) is not the bottleneck of the copy "
                         f"stream (the SM's TMA unit moves {t.tma_bytes_per_ns:.0f} B/ns)")
    return t.tma_issue_ns + 2 * tile_bytes / slice_bw + t.tma_latency_ns + t.dram_latency_ns + t.wait_wake_ns


def _copy_grid(r: dict) -> tuple[int, int]:
    """(CTAs, tiles of the busiest CTA) of a tma_copy record: its grid and ceil(tiles / grid), tiles =
    tensor bytes / tile bytes — the kernel's grid-stride loop (``h100lab.measure.l05``)."""
    n = r["bytes"] // r["tile_bytes"]
    return r["grid"], -(-n // r["grid"])


def calibrate_hbm(copy_records: list[dict], base: Timing = H200_ESTIMATES) -> Timing:
    """Step 2 of the calibration: the device-wide memory bandwidth ``hbm_bytes_per_ns`` from
    ``data/l05/copy_bandwidth`` (``python -m h100lab.measure.l05``).

    Those records time whole-GPU copies of a 512 MiB FP32 tensor and count bytes read + bytes written
    (``gbps = 2 · bytes / median time``): the TMA copy stream (``kind == "tma_copy"``, 1–6 buffers,
    one or two CTAs per SM) and a vectorised device copy kernel (``kind == "device_copy"``). The
    copies that keep enough bytes in flight all level off at the same rate, whatever the tile, the
    stage count or the instruction that moves the bytes — that plateau is the memory's bandwidth.
    The estimate is the best rate any *kernel* copy reached (the model's bandwidth is a ceiling no
    simulated copy exceeds, so it must not lie below a measured one); ``cuMemcpyDtoDAsync``
    (``kind == "memcpy"``) is left out because the simulator models SM-issued copies only. It is
    compared, like every record, by :func:`h100lab.validation.l05.check_copy_bandwidth`.
    """
    rows = [r for r in copy_records if r.get("kind") in ("tma_copy", "device_copy") and r.get("gbps", 0) > 0
            and r.get("correct", True)]
    if not rows:
        raise ValueError("calibrating the HBM bandwidth needs tma_copy or device_copy records with a gbps")
    best = max(rows, key=lambda r: r["gbps"])
    what = (f"tma_copy {best['tile_bytes'] // 1024} KB tiles, {best['stages']} stage(s), "
            f"{best['ctas_per_sm']} CTA/SM" if best["kind"] == "tma_copy" else
            f"device_copy {best.get('blocks_per_sm')} blocks/SM × {best.get('threads')} threads")
    src = (f"data/l05/copy_bandwidth: best of its {len(rows)} kernel copies (tma_copy and device_copy, read + "
           f"written bytes / median time) = {what}; assumption: a copy that keeps enough bytes in flight is "
           "limited by the memory alone, and every CTA gets an equal share of it")
    out = base.with_values(hbm_bytes_per_ns=best["gbps"], status="calibrated", source=src,
                           name="H200 (calibrated on data/l03 and data/l05)")
    # the DRAM latency: only the single-buffer runs expose a latency (the others keep the memory busy);
    # per record the measured time per tile of the busiest CTA against copy_stream_period without it
    zero = out.with_values(dram_latency_ns=0.0)
    pts = []
    for r in rows:
        if r["kind"] != "tma_copy" or r["stages"] != 1 or not all(k in r for k in ("grid", "bytes", "median_ms")):
            continue
        ctas, per_cta = _copy_grid(r)
        try:
            pts.append((copy_stream_period(r["tile_bytes"], ctas, zero), r["median_ms"] * 1e6 / per_cta))
        except ValueError:
            continue
    if not pts:
        return out

    def balance(x: float) -> float:
        e = [(m + x) / p - 1 for m, p in pts]
        return max(e) + min(e)

    # minimax: the x at which the largest relative over- and under-estimate of the time per tile are equal
    # ((model + x) / measured − 1 grows with x for every record, so bisection finds it)
    lo, hi = 0.0, 10_000.0
    if balance(lo) >= 0:
        x = 0.0
    else:
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if balance(mid) < 0 else (lo, mid)
        x = (lo + hi) / 2
    src = (f"data/l05/copy_bandwidth, its {len(pts)} tma_copy records with stages=1 (the only latency-bound ones): "
           "measured time per tile of the busiest CTA against copy_stream_period(); the value that balances the "
           "largest relative over- and under-estimate (minimax)")
    return out.with_values(dram_latency_ns=x, status="calibrated", source=src)


def default_timing() -> Timing:
    """The table calibrated on whichever of ``data/l03/bulk_pipeline`` (step 1) and
    ``data/l05/copy_bandwidth`` (step 2) exist; :data:`H200_ESTIMATES` for the rest."""
    from .. import data

    out = H200_ESTIMATES
    if data.available("l03/bulk_pipeline"):
        try:
            out = calibrate(data.load("l03/bulk_pipeline").records)
        except (ValueError, KeyError):
            out = H200_ESTIMATES
    if data.available("l05/copy_bandwidth"):
        try:
            out = calibrate_hbm(data.load("l05/copy_bandwidth").records, out)
        except (ValueError, KeyError):
            pass
    return out
