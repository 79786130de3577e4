"""Lesson 8 model-vs-silicon: the capstone GEMM's time model (:mod:`h100lab.design.perf`) against the H200's
timing records in ``data/l08`` — calibrated on a documented subset, checked on every other record.

**The split** (:func:`h100lab.design.perf.is_calibration`): the model's four constants (the sustained tensor
clock, the direct-store epilogue rate, the L2 share at full load, the throttled clock) are fitted on seven
records — ``cooperative`` and ``pingpong_inflight`` (``l08/gemm_bench``) and ``cooperative_inflight_tmastore``
(``l08/gemm_bench_tmastore``) at 4096³ and 8192³, and ``cooperative`` at 16384³ (the clock a run that long settles
at). Every other record is held out: the other variants at every shape, the wave-quantized shapes
1280 × 3840 × 8192 and 1408 × 3072 × 8192, the other tile orders, the second run's records of the calibration
shapes, and every record of any later ``data/l08`` timing dataset (step-by-step kernels, FP8, clusters:
:func:`h100lab.design.perf.timing_datasets`), which never enters the fit.

**The goal** (the issue): every measured shape and variant within ±10 % (:data:`TOLERANCE`). :func:`report` gives
the agreement of the calibration and held-out records (fraction within ±10 %, median and worst |error|), per
shape and per dataset, and says which records miss and why (the notes). The registered checks assert what the
model achieves (:data:`ACHIEVED_HELD_OUT`, :data:`ACHIEVED_WORST`); their titles say the goal is not met while it
is not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence


from ..data import Dataset
from . import CheckResult, silicon_check
from .fit import Agreement, agreement

__all__ = ["TOLERANCE", "ACHIEVED_HELD_OUT", "ACHIEVED_WORST", "CALIBRATION_TOLERANCE", "Row", "PerfReport",
           "report", "rows", "throttle_evidence", "check_held_out", "check_worst", "check_calibration"]

#: the issue's tolerance: a prediction agrees when |predicted / measured − 1| ≤ 10 %
TOLERANCE = 0.10
#: the share of held-out records the fitted model gets within ±10 % on the committed data (rounded down to 5 %);
#: the goal is all of them
ACHIEVED_HELD_OUT = 0.85
#: every held-out record is within this relative error
ACHIEVED_WORST = 0.20
#: every calibration record is within this relative error (the fit's own residuals)
CALIBRATION_TOLERANCE = 0.05


@dataclass(frozen=True)
class Row:
    """One timing record next to its prediction: ``part`` (``calibration`` or ``held-out``), the ``regime`` of the
    clock, times in ms (measured median and minimum of the repeats), ``error`` = predicted / median − 1, the
    largest per-k-block ``bound`` of the first wave."""

    label: str
    dataset: str
    kernel: str
    shape: tuple
    group: int
    raster: int
    part: str
    regime: str
    predicted_ms: float
    measured_ms: float
    min_ms: float
    error: float
    bound: str

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE

    def as_dict(self) -> dict:
        M, N, K = self.shape
        return {"M x N x K": f"{M}×{N}×{K}", "kernel": self.kernel, "run": self.dataset.split("/")[-1],
                "part": self.part, "clock": self.regime, "model (ms)": f"{self.predicted_ms:.4f}",
                "H200 median (ms)": f"{self.measured_ms:.4f}", "error": f"{100 * self.error:+.1f} %",
                "bound": self.bound}


@dataclass
class PerfReport:
    """What :func:`report` returns: the ``params`` it used, every ``row``, the agreement of the ``calibration`` and
    ``held_out`` rows, ``by_shape`` and ``by_dataset`` (held out), records it could not model
    (``not_modelled``: label → reason) and ``notes``."""

    params: Any
    rows: list
    calibration: Agreement
    held_out: Agreement
    by_shape: dict
    by_dataset: dict
    not_modelled: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def part(self, name: str) -> list:
        return [r for r in self.rows if r.part == name]

    def misses(self) -> list:
        """Held-out rows outside ±10 %, worst first."""
        return sorted((r for r in self.part("held-out") if not r.within), key=lambda r: -abs(r.error))

    def summary(self) -> str:
        p = self.params
        l2 = (f"L2 → SMs {p.l2_bytes_per_ns / 1e3:.1f} TB/s shared" if p.l2_bytes_per_ns > 0 else
              "L2 share not binding")
        lines = [f"constants: tensor clock {p.tensor_ghz:.3f} GHz sustained, {p.throttled_ghz:.3f} GHz throttled "
                 f"(runs of ≥ {p.long_run_ms:.0f} ms), direct-store epilogue {p.direct_store_bytes_per_ns:.1f} B/ns "
                 f"per SM, {l2}", str(self.calibration), str(self.held_out)]
        lines += [f"  {k}: {a.within}/{a.n} within ±{a.tol:.0%}, median {a.median_error:.1%}"
                  for k, a in self.by_shape.items()]
        lines += [f"  miss: {r.label}: {100 * r.error:+.1f} %" for r in self.misses()]
        lines += [f"  not modelled: {k} ({v})" for k, v in self.not_modelled.items()]
        return "\n".join(lines + self.notes)


def rows(records: Sequence[dict], params) -> tuple[list, dict]:
    """(rows, not modelled) for timing records as :func:`h100lab.design.perf.load_records` gives them."""
    from ..design import perf

    out, skipped = [], {}
    for r in records:
        label = perf.record_label(r)
        try:
            pr = perf.predict_record(r, params)
        except (perf.NotModelled, KeyError) as e:
            skipped[label] = str(e).strip("'")
            continue
        kernel = r.get("variant") if r.get("step") is None else f"step {r['step']}"
        out.append(Row(label, r["dataset"], str(kernel), (r["M"], r["N"], r["K"]), pr.group, pr.raster,
                       "calibration" if perf.is_calibration(r) else "held-out", pr.regime, pr.time_ms,
                       float(r["median_ms"]), float(r.get("min_ms", r["median_ms"])),
                       pr.time_ms / float(r["median_ms"]) - 1.0, pr.bound))
    return out, skipped


def _agree(metric: str, rs: Sequence[Row], tol: float) -> Agreement:
    return agreement(metric, [(r.label, r.predicted_ms, r.measured_ms) for r in rs], tol)


def throttle_evidence(datasets: Sequence[str] | None = None) -> list[dict]:
    """Per dataset and shape: cuBLAS's TFLOP/s in the same run and the largest spread (median / min − 1) of the
    book's kernel's repeats — the power limit shows as cuBLAS slowing down and the repeats drifting."""
    from .. import data
    from ..design import perf

    out = []
    for name in (perf.timing_datasets() if datasets is None else datasets):
        recs = [r for r in data.load(name).records if r.get("kind") in perf.TIME_KINDS and r.get("ok", True)
                and "median_ms" in r]
        shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in recs))
        for s in shapes:
            here = [r for r in recs if (r["M"], r["N"], r["K"]) == s]
            cub = [r for r in here if str(r.get("variant", "")).startswith("cublas")]
            ours = [r for r in here if not str(r.get("variant", "")).startswith("cublas") and r.get("min_ms")]
            out.append({"dataset": name, "shape": s, "cublas_tflops": cub[0].get("tflops") if cub else None,
                        "spread": max((r["median_ms"] / r["min_ms"] - 1 for r in ours), default=float("nan"))})
    return out


def report(records: Sequence[dict] | None = None, params=None, tol: float = TOLERANCE) -> PerfReport:
    """Calibrate (``params`` default :func:`h100lab.design.perf.calibrated`: the committed calibration subset) and
    compare every record (default: every ``data/l08`` timing dataset, :func:`h100lab.design.perf.timing_datasets`)
    with its prediction at tolerance ``tol``."""
    from ..design import perf

    p = params if params is not None else perf.calibrated()
    recs = list(records) if records is not None else perf.load_records(perf.timing_datasets())
    rs, skipped = rows(recs, p)
    cal = [r for r in rs if r.part == "calibration"]
    held = [r for r in rs if r.part == "held-out"]
    shapes = list(dict.fromkeys(r.shape for r in held))
    by_shape = {}
    for s in shapes:
        name = "×".join(map(str, s))
        by_shape[name] = _agree(f"held out at {name}", [r for r in held if r.shape == s], tol)
    by_ds = {d: _agree(f"held out, {d}", [r for r in held if r.dataset == d], tol)
             for d in dict.fromkeys(r.dataset for r in held)}
    notes = list(p.notes)
    return PerfReport(p, rs, _agree("calibration", cal, tol), _agree("held out", held, tol), by_shape, by_ds,
                      skipped, notes)


_CACHE: dict = {}


def _report() -> PerfReport | None:
    if "report" not in _CACHE:
        try:
            _CACHE["report"] = report()
        except ValueError:
            _CACHE["report"] = None
    return _CACHE["report"]


def _floor_check(rs: Sequence[Row], tol: float, floor: float, what: str) -> CheckResult:
    n = len(rs)
    within = sum(abs(r.error) <= tol for r in rs)
    allowed = n - math.ceil(floor * n)
    bad = max(0, (n - within) - allowed)
    worst = sorted(rs, key=lambda r: -abs(r.error))[:5]
    return CheckResult(n, bad, [{"case": r.label, "model_ms": round(r.predicted_ms, 4),
                                 "measured_ms": round(r.measured_ms, 4), "error": f"{100 * r.error:+.1f} %"}
                                for r in worst if abs(r.error) > tol],
                       f"{what}: {within}/{n} within ±{tol:.0%} (floor {floor:.0%})")


def check_held_out(rep: PerfReport | None = None) -> CheckResult:
    """At least :data:`ACHIEVED_HELD_OUT` of the held-out records within ±10 %."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(0, 0, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    r = _floor_check(rep.part("held-out"), TOLERANCE, ACHIEVED_HELD_OUT, "held out")
    return CheckResult(r.cases, r.mismatches, r.examples,
                       f"{r.note}; median |error| {rep.held_out.median_error:.1%}; goal: every record (not met)"
                       if rep.held_out.within < rep.held_out.n else r.note)


