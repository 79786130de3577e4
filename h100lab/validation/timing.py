"""The timing model (memory model 2) against the H200: fit on a documented part, report the held-out rest.

Datasets (``python -m h100lab.measure.timing_sweep``): ``l03/stream_sweep`` (the streaming pipeline
``l03_stream.cu``), ``l03/tma_latency`` (single copies, issue, mbarrier costs), ``l03/sync_cost`` (``bar.sync``,
``barrier.cluster``, DSMEM), ``l05/ceilings`` (read and copy ceilings at ≥ 1 GiB). Fitting is one call::

    from h100lab.validation import timing as vt
    fit = vt.fit()                 # the committed datasets; or vt.fit(stream=..., latency=..., sync=..., ceilings=...)
    report = vt.validate(fit)      # agreement on the held-out records, per metric
    print(report.summary())
    fit.timing                     # a Timing table (memory_model 2), every fitted number's source names its subset

**The splits** (:data:`SPLITS`; the held-out records never enter the fit):

* stream: calibrate on tiles of 2, 8 and 32 KiB with 1, 3 or 6 stages — every mode, scope and CTAs/SM — and
  hold out every other (stages, tile) pair (≈ 80 % of the runs, including every 1, 4, 16 and 64 KiB tile);
* latency (``l03/tma_latency``) and latency_clean (``l03/tma_latency_clean``): calibrate on copies of 256 B, 4 KiB
  and 64 KiB; hold out the other sizes; the mbarrier costs are single measurements (calibration only);
  latency_cold (``l03/tma_latency_cold``, cold rounds on lines never read before in the run): its fresh copies of
  256 B and 4 KiB join the calibration, its re-read pass calibrates what the L2 keeps of lines read before
  (:func:`h100lab.validation.micro.fit_l2_keep`), its other fresh copies are held out;
* sync: ``bar.sync`` on 32 and 256 threads; ``barrier.cluster`` on clusters of 2 and 8 with 32, 256 and 1024
  threads (no store before the arrive); DSMEM on clusters of 2 and 8; hold out the rest;
* ceilings: the best read stream and the best copy initialise the read and copy ceilings; the ``ld.global.v4``
  read streams of micro's ``read_stream`` split calibrate the read-stream model (Little's law,
  :mod:`h100lab.sim.load_stream`) and are calibration records; every other ceiling record is held out against the
  fitted model.

**The fit** (:func:`fit`), in order: (1) the mbarrier costs from ``l03/tma_latency``; (2) the single-copy model
(:mod:`h100lab.sim.latency`: issue, first byte, fill, DRAM and TLB parts, the TMA unit's queue, and what each
measurement kernel adds to its own window) on both latency datasets — :func:`h100lab.validation.micro.fit_latency`;
(3) ``bar.sync``, ``barrier.cluster`` (quadratic in warps, log2 in CTAs up to 8) and DSMEM —
:func:`h100lab.validation.micro.fit_sync`; (4) robust least squares (:func:`h100lab.validation.fit.least_squares`)
of the memory ceilings, the SM's TMA bandwidth and issue limit, the store read-back, the latency split and
``l03_stream.cu``'s own constants on the calibration streaming runs alone, time per tile and bandwidth together,
with the closed form :func:`h100lab.sim.stream.analytic_stream`. The single copies are not in (4): the first fit
put them there and one parameter set could not serve both (held-out streaming 89 %, single copies off by
40–60 %); fitted apart, the streaming runs alone find an SM fill rate of ~210 B/ns and the single copies ~200 B/ns —
the same unit, seen through two kernels. :func:`validate` predicts every held-out record with the simulator
(:func:`h100lab.sim.stream.simulate_stream`) — or the closed form, ``method="analytic"`` — and counts the runs
within ±10 %.

**Goal** (the issue): ≥ 90 % of held-out streaming runs within ±10 % for time per tile and for bandwidth;
latencies within ±10 %. :data:`GOAL`, :data:`TOLERANCE`. :data:`GOAL_CHECKS` are the goals the model meets,
:data:`ACHIEVED_CHECKS` the levels it reaches where it does not (and the calibration guards); :func:`register_checks`
— called by ``h100lab/validation/l03.py`` — registers both as silicon checks, :func:`goal_report` lists them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from . import CheckResult, beyond_floor, silicon_check
from . import micro
from .fit import Agreement, FitParam, Split, agreement, least_squares, log_ratios

__all__ = ["SPLITS", "GOAL", "TOLERANCE", "DATASETS", "TimingFit", "TimingReport", "fit", "validate",
           "predict_stream", "predict_latency", "predict_sync", "predict_ceiling", "load_datasets",
           "goal_check", "stream_label", "GOAL_CHECKS", "ACHIEVED_CHECKS", "register_checks", "goal_report", "REQUIRED",
           "agreement_rows"]

GOAL = 0.90
TOLERANCE = 0.10
DATASETS = {"stream": "l03/stream_sweep", "latency": "l03/tma_latency", "sync": "l03/sync_cost",
            "ceilings": "l05/ceilings", "latency_clean": "l03/tma_latency_clean", "latency_cold": "l03/tma_latency_cold"}
#: the datasets a fit needs (the others join when committed)
REQUIRED = ("stream",)

_STREAM_CAL_TILES = (2048, 8192, 32768)
_STREAM_CAL_STAGES = (1, 3, 6)
#: weight of the single-copy records in the streaming fit: 0 — they have their own structure
#: (:mod:`h100lab.validation.micro`); with weight 1 (the first fit) the streaming held-out agreement fell from 93 %
#: to 89 % and the single-copy latencies were all off by 40–60 %
_LAT_WEIGHT = 0.0

SPLITS = {
    "stream": Split("stream", "tiles of 2, 8 and 32 KiB with 1, 3 or 6 stages (every mode, scope and CTAs/SM); "
                              "every other (stages, tile) pair is held out",
                    lambda r: r["tile_bytes"] in _STREAM_CAL_TILES and r["stages"] in _STREAM_CAL_STAGES),
    **micro.SPLITS,
}


def stream_label(r: dict) -> str:
    return (f"{r['mode']} {r['scope']} {r['stages']}×{r['tile_bytes'] // 1024}KiB×{r['ctas_per_sm']}/SM"
            + (f" flags {r['flags']}" if r.get("flags") else ""))


# ------------------------------------------------------------------------------------------------
# predictions

def predict_stream(r: dict, timing, kernel, method: str = "sim") -> dict[str, float]:
    """The model's ``ns_per_tile`` (CTA span / tiles) and ``moved_gbps`` (read + written bytes / kernel time) for
    one ``l03/stream_sweep`` record: the simulator (``method="sim"``) or the closed form (``"analytic"``)."""
    from ..sim.stream import analytic_stream, config_from_record, simulate_stream

    cfg = config_from_record(r)
    if method == "analytic":
        a = analytic_stream(cfg, timing, kernel)
        span, kern = a.span_ns, a.kernel_ns
    elif method == "sim":
        s = simulate_stream(cfg, timing, kernel)
        span, kern = s.span_ns, s.kernel_ns
    else:
        raise ValueError(f"method {method!r}: 'sim' or 'analytic'")
    return {"ns_per_tile": span / cfg.tiles, "moved_gbps": cfg.moved_bytes / kern}


def predict_latency(r: dict, tf: "TimingFit") -> dict[str, float]:
    """The model's numbers for one ``l03/tma_latency`` record (:func:`h100lab.validation.micro.predict_latency`, the
    fit's single-copy model and old-kernel constants, the sources' alignment replayed)."""
    return micro.predict_latency(r, tf.latency.model, tf.latency.kernel, tf.align)


def predict_sync(r: dict, tf: "TimingFit") -> dict[str, float]:
    """The model's numbers for one ``l03/sync_cost`` record (:func:`h100lab.validation.micro.predict_sync`)."""
    return micro.predict_sync(r, tf.timing, tf.sync_kernel)


