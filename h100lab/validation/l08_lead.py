"""Lesson 8, issue 17's open FP8 item: when does the 128 × 128 form hide the latency of scales loaded one k-block
ahead (lead 1)? Silicon and a hypothesis, nothing fitted into the time model.

The prospective rounds found lead 1 as fast as lead 2 (``-DSCALE_LEAD=2``, a register ring whose loads are read
two blocks later) at some fresh shapes and 5–10 % slower at others, where the model charges ~20 % everywhere
(:func:`h100lab.validation.l08.fresh_residency_rows`). Two runs here:

* **Nsight Compute on lead 1, lead 2 and 128 × 192 at the fourteen fresh shapes** (:data:`NCU_DATASET`,
  ``benchmarks/ncu_gemm_forms.py --fp8 --shapes ... --variants ...``; nothing fitted on it):
  :func:`ncu_lead_rows`. It refutes one reading — that a lead-1 launch loses L2 reuse (its CTAs drifting apart while
  they wait) and so reads more from DRAM: lead 1 reads what lead 2 reads, within :data:`SAME_DRAM`, at 11 of the 14
  shapes, hidden or not (:func:`dram_summary`) — and it shows the model's lead-1 miss as cycles, not clock.
* **A working-set hypothesis, registered before its run** (:data:`WS_SHAPES`, :data:`WS_PREDICTIONS`,
  ``benchmarks/predict_lead_ws.py``; the run :data:`WS_DATASET` and ``_b``). Read off the ncu run and the first two
  campaigns' lead pairs (so not tested by them): lead 1 is hidden where the first wave's in-step working set — its
  distinct A and B panels over the whole of K (:func:`wave_working_set_mb`) — is small, and exposed where it is
  large; the cut lies between :data:`HIDDEN_MB` and :data:`EXPOSED_MB` (MB), with one exception at 29 MB
  (12288 × 2048 × 8192: N is 16 tile columns, so every wave reads all of B — outside the hypothesis's domain,
  :func:`in_domain`). Its calls (:func:`ws_call`): lead 1 / lead 2 ≤ :data:`HIDDEN_RATIO` below the first
  bound, ≥ :data:`EXPOSED_RATIO` above the second, no call between. Its shapes run in the sustained regime (runs
  shorter than the model's ``long_run_ms``): in the throttled runs the pair's clocks differ (lead 1, less active,
  keeps a higher one) and muddy the ratio (16384³: 1.02; 12288³: 1.01 and 1.16 in two processes). **The run**
  (2026-12-03, two processes, after the calls were committed): every call right, 8 of 8 in each — hidden 0.94–0.99,
  exposed 1.07–1.14 (:func:`ws_verdict`). The model (the form clock, its registered times) misses the hidden
  lead-1 form by ~22 % at three of the four hidden shapes, as at the fresh shapes, and has every exposed one
  within ±10 %. Not yet in the model: the law it suggests (the scale loads'
  latency loaded only by a wave whose working set exceeds ~20–32 MB) would be fitted on these pairs, so it needs a
  round of its own. What would make the working set matter (the scales are L2 hits queued behind the wave's panel
  traffic?) is not measured.
"""
from __future__ import annotations

from typing import Sequence

from ..data import Dataset
from ..design.perf import SCALE_WORKING_SET_MB
from . import CheckResult, beyond_floor, silicon_check

__all__ = ["LEAD_PAIR", "NCU_DATASET", "WS_DATASET", "WS_SHAPES", "WS_PREDICTIONS", "HIDDEN_MB", "EXPOSED_MB",
           "HIDDEN_RATIO", "EXPOSED_RATIO", "SAME_DRAM", "wave_working_set_mb", "in_domain", "ws_call",
           "ws_predictions", "ws_registered", "lead_rows", "ncu_lead_rows", "dram_summary", "ws_verdict"]

