"""The one calibrated table of latencies and bandwidths the simulator draws every number from.

Each entry is a :class:`Param` with its value, unit, *status* and *source*:

* ``spec``       — a documented or device-reported number (reference facts, CUDA guide, H200 query);
* ``derived``    — computed from ``spec`` numbers (the derivation is in the source text);
* ``estimate``   — an order-of-magnitude starting value with no primary source; to be replaced by
  calibration. Luo et al. (arXiv:2402.13499, arXiv:2501.12084) microbenchmark these paths on
  H800/H100 and are the published reference for their size; their tables were not read for this
  table, so no number here is attributed to them;
* ``calibrated`` — fitted to this project's own measurements in ``data/l03/`` by
  :func:`calibrate` (see :mod:`h100lab.validation.l03` for the fit and its check).

:func:`default_timing` returns the calibrated table when ``data/l03/bulk_pipeline.json`` exists and
the estimates otherwise. Times are in ns, bandwidths in units per ns (1 B/ns = 1 GB/s).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

__all__ = ["Param", "Timing", "H200_ESTIMATES", "default_timing", "calibrate", "fit_latency_bandwidth"]


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
    "hbm_bytes_per_ns": Param(4810.0, "B/ns", "derived",
                              "H200 HBM3e peak: 2 × 3.201 GHz × 752 B (6016-bit bus) = 4.81 TB/s "
                              "(reference facts §1.1 [HW]); achievable is lower and calibrated"),
    "tma_bytes_per_ns": Param(128.0, "B/ns", "estimate",
                              "one SM's bulk-copy (TMA) throughput from L2/HBM into its shared memory; "
                              "starting value 64 B/clock; calibrated from data/l03/bulk_pipeline"),
    "tma_issue_ns": Param(round(4 / _CLOCK, 4), "ns", "estimate",
                          "issuing one cp.async.bulk (address operands, a few instructions)"),
    "tma_latency_ns": Param(600.0, "ns", "estimate",
                            "issue → last byte lands and complete_tx reaches the mbarrier, beyond the "
                            "bandwidth term; hundreds of ns (seed lesson 3 §4.1); calibrated from "
                            "data/l03/bulk_pipeline"),
    "mbarrier_arrive_ns": Param(round(8 / _CLOCK, 4), "ns", "estimate",
                                "mbarrier.arrive, a shared-memory atomic on the 8-byte object"),
    "wait_wake_ns": Param(40.0, "ns", "estimate",
                          "phase completion → a suspended try_wait returns True and the warp resumes; "
                          "calibrated from data/l03/bulk_pipeline"),
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
}


class Timing:
    """A table of :class:`Param`; attribute access returns the value (``t.tma_latency_ns``)."""

    def __init__(self, params: dict[str, Param], name: str):
        object.__setattr__(self, "params", dict(params))
        object.__setattr__(self, "name", name)

    def __getattr__(self, key: str) -> float:
        try:
            return self.params[key].value
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


H200_ESTIMATES = Timing(_H200, "H200 (specification and estimates)")


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


def calibrate(records: list[dict], base: Timing = H200_ESTIMATES) -> Timing:
    """Calibrate the bulk-copy path (and, when present, HBM) from ``data/l03/bulk_pipeline`` records.

    Copy latency and bandwidth come from the single-CTA, single-stage runs without work
    (``group == "calibration"`` or ``ctas == 1, stages == 1, work == 0``). There every tile is one
    full round trip — the producer wakes on the empty slot, arrives with expect_tx, issues the copy,
    the bytes land, the consumer wakes, reads, arrives — so the time per tile minus the consumer's own
    measured busy time is ``2·wake + arrive + issue + latency + bytes/bandwidth``
    (:mod:`h100lab.sim.pipeline`); a least-squares line over the tile sizes gives both.
    HBM: the best bytes/ns of the full-GPU runs without work (``ctas > 1``), if any.
    """
    pts = [(r["tile_bytes"], r["ns_per_iter"] - r.get("busy_ns_per_iter", 0.0)) for r in records
           if r.get("ctas") == 1 and r.get("stages") == 1 and r.get("work") == 0 and r.get("ok")]
    lat, bw = fit_latency_bandwidth(pts)
    b = base
    fixed = 2 * b.wait_wake_ns + b.mbarrier_arrive_ns + b.tma_issue_ns
    src = ("fitted to data/l03/bulk_pipeline (1 CTA, 1 stage, no work): time per tile − consumer busy "
           "time = 2·wake + arrive + issue + L + bytes/BW")
    out = b.with_values(tma_latency_ns=max(lat - fixed, 0.0), tma_bytes_per_ns=bw, status="calibrated",
                        source=src, name="H200 (calibrated on data/l03)")
    full = [r["ctas"] * r["tile_bytes"] / r["ns_per_iter"] for r in records
            if r.get("ctas", 1) > 1 and r.get("work") == 0 and r.get("ok") and r.get("ns_per_iter", 0) > 0]
    if full:
        out = out.with_values(hbm_bytes_per_ns=max(full), status="calibrated",
                              source="best achieved bytes/ns of the full-GPU runs in data/l03/bulk_pipeline")
    return out


def default_timing() -> Timing:
    """The calibrated table if ``data/l03/bulk_pipeline`` exists, else :data:`H200_ESTIMATES`."""
    from .. import data

    if data.available("l03/bulk_pipeline"):
        try:
            return calibrate(data.load("l03/bulk_pipeline").records)
        except (ValueError, KeyError):
            return H200_ESTIMATES
    return H200_ESTIMATES