def predict_ceiling(r: dict, timing, kernel, load_stream=None) -> float | None:
    """The model's GB/s (read + written) for one ``l05/ceilings`` memory record: the TMA streams through
    :func:`predict_stream`; a load-based read stream (``ld.global.v4``) through the read-stream model
    (:func:`h100lab.validation.micro.predict_load_stream`: bytes in flight per SM over a loaded latency, capped at
    its ceiling — Little's law) when ``load_stream`` (a fitted :class:`~h100lab.sim.load_stream.LoadStream`) is
    given, else at the read ceiling; a copy (memcpy, copy kernels) at the copy ceiling (the simulator has no LSU
    path to global memory: an assumption). None for GEMMs."""
    from ..sim.timing import read_ceiling

    k = r["kind"]
    if k in ("tma_read", "tma_copy_stream"):
        rec = dict(mode="load" if k == "tma_read" else "copy", scope="gpu", stages=r["stages"],
                   tile_bytes=r["tile_bytes"], ctas_per_sm=r["ctas_per_sm"], grid=r["grid"],
                   tiles_per_cta=r["tiles_per_cta"], flags=r.get("flags", 0))
        return predict_stream(rec, timing, kernel, "analytic")["moved_gbps"]
    if k == "read_stream":
        if load_stream is not None and all(x in r for x in ("blocks_per_sm", "threads", "unroll", "variant")):
            return micro.predict_load_stream(r, load_stream)
        return read_ceiling(timing)
    if k in ("memcpy", "device_copy", "tma_copy"):
        return timing.hbm_bytes_per_ns
    return None