#: lead 1 and lead 2 of the 128 × 128 TMA-store form
LEAD_PAIR = ("fp8_cooperative_tmastore", "fp8_cooperative_tmastore_lead2")
#: Nsight Compute on the pair and on 128 × 192 at the fourteen fresh shapes (two launches each)
NCU_DATASET = "l08/gemm_ncu_fresh_fp8"
#: the hypothesis's run (``bench_gemm.py --fp8 --shapes <WS_SHAPES> --variants <LEAD_PAIR>``; ``_b``: a second
#: process)
WS_DATASET = "l08/gemm_lead_ws"
#: the registered predictions (``benchmarks/predictions/``), written by ``benchmarks/predict_lead_ws.py``
WS_PREDICTIONS = "l08_lead_ws.json"
#: the working-set bounds (MB) read off the committed lead pairs: every pair at ≤ 19.7 MB hidden (lead 1 / lead 2
#: 0.955–0.985 under ncu, nine shapes), every in-domain pair at ≥ 32.8 MB exposed (1.07–1.09, three); 26.2 MB (K =
#: 8192 with whole groups) mixed, 0.985–1.08 — no call there
HIDDEN_MB, EXPOSED_MB = SCALE_WORKING_SET_MB        # one pair of bounds: the model's gate since is these
#: the calls: hidden ⇔ lead 1 / lead 2 at most HIDDEN_RATIO; exposed ⇔ at least EXPOSED_RATIO
HIDDEN_RATIO, EXPOSED_RATIO = 1.00, 1.03
#: lead 1's DRAM bytes "the same" as lead 2's: within this fraction
SAME_DRAM = 0.10
#: the hypothesis's shapes, none timed before: four predicted hidden (K 3072–6144), four exposed (K 10240–20480),
#: M and N varied, every one in the domain
WS_SHAPES = ((14336, 6144, 3072), (4608, 9216, 5120), (11264, 11264, 6144), (6144, 15360, 4096),
             (6144, 6144, 12288), (4096, 12288, 14336), (9216, 3072, 20480), (7168, 10240, 10240))


def _grid(variant: str, M: int, N: int) -> int:
    from ..design import capstone as cap
    from ..specs import H200_SXM

    return cap.grid_size(cap.variant(variant), M, N, H200_SXM.sm_count)


def wave_working_set_mb(M: int, N: int, K: int, variant: str = LEAD_PAIR[0], group: int = 8) -> float:
    """The first wave's in-step working set of a persistent launch of ``variant`` (the bench's grid, ``group`` tile
    rows along M): its distinct A and B panels over the whole of K, in MB (10⁶ bytes) of e4m3. [model]"""
    from ..design import perf

    return perf.wave_working_sets(perf.form(variant), M, N, K, _grid(variant, M, N), group)[0] / 1e6


