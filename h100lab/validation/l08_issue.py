"""Lesson 8, issue 17's FP8 chain: the group's issue window, read off the k-block trace or refitted on Nsight
Compute's cycles — and a registered round that tests the refit.

The FP8 consumer's k-block chain comes from the k-block trace (``perf.trace_constants``), each interval with the
trace's own cost per event taken out — an estimate. Its first interval, the group's issue window (full-barrier pass
to ``commit_group``: the ``wgmma.fence``, descriptors, wgmmas), came out 126 cycles. With it the model had the
lead-2 128 × 128 form 3–7 % fast under Nsight Compute at all fourteen fresh shapes and the lead-1 form 5–12 %
slow, the scale loads' latency (fitted on the same cycles) splitting the difference between them. Freed in that
fit (``perf._fit_scale_on_cycles``: the same fourteen launches at 4096³ and 8192³, three constants instead of two),
the window comes out ~215 cycles and the latency shorter; on every committed record this puts more FP8 records within
±10 % (campaign, prospective rounds, traces) — post hoc, read off held-out records. So it is registered
(:data:`ISSUE_SHAPES`, none timed before; :data:`ISSUE_PREDICTIONS`, ``benchmarks/predict_issue.py``) with the
model as it was before, beside it (:func:`trace_issue_params`): every FP8 form of the bench's default set at seven
shapes, run by ``bench_gemm.py --fp8 --shapes <ISSUE_SHAPES> --name l08/gemm_fresh4_fp8`` in two processes after
the file was committed. The rule written with it: the refit stays the model if, over both processes, it puts at
least as many records within ±10 % as the model before it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..data import Dataset
from . import CheckResult, beyond_floor, silicon_check
from .l08_lead import LEAD_PAIR, wave_working_set_mb

__all__ = ["ISSUE_SHAPES", "ISSUE_DATASET", "ISSUE_PREDICTIONS", "RULE", "trace_issue_params", "issue_predictions",
           "issue_registered", "issue_rows", "issue_verdict", "GATE_TRACE_DATASET", "gate_trace_rows",
           "lead_ratio_rows"]

#: seven shapes no run had timed (multiples of the 128-wide tiles; first-wave working sets 15–46 MB: below the scale
#: loads' gate, in its ramp and above it), every run in the sustained regime
ISSUE_SHAPES = ((6656, 6656, 6656), (3072, 12288, 10240), (13824, 4608, 7168), (8704, 8704, 4608),
                (2560, 10240, 14336), (11776, 5888, 9216), (4864, 15104, 5632))
#: the run (``_b``: a second process) and its registered predictions (``benchmarks/predictions/``)
ISSUE_DATASET = "l08/gemm_fresh4_fp8"
ISSUE_PREDICTIONS = "l08_gemm_fresh4_fp8.json"
RULE = ("the refitted issue window stays in the model if, over the records of l08/gemm_fresh4_fp8 and "
        "l08/gemm_fresh4_fp8_b, the model puts at least as many within ±10 % as the model with the trace's window")


def trace_issue_params(params=None):
    """The model before the refit: ``params`` (default :func:`h100lab.design.perf.calibrated`) with the trace's issue
    window (:func:`h100lab.design.perf.trace_constants` of :data:`h100lab.design.perf.TRACE_DATASET`), the scale
    loads' two constants refitted on the same cycles without it and the FP8 pair's fence refitted after them — the
    order the model is fitted in. [model]"""
    from .. import data
    from ..design import perf

    p = perf.calibrated() if params is None else params
    chain = perf.trace_constants(data.load(perf.TRACE_DATASET).records)
    q, _ = perf._fit_scale_on_cycles(replace(p, fp8_issue_cycles=chain["fp8_issue_cycles"]), issue=False)
    return perf._fit_fp8_fence(q)


def issue_predictions(shapes: Sequence = ISSUE_SHAPES) -> dict:
    """The two models' issue windows (``issue_cycles``: ``model`` / ``trace``) and, per shape and FP8 form of
    :data:`h100lab.validation.l08.FRESH_VARIANTS`, their times on the run's grid and launches (``model_ms``) — what
    ``benchmarks/predict_issue.py`` commits before the run. [model]"""
    from ..design import perf
    from . import l08

    ps = {"model": perf.calibrated(), "trace": trace_issue_params()}
    rows = []
    for shape in shapes:
        for v in l08.FRESH_VARIANTS["fp8"]:
            r = l08._fresh_record(v, tuple(shape), ISSUE_DATASET)
            rows.append({"shape": list(shape), "variant": v,
                         "model_ms": {k: perf.predict_record(r, p).time_ms for k, p in ps.items()}})
    return {"issue_cycles": {k: p.fp8_issue_cycles for k, p in ps.items()}, "rows": rows}


def issue_registered() -> dict:
    """The committed predictions ((shape tuple, variant) → row), {} before they are written."""
    from .l08 import registered_rows

    return {(tuple(r["shape"]), r["variant"]): r for r in registered_rows(ISSUE_PREDICTIONS)}


def issue_rows(ds: Dataset | str, now: bool = False) -> list[dict]:
    """Each timed record of a process of the run at a registered shape and form: ``shape``, ``variant``, ``ms``,
    ``err`` (``model`` / ``trace`` → registered prediction / measured − 1) and, with ``now``, ``now`` (the model as
    it is now: a prediction per record, which the registered verdict does not need). [] without the run."""
    from ..design import perf
    from .l08 import registered_errors

    rows = registered_errors(ds, issue_registered())
    if not now:
        return [row for _, row in rows]
    p = perf.calibrated()
    return [dict(row, now=perf.predict_record(r, p).time_ms / row["ms"] - 1) for r, row in rows]


def issue_verdict(runs: Sequence | None = None, tol: float = 0.10, now: bool = False) -> dict:
    """The registered rule over the committed processes: per model (``model``, ``trace``) ``n`` and ``within``
    ±``tol``, with ``now`` the model now's (``now``), and ``kept`` (the rule's answer). {} before the run."""
    rows = [r for run in (runs if runs is not None else (ISSUE_DATASET, ISSUE_DATASET + "_b"))
            for r in issue_rows(run, now)]
    if not rows:
        return {}
    out = {k: {"n": len(rows), "within": sum(abs(r["err"][k]) <= tol for r in rows)} for k in ("model", "trace")}
    if now:
        out["now"] = {"n": len(rows), "within": sum(abs(r["now"]) <= tol for r in rows)}
    out["kept"] = out["model"]["within"] >= out["trace"]["within"]
    return out


#: what the registered round got, per process (within ±10 %): the model 109 of 112 in both, the model with the
#: trace's window 108 in both — the refit kept by the rule, by one record a process; every miss the lead-1 128-column
#: forms, too slow, at the two shapes whose first-wave working sets lie in the scale loads' gate (21–23 MB)
ACHIEVED_ISSUE = 109 / 112


def _issue_check(ds: Dataset) -> CheckResult:
    rows = issue_rows(ds, now=True)
    if not rows:
        return CheckResult(1, 1, [], note=f"{ds.name}: no record at a registered shape")
    n = len(rows)
    miss = [r for r in rows if abs(r["err"]["model"]) > 0.10]
    before = sum(abs(r["err"]["trace"]) <= 0.10 for r in rows)
    bad = beyond_floor(n, len(miss), ACHIEVED_ISSUE) + (n - len(miss) < before)
    return CheckResult(n, bad, [{"case": f"{'×'.join(map(str, r['shape']))} {r['variant']}",
                                 "model (registered)": f"{100 * r['err']['model']:+.1f} %",
                                 "trace's window (registered)": f"{100 * r['err']['trace']:+.1f} %"}
                                for r in sorted(miss, key=lambda r: -abs(r["err"]["model"]))[:5]],
                       f"registered: the model {n - len(miss)}/{n} within ±10 %, the model with the trace's window "
                       f"{before}/{n}; the model now {sum(abs(r['now']) <= 0.10 for r in rows)}/{n}")


for _suffix in ("", "_b"):
    silicon_check(f"FP8 issue window refitted on Nsight Compute's cycles, every FP8 form at seven shapes never timed, "
                  f"registered before the run (benchmarks/predictions/{ISSUE_PREDICTIONS}"
                  + ("; a second process" if _suffix else "") + f"): the model at least {ACHIEVED_ISSUE:.0%} within "
                  "±10 % and no fewer than the model with the trace's window (goal: every record — not met: the "
                  "lead-1 128-column forms in the gate's ramp)", lesson=8, dataset=ISSUE_DATASET + _suffix)(_issue_check)


# ------------------------------------------------------------------------------------------------
# the lead-1 misses traced (a diagnosis: nothing fitted, nothing of it in the model)

#: ``benchmarks/trace_gemm.py --variants fp8_cooperative_tmastore,fp8_cooperative_tmastore_lead2,
#: fp8_cooperative_n192_tmastore --shapes 13824x4608x7168,6656x6656x6656,12288x2048x8192,6144x6144x6144`` (H200,
#: 2026-12-03): the k-block trace at the four shapes where the model times the lead-1 128-column form more than 10 %
#: slow (two of this round's, two of the first fresh round's), with the scale ring and the 128 × 192 tile beside it
GATE_TRACE_DATASET = "l08/gemm_trace_gate"
LEAD1, LEAD2 = LEAD_PAIR
WIDE = "fp8_cooperative_n192_tmastore"


def gate_trace_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """Per shape of :data:`GATE_TRACE_DATASET`: the three forms' untraced times (``ms``: form → median), the model's
    (``model_ms``) and errors (``error``), the trace's cost (traced / untraced median) and each form's k-block period
    untraced (``period``: the traced median period in SM cycles over the trace's cost — an estimate: the trace's own
    cost taken out as one factor) beside the model's at the trace's clock (``model_period``). [] without the run."""
    from .l08 import trace_rows

    rows = trace_rows(ds if ds is not None else GATE_TRACE_DATASET, params)
    out = {}
    for r in rows:
        d = out.setdefault((r["M"], r["N"], r["K"]), {"shape": (r["M"], r["N"], r["K"]), "ms": {}, "model_ms": {},
                                                      "error": {}, "cost": {}, "period": {}, "model_period": {}})
        v = r["variant"]
        d["ms"][v], d["model_ms"][v], d["error"][v] = r["measured_ms"], r["model_ms"], r["error"]
        d["cost"][v] = r["trace_cost"]
        d["period"][v] = r["trace_period"] / r["trace_cost"]
        d["model_period"][v] = r["model_period"]
    return [d for d in out.values() if all(v in d["ms"] for v in (LEAD1, LEAD2, WIDE))]


def _gate_trace_check(ds: Dataset) -> CheckResult:
    rows = gate_trace_rows(ds)
    if not rows:
        return CheckResult(1, 1, [], note=f"{ds.name}: no shape with the three forms")
    # the account: on silicon lead 1 is no slower than the ring there (its loads hidden); the model puts it more than
    # 10 % slow, and the ring and the 128 × 192 tile within ±10 % (the control that the rest of the chain holds)
    bad = [d for d in rows if d["ms"][LEAD1] > 1.02 * d["ms"][LEAD2] or d["error"][LEAD1] <= 0.10
           or any(abs(d["error"][v]) > 0.10 for v in (LEAD2, WIDE))]
    return CheckResult(len(rows), len(bad), [{"case": "×".join(map(str, d["shape"])),
                                              "lead 1 / lead 2": round(d["ms"][LEAD1] / d["ms"][LEAD2], 3),
                                              "model, lead 1": f"{100 * d['error'][LEAD1]:+.1f} %"} for d in bad],
                       "; ".join(f"{'×'.join(map(str, d['shape']))}: lead 1 / lead 2 "
                                 f"{d['ms'][LEAD1] / d['ms'][LEAD2]:.3f}, model lead 1 {100 * d['error'][LEAD1]:+.1f} %"
                                 for d in rows))


silicon_check("The lead-1 FP8 misses traced (l08/gemm_trace_gate, four shapes where the model times the lead-1 "
              "128-column form more than 10 % slow): on silicon lead 1 runs no slower than the scale ring (its loads "
              "hidden), the model keeps it >10 % slow (the known miss), while the ring and the 128 × 192 tile stay "
              "within ±10 % at the trace's clock", lesson=8, dataset=GATE_TRACE_DATASET)(_gate_trace_check)


def lead_ratio_rows() -> list[dict]:
    """Every shape where a committed ``data/l08`` run timed both the lead-1 128 × 128 form and the scale ring
    (:data:`LEAD1`, :data:`LEAD2`; group 8 along M; the median over runs of each form's medians): ``shape``,
    ``ratio`` (lead 1 / lead 2), ``K`` and ``ws_mb`` (the first wave's working set,
    :func:`h100lab.validation.l08_lead.wave_working_set_mb`). What it shows on the committed runs: lead 1 is the
    faster of the two at nearly every shape with K ≤ 6656 (never slower by as much as 2 %) and the slower at all
    but one with K ≥ 8192 — and for a whole first wave the working set and K go together (132 tiles of 128 × 128 span at least 23
    tile rows and columns, so the wave's working set is at least 23 · 128 · K bytes), so these runs cannot tell which
    of the two decides it; :data:`GATE_TRACE_DATASET`'s tall shape (12288 × 2048 × 8192: lead 1 no slower) is the
    exception to both."""
    import statistics

    from .. import data

    got: dict = {}
    for n in data.names():
        if not n.startswith("l08/"):
            continue
        for r in data.load(n).records:
            if r.get("variant") in (LEAD1, LEAD2) and "median_ms" in r and (r.get("group", 8), r.get("raster", 0)) \
                    == (8, 0) and r.get("ok", True):
                got.setdefault((r["M"], r["N"], r["K"]), {}).setdefault(r["variant"], []).append(float(r["median_ms"]))
    return [{"shape": s, "K": s[2], "ratio": statistics.median(d[LEAD1]) / statistics.median(d[LEAD2]),
             "ws_mb": wave_working_set_mb(*s)} for s, d in sorted(got.items()) if LEAD1 in d and LEAD2 in d]