# ------------------------------------------------------------------------------------------------
# the fit

@dataclass
class TimingFit:
    """What :func:`fit` returns: the model-2 ``timing`` table, ``l03_stream.cu``'s ``kernel`` constants, the
    records (calibration and held-out, per dataset), the least-squares result and notes on each step."""

    timing: Any
    kernel: Any
    calibration: dict
    held_out: dict
    lsq: Any = None
    notes: list = field(default_factory=list)
    latency: Any = None                 # micro.LatencyFit: the single-copy model
    sync_kernel: Any = micro.SyncKernel()
    align: dict = field(default_factory=dict)
    load_stream: Any = None             # sim.load_stream.LoadStream: ld.global.v4 read streams (micro.fit_load_stream)


def load_datasets() -> dict[str, list[dict] | None]:
    """The committed datasets of :data:`DATASETS` (``None`` for a missing one); records with ``ok`` False or
    ``correct`` False are dropped."""
    from .. import data

    out = {}
    for k, name in DATASETS.items():
        if data.available(name):
            out[k] = [r for r in data.load(name).records if r.get("ok", True) and r.get("correct", True)]
        else:
            out[k] = None
    return out


def _median(xs) -> float:
    return float(np.median(np.asarray(list(xs), dtype=float)))


def _line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``y = a + b·x``; ``(a, b)``."""
    x = np.array([p[0] for p in points], float)
    y = np.array([p[1] for p in points], float)
    if np.unique(x).size < 2:
        return float(y.mean()), 0.0
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def fit(stream: list[dict] | None = None, latency: list[dict] | None = None, sync: list[dict] | None = None,
        ceilings: list[dict] | None = None, *, base=None, max_iter: int = 80,
        bounds: dict | None = None, latency_clean: list[dict] | None = None,
        latency_cold: list[dict] | None = None) -> TimingFit:
    """Fit memory model 2 (module docstring) on the calibration part of each dataset given (default: the
    committed datasets, :func:`load_datasets`). Raises ValueError when the streaming sweep is missing.

    A pure function of the records, ``base``, ``max_iter``, ``bounds`` and the package's code, so it is computed
    once per content (:func:`h100lab.fitcache.memo`: once per process, and kept on disk for the next process —
    every chapter asks for the fit of the committed datasets): equal inputs give the same :class:`TimingFit` object,
    which callers read and do not modify."""
    from .. import fitcache
    from ..sim.timing import H200_ESTIMATES

    if stream is None and latency is None and sync is None and ceilings is None and latency_clean is None:
        ds = load_datasets()
        stream, latency, sync, ceilings = ds["stream"], ds["latency"], ds["sync"], ds["ceilings"]
        latency_clean, latency_cold = ds["latency_clean"], ds["latency_cold"]
    if not stream:
        raise ValueError("fitting the timing model needs l03/stream_sweep (python -m h100lab.measure.timing_sweep)")
    base = base or H200_ESTIMATES
    parts = {"stream": stream, "latency": latency, "sync": sync, "ceilings": ceilings, "latency_clean": latency_clean,
             "latency_cold": latency_cold, "base": [base.name, base.rows()], "max_iter": max_iter, "bounds": bounds}
    return fitcache.memo("timing-fit", parts, lambda: _fit(stream, latency, sync, ceilings, base, max_iter, bounds,
                                                           latency_clean, latency_cold))


def _fit(stream, latency, sync, ceilings, base, max_iter, bounds, latency_clean, latency_cold=None) -> TimingFit:
    """:func:`fit`'s computation."""
    from ..sim.stream import STREAM_KERNEL, StreamBatch, analytic_stream_batch, config_from_record

    t = base.model2(tma_issue_overlap=1)
    notes: list[str] = []
    cal: dict[str, list] = {}
    held: dict[str, list] = {}
    vals: dict[str, float] = {}
    src: dict[str, str] = {}

    # (1) mbarrier costs (fixed)
    lat_fit = None
    lat_cal: list[dict] = []
    if latency:
        cal["latency"], held["latency"] = SPLITS["latency"].apply(latency)
        mb = [r for r in cal["latency"] if r["kind"] == "mbarrier"]
        if mb:
            vals["wait_hit_ns"] = _median(r["try_wait_hit_ns"] for r in mb)
            vals["mbarrier_arrive_ns"] = _median(r["arrive_ns"] for r in mb)
            vals["wait_wake_ns"] = max(_median(r["wake_ns"] for r in mb) - vals["mbarrier_arrive_ns"], 0.0)
            for k in ("wait_hit_ns", "mbarrier_arrive_ns", "wait_wake_ns"):
                src[k] = ("l03/tma_latency, mbarrier costs (mbar_costs): try_wait on a completed phase, back-to-back "
                          "arrive, arrive → the waiting warp resumes")
        lat_cal = [r for r in cal["latency"] if r["kind"] in ("bulk", "tensor", "issue")]
    # (2) the single-copy model (its own structure, h100lab.sim.latency) on both latency datasets' calibration parts
    clean_cal: list[dict] = []
    if latency_clean:
        cal["latency_clean"], held["latency_clean"] = SPLITS["latency_clean"].apply(latency_clean)
        clean_cal = cal["latency_clean"]
    cold_cal: list[dict] = []
    if latency_cold:
        cal["latency_cold"], held["latency_cold"] = SPLITS["latency_cold"].apply(latency_cold)
        cold_cal = cal["latency_cold"]
    if lat_cal or clean_cal:
        lat_fit = micro.fit_latency(lat_cal, clean_cal, cold=cold_cal)
        notes += lat_fit.notes
    # (3) synchronisation and DSMEM (independent of the copy path: fitted apart, h100lab.validation.micro)
    sync_kernel = micro.SyncKernel()
    if sync:
        cal["sync"], held["sync"] = SPLITS["sync"].apply(sync)
        sv, ss, sync_kernel = micro.fit_sync(cal["sync"], t)
        vals.update(sv)
        src.update(ss)
    # ceilings initialise the memory's two ceilings
    load_stream = None
    if ceilings:
        # the read streams of micro's read_stream split calibrate the read-stream model (and are calibration
        # here); every other ceiling record is held out
        shaped = [r for r in micro.read_stream_records(ceilings)
                  if all(k in r for k in ("blocks_per_sm", "threads", "unroll", "variant", "grid"))]
        rs_cal, _ = SPLITS["read_stream"].apply(shaped)
        if rs_cal:
            load_stream, ls_notes = micro.fit_load_stream(rs_cal)
            notes += ls_notes
        ids = {id(r) for r in rs_cal}
        cal["ceilings"], held["ceilings"] = list(rs_cal), [r for r in ceilings if id(r) not in ids]
        reads = [r["gbps"] for r in ceilings if r.get("kind") in ("read_stream", "tma_read") and r.get("gbps")]
        copies = [r["gbps"] for r in ceilings if r.get("kind") in ("memcpy", "device_copy", "tma_copy",
                                                                     "tma_copy_stream") and r.get("gbps")]
        if reads:
            vals["hbm_read_bytes_per_ns"] = max(reads)
        if copies:
            vals["hbm_bytes_per_ns"] = min(max(copies), 1.98 * vals.get("hbm_read_bytes_per_ns", max(copies)))
    t = t.with_values(status="calibrated", source="timing fit", **vals)
    for k, sx in src.items():
        t = t.with_values(status="calibrated", source=sx, **{k: getattr(t, k)})

    # (4) the copy path and l03_stream.cu's constants: one robust least squares over the calibration streaming runs
    # (closed form, time per tile and bandwidth) and the calibration single-copy records
    cal["stream"], held["stream"] = SPLITS["stream"].apply(stream)
    cs = [r for r in cal["stream"] if "ns_per_tile" in r]
    if not cs:
        raise ValueError("no calibration record of l03/stream_sweep has a time per tile")
    free = [FitParam("hbm_read_bytes_per_ns", t.hbm_read_bytes_per_ns, 1000, 6000),
            FitParam("hbm_bytes_per_ns", min(t.hbm_bytes_per_ns, 1.98 * t.hbm_read_bytes_per_ns), 1000, 6000),
            FitParam("tma_bytes_per_ns", t.tma_bytes_per_ns, 20, 2000),
            FitParam("tma_op_ns", max(t.tma_op_ns, 5.0), 0.1, 500),
            FitParam("tma_issue_ns", max(t.tma_issue_ns, 5.0), 0.1, 500),
            FitParam("mbarrier_expect_tx_ns", max(t.mbarrier_expect_tx_ns, 5.0), 0.1, 500),
            FitParam("tma_store_read_ns", max(t.tma_store_read_ns, 20.0), 0.1, 2000),
            FitParam("tma_store_bytes_per_ns", 100.0, 10, 2000),
            FitParam("period_sharpness", 8.0, 1.0, 60.0),
            FitParam("tma_latency_ns", t.tma_latency_ns, 5, 5000),
            FitParam("dram_latency_ns", max(t.dram_latency_ns, 50.0), 1, 5000),
            FitParam("tma_latency_per_kb_ns", max(t.tma_latency_per_kb_ns, 1.0), 0.01, 200),
            FitParam("consume_warp_bytes_per_ns", STREAM_KERNEL.consume_warp_bytes_per_ns, 5, 2000),
            FitParam("consume_fixed_ns", STREAM_KERNEL.consume_fixed_ns, 0.1, 2000),
            FitParam("loop_ns", STREAM_KERNEL.loop_ns, 0.1, 500),
            FitParam("launch_ns", STREAM_KERNEL.launch_ns, 100, 50000)]
    for k, (lo, hi) in (bounds or {}).items():           # a caller's bounds (experiments on the structure)
        i = next(j for j, p in enumerate(free) if p.name == k)
        free[i] = FitParam(k, min(max(free[i].init, lo), hi), lo, hi)
    kernel_keys = ("consume_warp_bytes_per_ns", "consume_fixed_ns", "loop_ns", "launch_ns")
    cfgs = [config_from_record(r) for r in cs]

    def split_vals(v: dict):
        tv = {k: x for k, x in v.items() if k not in kernel_keys}
        r_ = tv.get("hbm_read_bytes_per_ns", t.hbm_read_bytes_per_ns)
        tv["hbm_bytes_per_ns"] = min(tv.get("hbm_bytes_per_ns", t.hbm_bytes_per_ns), 1.98 * r_)
        kv = {k: x for k, x in v.items() if k in kernel_keys}
        return t.with_values(**tv), STREAM_KERNEL.with_values(**kv)

    batch = StreamBatch.of(cfgs)                 # the runs' columns, once: only the tables change in the fit
    meas = np.empty(2 * len(cs))
    meas[0::2] = [r["ns_per_tile"] for r in cs]
    meas[1::2] = [r["moved_gbps"] for r in cs]

    def residuals(v: dict) -> np.ndarray:
        # per run: log ratio of the time per tile, then of the bandwidth (the closed form of every run at once)
        tt, kk = split_vals(v)
        a = analytic_stream_batch(batch, tt, kk)
        pred = np.empty(2 * len(cs))
        pred[0::2] = a["span_ns"] / batch.tiles
        pred[1::2] = batch.moved / a["kernel_ns"]
        return np.clip(log_ratios(pred, meas), -5, 5)

    lsq = least_squares(residuals, free, max_iter=max_iter)
    t2, k2 = split_vals(lsq.values)
    desc = SPLITS["stream"].description
    fitted = {k: getattr(t2, k) for k in lsq.values if k not in kernel_keys}
    t2 = t2.with_values(status="calibrated", name="H200 (memory model 2, fitted by h100lab.validation.timing)",
                        source=(f"robust least squares (soft-L1 on log ratios) over the calibration runs of "
                                f"l03/stream_sweep ({desc}; time per tile and bandwidth)"), **fitted)
    notes.append(f"streaming fit: {len(cs)} runs, loss {lsq.loss:.4g}, {lsq.iterations} iterations, "
                 f"{'converged' if lsq.converged else 'NOT converged'}")
    align = micro.source_alignment(latency) if latency else {}
    return TimingFit(t2, k2, cal, held, lsq, notes, lat_fit, sync_kernel, align, load_stream)