def check_worst(rep: PerfReport | None = None) -> CheckResult:
    """Every held-out record within ±:data:`ACHIEVED_WORST`."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(0, 0, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    return _floor_check(rep.part("held-out"), ACHIEVED_WORST, 1.0, "held out")


def check_calibration(rep: PerfReport | None = None) -> CheckResult:
    """Every calibration record within ±:data:`CALIBRATION_TOLERANCE` (the fit reproduces what it was fitted on)."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(0, 0, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    return _floor_check(rep.part("calibration"), CALIBRATION_TOLERANCE, 1.0, "calibration")


@silicon_check(f"Capstone GEMM time model, held out (other variants, shapes, tile orders, runs): at least "
               f"{ACHIEVED_HELD_OUT:.0%} within ±{TOLERANCE:.0%} (goal: every record — not met)", lesson=8,
               dataset="l08/gemm_bench")
def _held(ds: Dataset) -> CheckResult:
    return check_held_out()


@silicon_check(f"Capstone GEMM time model, held out: every record within ±{ACHIEVED_WORST:.0%}", lesson=8,
               dataset="l08/gemm_bench")
def _worst(ds: Dataset) -> CheckResult:
    return check_worst()


@silicon_check(f"Capstone GEMM time model, calibration subset: every record within ±{CALIBRATION_TOLERANCE:.0%}",
               lesson=8, dataset="l08/gemm_bench")
def _calibration(ds: Dataset) -> CheckResult:
    return check_calibration()