def in_domain(M: int, N: int, variant: str = LEAD_PAIR[0], group: int = 8) -> bool:
    """Whether the hypothesis speaks of a shape: a wave's B panels change from wave to wave (a wave does not hold a
    whole group's tile rows × every tile column) and a wave holds whole groups' rows (``group`` tile rows or more
    along M)."""
    from ..design import perf

    f = perf.form(variant)
    rows, cols = -(-M // f.bm), -(-N // f.bn)
    return rows >= 2 * group and group * cols > _grid(variant, M, N)


def ws_call(M: int, N: int, K: int) -> str | None:
    """The hypothesis's call at a shape: ``"hidden"`` (working set ≤ :data:`HIDDEN_MB`), ``"exposed"`` (≥
    :data:`EXPOSED_MB`), None between or outside :func:`in_domain`."""
    if not in_domain(M, N):
        return None
    w = wave_working_set_mb(M, N, K)
    return "hidden" if w <= HIDDEN_MB else "exposed" if w >= EXPOSED_MB else None


def ws_predictions(shapes: Sequence = WS_SHAPES) -> list[dict]:
    """Per shape: ``shape``, ``working_set_mb``, the ``call`` and the model's time of each form of the pair on the
    run's grid and launches (``model_ms``: [lead 1, lead 2]; :func:`h100lab.validation.l08._fresh_record`) — what
    ``benchmarks/predict_lead_ws.py`` commits before the run. [model]"""
    return [{"shape": list(s), "working_set_mb": wave_working_set_mb(*s), "call": ws_call(*s),
             "model_ms": _model_ms(s)} for s in shapes]


def _model_ms(shape, params=None) -> list:
    """The model's times (ms) of the pair at ``shape`` on the run's grid and launches."""
    from ..design import perf
    from . import l08

    p = params if params is not None else perf.calibrated()
    return [perf.predict_record(l08._fresh_record(v, tuple(shape), WS_DATASET), p).time_ms for v in LEAD_PAIR]


def ws_registered() -> dict:
    """The committed predictions (shape tuple → row; :func:`h100lab.validation.l08.registered_rows`), {} before
    they are written."""
    from .l08 import registered_rows

    return {tuple(r["shape"]): r for r in registered_rows(WS_PREDICTIONS)}


def lead_rows(ds: Dataset | str) -> list[dict]:
    """Per shape of a run with both forms of :data:`LEAD_PAIR` (a bench run: the medians; an ncu run: the mean
    profiled time): ``shape``, ``lead1_ms``, ``lead2_ms``, ``ratio``, ``working_set_mb`` and the hypothesis's
    ``call``. [] when ``ds`` is not committed."""
    from ..design import perf
    from .l08 import committed_run

    ds = committed_run(ds)
    if ds is None:
        return []
    ms: dict = {}
    if any(r.get("kind") == "ncu_form" for r in ds.records):
        for (v, M, N, K, _), c in perf.form_counter_means(ds.records).items():
            ms[((M, N, K), v)] = [c["gpu__time_duration.sum"] * 1e-6]
    else:
        for r in perf.timing_records_of(ds):
            ms.setdefault(((r["M"], r["N"], r["K"]), r["variant"]), []).append(float(r["median_ms"]))
    out = []
    for shape in dict.fromkeys(s for s, _ in ms):
        got = [ms.get((shape, v)) for v in LEAD_PAIR]
        if not all(got):
            continue
        one, two = (sum(x) / len(x) for x in got)
        out.append({"shape": shape, "lead1_ms": one, "lead2_ms": two, "ratio": one / two,
                    "working_set_mb": wave_working_set_mb(*shape), "call": ws_call(*shape)})
    return out


def ncu_lead_rows(ds: Dataset | str = NCU_DATASET, params=None) -> list[dict]:
    """Per fresh shape of :data:`NCU_DATASET` (or ``ds``): :func:`lead_rows`' figures and, per form of the pair, the DRAM bytes
    read (``dram1_gb``, ``dram2_gb``), the L2 hit rates (``hit1``, ``hit2``, %), the clocks (``ghz1``, ``ghz2``) and
    the model's errors in time and cycles (``err1``, ``err2``, ``cyc1``, ``cyc2``;
    :func:`h100lab.validation.l08.form_counter_rows` under ``params``, default the model). [] without the run."""
    from . import l08

    rows = lead_rows(ds)
    if not rows:
        return []
    fc = {(r["shape"], r["variant"]): r for r in l08.form_counter_rows(ds, params=params)}
    for row in rows:
        for i, v in enumerate(LEAD_PAIR, 1):
            c = fc[(row["shape"], v)]
            row.update({f"dram{i}_gb": c["dram_gb"], f"hit{i}": c["l2_hit"], f"ghz{i}": c["ghz"],
                        f"err{i}": c["error"], f"cyc{i}": c["cycle_error"]})
    return rows


def dram_summary(rows: Sequence[dict] | None = None) -> dict:
    """Of :func:`ncu_lead_rows`: ``n`` shapes, ``same`` (lead 1's DRAM bytes within :data:`SAME_DRAM` of lead 2's),
    and among the shapes where lead 1 is hidden (ratio ≤ :data:`HIDDEN_RATIO`) and where it is not, how many read
    the same (``same_hidden`` of ``hidden``, ``same_exposed`` of ``exposed``)."""
    rows = ncu_lead_rows() if rows is None else rows
    same = [abs(r["dram1_gb"] / r["dram2_gb"] - 1) <= SAME_DRAM for r in rows]
    hid = [r["ratio"] <= HIDDEN_RATIO for r in rows]
    return {"n": len(rows), "same": sum(same), "hidden": sum(hid), "exposed": len(rows) - sum(hid),
            "same_hidden": sum(s and h for s, h in zip(same, hid)),
            "same_exposed": sum(s and not h for s, h in zip(same, hid))}


def ws_verdict(runs: Sequence | None = None) -> dict:
    """The registered calls against each committed process of :data:`WS_DATASET` (dataset → ``n`` calls made,
    ``right``, ``wrong`` (shape → ratio); the model's registered times: ``records`` and ``model_within`` ±10 %; the
    model's times now: ``now_within``); {} before the run. ``runs``: datasets or names (default the two committed
    processes)."""
    reg = ws_registered()
    out = {}
    for run in runs if runs is not None else (WS_DATASET, WS_DATASET + "_b"):
        name = run if isinstance(run, str) else run.name
        rows = lead_rows(run)
        if not rows or not reg:
            continue
        right, wrong = 0, {}
        for r in rows:
            call = reg.get(tuple(r["shape"]), {}).get("call")
            if call is None:
                continue
            ok = r["ratio"] <= HIDDEN_RATIO if call == "hidden" else r["ratio"] >= EXPOSED_RATIO
            right += ok
            if not ok:
                wrong[r["shape"]] = r["ratio"]
        model = [reg[tuple(r["shape"])]["model_ms"][i] / r[f"lead{i + 1}_ms"] - 1
                 for r in rows if tuple(r["shape"]) in reg for i in range(2)]
        now = [m / r[f"lead{i + 1}_ms"] - 1 for r in rows if tuple(r["shape"]) in reg
               for i, m in enumerate(_model_ms(r["shape"]))]
        out[name] = {"n": right + len(wrong), "right": right, "wrong": wrong, "records": len(model),
                     "model_within": sum(abs(e) <= 0.10 for e in model), "now_within": sum(abs(e) <= 0.10 for e in now)}
    return out


#: what the model achieves on the ncu launches at the fresh shapes (time within ±10 %): 38 of 42 since the scale
#: loads' constants are fitted with the FP8 group's issue window and without the fenced pair's launches
#: (perf._fit_scale_on_cycles; 37 before the window, 39 while the pair's launches, charged the bf16 fence after their
#: loads, pulled the two latency constants) — post hoc all of it, the gate's bounds were read off these launches; 33
#: before the gate. Every miss is the lead-1 128 × 128 form, too slow (+11–23 %) where silicon hides its loads
ACHIEVED_NCU = 0.90
#: lead 1 reads what lead 2 reads (within SAME_DRAM) at 11 of the 14 shapes (5 of the 6 where it is hidden, 6 of
#: the 8 where it is not)
ACHIEVED_SAME_DRAM = 0.78


@silicon_check(f"Capstone GEMM time model on the FP8 lead pair and 128 × 192 under Nsight Compute at the fourteen "
               f"fresh shapes ({NCU_DATASET}; nothing fitted on it): at least {ACHIEVED_NCU:.0%} of the launches' "
               f"times within ±10 % (goal: every one — not met: lead 1 too slow where silicon hides its scale loads)",
               lesson=8, dataset=NCU_DATASET)
def _ncu(ds: Dataset) -> CheckResult:
    from . import l08

    rows = l08.form_counter_rows(ds)
    bad = sorted((r for r in rows if abs(r["error"]) > l08.TOLERANCE), key=lambda r: -abs(r["error"]))
    return CheckResult(len(rows), beyond_floor(len(rows), len(bad), ACHIEVED_NCU),
                       [{"case": f"{'×'.join(map(str, r['shape']))} {r['variant']}", "time": f"{100 * r['error']:+.1f} %",
                         "cycles": f"{100 * r['cycle_error']:+.1f} %", "clock": f"{100 * r['clock_error']:+.1f} %"}
                        for r in bad[:5]],
                       f"{len(rows) - len(bad)}/{len(rows)} within ±{l08.TOLERANCE:.0%} in time")


@silicon_check(f"FP8 lead 1 does not lose L2 reuse ({NCU_DATASET}): its DRAM bytes within ±{SAME_DRAM:.0%} of lead "
               f"2's at at least {ACHIEVED_SAME_DRAM:.0%} of the fresh shapes, hidden or not (a reading refuted: the "
               f"lead-1 cost is not extra DRAM traffic)", lesson=8, dataset=NCU_DATASET)
def _same_dram(ds: Dataset) -> CheckResult:
    rows = ncu_lead_rows(ds)
    s = dram_summary(rows)
    bad = [r for r in rows if abs(r["dram1_gb"] / r["dram2_gb"] - 1) > SAME_DRAM]
    return CheckResult(s["n"], beyond_floor(s["n"], s["n"] - s["same"], ACHIEVED_SAME_DRAM),
                       [{"case": "×".join(map(str, r["shape"])), "lead 1 GB": round(r["dram1_gb"], 3),
                         "lead 2 GB": round(r["dram2_gb"], 3), "ratio": round(r["ratio"], 3)} for r in bad[:5]],
                       f"{s['same']}/{s['n']} the same (hidden: {s['same_hidden']} of {s['hidden']}, exposed: "
                       f"{s['same_exposed']} of {s['exposed']})")


#: the hypothesis's registered calls right in each process of its run (8 of 8 in both), and the model's registered
#: times of the pair within ±10 % there (13 of 16 in both)
ACHIEVED_WS_CALLS = 1.0
ACHIEVED_WS_MODEL = 0.81


def _ws_check(ds: Dataset) -> CheckResult:
    v = ws_verdict([ds]).get(ds.name)
    if not v:
        return CheckResult(1, 1, [], note=f"{ds.name}: no lead pair at a registered shape")
    bad = beyond_floor(v["n"], len(v["wrong"]), ACHIEVED_WS_CALLS) + \
        beyond_floor(v["records"], v["records"] - v["model_within"], ACHIEVED_WS_MODEL)
    return CheckResult(v["n"], bad, [{"case": "×".join(map(str, s)), "lead 1 / lead 2": round(x, 3)}
                                     for s, x in v["wrong"].items()][:5],
                       f"calls right {v['right']}/{v['n']}; the model's registered times within ±10 % "
                       f"{v['model_within']}/{v['records']}")


for _suffix in ("", "_b"):
    silicon_check(f"FP8 lead-1 working-set hypothesis, calls registered before the run (benchmarks/predictions/"
                  f"{WS_PREDICTIONS}; eight shapes never timed" + ("; a second process" if _suffix else "")
                  + f"): at least {ACHIEVED_WS_CALLS:.0%} of the calls right, and the model's registered times of "
                  f"the pair at least {ACHIEVED_WS_MODEL:.0%} within ±10 %", lesson=8,
                  dataset=WS_DATASET + _suffix)(_ws_check)