# ------------------------------------------------------------------------------------------------
# validation on the held-out records

@dataclass
class TimingReport:
    """Agreement per metric on the held-out records (and, for reference, on the calibration records)."""

    held_out: dict
    calibration: dict
    method: str

    def summary(self) -> str:
        lines = [f"held-out agreement ({self.method}):"]
        lines += [f"  {a}" for a in self.held_out.values()]
        lines.append("calibration agreement:")
        lines += [f"  {a}" for a in self.calibration.values()]
        return "\n".join(lines)

    def meets_goal(self) -> bool:
        """Every goal of :data:`GOAL_CHECKS` on this report's held-out records (each family that has records): at
        least its floor of them within its tolerance (the report's own tolerance must be that of the goals)."""
        for _, _, _, part, prefixes, tol, floor in GOAL_CHECKS:
            parts = [a for k, a in getattr(self, part).items() if k.startswith(prefixes)]
            n, within = sum(a.n for a in parts), sum(a.within for a in parts)
            if n and beyond_floor(n, n - within, floor):
                return False
        return True


def _stream_pairs(recs, tf: TimingFit, method: str):
    recs = [r for r in recs if "ns_per_tile" in r]
    if method == "analytic" and recs:       # :func:`predict_stream`'s numbers, every run at once (the same floats)
        from ..sim.stream import StreamBatch, analytic_stream_batch, config_from_record

        b = StreamBatch.of(config_from_record(r) for r in recs)
        a = analytic_stream_batch(b, tf.timing, tf.kernel)
        preds = [{"ns_per_tile": x, "moved_gbps": y}
                 for x, y in zip((a["span_ns"] / b.tiles).tolist(), (b.moved / a["kernel_ns"]).tolist())]
    else:
        preds = [predict_stream(r, tf.timing, tf.kernel, method) for r in recs]
    ns = [(stream_label(r), p["ns_per_tile"], r["ns_per_tile"]) for r, p in zip(recs, preds)]
    bw = [(stream_label(r), p["moved_gbps"], r["moved_gbps"]) for r, p in zip(recs, preds)]
    return ns, bw


def _latency_pairs(recs, tf: TimingFit):
    out: dict[str, list] = {}
    t = tf.timing
    for r in recs:
        if r["kind"] == "mbarrier":      # the stream table's constants, measured here (calibration only)
            p = {"try_wait_hit_ns": t.wait_hit_ns, "arrive_ns": t.mbarrier_arrive_ns,
                 "wake_ns": t.mbarrier_arrive_ns + t.wait_wake_ns}
        elif tf.latency is None:
            continue
        else:
            p = predict_latency(r, tf)
        for k, v in p.items():
            if k in r:
                out.setdefault(f"latency {r['kind']} {k}", []).append((f"{r['kind']} {r.get('bytes', '')} B"
                                                                       f"{' ×' + str(r['count']) if 'count' in r else ''}",
                                                                       v, r[k]))
    return out


def _clean_pairs(recs, tf: TimingFit, family: str = "latency clean"):
    out: dict[str, list] = {}
    if tf.latency is None:
        return out
    for r in recs:
        for k, v in micro.predict_latency_clean(r, tf.latency.model, tf.latency.clean_kernel).items():
            if k in r:
                lab = f"{r['bytes']} B ×{r['count']} align {r['align']} touch {r['touch']}" + (
                    f" pass {r['pass']}" if "pass" in r else "")
                out.setdefault(f"{family} {'single' if r['count'] == 1 else 'round'} {k}", []).append(
                    (lab, v, r[k]))
    return out


def _sync_pairs(recs, tf: TimingFit):
    out: dict[str, list] = {}
    for r in recs:
        if r["kind"] == "cluster_barrier" and r.get("store"):
            continue          # a store before the arrive is not modelled (informational records)
        p = predict_sync(r, tf)
        for k, v in p.items():
            if k in r:
                lab = ", ".join(f"{x}={r[x]}" for x in ("cluster", "threads", "sem", "remote", "target", "all_sms")
                                if x in r)
                out.setdefault(f"sync {r['kind']} {k}", []).append((lab, v, r[k]))
    return out


def validate(tf: TimingFit, *, method: str = "sim", tol: float = TOLERANCE) -> TimingReport:
    """Agreement of the fitted model with every held-out record (and the calibration ones, for reference)."""
    held, calib = {}, {}
    for part, store in ((tf.held_out, held), (tf.calibration, calib)):
        if part.get("stream"):
            ns, bw = _stream_pairs(part["stream"], tf, method)
            store["stream ns/tile"] = agreement("stream ns/tile", ns, tol)
            store["stream GB/s"] = agreement("stream GB/s", bw, tol)
        if part.get("latency"):
            for k, pairs in _latency_pairs(part["latency"], tf).items():
                store[k] = agreement(k, pairs, tol)
        if part.get("latency_clean"):
            for k, pairs in _clean_pairs(part["latency_clean"], tf).items():
                store[k] = agreement(k, pairs, tol)
        if part.get("latency_cold"):            # its fresh records (the re-read pass calibrates what L2 keeps)
            fresh = [r for r in part["latency_cold"] if r.get("fresh")]
            for k, pairs in _clean_pairs(fresh, tf, "latency cold").items():
                store[k] = agreement(k, pairs, tol)
        if part.get("sync"):
            for k, pairs in _sync_pairs(part["sync"], tf).items():
                store[k] = agreement(k, pairs, tol)
        if part.get("ceilings"):
            pairs = []
            for r in part["ceilings"]:
                p = predict_ceiling(r, tf.timing, tf.kernel, tf.load_stream)
                if p is not None and r.get("gbps"):
                    pairs.append((f"{r['kind']} {r.get('bytes', 0) >> 20} MiB", p, r["gbps"]))
            if pairs:
                store["ceilings GB/s"] = agreement("ceilings GB/s", pairs, tol)
    return TimingReport(held, calib, method)


def _split_of(metric: str) -> str:
    if metric.startswith("latency clean"):
        return SPLITS["latency_clean"].description
    if metric.startswith("latency cold"):
        return SPLITS["latency_cold"].description
    head = metric.split()[0]
    return SPLITS[head].description if head in SPLITS else ("the read_stream split's streams (the read-stream model) "
                                                             "and the best read and copy records (ceilings)")


def agreement_rows(report: TimingReport) -> list[dict]:
    """One row per metric for a book table: the metric, the subset it was calibrated on, and the agreement within
    the report's tolerance on the calibration records and on the held-out ones, apart."""
    rows = []
    for k in dict.fromkeys(list(report.held_out) + list(report.calibration)):
        c, h = report.calibration.get(k), report.held_out.get(k)
        fmt = lambda a: f"{a.within}/{a.n} ({a.fraction:.0%})" if a is not None and a.n else "—"
        rows.append({"metric": k, "calibrated on": _split_of(k), "calibration": fmt(c), "held out": fmt(h),
                     "held-out median error": f"{h.median_error:.1%}" if h is not None and h.n else "—"})
    return rows


def goal_check(a: Agreement, goal: float = GOAL) -> CheckResult:
    """A silicon-check verdict for one agreement: the cases are the held-out records; the mismatches those
    outside the tolerance beyond what the goal allows (``n − ceil(goal · n)``), so the check passes exactly when
    at least ``goal`` of them agree."""
    return CheckResult(a.n, beyond_floor(a.n, a.n - a.within, goal), a.worst, note=str(a))


_CACHE: dict = {}


def _fitted(ds_name: str, tol: float = TOLERANCE) -> tuple[TimingFit, TimingReport] | None:
    """Fit once per process on the committed datasets and validate with the closed form (the checks share it;
    ``method="analytic"``, what chapters 3 and 5 report) at tolerance ``tol``."""
    from .. import data

    key = tuple((n, data.available(n)) for n in DATASETS.values())
    if key not in _CACHE:
        try:
            _CACHE[key] = fit()
        except ValueError:
            _CACHE[key] = None
    tf = _CACHE[key]
    if tf is None:
        return None
    rk = (key, tol)
    if rk not in _CACHE:
        _CACHE[rk] = validate(tf, method="analytic", tol=tol)
    return tf, _CACHE[rk]


def _check(metric: str, goal: float = GOAL) -> CheckResult:
    fr = _fitted(DATASETS["stream"])
    if fr is None:
        return CheckResult(0, 0, [], note="cannot fit: l03/stream_sweep is missing or has no calibration run")
    a = fr[1].held_out.get(metric)
    if a is None:
        return CheckResult(0, 0, [], note=f"no held-out records for {metric}")
    return goal_check(a, goal)


def _family_check(part: str, prefixes: tuple[str, ...], tol: float, floor: float) -> CheckResult:
    """The records of ``part`` (``held_out`` or ``calibration``) whose metric starts with one of ``prefixes``: the
    check passes when at least ``floor`` of them are within ``tol``; the note says the fraction within ±10 %."""
    fr = _fitted(DATASETS["stream"], tol)
    if fr is None:
        return CheckResult(0, 0, [], note="cannot fit: l03/stream_sweep is missing or has no calibration run")
    parts = [a for k, a in getattr(fr[1], part).items() if k.startswith(prefixes)]
    n = sum(a.n for a in parts)
    within = sum(a.within for a in parts)
    ten = _fitted(DATASETS["stream"], TOLERANCE)[1]
    p10 = [a for k, a in getattr(ten, part).items() if k.startswith(prefixes)]
    w10 = sum(a.within for a in p10)
    bad = beyond_floor(n, n - within, floor)
    note = (f"{part.replace('_', '-')}: {within}/{n} within ±{tol:.0%} (floor {floor:.0%}); {w10}/{n} within "
            f"±{TOLERANCE:.0%}")
    return CheckResult(n, bad, [w for a in parts for w in a.worst][:5], note=note)


#: the issue's goals, one silicon check each (registered: every one of them is met on the committed data):
#: (title, lesson, dataset, part, metric prefixes, tolerance, floor). Streaming: ≥ 90 % of the held-out runs within
#: ±10 %; latencies, barriers and DSMEM: every held-out record within ±10 %.
GOAL_CHECKS = [
    ("Timing model 2 goal, held out: streaming time per tile, ≥ 90 % within ±10 %", 3, "l03/stream_sweep",
     "held_out", ("stream ns/tile",), 0.10, GOAL),
    ("Timing model 2 goal, held out: streaming bandwidth, ≥ 90 % within ±10 %", 3, "l03/stream_sweep",
     "held_out", ("stream GB/s",), 0.10, GOAL),
    ("Timing model 2 goal, held out: single copies of l03_tma_latency.cu (bulk and tensor, cold and warm), all "
     "within ±10 %", 3, "l03/tma_latency", "held_out", ("latency bulk", "latency tensor"), 0.10, 1.0),
    ("Timing model 2 goal, held out: back-to-back TMA issue cost per copy, all within ±10 %", 3, "l03/tma_latency",
     "held_out", ("latency issue issue_ns_per_copy",), 0.10, 1.0),
    ("Timing model 2 goal, held out: single copies of l03_copy_latency.cu (issue window and total, cold and warm, "
     "aligned and not), all within ±10 %", 3, "l03/tma_latency_clean", "held_out", ("latency clean single",), 0.10,
     1.0),
    ("Timing model 2 goal, held out: back-to-back rounds of l03_copy_latency.cu (issue windows, warm totals), all "
     "within ±10 %", 3, "l03/tma_latency_clean", "held_out",
     ("latency clean round cold_first", "latency clean round cold_issue", "latency clean round warm"), 0.10, 1.0),
    ("Timing model 2 goal, held out: l03/tma_latency_cold's single copies on fresh lines (cold and warm, every "
     "pass) and its rounds' issue windows and warm totals, all within ±10 %", 3, "l03/tma_latency_cold", "held_out",
     ("latency cold single", "latency cold round cold_first", "latency cold round cold_issue",
      "latency cold round warm"), 0.10, 1.0),
    ("Timing model 2 goal, held out: bar.sync cost, all within ±10 %", 3, "l03/sync_cost", "held_out",
     ("sync bar_sync",), 0.10, 1.0),
    ("Timing model 2 goal, held out: barrier.cluster round trips (release and relaxed), all within ±10 %", 3,
     "l03/sync_cost", "held_out", ("sync cluster_barrier",), 0.10, 1.0),
    ("Timing model 2 goal, held out: DSMEM latency and bandwidth, all within ±10 %", 3, "l03/sync_cost", "held_out",
     ("sync dsmem",), 0.10, 1.0),
    ("Timing model 2 goal, held out: 1 GiB read and copy ceilings (ld.global.v4 streams through the read-stream "
     "model), all within ±10 %", 5, "l05/ceilings", "held_out", ("ceilings",), 0.10, 1.0),
]

#: what the model achieves where the goal is not met, and the calibration guards (regression checks at the level
#: the fitted model reaches on the committed data, rounded down; the title says when the goal is not met)
ACHIEVED_CHECKS = [
    ("Timing model 2, calibration: streaming time per tile and bandwidth, ≥ 90 % within ±10 %", 3,
     "l03/stream_sweep", "calibration", ("stream",), 0.10, 0.90),
    ("Timing model 2, held out: streaming time per tile and bandwidth, ≥ 97 % within ±20 %", 3,
     "l03/stream_sweep", "held_out", ("stream",), 0.20, 0.97),
    ("Timing model 2, held out: whole back-to-back rounds of l03_tma_latency.cu (its issue loop unrolled by four, "
     "read off the SASS), ≥ 96 % within ±10 % (goal: all; not met — the 16-byte ×2 cold round: its first copy re-read "
     "the 64-byte request the warm ×1 round before it had fetched (an L2 hit), and cold 16-byte copies fall in two "
     "groups ~95 ns apart by page, so a round's median moves with its page draw; l03/tma_issue_cold, "
     "micro.issue_cold_rows)", 3, "l03/tma_latency", "held_out", ("latency issue total_ns",), 0.10, 0.96),
    ("Timing model 2, held out: whole back-to-back rounds of l03_tma_latency.cu, all within ±25 %", 3,
     "l03/tma_latency", "held_out", ("latency issue total_ns",), 0.25, 1.0),
    ("Timing model 2, held out: l03/tma_latency_clean's \"cold\" rounds — most re-read lines their run had read "
     "5–60 MiB before, so their samples mix L2 hits and DRAM trips (what the L2 keeps, at two levels; a check of "
     "that mixture; cold-round latency is "
     "checked on l03/tma_latency_cold2) — all within ±25 %", 3, "l03/tma_latency_clean", "held_out",
     ("latency clean round cold_total",), 0.25, 1.0),
]


def goal_report(tol: float = TOLERANCE) -> list[tuple[str, bool, str]]:
    """``(title, met, note)`` for each of :data:`GOAL_CHECKS` on the committed datasets."""
    out = []
    for title, _, _, part, prefixes, t, floor in GOAL_CHECKS:
        r = _family_check(part, prefixes, t, floor)
        out.append((title, r.ok, r.note))
    return out


def register_checks() -> None:
    """Register :data:`GOAL_CHECKS` and :data:`ACHIEVED_CHECKS` as silicon checks (``h100lab.validation``; run by
    ``tests/test_validation.py`` and the model-vs-silicon appendix), calibration and held-out apart. Called by
    ``h100lab/validation/l03.py``."""
    for title, lesson, dataset, part, prefixes, tol, floor in GOAL_CHECKS + ACHIEVED_CHECKS:
        silicon_check(title, lesson=lesson, dataset=dataset)(
            lambda ds, a=(part, prefixes, tol, floor): _family_check(*a))
