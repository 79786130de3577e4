"""Lesson 8 model-vs-silicon: the capstone GEMM's time model (:mod:`h100lab.design.perf`) against the H200's
timing records in ``data/l08`` — calibrated on a documented subset, checked on every other record.

**The split** (:func:`h100lab.design.perf.is_calibration`): the model's three constants (the sustained tensor
clock, the direct-store epilogue rate, the throttled clock; the L2 share at full load is no longer fitted since the
shared-memory bound, a spec value, came in) are fitted on seven records — ``cooperative`` and ``pingpong_inflight`` (``l08/gemm_bench``) and ``cooperative_inflight_tmastore``
(``l08/gemm_bench_tmastore``) at 4096³ and 8192³, and ``cooperative`` at 16384³ (the clock a run that long settles
at); a fifth, the cost of a cluster pair's ``release.cluster`` arrive in the k-block loop, on one record of the
later cluster run (``cooperative_inflight_cluster2`` at 8192³, a documented split: a mechanism the first runs did
not have); and the FP8 consumer chain on the k-block trace run (``l08/gemm_trace``: the chain's CUDA-core parts
read off its 8192³ FP8 records, the lead-1 scale loads' latency fitted on one of its untraced times — a run of its
own, none of whose records is a throughput record); and the per-wave clock's two constants (the power budget and the
clock cap of a partial wave, :attr:`h100lab.design.perf.PerfParams.wave_clock`) on the clocks the k-block traces read
in the whole and the partial waves of two bf16 forms at 1280 × 3840 × 8192
(:data:`h100lab.design.perf.WAVE_CLOCK_CALIBRATION`: trace records, none of them a throughput record; every
constant above is fitted with it on). Every other record is held out: the other variants at every shape, the wave-quantized shapes
1280 × 3840 × 8192 and 1408 × 3072 × 8192, the other tile orders, the second run's records of the calibration
shapes, and every record of any later ``data/l08`` timing dataset (step-by-step kernels, the ablation between
them, the rest of FP8, clusters: :func:`h100lab.design.perf.timing_datasets`), which never enters the fit.

**The goal** (the issue): every measured shape and variant within ±10 % (:data:`TOLERANCE`). :func:`report` gives
the agreement of the calibration and held-out records (fraction within ±10 %, median and worst |error|) per
family of kernel (:data:`FAMILIES`: the persistent bf16 capstone forms the model is built for, the step-by-step
kernels, the ablation between them, the FP8 form, clusters of two), per shape and per dataset, and lists the misses. The registered checks
assert what the model achieves per family (:data:`ACHIEVED`); their titles say the goal is not met while it is
not. :func:`serial_diagnosis` tests one hypothesis without fitting anything: the FP8 records predicted with the
two consumers' k-block loops not overlapping (the bf16 forms clearly overlap; before the FP8 scale-load mechanism
FP8 predicted that way landed most of its held-out non-fence records within ±10 % where the model as built landed
almost none — a diagnosis, not the model; the scale loads on each consumer's path, read in the SASS, are the
mechanism the model then took in). :func:`lead_diagnosis` is that mechanism's clean held-out test, the scale-ring
run (``data/l08/gemm_bench_fp8_lead``): silicon runs the ring forms about as fast as lead 1; the model with the
fitted load had them far faster, the model with the traced chain has them within the tolerance of silicon's ratio.
:func:`trace_rows` puts the k-block trace next to the model, interval by interval. :func:`clock_rows` puts the model
next to the clock runs (nothing fitted on them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence


from ..data import Dataset
from ..design.traffic import DELIVERY_DATASET, SKEW_PINGPONG_DATASET
from . import CheckResult, beyond_floor, first_process, silicon_check
from .fit import Agreement, agreement

__all__ = ["TOLERANCE", "ACHIEVED_HELD_OUT", "ACHIEVED_WORST", "CALIBRATION_TOLERANCE", "FAMILIES", "ACHIEVED",
           "family", "Row", "PerfReport", "report", "rows", "throttle_evidence", "check_held_out", "check_worst",
           "check_calibration", "check_family", "check_clock", "serial_diagnosis", "clock_rows", "CLOCK_DATASETS",
           "lead_diagnosis", "ACHIEVED_CLOCK_FP8", "trace_rows", "TRACE_DATASET", "check_trace",
           "scale_latency_by_shape", "scale_calibration_choice", "ACHIEVED_TRACE_CLUSTER", "L2_DATASET", "cycle_rows",
           "partial_wave_diagnosis", "repeat_rows", "wave_clock_diagnosis", "REPEATS_DATASET", "ACHIEVED_REPEATS",
           "repeat_median_rows", "REPEATED", "ALSO_REPEATS", "repeat_summary",
           "ACHIEVED_REPEAT_TABLES"]

#: the issue's tolerance: a prediction agrees when |predicted / measured − 1| ≤ 10 %
TOLERANCE = 0.10
#: every calibration record is within this relative error (the fit's own residuals)
CALIBRATION_TOLERANCE = 0.05

#: the kinds of kernel the records hold, each reported apart (:func:`family`), with what the model says of them
FAMILIES = {
    "capstone": "the persistent bf16 capstone forms on one CTA per tile (every run): what the model is built for",
    "steps": "the step-by-step kernels 2–7 (data/l08/gemm_steps): one-stage and ring kernels, one tile per CTA",
    "ablation": "capstone forms between the steps (data/l08/gemm_steps_ablation): one schedule or tile order changed "
                "at a time (persistent, one or two tiles per CTA; grouped or row-major order)",
    "fp8": "the FP8 (e4m3) form with per-block scales and two-level accumulation (its cluster pairs too)",
    "cluster": "bf16 clusters of two CTAs multicasting B (the pair's fence: one constant, fitted on one record)",
}
#: per family: (the least fraction within ±10 %, the largest |error| of any record) the model achieves on the
#: committed data (lesson 7's re-measured wgmma constants, the shared-memory bound) — regression guards; the goal
#: (every record within ±10 %) is checked apart: :func:`report` lists the misses (the ablation's ping-pong form in
#: row-major order at 4096³, 11 % too slow — since the DRAM traffic of the tile order came in
#: (:mod:`h100lab.design.traffic`: ping-pong sharers of a panel share its reads only within a reuse window of CTAs)
#: the ping-pong steps and ablation in row-major order are within ±10 %, where they were 20–53 % too fast; the
#: 128-column cooperative form at 1280 × 3840 × 8192 11–15 % too slow (three records) and at 16384³ 12 % too fast
#: (one), which no traffic explains. At 1280 × 3840 × 8192 the model names the shared-memory bound, but the DRAM
#: counter run's SM cycles (:func:`cycle_rows`) show that form running the tensor-core bound in cycles (8192³: 2.30 M
#: cycles against ``cooperative``'s 2.34 M, at 1489 against 1561 MHz; the model charges it ~28 % more cycles) — its
#: loss is the clock, a power limit, which a partial last wave (36 of 132 CTAs there; 1408 × 3072 × 8192 has whole
#: waves and no miss) relieves; the hypothesis that says so (:func:`partial_wave_diagnosis`, perf's
#: ``smem_shared``: the bound shared by the wave's active CTAs, refitted on the same subset) brings capstone 84 → 87
#: of 88 (every 1280 × 3840 × 8192 record within ±10 %) but FP8 122 → 119 (256 × 128 and staggered 128 × 192 at
#: 1280 × 3840 × 8192, whose chain the model already times 5–8 % fast; the refitted clock 1 % lower) and the
#: ablation 15 → 14 (the persistent ping-pong at 8192³ in the grouped order +9.4 → +10.1 %, the clock), so it is not
#: the model. The 16384³ record
#: does not repeat (:func:`repeat_rows`): 17.3 ms (median; min 15.8) in ``gemm_bench``, 13.9 ms (min 12.7) in the
#: DRAM-counter run's timed launches, 12.6 under ncu — 20–27 % apart, the same configuration at 8192³ 13–14 % apart
#: (1.79 against 1.56 ms), at 1280 × 3840 × 8192 within 4 %; FP8, with the chain the k-block trace measured, the first two FP8
#: runs' early scale copy (perf.EARLY_SCALE_COPY), 256 × 128's blocks queued in issue order and the stagger's
#: named-barrier pass: 122 of 130 (worst 13.8 %); with the scale latency loaded by the wave's DRAM reads
#: (perf.scale_load_latency, fitted on two trace records) still 122 of 130, worst 12.0 %, median 5.0 → 3.7 %: the
#: 128 × 128 lead-1 TMA-store misses at 4096³, the staggered 128 × 192 ones and the cluster pair's at 16384³ gone;
#: the misses now the first two runs' early-copy direct-store 128 × 128 forms (perf.EARLY_SCALE_COPY) at 4096³
#: and 1280 × 3840 × 8192 10.5–12 % too fast and their staggered form there 10.5 % (the later waves' low latency
#: reaches their early wait more than silicon says), 8192³ lead 1 +10.2 % in one run (the loaded latency as long
#: there as at 16384³), the cluster pair at 16384³ +10.2 % in one run, 256 × 128 at 4096³ −10.1 %)
#: The per-wave clock under the power limit (perf's ``wave_clock``, the model's default since issue 17's decision: a
#: physical mechanism, its two constants calibrated on the two bf16 k-block traces at 1280 × 3840 × 8192 only,
#: :data:`h100lab.design.perf.WAVE_CLOCK_CALIBRATION`; every other constant refitted with it on the same subset) then
#: brought held out 273 → 277 of 286: capstone 84 → 86 of 88 (worst 15.0 → 11.8 %: the 1280 × 3840 × 8192 128 × 128
#: misses gone but the direct-store one, +15.0 → +11.3 %), FP8 122 → 125 of 130 (worst 12.0 → 10.8 %), steps 28 and
#: clusters 24 unchanged (the steps' worst 9.65 → 10.0 %, row-major ping-pong step at 4096³, inside), and the
#: ablation 15 → 14 of 16: the persistent ping-pong at 8192³ in the grouped order (group 8; not the row-major one,
#: +2.9 %) +9.4 → +10.4 %, because the clock refitted with the
#: wave clock is lower (1.712 → 1.694 GHz: the calibration shapes' own partial last waves now run faster) — the one
#: floor that falls (0.93 → 0.87), titled so; :func:`wave_clock_diagnosis` is the model with it off (273 of 286).
#: The form clock became the model (:func:`h100lab.design.perf.calibrated`; the one-clock model above is
#: ``calibrated(form_clock=False)``) after the prospective test (:func:`fresh_summary`: bf16 388 of 392 within ±10 %
#: against the one clock's 331). Its levels, on today's kernel (:func:`report`'s records,
#: :func:`h100lab.design.perf.todays_records`): capstone 87 of 88 (the one clock: 83 there, 86 on the first tables as
#: first recorded), worst 12 → 20 %: the in-flight 128 × 128 form at 16384³, −19 %, whose launches lose L2 reuse
#: by a varying amount (``data/l08/gemm_l2_n128_a``/``_b``); steps 28 → 26 of 28 and worst 10 → 26 %, ablation 14
#: of 16 and worst 12 → 27 %: its reuse window (20 CTAs, fitted on the order sweep at 8192³ as the one clock's 24
#: was; the sweep ties the two on count) puts the row-major ping-pong at 4096³ +25–27 % (four records); FP8 125 of
#: 130 as before, worst 11 → 14 % (the staggered 128 × 192 forms at 1280 × 3840 × 8192 −13 % and at 16384³
#: −10.5 %, the FP8 cluster pair at 16384³ +12–13 %); with the working-set gate on the scale loads
#: (perf.SCALE_WORKING_SET_MB) 124 of 130, worst 15 % (the cluster pair at 16384³ +14–15 %; the staggered 128 × 192
#: form at 4096³ −10.1 %). Every floor that fell is in its check's title. With the delivery bound of a ping-pong
#: wave out of step as a whole (:func:`h100lab.design.perf.delivery_waves`, issue 17; read off the Nsight Compute
#: delivery run, ``data/l08/gemm_l2_delivery``, after these records were known — a registered round tests it) the
#: four row-major ping-pong records at 4096³ come within (+25…+27 % → −3.8…+8.1 %): steps 28 of 28 (worst 9.1 %),
#: ablation 16 of 16 (worst 8.1 %), held out 285 of 286; FP8 130 of 130 (worst 9.6 %) with the model's later FP8
#: constants (the fence fits, the scale loads' issue window). With each cooperative form's own drift in its DRAM
#: bytes, charged at the tile reads' rate (:mod:`h100lab.validation.l08_reuse`; read off Nsight Compute's launches of
#: the missed shape, then registered at seven shapes, six never timed: 34 and 33 of 35 within ±10 %) the in-flight 128 × 128
#: form at 16384³ goes −19.2 → −3.8 %: held out 286 of 286, every family within ±10 % (capstone worst 7.8 %,
#: clusters 5.3 %).
ACHIEVED = {"capstone": (1.0, 0.10), "steps": (1.0, 0.10), "ablation": (1.0, 0.10), "fp8": (1.0, 0.10),
            "cluster": (1.0, 0.10)}
#: the FP8 clock run (``data/l08/clock_under_load_fp8``): every FP8 form within this of its time at the SM clock
#: read (regression guard, now the goal ±10 %: the 128 × 192 form at 1500 MHz, 11 % fast with one scale latency, is
#: −8.8 % with the loaded one)
#: (the form clock, the model since: the 128 × 192 form at 1500 MHz −13.4 % with the trace's FP8 issue window, −7.0 %
#: with the window refitted on Nsight Compute's cycles, h100lab.validation.l08_issue; the one clock's −8.8 %): the goal
ACHIEVED_CLOCK_FP8 = 0.10
#: the capstone family's levels (:data:`ACHIEVED`): fraction within ±10 %, and the largest error of any record
ACHIEVED_HELD_OUT, ACHIEVED_WORST = ACHIEVED["capstone"]


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
    family: str = "capstone"
    first_ms: float | None = None

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE

    @property
    def first_error(self) -> float:
        """The error against the first table's own time (``first_ms``: the record as first recorded, an older
        build of the kernel where :func:`h100lab.design.perf.todays_records` put today's time in its place), else
        the error."""
        return self.error if self.first_ms is None else self.predicted_ms / self.first_ms - 1.0

    def as_dict(self) -> dict:
        M, N, K = self.shape
        return {"M x N x K": f"{M}×{N}×{K}", "kernel": self.kernel, "run": self.dataset.split("/")[-1],
                "family": self.family, "part": self.part, "clock": self.regime,
                "model (ms)": f"{self.predicted_ms:.4f}",
                "H200 median (ms)": f"{self.measured_ms:.4f}", "error": f"{100 * self.error:+.1f} %",
                "bound": self.bound}


@dataclass
class PerfReport:
    """What :func:`report` returns: the ``params`` it used, every ``row``, the agreement of the ``calibration`` and
    ``held_out`` rows, ``by_family`` (:data:`FAMILIES`), ``by_shape`` (capstone family) and ``by_dataset`` (held
    out), records it could not model (``not_modelled``: label → reason), ``notes`` and ``first_build``: the held-out
    records of the first bf16 tables against their times as first recorded (``Row.first_ms``; their 128 × 128 and
    ping-pong forms an older build of the kernel), where the report timed them as today's kernel."""

    params: Any
    rows: list
    calibration: Agreement
    held_out: Agreement
    by_shape: dict
    by_dataset: dict
    not_modelled: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    by_family: dict = field(default_factory=dict)
    first_build: Agreement | None = None

    def part(self, name: str, family: str | None = None) -> list:
        return [r for r in self.rows if r.part == name and (family is None or r.family == family)]

    def misses(self, family: str | None = None) -> list:
        """Held-out rows outside ±10 % (of one family, or all), worst first."""
        return sorted((r for r in self.part("held-out", family) if not r.within), key=lambda r: -abs(r.error))

    def summary(self) -> str:
        p = self.params
        l2 = (f"L2 → SMs {p.l2_bytes_per_ns / 1e3:.1f} TB/s shared" if p.l2_bytes_per_ns > 0 else
              "L2 share not fitted (the shared-memory bound)")
        lines = [f"constants: tensor clock {p.tensor_ghz:.3f} GHz sustained, {p.throttled_ghz:.3f} GHz throttled "
                 f"(runs of ≥ {p.long_run_ms:.0f} ms), direct-store epilogue {p.direct_store_bytes_per_ns:.1f} B/ns "
                 f"per SM, {l2}"
                 + (f"; per-wave clock: budget {p.wave_clock[0]:.0f} B/ns, cap {p.wave_clock[1]:.3f} GHz"
                    if p.wave_clock else "; no per-wave clock"), str(self.calibration), str(self.held_out)]
        lines += [f"  {k}: {a.within}/{a.n} within ±{a.tol:.0%}, median {a.median_error:.1%}, worst "
                  f"{a.worst_error:.1%}" for k, a in self.by_family.items()]
        lines += [f"  capstone at {k}: {a.within}/{a.n} within ±{a.tol:.0%}, median {a.median_error:.1%}"
                  for k, a in self.by_shape.items()]
        lines += [f"  miss: {r.label}: {100 * r.error:+.1f} %" for r in self.misses("capstone")]
        lines += [f"  not modelled: {k} ({v})" for k, v in self.not_modelled.items()]
        if self.first_build is not None:
            lines.append(str(self.first_build))
        return "\n".join(lines + self.notes)


def family(r: dict, form) -> str:
    """The :data:`FAMILIES` key of a record: ``fp8`` (e4m3, clusters too), else ``cluster`` (bf16 clusters of two),
    else ``steps`` (a record of the step-by-step benchmark), else ``ablation`` (its ``--ablation`` records: a
    capstone variant in a named schedule and tile order), else ``capstone``."""
    if form.atype != "bf16":
        return "fp8"
    if form.cluster > 1:
        return "cluster"
    if r.get("step") is not None:
        return "steps"
    if r.get("kind") == "ablation":
        return "ablation"
    return "capstone"


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
                       pr.time_ms / float(r["median_ms"]) - 1.0, pr.bound, family(r, pr.form),
                       float(r["first_ms"]) if "first_ms" in r else None))
    return out, skipped


def _agree(metric: str, rs: Sequence[Row], tol: float) -> Agreement:
    return agreement(metric, [(r.label, r.predicted_ms, r.measured_ms) for r in rs], tol)


def serial_diagnosis(records: Sequence[dict] | None = None, params=None, fam: str = "fp8",
                     tol: float = TOLERANCE) -> tuple[Agreement, Agreement]:
    """A hypothesis test, no constant fitted: the held-out records of family ``fam`` predicted as the model has them
    (consumers overlapping) and with the cooperative consumers' k-block loops not overlapping at all
    (:attr:`h100lab.design.perf.Form.overlap` False). Forms with the cluster pair's fence are left out (the fence
    already makes each consumer wait for its own wgmmas). ``(as modelled, without overlap)``."""
    from dataclasses import replace as _replace

    from ..design import perf

    p = params if params is not None else perf.calibrated()
    recs = list(records) if records is not None else perf.load_records(perf.timing_datasets())
    pairs, serial = [], []
    for r in recs:
        try:
            f = perf.record_form(r)
        except (perf.NotModelled, KeyError):
            continue
        if perf.is_calibration(r) or family(r, f) != fam or f.cluster_fence:
            continue
        group, raster = r.get("group", 8), r.get("raster", 0)
        sms = int(r["grid"]) if f.schedule == "persistent" and r.get("grid") else None
        a = perf.predict_record(r, p)
        b = perf.predict(_replace(f, overlap=False), r["M"], r["N"], r["K"], sms=sms, group=group, raster=raster,
                         params=p, regime=a.regime)
        pairs.append((perf.record_label(r), a.time_ms, r["median_ms"]))
        serial.append((perf.record_label(r), b.time_ms, r["median_ms"]))
    return agreement(f"{fam}, as modelled", pairs, tol), agreement(f"{fam}, consumers not overlapping", serial, tol)


def lead_diagnosis(records: Sequence[dict] | None = None, params=None, tol: float = TOLERANCE) -> dict:
    """The held-out test of the FP8 scale-load mechanism (nothing fitted on it; with the fitted per-k-block load
    the model's ratio was ~0.82 against silicon's ~1.03, with the traced chain it is within the tolerance of
    silicon's): the records of the scale-ring run
    (``data/l08/gemm_bench_fp8_lead``: ``scale_lead`` 1, 2, 3 side by side) — ``lead1`` and ``ring`` (lead ≥ 2)
    :class:`~h100lab.validation.fit.Agreement`, and per (shape, tile) pair the measured and predicted time ratio
    ring / lead 1 (``silicon_ratio``, ``model_ratio``: their medians). Empty without that dataset."""
    from ..design import perf

    p = params if params is not None else perf.calibrated()
    recs = list(records) if records is not None else perf.load_records(("l08/gemm_bench_fp8_lead",))
    recs = [r for r in recs if r.get("dataset") == "l08/gemm_bench_fp8_lead"]
    if not recs:
        return {}
    rows_ = [(r, perf.record_form(r), perf.predict_record(r, p)) for r in recs]
    one = {(r["M"], r["N"], r["K"], f.bm, f.bn): (r, pr) for r, f, pr in rows_ if f.scale_lead == 1}
    sil, mod = [], []
    for r, f, pr in rows_:
        base = one.get((r["M"], r["N"], r["K"], f.bm, f.bn))
        if f.scale_lead > 1 and base is not None:
            sil.append(r["median_ms"] / base[0]["median_ms"])
            mod.append(pr.time_ms / base[1].time_ms)
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    return {"lead1": agreement("scale_lead 1", [(perf.record_label(r), pr.time_ms, r["median_ms"])
                                                for r, f, pr in rows_ if f.scale_lead == 1], tol),
            "ring": agreement("scale_lead 2, 3", [(perf.record_label(r), pr.time_ms, r["median_ms"])
                                                  for r, f, pr in rows_ if f.scale_lead > 1], tol),
            "silicon_ratio": med(sil), "model_ratio": med(mod), "pairs": len(sil)}


def scale_latency_by_shape(records: Sequence[dict] | None = None, params=None,
                           variant: str = "fp8_cooperative_tmastore") -> dict:
    """The open FP8 item, as data (a diagnosis, nothing fitted into the model): for each held-out record of the
    load-bound 128 × 128 lead-1 form (``variant``; the kernel since 0a71f54 — records of
    :data:`h100lab.design.perf.EARLY_SCALE_COPY` left out) and each record of the k-block traces (at the SM clock
    each read), the scale-load latency ``scale_load_ns`` that would make the model reproduce the measured time
    (bisection over 50–800 ns), grouped by shape: {(M, N, K): [ns, ...]}. The model has one latency (fitted on the
    trace run at 8192³); the H200's depends on the shape — the same in every run, shortest at 4096³."""
    from dataclasses import replace as _replace

    from .. import data
    from ..design import perf

    p = params if params is not None else perf.calibrated()
    p = _replace(p, scale_load_ns_per_rate=0.0)          # one latency per record: what reproduces its time
    recs = list(records) if records is not None else perf.load_records(perf.timing_datasets())
    cases = [(r, None, r.get("grid"), r.get("launches")) for r in recs
             if r.get("variant") == variant and r.get("dataset") not in perf.EARLY_SCALE_COPY
             and not perf.is_calibration(r)]
    for name in (perf.TRACE_DATASET, "l08/gemm_trace_forms", "l08/gemm_trace_forms2"):
        if records is None and data.available(name):
            cases += [(r, perf.trace_clock_ghz(r), r["grid"], None) for r in data.load(name).records
                      if r.get("variant") == variant and "warpgroups" in r and r.get("ok")]
    out: dict = {}
    for r, ghz, grid, launches in cases:
        q = perf.at_clock(p, ghz) if ghz else p
        lo, hi = 50.0, 800.0
        for _ in range(30):
            if round(lo, 1) == round(hi, 1):   # the answer (rounded, monotone) is decided: the interval only shrinks
                break
            mid = (lo + hi) / 2
            t = perf.predict(variant, r["M"], r["N"], r["K"], sms=grid, launches=launches,
                             params=_replace(q, scale_load_ns=mid)).time_ms
            lo, hi = (mid, hi) if t < r["median_ms"] else (lo, mid)
        out.setdefault((r["M"], r["N"], r["K"]), []).append(round((lo + hi) / 2, 1))
    return out


def scale_calibration_choice(candidates: Sequence | None = None) -> list[dict]:
    """How :data:`h100lab.design.perf.SCALE_CALIBRATION` was chosen, on trace data only: for each candidate subset
    (default :data:`h100lab.design.perf.SCALE_CANDIDATES`) the loaded scale latency fitted on it
    (:func:`h100lab.design.perf.calibrate` with the subset's records, every other constant as calibrated), then every
    other FP8 record of the three trace runs before the choice (``l08/gemm_trace``, ``_forms``, ``_forms2``: each
    traced form's untraced time at its clock, :func:`trace_rows`) against it. One dict per candidate: ``name``,
    ``scale_load_ns``, ``per_rate``, ``within`` (of ``n`` within ±:data:`TOLERANCE`), ``worst``. The subset with the
    most within (ties: the smaller worst) is the calibration; no throughput record enters."""
    from .. import data
    from ..design import perf

    base = perf.calibrated(form_clock=False)
    recs = perf.load_records(perf.DATASETS + tuple(dict.fromkeys(d for d, _, _ in perf.CLUSTER_CALIBRATION)))
    trace = data.load(perf.TRACE_DATASET).records
    names = (perf.TRACE_DATASET, "l08/gemm_trace_forms", "l08/gemm_trace_forms2")
    sets = {n: data.load(n) for n in names if data.available(n)}
    out = []
    for name, subset in (perf.SCALE_CANDIDATES if candidates is None else candidates):
        old = perf.SCALE_CALIBRATION
        try:
            perf.SCALE_CALIBRATION = tuple(subset)
            p = perf.calibrate(recs, wgmma=base.wgmma, timing=base.timing, trace=trace,
                               scale=perf.scale_records(subset))
        finally:
            perf.SCALE_CALIBRATION = old
        cal = set(subset)
        errs = [r["error"] for n, ds in sets.items() for r in trace_rows(ds, p)
                if r["variant"].startswith("fp8") and (n, r["variant"], (r["M"], r["N"], r["K"])) not in cal]
        out.append({"name": name, "scale_load_ns": p.scale_load_ns, "per_rate": p.scale_load_ns_per_rate,
                    "within": sum(abs(e) <= TOLERANCE for e in errs), "n": len(errs),
                    "worst": max((abs(e) for e in errs), default=0.0)})
    return out


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
    with its prediction at tolerance ``tol``. Given records timed as today's kernel
    (:func:`h100lab.design.perf.todays_records`), the first tables as first recorded are reported apart
    (``first_build``)."""
    from ..design import perf

    p = params if params is not None else perf.calibrated()
    recs = list(records) if records is not None else perf.todays_records(perf.load_records(perf.timing_datasets()))
    rs, skipped = rows(recs, p)
    cal = [r for r in rs if r.part == "calibration"]
    held = [r for r in rs if r.part == "held-out"]
    core = [r for r in held if r.family == "capstone"]
    by_shape = {}
    for s in dict.fromkeys(r.shape for r in core):
        name = "×".join(map(str, s))
        by_shape[name] = _agree(f"held out at {name}", [r for r in core if r.shape == s], tol)
    by_family = {f: _agree(f"held out, {f}", [r for r in held if r.family == f], tol)
                 for f in FAMILIES if any(r.family == f for r in held)}
    by_ds = {d: _agree(f"held out, {d}", [r for r in held if r.dataset == d], tol)
             for d in dict.fromkeys(r.dataset for r in held)}
    first = [r for r in held if r.first_ms is not None]
    first_build = agreement("held out, the first bf16 tables as first recorded",
                            [(r.label, r.predicted_ms, r.first_ms) for r in first], tol) if first else None
    notes = list(p.notes) + _build_notes(held, p, tol)
    return PerfReport(p, rs, _agree("calibration", cal, tol), _agree("held out", held, tol), by_shape, by_ds,
                      skipped, notes, by_family, first_build)


def _build_notes(held: Sequence, p, tol: float) -> list[str]:
    """A note per held-out miss of the first bf16 tables whose build today's kernel outruns side by side
    (:data:`BUILDS_DATASET`: by more than :data:`BUILD_SAME`), with the model against today's build there."""
    misses = [r for r in held if r.dataset in FIRST_BUILD_TABLES and abs(r.first_error) > tol]
    if not misses:
        return []
    ab = {(r["table"], r["variant"], r["shape"], r["group"], r["raster"]): r for r in build_rows(params=p)}
    out = []
    for r in misses:
        b = ab.get((r.dataset, r.kernel, r.shape, r.group, r.raster))
        if b is not None and b["model_vs_new"] is not None and abs(b["new_vs_old"]) > BUILD_SAME:
            out.append(f"superseded build: {r.label} ({100 * r.first_error:+.1f} %) is a record of the first "
                       f"table's build; side by side today's kernel ran {100 * b['new_vs_old']:+.1f} % against it, "
                       f"and the model is {100 * b['model_vs_new']:+.1f} % from today's ({BUILDS_DATASET})")
    return out


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
    bad = beyond_floor(n, n - within, floor)
    worst = sorted(rs, key=lambda r: -abs(r.error))[:5]
    return CheckResult(n, bad, [{"case": r.label, "model_ms": round(r.predicted_ms, 4),
                                 "measured_ms": round(r.measured_ms, 4), "error": f"{100 * r.error:+.1f} %"}
                                for r in worst if abs(r.error) > tol],
                       f"{what}: {within}/{n} within ±{tol:.0%} (floor {floor:.0%})")


def _family_rows(rep: PerfReport, fam: str) -> list:
    return rep.part("held-out", fam)


def check_family(fam: str, rep: PerfReport | None = None, *, worst: bool = False) -> CheckResult:
    """The held-out records of family ``fam`` (:data:`FAMILIES`) at the level :data:`ACHIEVED` names: at least
    its fraction within ±10 % (``worst=False``), or every record within its largest error (``worst=True``). No
    record of the family: no case (the check's dataset is then missing too)."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(1, 1, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    floor, bound = ACHIEVED[fam]
    rs = _family_rows(rep, fam)
    r = _floor_check(rs, bound, 1.0, f"held out, {fam}") if worst else \
        _floor_check(rs, TOLERANCE, floor, f"held out, {fam}")
    a = rep.by_family.get(fam)
    goal = "" if a is None or a.within == a.n else f"; goal: every record within ±{TOLERANCE:.0%} (not met)"
    extra = f"; median |error| {a.median_error:.1%}" if a is not None else ""
    return CheckResult(r.cases, r.mismatches, r.examples, r.note + extra + goal)


def check_held_out(rep: PerfReport | None = None) -> CheckResult:
    """The capstone family: at least :data:`ACHIEVED_HELD_OUT` of its held-out records within ±10 %."""
    return check_family("capstone", rep)


def check_worst(rep: PerfReport | None = None) -> CheckResult:
    """The capstone family: every held-out record within ±:data:`ACHIEVED_WORST`."""
    return check_family("capstone", rep, worst=True)


def check_calibration(rep: PerfReport | None = None) -> CheckResult:
    """Every calibration record within ±:data:`CALIBRATION_TOLERANCE` (the fit reproduces what it was fitted on)."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(1, 1, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    return _floor_check(rep.part("calibration"), CALIBRATION_TOLERANCE, 1.0, "calibration")


@silicon_check(f"Capstone GEMM time model, held out, persistent bf16 forms (other variants, shapes, tile orders, "
               f"runs): at least {ACHIEVED['capstone'][0]:.0%} within ±{TOLERANCE:.0%} "
               "(goal: every record — not met: the in-flight 128 × 128 form at 16384³)",
               lesson=8, dataset="l08/gemm_bench")
def _held(ds: Dataset) -> CheckResult:
    return check_held_out()


@silicon_check(f"Capstone GEMM time model, held out, persistent bf16 forms: every record within "
               f"±{ACHIEVED['capstone'][1]:.0%} (was ±12 % under the one-clock model; the in-flight 128 × 128 form "
               f"at 16384³, −19 %, sets it)", lesson=8, dataset="l08/gemm_bench")
def _worst(ds: Dataset) -> CheckResult:
    return check_worst()


@silicon_check(f"Capstone GEMM time model, calibration subset: every record within ±{CALIBRATION_TOLERANCE:.0%}",
               lesson=8, dataset="l08/gemm_bench")
def _calibration(ds: Dataset) -> CheckResult:
    return check_calibration()


def _floor_and_worst(fam: str) -> CheckResult:
    """A family's two registered levels in one check: the fraction within the tolerance and the worst error."""
    a, b = check_family(fam), check_family(fam, worst=True)
    return CheckResult(a.cases, a.mismatches + b.mismatches, a.examples, f"{a.note}; {b.note}")


@silicon_check(f"GEMM time model, held out, step-by-step kernels 2-7: at least {ACHIEVED['steps'][0]:.0%} within "
               f"±{TOLERANCE:.0%}, every one within ±{ACHIEVED['steps'][1]:.0%} (the goal, every record within "
               f"±{TOLERANCE:.0%}, met with the delivery bound of a ping-pong wave out of step; without it the "
               f"ping-pong step in row-major tile order at 4096³ was +25 % with the form clock's reuse window of 20 "
               f"CTAs)", lesson=8,
               dataset="l08/gemm_steps")
def _steps(ds: Dataset) -> CheckResult:
    return _floor_and_worst("steps")


@silicon_check(f"GEMM time model, held out, capstone forms between the steps (schedule and tile order one at a "
               f"time): at least {ACHIEVED['ablation'][0]:.0%} within ±{TOLERANCE:.0%}, every one within "
               f"±{ACHIEVED['ablation'][1]:.0%} (the goal, every record within ±{TOLERANCE:.0%}, met with the "
               f"delivery bound of a ping-pong wave out of step; without it ping-pong in row-major tile order at "
               f"4096³ was +25–27 % with the form clock's reuse window of 20 CTAs)", lesson=8,
               dataset="l08/gemm_steps_ablation")
def _ablation(ds: Dataset) -> CheckResult:
    return _floor_and_worst("ablation")


@silicon_check(f"GEMM time model, held out, FP8 forms (the consumer chain read off the k-block trace, every "
               f"throughput record held out): at least {ACHIEVED['fp8'][0]:.0%} within ±{TOLERANCE:.0%}, every one "
               f"within ±{ACHIEVED['fp8'][1]:.0%} (the goal, every record within ±{TOLERANCE:.0%}, met by the model "
               f"as it is; earlier models left the staggered 128 × 192 forms too fast at "
               f"4096³, 1280 × 3840 × 8192 and 16384³ and the cluster pair too slow at 16384³)", lesson=8,
               dataset="l08/gemm_bench_fp8")
def _fp8(ds: Dataset) -> CheckResult:
    return _floor_and_worst("fp8")


@silicon_check(f"GEMM time model, held out, bf16 clusters of two (the pair's release.cluster fence fitted on one "
               f"record): at least {ACHIEVED['cluster'][0]:.0%} within ±{TOLERANCE:.0%}, every one within "
               f"±{ACHIEVED['cluster'][1]:.0%}", lesson=8, dataset="l08/gemm_bench_cluster2")
def _cluster(ds: Dataset) -> CheckResult:
    return _floor_and_worst("cluster")


#: the clock runs (``benchmarks/clock_under_load.py``): the bf16 default form at 8192³ and 16384³, and the FP8
#: forms (128 × 192 and 128 × 128, TMA store) with the bf16 default at 8192³
CLOCK_DATASETS = ("l08/clock_under_load", "l08/clock_under_load_fp8")


def clock_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """A clock run (:data:`CLOCK_DATASETS`: capstone forms and cuBLAS launched back to back for seconds while
    nvidia-smi read the SM clock) against the model, nothing fitted on it: per capstone run, the measured median
    SM clock, the model's time at the fitted clock of its regime and at the measured clock, and the measured time
    per launch (``dataset``: the run's). ``ds``: the dataset or its name (default the first, the bf16 run; the FP8
    run is ``"l08/clock_under_load_fp8"``; ``"all"``: every committed one); [] when it is not committed. [assumption:
    the tensor clock the model fits is the SM clock nvidia-smi reports; these runs test that assumption — and, for
    the FP8 forms, whose clocks differ at the same shape, the FP8 mechanism: the scale load's
    ``scale_load_ns`` is a time, not cycles, so the k-block it bounds does not follow the clock.]"""
    from .. import data
    from ..design import capstone as cap
    from ..design import perf
    if ds is None or isinstance(ds, str):
        names = CLOCK_DATASETS if ds == "all" else (ds or CLOCK_DATASETS[0],)
        sets = [data.load(n) for n in names if data.available(n)]
    else:
        sets = [ds]
    p = params if params is not None else (_report().params if _report() is not None else None)
    if p is None or not sets:
        return []
    out = []
    for d in sets:
        out += _clock_rows_of(d, p, cap, perf)
    return out


def _clock_rows_of(ds: Dataset, p, cap, perf) -> list[dict]:
    out = []
    for r in ds.records:
        if not r.get("ok") or r["gemm"].startswith("cublas"):
            continue
        v = cap.variant(r["gemm"])
        ghz = r["median_sm_mhz"] / 1000.0
        fitted = perf.predict(v, r["M"], r["N"], r["K"], sms=132, params=p, launches=10).time_ms
        at_clock = perf.predict(v, r["M"], r["N"], r["K"], sms=132,
                                params=perf.at_clock(p, ghz), launches=10).time_ms
        out.append({"dataset": ds.name, "gemm": r["gemm"], "M": r["M"], "N": r["N"], "K": r["K"],
                    "sm_mhz": r["median_sm_mhz"],
                    "measured_ms": r["median_launch_ms"], "model_fitted_clock_ms": fitted,
                    "model_measured_clock_ms": at_clock, "error": at_clock / r["median_launch_ms"] - 1})
    return out


@silicon_check(f"Capstone GEMM time model at the SM clock nvidia-smi read during seconds of back-to-back launches "
               f"(nothing fitted on this run): every run within ±{TOLERANCE:.0%}", lesson=8,
               dataset="l08/clock_under_load")
def _clock(ds: Dataset) -> CheckResult:
    return check_clock(ds)


def check_clock(ds: Dataset, fp8_bound: float = TOLERANCE, rep: PerfReport | None = None) -> CheckResult:
    """A clock run (:data:`CLOCK_DATASETS`) against the model at the clock it read (:func:`clock_rows`): every bf16
    run within ±:data:`TOLERANCE`, every FP8 form within ``fp8_bound``. It fails — never passes on no case — when
    the model cannot calibrate (a calibration record of data/l08 is missing: every capstone run of the dataset is
    a mismatch, the note says why) or when the dataset holds no capstone run that completed (one mismatch)."""
    rep = rep or _report()
    runs = [r for r in ds.records if r.get("ok") and not str(r.get("gemm", "")).startswith("cublas")]
    if rep is None:
        n = max(1, len(runs))
        return CheckResult(n, n, [], note="cannot calibrate: a calibration record of data/l08 is missing, so no "
                                          "capstone run of this clock dataset can be predicted")
    rs = clock_rows(ds, rep.params)
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no completed capstone run to predict")
    return _clock_check(rs, fp8_bound)


def _clock_check(rs: list, fp8_bound: float = TOLERANCE) -> CheckResult:
    from ..design import capstone as cap
    bound = lambda r: fp8_bound if getattr(cap.variant(r["gemm"]), "dtype", "bf16") != "bf16" else TOLERANCE
    bad = [r for r in rs if abs(r["error"]) > bound(r)]
    return CheckResult(len(rs), len(bad), [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                                           for r in bad[:5]],
                       note="; ".join(f"{r['gemm']} {r['M']}³ at {r['sm_mhz']:.0f} MHz: model {r['model_measured_clock_ms']:.3f} "
                                      f"ms vs {r['measured_ms']:.3f} ms ({100 * r['error']:+.1f} %)" for r in rs))


@silicon_check(f"Capstone GEMM time model at the SM clock nvidia-smi read during seconds of back-to-back FP8 launches "
               f"(nothing fitted on this run; each form at the clock it kept): the bf16 run within "
               f"±{TOLERANCE:.0%}, each FP8 form within ±{ACHIEVED_CLOCK_FP8:.0%} (the goal; 128 × 192 at the lower "
               f"clock the farthest: −7 % under the form clock with its refitted FP8 issue window, −13 % with the "
               f"trace's, −9 % under the one-clock model)", lesson=8, dataset="l08/clock_under_load_fp8")
def _clock_fp8(ds: Dataset) -> CheckResult:
    return check_clock(ds, ACHIEVED_CLOCK_FP8)


#: the timestamp trace of the capstone's k-blocks (``benchmarks/trace_gemm.py``, ``l08_gemm.cu -DTRACE=1``)
TRACE_DATASET = "l08/gemm_trace"
#: every k-block trace run: the first (the FP8 chain's calibration), the forms the first did not run, the current
#: kernel's 128 × 128 forms at four shapes, the FP8 cluster pair
TRACE_RUNS = (TRACE_DATASET, "l08/gemm_trace_forms", "l08/gemm_trace_forms2", "l08/gemm_trace_cluster")


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def trace_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """The k-block trace (:data:`TRACE_DATASET`) next to the model, one row per traced form and shape: the measured
    median time untraced and traced (the trace's cost), the SM clock the trace read (clock64 over globaltimer, the
    median over the traced warpgroups), the consumers' median k-block (SM cycles; medians over both traced CTAs'
    two consumers) split as the trace splits it — ``wait_full`` (the previous block's end to the full-barrier
    pass), ``issue`` (to the commit), ``wgmma`` (to wait_group's return), ``after`` (release, FP8 scales,
    promotion and the next scales' copy) — and the model's same k-block (:func:`h100lab.design.perf.issue_events`
    at the trace's clock, and the per-k-block period of its first wave, all bounds in) and its time at the trace's
    clock. [] when the dataset is not committed or the model cannot calibrate."""
    from .. import data
    from ..design import perf

    if ds is None or isinstance(ds, str):
        name = ds or TRACE_DATASET
        if not data.available(name):
            return []
        ds = data.load(name)
    p = params if params is not None else (_report().params if _report() is not None else None)
    if p is None:
        return []
    out = []
    for r in ds.records:
        if not r.get("ok") or "warpgroups" not in r:
            continue
        cons = [w for w in r["warpgroups"] if w["role"] == "consumer"]
        prod = [w for w in r["warpgroups"] if w["role"] == "producer"]
        mhz = _median([w.get("clock_mhz") for w in r["warpgroups"]])
        if not cons or not mhz:
            continue
        c = lambda k, ws=cons: _median([w["cycles"].get(k, {}).get("median") for w in ws])   # noqa: E731
        fp8 = r.get("dtype", "bf16") != "bf16"
        after = ["release"] + (["scales", "promote", "next"] if fp8 else [])
        parts = [c(k) for k in after]
        meas = {"period": c("period"), "wait_full": c("wait_full"), "issue": c("issue"), "wgmma": c("wgmma"),
                "after": sum(parts) if all(x is not None for x in parts) else None}
        if fp8:
            meas.update(scales=c("scales"), promote=c("promote"), next=c("next"))
        ghz = mhz / 1000.0
        q = perf.at_clock(p, ghz)
        v = perf.form(r["variant"])
        pr = perf.predict(v, r["M"], r["N"], r["K"], sms=r.get("grid") or 132, params=q)
        ev = perf.issue_events(v, q, load_ns=pr.waves[0].scale_load_ns or None)   # the first wave's loaded latency
        row = {"variant": r["variant"], "M": r["M"], "N": r["N"], "K": r["K"], "sm_mhz": mhz,
               "measured_ms": r["median_ms"], "traced_ms": r["traced_median_ms"], "trace_cost": r["trace_cost"],
               "model_ms": pr.time_ms, "error": pr.time_ms / r["median_ms"] - 1,
               "model_period_cycles": pr.waves[0].period_ns * ghz, "model_bound": pr.bound,
               "producer_wait_empty": _median([w["cycles"].get("wait_empty", {}).get("median") for w in prod]),
               "tma_lead": c("lead"), "mainloop": c("mainloop"), "epilogue": c("epilogue")}
        row.update({f"trace_{k}": x for k, x in meas.items()})
        row.update({f"model_{k}": ev[k] for k in ("period", "wait_full", "issue", "wgmma", "after")})
        out.append(row)
    return out


def check_trace(ds: Dataset, rep: PerfReport | None = None, tol: float = TOLERANCE) -> CheckResult:
    """The FP8 records of a k-block trace run (default :data:`TRACE_DATASET`): each form's untraced median time
    against the model at the SM clock the trace read, every one within ±``tol`` (the chain's constants come from
    the first run's traced intervals, the scale latency from two untraced times of ``l08/gemm_trace_forms2`` —
    :data:`h100lab.design.perf.SCALE_CALIBRATION` — so the first run's times are a test). Fails (never passes on no
    case) when the model cannot calibrate or the run holds no FP8 record."""
    rep = rep or _report()
    if rep is None:
        return CheckResult(1, 1, [], note="cannot calibrate: a calibration record of data/l08 is missing")
    rs = [r for r in trace_rows(ds, rep.params) if not r["variant"].startswith(("cooperative", "pingpong"))]
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no FP8 trace record")
    bad = [r for r in rs if abs(r["error"]) > tol]
    return CheckResult(len(rs), len(bad), [{"case": f"{r['variant']} {r['M']}×{r['N']}×{r['K']}",
                                            "error": f"{100 * r['error']:+.1f} %"} for r in bad],
                       note="; ".join(f"{r['variant']} {r['M']}×{r['N']}×{r['K']} at {r['sm_mhz']:.0f} MHz: "
                                      f"{100 * r['error']:+.1f} %" for r in rs))


@silicon_check(f"FP8 capstone time model at the SM clock its k-block trace read (the trace run's untraced times; "
               f"the chain's constants come from its traced intervals): every FP8 form within ±{TOLERANCE:.0%}",
               lesson=8, dataset=TRACE_DATASET)
def _trace(ds: Dataset) -> CheckResult:
    return check_trace(ds)


#: the fourth trace (``l08/gemm_trace_cluster``, nothing fitted on it): every FP8 form within this (regression
#: guard; the one-clock model had 34 of its 35 records within the goal ±10 %, worst −11.5 %; the form clock, the
#: model since, 28 of 35, worst −15.1 %: the staggered 128 × 192 forms at 16384³)
ACHIEVED_TRACE_CLUSTER = 0.16


@silicon_check(f"FP8 capstone time model at the SM clock of the fourth k-block trace (the FP8 cluster pair traced, "
               f"plain and staggered forms at five shapes; nothing fitted on it): every FP8 form within "
               f"±{ACHIEVED_TRACE_CLUSTER:.0%} (goal ±{TOLERANCE:.0%}: 28 of 35; the one-clock model 34)", lesson=8,
               dataset="l08/gemm_trace_cluster")
def _trace_cluster(ds: Dataset) -> CheckResult:
    return check_trace(ds, tol=ACHIEVED_TRACE_CLUSTER)


#: the fifth trace (2026-12-03, nothing fitted on it, not among :data:`TRACE_RUNS`): the staggered forms beside the
#: plain ones, the 128 × 192 and 256 × 128 forms, at 8192³ — a calibration trace of the staggered chain to come
STAGGER_TRACE_DATASET = "l08/gemm_trace_stagger"


@silicon_check(f"FP8 capstone time model at the SM clock of the fifth k-block trace (the staggered and plain "
               f"128 × 128 forms, 128 × 192 and 256 × 128 at 8192³; nothing fitted on it): every FP8 form within "
               f"±{TOLERANCE:.0%}", lesson=8, dataset=STAGGER_TRACE_DATASET)
def _trace_stagger(ds: Dataset) -> CheckResult:
    return check_trace(ds)


# ------------------------------------------------------------------------------------------------
# the bf16 misses left (issue 17): the shared-memory bound in SM cycles, partial waves, records that do not repeat

L2_DATASET = "l08/gemm_l2_traffic"


def _dataset(ds: Dataset | str | None, default: str) -> Dataset | None:
    """``ds`` as a dataset: a :class:`Dataset` as it is, a name loaded, None the committed ``default`` (None when it
    is not committed)."""
    from .. import data

    if ds is None:
        return data.load(default) if data.available(default) else None
    return data.load(ds) if isinstance(ds, str) else ds


def cycle_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """The model's SM cycles next to the H200's (a diagnosis, nothing fitted): for each Nsight Compute record of
    the DRAM-counter run (:data:`L2_DATASET`, ``kind`` ``l2``, at the bench's grid of 132 CTAs) the launch's SM
    cycles — ``gpu__time_duration`` × ``sm__cycles_elapsed.avg.per_second`` (``ncu --clock-control none``: the
    clock the launch ran at) — and the model's (its predicted time × its clock), their ``ratio`` (model /
    measured) and the model's binding ``bound``. What it shows: ``cooperative_n128`` at 8192³ (group 8) runs
    2.30 M cycles, fewer than ``cooperative``'s 2.34 M, at 1489 against 1561 MHz — the tensor-core bound in cycles,
    its time lost to the clock — where the model's shared-memory bound charges it ~28 % more cycles than that (and
    ``cooperative`` ~9 %, which the fitted clock absorbs). Empty without that dataset."""
    from ..design import perf

    ds = _dataset(ds, L2_DATASET)
    if ds is None:
        return []
    p = params if params is not None else perf.calibrated()
    out = []
    for r in ds.records:
        m = r.get("metrics") or {}
        if r.get("kind") != "l2" or r.get("grid") != 132 or not r.get("ok", True):
            continue
        if "gpu__time_duration.sum" not in m or "sm__cycles_elapsed.avg.per_second" not in m:
            continue
        ms = m["gpu__time_duration.sum"] * 1e-6
        mhz = m["sm__cycles_elapsed.avg.per_second"] * 1e-6
        pr = perf.predict(r["variant"], r["M"], r["N"], r["K"], group=r["group"], raster=r["raster"], params=p)
        cyc, model = ms * mhz * 1e3, pr.time_ms * pr.clock_ghz * 1e6
        out.append({"variant": r["variant"], "shape": (r["M"], r["N"], r["K"]), "group": r["group"],
                    "raster": r["raster"], "ncu_ms": ms, "ncu_mhz": mhz, "cycles": cyc, "model_cycles": model,
                    "ratio": model / cyc, "bound": pr.bound})
    return out


def partial_wave_diagnosis(tol: float = TOLERANCE) -> dict:
    """A hypothesis test (:attr:`h100lab.design.perf.PerfParams.smem_shared`; every constant re-fitted on the same
    calibration subset, nothing on held-out records): the shared-memory bound shared by a wave's active CTAs, so
    that it relaxes in a partial wave — the one thing that separates 1280 × 3840 × 8192 (a partial last wave: 18
    of 132 CTAs for 128 × 256 tiles, 36 for 128 × 128) from 1408 × 3072 × 8192 (whole waves), where every bf16 form
    the model times is too slow at the first (+2–15 %) and not at the second. On the committed data: capstone
    84 → 87 of 88, FP8 122 → 119, ablation 15 → 14, steps and clusters unchanged. Returns ``before`` and ``after``
    (family → (within, n)), ``changed`` (held-out records whose error moved by more than 2 points or crossed
    ±``tol``: label → (error before, error after)) and the two sustained clocks ``ghz`` (before, after). ``before``
    is the model without its per-wave clock (``perf.calibrated(wave_clock=False)``): the shared bound is the other
    explanation of the same partial-wave misses, tested against what it would replace."""
    from ..design import perf

    recs = perf.load_records(perf.timing_datasets())          # the first tables as first recorded
    a = report(recs, params=perf.calibrated(wave_clock=False), tol=tol)
    p = perf.calibrated(smem_shared=True)
    b = report(recs, params=p, tol=tol)
    count = lambda rep: {f: (ag.within, ag.n) for f, ag in rep.by_family.items()}            # noqa: E731
    eb = {(r.label, r.dataset): r.error for r in b.rows if r.part == "held-out"}
    changed = {}
    for r in a.rows:
        e2 = eb.get((r.label, r.dataset))
        if r.part != "held-out" or e2 is None:
            continue
        if abs(e2 - r.error) > 0.02 or (abs(e2) <= tol) != (abs(r.error) <= tol):
            changed[f"{r.label} ({r.dataset.split('/')[-1]})"] = (r.error, e2)
    return {"before": count(a), "after": count(b), "changed": changed, "ghz": (a.params.tensor_ghz, p.tensor_ghz)}


def wave_clock_diagnosis(tol: float = TOLERANCE) -> dict:
    """What the model's per-wave clock (:attr:`h100lab.design.perf.PerfParams.wave_clock`, on by default; nothing
    fitted on a held-out record) is worth: the model against the same model with it off, every constant refitted on
    the same calibration subset (``perf.calibrated(wave_clock=False)``), each with its own reuse window. The wave
    clock: each wave at the clock the power limit gives its active CTAs —
    ``min(cap, budget · SMs / (activity · active))`` over the whole wave's, the
    activity the model's shared-memory bytes per clock (:func:`h100lab.design.perf.wave_clock_ratio`), ``budget``
    and ``cap`` from the two bf16 k-block traces at 1280 × 3840 × 8192
    (:data:`h100lab.design.perf.WAVE_CLOCK_CALIBRATION`: whole waves 1.59 / 1.53 GHz, partial waves 1.73 / 1.81).
    What it says of FP8: its whole waves are at the cap (fewer bytes per clock: the tensor cores idle ~40–50 % of its
    k-block), so it does not rise in a partial wave, as its traces read. On the committed data, switching it off
    gives held out 277 → 273 of 286: capstone 86 → 84, FP8 125 → 122, ablation 14 → 15 (the persistent ping-pong at
    8192³ in the grouped order +10.4 → +9.4 %: the clock refitted without it is higher, 1.694 → 1.712 GHz), steps
    and clusters unchanged. ``model`` / ``off`` (family → (within, n)), ``changed`` (held-out records whose error moved by more
    than 2 points or crossed ±``tol``: label → (error with, error without)), ``ghz`` (the sustained clocks: model,
    off), ``wave_clock`` (its constants)."""
    from ..design import perf

    recs = perf.load_records(perf.timing_datasets())          # the first tables as first recorded
    a = report(recs, params=perf.calibrated(form_clock=False), tol=tol)
    p = perf.calibrated(wave_clock=False)
    b = report(recs, params=p, tol=tol)
    count = lambda rep: {f: (ag.within, ag.n) for f, ag in rep.by_family.items()}            # noqa: E731
    eb = {(r.label, r.dataset, r.measured_ms): r.error for r in b.rows if r.part == "held-out"}
    changed = {}
    for r in a.rows:
        e2 = eb.get((r.label, r.dataset, r.measured_ms))
        if r.part != "held-out" or e2 is None:
            continue
        if abs(e2 - r.error) > 0.02 or (abs(e2) <= tol) != (abs(r.error) <= tol):
            changed[f"{r.label} ({r.dataset.split('/')[-1]})"] = (r.error, e2)
    return {"model": count(a), "off": count(b), "changed": changed, "ghz": (a.params.tensor_ghz, p.tensor_ghz),
            "wave_clock": a.params.wave_clock}


def repeat_rows(variant: str = "cooperative_n128", shape: tuple = (16384, 16384, 16384), group: int = 8,
                raster: int = 0) -> list[dict]:
    """Every committed time of one configuration (``variant`` at ``shape``, ``group``, ``raster``, the bench's
    grid): the timing records of every ``data/l08`` timing dataset (:func:`h100lab.design.perf.timing_datasets`)
    and the DRAM-counter run's (:data:`L2_DATASET`: its timed launches, ``l2time``, and the Nsight Compute launch,
    ``l2``: one launch, no median) — each ``source``, ``median_ms``, ``min_ms`` and ``vs_first`` (its median over
    the first row's − 1). Whether a record repeats: ``cooperative_n128`` at 16384³ ran 17.3 ms (median; min 15.8)
    in ``gemm_bench`` and 13.9 (min 12.7) in the DRAM-counter run's timed launches, 12.6 under ncu — the record is
    25 % slower than the other run, so the model's −12 % against it is not a measure of the model to ±10 %; the
    repeated table (:data:`REPEATS_DATASET`, a row per process) ran it 13.8–14.8 ms (median 14.0), as the
    DRAM-counter run did."""
    from .. import data
    from ..design import perf

    M, N, K = shape
    out = []
    for r in perf.load_records(perf.timing_datasets()):
        if (r.get("variant") == variant and (r["M"], r["N"], r["K"]) == tuple(shape) and r.get("step") is None
                and r.get("schedule") is None and r.get("group", 8) == group and r.get("raster", 0) == raster):
            out.append({"source": r["dataset"], "median_ms": float(r["median_ms"]),
                        "min_ms": float(r.get("min_ms", r["median_ms"]))})
    if data.available(REPEATS_DATASET):                # the repeated table: each process's median
        for r in data.load(REPEATS_DATASET).records:
            if (r.get("kind") == "repeat_time" and r.get("ok") and r.get("variant") == variant
                    and (r["M"], r["N"], r["K"]) == tuple(shape) and r.get("group", 8) == group
                    and r.get("raster", 0) == raster):
                out.append({"source": f"{REPEATS_DATASET} (repeat {r['repeat']})", "median_ms": float(r["median_ms"]),
                            "min_ms": float(r.get("min_ms", r["median_ms"]))})
    if data.available(L2_DATASET):
        for r in data.load(L2_DATASET).records:
            if (r.get("variant") != variant or (r.get("M"), r.get("N"), r.get("K")) != (M, N, K)
                    or r.get("group") != group or r.get("raster") != raster or r.get("grid") != 132):
                continue
            if r.get("kind") == "l2time":
                out.append({"source": f"{L2_DATASET} (timed)", "median_ms": float(r["median_ms"]),
                            "min_ms": float(r["min_ms"])})
            elif r.get("kind") == "l2" and "gpu__time_duration.sum" in (r.get("metrics") or {}):
                ms = r["metrics"]["gpu__time_duration.sum"] * 1e-6
                out.append({"source": f"{L2_DATASET} (ncu, one launch)", "median_ms": ms, "min_ms": ms})
    for row in out:
        row["vs_first"] = row["median_ms"] / out[0]["median_ms"] - 1.0
    return out


# ------------------------------------------------------------------------------------------------
# the repeated table (device request n128b): the model on each configuration's median over five processes

REPEATS_DATASET = "l08/gemm_bench_repeats"
#: the repeated table's level (fraction within ±10 % of the per-configuration medians; regression guard): the
#: committed run (five processes, 2026-12-02) 32 of 37 — the misses the 128-column cooperative forms (1280 × 3840
#: × 8192 +13.2 %, 4096³ +10.4 %, 8192³ +10.9 %, 16384³ with a group in flight −15.4 %: bimodal, 17.1–18.4 ms) and
#: ping-pong with a group in flight at 1280 × 3840 × 8192 (+10.0 %). The repeats agree with each other (median
#: spread ~1 %) but not with ``l08/gemm_bench``: there the ping-pong forms at 4096³ and 8192³ and the 128-column
#: ones at 8192³ and 16384³ ran 6–19 % slower (two calibration records among them: ``pingpong_inflight`` at 4096³
#: and 8192³, 6–7 % slower than they repeat), cuBLAS 1.5–2.5 % slower. The builds, not the sessions: the two runs'
#: kernels (efb78df, 025c7ae) have the same main loops in SASS (:func:`mainloop_identity`) but not the same
#: epilogue (the fused bias/ReLU path came between), and run side by side in one later session
#: (:data:`BUILDS_DATASET`, :func:`build_summary`) the old build reproduced l08/gemm_bench (51 of 52 records within
#: ±10 %) while today's ran those same forms 4–27 % faster, cuBLAS alike on both sides
ACHIEVED_REPEATS = 0.86


#: every repeated table (device requests n128b and repeats2): its dataset → the dataset it repeats
REPEATED = {REPEATS_DATASET: "l08/gemm_bench",
            "l08/gemm_bench_fp8_stagger_repeats": "l08/gemm_bench_fp8_stagger",
            "l08/gemm_steps_ablation_repeats": "l08/gemm_steps_ablation",
            "l08/gemm_bench_fp8_m256_repeats": "l08/gemm_bench_fp8_m256",
            "l08/gemm_bench_tmastore_repeats": "l08/gemm_bench_tmastore"}
#: the original datasets whose records a repeated table also re-times: ``gemm_steps_ablation``'s runs hold every
#: step record of ``l08/gemm_steps`` (the same script without ``--ablation``, whose step part runs first)
ALSO_REPEATS = {"l08/gemm_steps_ablation_repeats": ("l08/gemm_steps",)}


MAINLOOP_DATASET = "l08/mainloop_sass"


def mainloop_identity(table: str = "l08/gemm_bench", repeat: str = REPEATS_DATASET,
                      ds: Dataset | str | None = None) -> dict[str, bool]:
    """Per variant of :data:`MAINLOOP_DATASET` (``benchmarks/mainloop_sass.py``: the SASS fingerprint of
    ``gemm_bf16``'s main loops, :func:`h100lab.sass.mainloop_fingerprint`, built from ``l08_gemm.cu`` at the commit
    each table was measured from): for each variant ``table`` timed, whether it and ``repeat`` ran the same main
    loops (the same opcode sequences in every basic block holding ``HGMMA`` or ``UTMALDG``). {} without the dataset.
    The bf16 table and its five-process repeat did, for all seven variants — yet where they disagree (6–24 % at some
    records, :data:`ACHIEVED_REPEATS`) the builds do: side by side in one session (:func:`build_summary`) the old one
    reproduces the table and today's is faster, so what differs lies outside those blocks (the epilogue's code
    changed between them; not identified further)."""
    from .. import data

    ds = _dataset(ds, MAINLOOP_DATASET)
    if ds is None or not data.available(table):
        return {}
    ran = {r.get("variant") for r in data.load(table).records}
    revs = ds.meta["measured_from"]
    a, b = revs[table]["rev"], revs[repeat]["rev"]
    fp: dict = {}
    for r in ds.records:
        if r.get("kind", "mainloop") == "mainloop":
            fp.setdefault(r["variant"], {})[r["rev"]] = r["sha256"]
    return {v: f[a] == f[b] for v, f in fp.items() if v in ran and a in f and b in f}


def _case(r: dict) -> str:
    """``M×N×K variant`` of a row that carries ``shape`` and ``variant`` (the A/B and repeat tables' case names)."""
    return f"{'×'.join(map(str, r['shape']))} {r['variant']}"


BUILDS_DATASET = "l08/gemm_bench_builds"
#: the first bf16 tables (their build: ``l08_gemm.cu`` at efb78df, run from tree c91776e)
FIRST_BUILD_TABLES = ("l08/gemm_bench", "l08/gemm_bench_tmastore")
#: :data:`BUILDS_DATASET`'s levels (regression guards): each first-table original within ±10 % of its own build's
#: re-run — 51 of 52 (``cooperative_n128`` at 16384³: 17.3 ms, its build re-ran 17.9–19.8 ms); the model on today's
#: build, per configuration: see :func:`build_summary`
ACHIEVED_BUILD_REPRO = 0.98
#: two builds' times of one configuration count as the same within this (relative; :func:`build_summary`)
BUILD_SAME = 0.03


def build_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """The A/B run (:data:`BUILDS_DATASET`, ``benchmarks/ab_gemm_builds.sh``: the tree that ran the first bf16 tables
    and today's, alternating processes in one session on the H200) per configuration of our kernels (table, variant,
    shape, group, raster): ``old_ms`` / ``new_ms`` (median over the build's three processes of each process's
    median), ``old`` / ``new`` (the per-process medians), ``new_vs_old`` (``new_ms / old_ms − 1``), ``original_ms`` and
    ``original_vs_old`` (the first table's record against its own build's re-run), ``model_ms``, ``model_vs_new``
    and ``model_vs_old`` (the model, which describes today's kernel; nothing of this dataset is fitted). cuBLAS rows
    (``variant`` ``cublas``) carry no model. [] without the dataset."""
    from statistics import median

    from .. import data
    from ..design import perf

    ds = _dataset(ds, BUILDS_DATASET)
    if ds is None:
        return []
    orig = {}
    for t in FIRST_BUILD_TABLES:
        if data.available(t):
            for r in data.load(t).records:
                if r.get("kind") == "time" and "median_ms" in r:
                    orig[(t, *_repeat_key(r)[1:])] = r
    groups: dict = {}
    for r in ds.records:
        if r.get("kind") == "build_time" and r.get("ok", True) and "median_ms" in r:
            key = (r["table"], *_repeat_key(r)[1:])
            groups.setdefault(key, {"old": [], "new": []})[r["build"]].append(float(r["median_ms"]))
    p = params if params is not None else perf.calibrated()
    out = []
    for key, g in groups.items():
        if not g["old"] or not g["new"]:
            continue
        o, n = median(g["old"]), median(g["new"])
        row = {"table": key[0], "variant": key[1], "shape": key[5:8], "group": key[8], "raster": key[9],
               "old": g["old"], "new": g["new"], "old_ms": o, "new_ms": n, "new_vs_old": n / o - 1.0,
               "original_ms": None, "original_vs_old": None, "model_ms": None, "model_vs_new": None,
               "model_vs_old": None}
        x = orig.get(key)
        if x is not None:
            row.update(original_ms=float(x["median_ms"]), original_vs_old=float(x["median_ms"]) / o - 1.0)
            if not perf._not_ours(x):
                rec = dict(x, dataset=key[0], launches=int(x.get("warmup", 0)) + int(x.get("repeats", 1)))
                m = perf.predict_record(rec, p).time_ms
                row.update(model_ms=m, model_vs_new=m / n - 1.0, model_vs_old=m / o - 1.0)
        out.append(row)
    return out


def build_summary(ds: Dataset | str | None = None, params=None, tol: float = TOLERANCE) -> dict:
    """:func:`build_rows` counted: ``n`` configurations of our kernels; ``same`` (the builds within ±:data:`BUILD_SAME`
    of each other), ``faster_new`` / ``slower_new`` (today's build more than that faster / slower: ``(label,
    new_vs_old)``, largest first); ``cublas``
    (cuBLAS new / old − 1 per table and shape: the session's state, alike for both sides); ``repro`` (first-table
    originals within ``tol`` of their build's re-run) of ``n_orig``; ``model_new`` / ``model_old`` (the model within
    ``tol`` of today's build / of the old build)."""
    rs = build_rows(ds, params)
    ours = [r for r in rs if r["model_ms"] is not None]
    lab = lambda r: f"{_case(r)} [{r['table'].split('/')[-1]}]"  # noqa: E731
    return {"n": len(ours), "same": sum(abs(r["new_vs_old"]) <= BUILD_SAME for r in ours),
            "faster_new": sorted(((lab(r), r["new_vs_old"]) for r in ours if r["new_vs_old"] < -BUILD_SAME),
                                 key=lambda x: x[1]),
            "slower_new": sorted(((lab(r), r["new_vs_old"]) for r in ours if r["new_vs_old"] > BUILD_SAME),
                                 key=lambda x: -x[1]),
            "cublas": {lab(r): r["new_vs_old"] for r in rs if r["variant"] == "cublas"},
            "n_orig": sum(r["original_vs_old"] is not None for r in ours),
            "repro": sum(r["original_vs_old"] is not None and abs(r["original_vs_old"]) <= tol for r in ours),
            "model_new": sum(abs(r["model_vs_new"]) <= tol for r in ours),
            "model_old": sum(abs(r["model_vs_old"]) <= tol for r in ours)}


@silicon_check(f"The first bf16 tables reproduce on their own build: l08/gemm_bench and l08/gemm_bench_tmastore "
               f"against the same build re-run in three processes of one later session (l08/gemm_bench_builds), at "
               f"least {ACHIEVED_BUILD_REPRO:.0%} within ±{TOLERANCE:.0%} (goal: all; 128 × 128 at 16384³ ran 17.3 "
               "ms, its build 17.9–19.8 ms)", lesson=8, dataset=BUILDS_DATASET)
def _builds_repro(ds: Dataset) -> CheckResult:
    rs = [r for r in build_rows(ds) if r["original_vs_old"] is not None and r["variant"] != "cublas"]
    good = [abs(r["original_vs_old"]) <= TOLERANCE for r in rs]
    return CheckResult(len(rs), beyond_floor(len(rs), len(rs) - sum(good), ACHIEVED_BUILD_REPRO), [{"case": _case(r),
                                       "original_ms": round(r["original_ms"], 4), "old_build_ms": r["old"],
                                       "vs": f"{100 * r['original_vs_old']:+.1f} %"}
                                      for r, g in zip(rs, good) if not g][:5],
                       f"{sum(good)}/{len(rs)} within ±{TOLERANCE:.0%} of their build's re-run")


@silicon_check("The A/B run is one state of the GPU for both builds: cuBLAS, timed in every process of both sides, "
               "within ±5 % between the sides at every shape (l08/gemm_bench_builds)", lesson=8,
               dataset=BUILDS_DATASET)
def _builds_cublas(ds: Dataset) -> CheckResult:
    rs = [r for r in build_rows(ds) if r["variant"] == "cublas"]
    bad = [r for r in rs if abs(r["new_vs_old"]) > 0.05]
    return CheckResult(len(rs), len(bad), [{"case": f"{'×'.join(map(str, r['shape']))} [{r['table']}]",
                                            "old": r["old"], "new": r["new"]} for r in bad][:5],
                       f"largest difference {max((abs(r['new_vs_old']) for r in rs), default=0):.1%}")


KERNELS_DATASET = "l08/gemm_bench_kernels"
#: :data:`KERNELS_DATASET`'s model level (a regression guard): the model within ±10 % of today's kernel on 15 of its
#: 20 configurations — 128 × 128 without a group in flight is 11–12 % slow at every shape, ping-pong at 4096³ 11 %
ACHIEVED_KERNEL_MODEL = 0.75


def kernel_ab_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """The kernel A/B run (:data:`KERNELS_DATASET`, ``benchmarks/ab_gemm_kernels.py``: ``l08_gemm.cu`` at efb78df —
    the first bf16 table's kernel — and today's, in one process with today's harness, sides alternating) per
    configuration (variant, shape): ``old`` / ``new`` (each round's median), ``old_ms`` / ``new_ms`` (their
    medians), ``new_vs_old``, ``bitwise_equal`` (the two kernels' outputs), ``builds_new_vs_old`` (the two trees'
    A/B run, :func:`build_rows`, where it timed the configuration; None elsewhere) and ``model_ms``,
    ``model_vs_new``, ``model_vs_old`` (nothing of this dataset is fitted). [] without the dataset."""
    from statistics import median

    from ..design import perf

    ds = _dataset(ds, KERNELS_DATASET)
    if ds is None:
        return []
    p = params if params is not None else perf.calibrated()
    builds = {}
    for b in build_rows(params=p):
        if b["table"] == "l08/gemm_bench" and b["group"] == 8 and b["raster"] == 0:
            builds[(b["variant"], tuple(b["shape"]))] = b["new_vs_old"]
    groups: dict = {}
    equal: dict = {}
    launches: dict = {}
    for r in ds.records:
        key = (r.get("variant"), (r.get("M"), r.get("N"), r.get("K")))
        if r.get("kind") == "kernel_ab_time":
            groups.setdefault(key, {"old": [], "new": []})[r["side"]].append(float(r["median_ms"]))
            launches[key] = int(r["warmup"]) + int(r["repeats"])
        elif r.get("kind") == "kernel_ab_match":
            equal[key] = bool(r["bitwise_equal"])
    out = []
    for (variant, shape), g in groups.items():
        o, n = median(g["old"]), median(g["new"])
        m = perf.predict(variant, *shape, params=p, launches=launches[(variant, shape)]).time_ms
        out.append({"variant": variant, "shape": shape, "old": g["old"], "new": g["new"], "old_ms": o, "new_ms": n,
                    "new_vs_old": n / o - 1.0, "bitwise_equal": equal.get((variant, shape)),
                    "builds_new_vs_old": builds.get((variant, shape)), "model_ms": m, "model_vs_new": m / n - 1.0,
                    "model_vs_old": m / o - 1.0})
    return out


def kernel_ab_summary(ds: Dataset | str | None = None, params=None, tol: float = TOLERANCE) -> dict:
    """:func:`kernel_ab_rows` counted: ``n`` configurations, ``equal`` (outputs bit for bit alike),
    ``faster_new`` (today's kernel more than :data:`BUILD_SAME` faster: ``(label, new_vs_old)``, largest first),
    ``builds_faster`` (configurations the two trees' run found today's build faster at) and ``builds_reproduced``
    (of those, how many today's kernel is faster at here too: the harness was the same, so the kernel's code is the
    difference), ``model_new`` / ``model_old`` (the model within ``tol`` of today's / the old kernel) and
    ``model_misses`` (``(label, model_vs_new)`` beyond ``tol``)."""
    return _kernel_ab_counts(kernel_ab_rows(ds, params), tol)


def _builds_faster(r: dict) -> bool:
    """Whether the two trees' A/B run found today's build faster at this configuration."""
    return r["builds_new_vs_old"] is not None and r["builds_new_vs_old"] < -BUILD_SAME


def _kernel_ab_counts(rs: Sequence[dict], tol: float = TOLERANCE) -> dict:
    bf = [r for r in rs if _builds_faster(r)]
    return {"n": len(rs), "equal": sum(bool(r["bitwise_equal"]) for r in rs),
            "faster_new": sorted(((_case(r), r["new_vs_old"]) for r in rs if r["new_vs_old"] < -BUILD_SAME),
                                 key=lambda x: x[1]),
            "builds_faster": len(bf), "builds_reproduced": sum(r["new_vs_old"] < -BUILD_SAME for r in bf),
            "model_new": sum(abs(r["model_vs_new"]) <= tol for r in rs),
            "model_old": sum(abs(r["model_vs_old"]) <= tol for r in rs),
            "model_misses": sorted(((_case(r), r["model_vs_new"]) for r in rs if abs(r["model_vs_new"]) > tol),
                                   key=lambda x: -abs(x[1]))}


def kernel_ab_counters(ds: Dataset | str | None = None) -> list[dict]:
    """The kernel A/B run's Nsight Compute launches (``kind`` ``kernel_ab_ncu``: two per side of three variants at
    8192³, ``--clock-control none``) per variant and side, each the mean of its launches: ``ms`` (the profiled
    launch), ``mcycles`` (``gpc__cycles_elapsed.max``, millions), ``ghz`` (their rate), ``tensor_active``
    (``sm__pipe_tensor_cycles_active``, % of elapsed), ``l2_hit`` (%), ``dram_gb`` (DRAM bytes over the launch, GB)
    and ``long_scoreboard`` (warp stalls on the long scoreboard per issue). [] without the dataset."""
    ds = _dataset(ds, KERNELS_DATASET)
    if ds is None:
        return []
    acc: dict = {}
    for r in ds.records:
        if r.get("kind") == "kernel_ab_ncu":
            acc.setdefault((r["variant"], r["side"]), []).append(r["metrics"])
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    out = []
    for (variant, side), ms in acc.items():
        t = [m["gpu__time_duration.sum"] * 1e-9 for m in ms]
        out.append({"variant": variant, "side": side, "launches": len(ms), "ms": 1e3 * mean(t),
                    "mcycles": mean([m["gpc__cycles_elapsed.max"] for m in ms]) / 1e6,
                    "ghz": mean([m["gpc__cycles_elapsed.max.per_second"] for m in ms]) / 1e9,
                    "tensor_active": mean([m["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"]
                                           for m in ms]),
                    "l2_hit": mean([m["lts__t_sector_hit_rate.pct"] for m in ms]),
                    "dram_gb": mean([m["dram__bytes.sum.per_second"] * x for m, x in zip(ms, t)]) / 1e9,
                    "long_scoreboard": mean([m["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active"
                                               ".ratio"] for m in ms])})
    return out


@silicon_check("The first bf16 table's build differs from today's by its kernel alone: l08_gemm.cu at efb78df and "
               "today's, in one process with one harness (l08/gemm_bench_kernels), give bit-identical outputs at every "
               "configuration, and today's kernel is more than 3 % faster at every configuration where the two trees' "
               "A/B run (l08/gemm_bench_builds) found today's build faster", lesson=8, dataset=KERNELS_DATASET)
def _kernels_ab(ds: Dataset) -> CheckResult:
    rs = kernel_ab_rows(ds)
    bad = [r for r in rs if not r["bitwise_equal"] or (_builds_faster(r) and r["new_vs_old"] >= -BUILD_SAME)]
    s = _kernel_ab_counts(rs)
    return CheckResult(len(rs), len(bad), [{"case": _case(r),
                                            "bitwise_equal": r["bitwise_equal"],
                                            "new_vs_old": f"{100 * r['new_vs_old']:+.1f} %",
                                            "builds_new_vs_old": r["builds_new_vs_old"]} for r in bad][:5],
                       f"{s['equal']}/{s['n']} bit-identical; {s['builds_reproduced']}/{s['builds_faster']} of the "
                       f"trees' faster configurations faster here too; {len(s['faster_new'])} faster in all")


@silicon_check(f"Capstone GEMM time model on today's kernel in the kernel A/B run (l08/gemm_bench_kernels, six "
               f"variants at four shapes, nothing fitted on it): at least {ACHIEVED_KERNEL_MODEL:.0%} within "
               f"±{TOLERANCE:.0%} (goal: all; the model is calibrated on the first table, whose 128 × 128 and "
               "ping-pong forms ran the old kernel, and is 8–12 % slow on today's)", lesson=8,
               dataset=KERNELS_DATASET)
def _kernels_model(ds: Dataset) -> CheckResult:
    s = kernel_ab_summary(ds)
    return CheckResult(s["n"], beyond_floor(s["n"], s["n"] - s["model_new"], ACHIEVED_KERNEL_MODEL),
                       [{"case": c, "model_vs_today": f"{100 * e:+.1f} %"} for c, e in s["model_misses"]][:5],
                       f"{s['model_new']}/{s['n']} within ±{TOLERANCE:.0%} of today's kernel "
                       f"({s['model_old']}/{s['n']} of the old one)")


def kernel_changes(ds: Dataset | str | None = None) -> dict[str, list[str]]:
    """Per variant whose whole ``gemm_bf16`` :data:`MAINLOOP_DATASET` fingerprints at every commit of ``l08_gemm.cu``
    since the first bf16 table's build (records ``kind`` ``function``, oldest first): the commits at which its SASS
    (every opcode, in order) changed. {} without the dataset. On the committed one: only cdfd596 (the fused bias and
    ReLU epilogue) — the one change between the first table's build and today's."""
    ds = _dataset(ds, MAINLOOP_DATASET)
    if ds is None:
        return {}
    seq: dict = {}
    for r in ds.records:
        if r.get("kind") == "function":
            seq.setdefault(r["variant"], []).append(r)
    return {v: [b["rev"] for a, b in zip(rs, rs[1:]) if a["sha256"] != b["sha256"]] for v, rs in seq.items()}


def _repeat_key(r: dict) -> tuple:
    """A timing record's configuration: kind (``repeat_`` dropped), variant, step, schedule, epilogue, shape, group,
    raster — one record per key in each committed timing dataset."""
    return (str(r.get("kind", "")).removeprefix("repeat_"), r.get("variant"), r.get("step"), r.get("schedule"),
            r.get("epilogue"), r["M"], r["N"], r["K"], r.get("group", 8), r.get("raster", 0))


def repeat_median_rows(ds: Dataset | str | None = None, params=None, originals: Sequence[str] | None = None
                       ) -> list[dict]:
    """The model against a repeated table (default :data:`REPEATS_DATASET`; any of :data:`REPEATED`: an l08 timing
    dataset measured again in five processes, its own meta command, variant order rotated where the script takes
    ``--variants``; held out, nothing fitted on it): per configuration (:func:`_repeat_key`; the book's kernels,
    not cuBLAS) the ``median_ms`` over the repeats of each repeat's median, ``spread`` (largest / smallest repeat
    median − 1), ``n`` repeats, ``model_ms`` and ``error`` (model / median − 1; the record predicted as a record of
    the repeated table: the kernel that ran now). Against each original dataset (``originals``; default the one
    :data:`REPEATED` names and those of :data:`ALSO_REPEATS`) holding the configuration: ``original`` (dataset →
    ``{"median_ms", "vs_median"`` (original / repeat median − 1), ``"model_ms"``, ``"error"`` (the model on the
    original record, as the per-record report has it), ``"calibration"``, ``"same_kernel"`` (False where the
    original ran an older kernel: :data:`h100lab.design.perf.EARLY_SCALE_COPY`)``}``). Records the model cannot
    take are left out; [] without the dataset."""
    from statistics import median

    from .. import data
    from ..design import perf

    ds = _dataset(ds, REPEATS_DATASET)
    if ds is None:
        return []
    if originals is None:
        originals = [o for o in (REPEATED.get(ds.name), *ALSO_REPEATS.get(ds.name, ())) if o]
    orig = {}
    for o in originals:
        if data.available(o):
            for r in data.load(o).records:
                if r.get("kind") in perf.TIME_KINDS and r.get("ok", True) and "median_ms" in r \
                        and not perf._not_ours(r):
                    orig.setdefault(o, {})[_repeat_key(r)] = r
    p = params if params is not None else perf.calibrated()
    groups: dict = {}
    for r in ds.records:
        k = str(r.get("kind", ""))
        if not k.startswith("repeat_") or k.removeprefix("repeat_") not in perf.TIME_KINDS or not r.get("ok", True) \
                or "median_ms" not in r or perf._not_ours(r):
            continue
        groups.setdefault(_repeat_key(r), []).append(r)
    out = []
    for key, rs in groups.items():
        meds = [float(r["median_ms"]) for r in rs]
        rec = dict(rs[0], kind=key[0], median_ms=median(meds), dataset=ds.name,
                   launches=int(rs[0].get("warmup", 0)) + int(rs[0].get("repeats", 1)))
        rec.pop("repeat", None), rec.pop("order", None)
        try:
            pr = perf.predict_record(rec, p)
        except (perf.NotModelled, KeyError):
            continue
        row = {"variant": key[1], "shape": key[5:8], "group": key[8], "raster": key[9], "kind": key[0],
               "step": key[2], "schedule": key[3], "epilogue": key[4], "label": perf.record_label(rec) if key[4] in
               (None, "plain") else perf.record_label(rec).replace(" [", f" ({key[4]}) [", 1),
               "n": len(meds), "median_ms": rec["median_ms"], "spread": max(meds) / min(meds) - 1.0,
               "model_ms": pr.time_ms, "error": pr.time_ms / rec["median_ms"] - 1.0, "original": {}}
        for o, recs in orig.items():
            if key in recs:
                x = dict(recs[key], dataset=o, launches=int(recs[key].get("warmup", 0)) +
                         int(recs[key].get("repeats", 1)))
                po = perf.predict_record(x, p)
                row["original"][o] = {"median_ms": float(x["median_ms"]),
                                      "vs_median": float(x["median_ms"]) / rec["median_ms"] - 1.0,
                                      "model_ms": po.time_ms, "error": po.time_ms / float(x["median_ms"]) - 1.0,
                                      "calibration": perf.is_calibration(x),
                                      "same_kernel": x.get("variant") not in perf.EARLY_SCALE_COPY.get(o, ())}
        out.append(row)
    return out


@silicon_check(f"Capstone GEMM time model, held out, on the repeated bf16 table (five processes, the median of each "
               f"configuration's repeat medians): at least {ACHIEVED_REPEATS:.0%} within ±{TOLERANCE:.0%} (goal: "
               "every configuration)", lesson=8, dataset=REPEATS_DATASET)
def _repeats(ds: Dataset) -> CheckResult:
    return _repeat_table_result(ds, ACHIEVED_REPEATS,
                                lambda r: f"{_case(r)} g{r['group']} r{r['raster']}")


# ------------------------------------------------------------------------------------------------
# four more repeated tables (device request repeats2): FP8 stagger and 256-row, the ablation (+ steps), TMA store

#: each repeated table's level (fraction of its configurations' repeat medians within ±10 %; regression guard) at
#: the committed run (device request repeats2, 2026-12-02, 20 processes, all ok; no throttle reason before/after
#: any). Unlike l08/gemm_bench, these tables repeat: every original of the current kernel within 5 % of its
#: configuration's repeat median but four of the TMA-store table (16384³ 5.3–8.8 %, the power limit; 8192³
#: 128-column 6.4 %); the first FP8 run's two early-copy forms (perf.EARLY_SCALE_COPY) 6–12 % slower than the
#: kernel that runs now. Single repeats 7–14 % slow now and then (8192³ and 16384³), which the median absorbs.
#: FP8 stagger 29/30 (1280 × 3840 × 8192 fp8_cooperative_staggered −10.7 %; on the originals 28/30, the two misses
#: the early-copy forms), ablation + steps 27/30 (the persistent ping-pong forms +10.0–11.2 %: 4096³ group 1,
#: 8192³ grouped and its in-flight form; on the originals 28/30), FP8 256-row 19/20 (4096³ m256_tmastore −10.1 %;
#: on the originals 19/20, a different miss), TMA store 15/15 (15/15)
ACHIEVED_REPEAT_TABLES: dict = {"l08/gemm_bench_fp8_stagger_repeats": 0.96, "l08/gemm_steps_ablation_repeats": 0.90,
                                "l08/gemm_bench_fp8_m256_repeats": 0.95, "l08/gemm_bench_tmastore_repeats": 1.0}
_REPEAT_TABLE_NAMES = {"l08/gemm_bench_fp8_stagger_repeats": "FP8 stagger table",
                       "l08/gemm_steps_ablation_repeats": "ablation table (its steps included)",
                       "l08/gemm_bench_fp8_m256_repeats": "FP8 256-row table",
                       "l08/gemm_bench_tmastore_repeats": "bf16 TMA-store table"}


def repeat_summary(ds: Dataset | str, params=None, tol: float = TOLERANCE) -> dict:
    """A repeated table against its originals (:func:`repeat_median_rows`): ``n`` configurations, ``within`` (the
    model within ``tol`` of the repeat medians), and per original dataset ``n``, ``same_kernel`` (configurations
    whose original ran the kernel that runs now), ``over5``/``over10`` (those of them whose original median differs
    from the repeat median by more than 5 % / 10 %), ``model_median`` and ``model_original`` (how many of the same
    configurations the model has within ``tol``: on the repeat median, on the original record) and ``calibration``
    (configurations whose original record is in the calibration subset)."""
    rs = repeat_median_rows(ds, params)
    out = {"n": len(rs), "within": sum(abs(r["error"]) <= tol for r in rs), "originals": {}}
    for o in dict.fromkeys(o for r in rs for o in r["original"]):
        here = [(r, r["original"][o]) for r in rs if o in r["original"]]
        same = [(r, x) for r, x in here if x["same_kernel"]]
        out["originals"][o] = {
            "n": len(here), "same_kernel": len(same),
            "over5": sum(abs(x["vs_median"]) > 0.05 for _, x in same),
            "over10": sum(abs(x["vs_median"]) > 0.10 for _, x in same),
            "model_median": sum(abs(r["error"]) <= tol for r, _ in here),
            "model_original": sum(abs(x["error"]) <= tol for _, x in here),
            "calibration": sum(x["calibration"] for _, x in here)}
    return out


def _repeat_table_result(ds: Dataset, floor: float, case=lambda r: r["label"]) -> CheckResult:
    """A repeated table's check: its configurations' repeat medians (:func:`repeat_median_rows`) at least ``floor``
    within ±:data:`TOLERANCE`; the five worst misses, each named by ``case(row)``."""
    rs = repeat_median_rows(ds)
    within = sum(abs(r["error"]) <= TOLERANCE for r in rs)
    bad = beyond_floor(len(rs), len(rs) - within, floor)
    worst = sorted(rs, key=lambda r: -abs(r["error"]))[:5]
    return CheckResult(len(rs), bad, [{"case": case(r), "model_ms": round(r["model_ms"], 4),
                                       "median_ms": round(r["median_ms"], 4), "error": f"{100 * r['error']:+.1f} %",
                                       "spread": f"{100 * r['spread']:.1f} %"}
                                      for r in worst if abs(r["error"]) > TOLERANCE],
                       f"{within}/{len(rs)} within ±{TOLERANCE:.0%} (floor {floor:.0%})")


def _register_repeat_check(name: str, title: str) -> None:
    def run(ds: Dataset) -> CheckResult:
        return _repeat_table_result(ds, ACHIEVED_REPEAT_TABLES[name])
    silicon_check(title, lesson=8, dataset=name)(run)


for _name, _floor in ACHIEVED_REPEAT_TABLES.items():
    _register_repeat_check(_name, f"Capstone GEMM time model, held out, on the repeated {_REPEAT_TABLE_NAMES[_name]} "
                                  f"({REPEATED[_name]} in five processes, the median of each configuration's repeat "
                                  f"medians; nothing fitted on them): at least {_floor:.0%} within ±{TOLERANCE:.0%} "
                                  "(goal: every configuration)")


# ------------------------------------------------------------------------------------------------
# the 128-column tile launch by launch: L2 reuse lost in some launches, by a varying amount

#: two runs of ``bench_gemm_orders.py --l2 --l2-set n128`` (2026-12-03, one device call): the 128 × 128 forms at
#: 16384³ and 8192³ and the 128 × 256 form at 16384³, each launched 30 times under Nsight Compute (DRAM bytes and
#: duration from the same pass) and 50 times timed without it (``samples_ms``)
N128_DATASETS = ("l08/gemm_l2_n128_a", "l08/gemm_l2_n128_b")
#: a run whose launches span more than this (slowest / fastest − 1, under ncu) cannot have every launch within
#: ±TOLERANCE of any one time: 1.1 / 0.9 − 1
ONE_TIME_SPAN = (1.0 + TOLERANCE) / (1.0 - TOLERANCE) - 1.0
#: the time–bytes correlation a spread run needs for its spread to be called reuse lost (DRAM bytes read)
REUSE_CORRELATION = 0.8
#: a run is stable when its launches span less than this (under ncu)
STABLE_SPAN = 0.03


def launch_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """Per run of an :data:`N128_DATASETS` dataset (default the first): ``variant``, ``shape``, the launches under
    Nsight Compute (``ncu_ms``, ``dram_gb``: each launch's duration and DRAM bytes read, from one pass), ``span``
    (slowest / fastest − 1), ``correlation`` of time and bytes, ``in_step_gb`` (the time model's in-step DRAM bytes,
    :func:`h100lab.design.traffic.model_dram_bytes`), the timed launches without ncu (``timed_ms``: median,
    ``timed_min_ms``, ``timed_max_ms``, ``timed_span``), and the model: ``model_one_ms`` (one launch, the sustained
    clock — what a profiled launch is), ``model_ms`` (the timed run's launches: its regime) and ``error`` (against
    the timed median). [] without the dataset."""
    import numpy as np

    from ..design import perf, traffic

    ds = _dataset(ds, N128_DATASETS[0])
    if ds is None:
        return []
    p = params if params is not None else perf.calibrated()
    timed = {(r["variant"], r["M"], r["N"], r["K"]): r for r in ds.records if r["kind"] == "l2time" and r.get("ok")}
    out = []
    for r in traffic.launch_runs(ds):
        key = (r["variant"], r["M"], r["N"], r["K"])
        t = np.array(r["launch_ms"])
        b = np.array(r["launch_bytes"]) * 1e-9
        rec = {"variant": r["variant"], "M": r["M"], "N": r["N"], "K": r["K"], "group": r["group"],
               "raster": r["raster"], "grid": r["grid"], "dataset": ds.name}
        row = {"variant": r["variant"], "shape": key[1:], "ncu_ms": t.tolist(), "dram_gb": b.tolist(),
               "span": float(t.max() / t.min() - 1.0), "correlation": float(np.corrcoef(t, b)[0, 1]),
               "in_step_gb": traffic.model_dram_bytes(r["variant"], "persistent", r["M"], r["N"], r["K"], r["grid"],
                                                      r["group"], r["raster"], None) * 1e-9,
               "model_one_ms": perf.predict_record(dict(rec, launches=1), p).time_ms}
        tr = timed.get(key)
        if tr is not None:
            s = np.array(tr["samples_ms"], float)
            pr = perf.predict_record(dict(rec, launches=int(tr["warmup"]) + int(tr["repeats"])), p)
            row.update(timed_ms=float(tr["median_ms"]), timed_min_ms=float(s.min()), timed_max_ms=float(s.max()),
                       timed_span=float(s.max() / s.min() - 1.0), model_ms=pr.time_ms,
                       error=pr.time_ms / float(tr["median_ms"]) - 1.0)
        out.append(row)
    return out


def _launch_case(r: dict) -> str:
    return f"{r['shape'][0]}×{r['shape'][1]}×{r['shape'][2]} {r['variant']}"


def _launches(ds: Dataset) -> CheckResult:
    rs = launch_rows(ds)
    # a run contradicts the account when it spreads beyond one time's ±10 % without its bytes explaining it, or
    # when the 128 × 256 control is not stable
    bad = [r for r in rs if (r["span"] > ONE_TIME_SPAN and r["correlation"] < REUSE_CORRELATION)
           or (r["variant"] == "cooperative" and r["span"] > STABLE_SPAN)]
    wide = [r for r in rs if r["span"] > ONE_TIME_SPAN]
    return CheckResult(len(rs), len(bad), [{"case": _launch_case(r), "span": f"{100 * r['span']:.0f} %",
                                            "correlation": round(r["correlation"], 2)} for r in bad][:5],
                       f"{len(wide)} of {len(rs)} runs span more than ±10 % of any one time, each with its DRAM "
                       "bytes: " + "; ".join(f"{_launch_case(r)} {min(r['ncu_ms']):.1f}–{max(r['ncu_ms']):.1f} ms, "
                                             f"{min(r['dram_gb']):.0f}–{max(r['dram_gb']):.0f} GB "
                                             f"(r = {r['correlation']:.2f})" for r in wide))


for _name in N128_DATASETS:
    silicon_check(f"The 128 × 128 tile launch by launch ({_name}, Nsight Compute, bytes and duration from one pass): "
                  "where a run's launches span more than ±10 % of any one time, the DRAM bytes they read explain it "
                  f"(r ≥ {REUSE_CORRELATION}: L2 reuse lost, by a varying amount), and the 128 × 256 control is "
                  f"stable (< {STABLE_SPAN:.0%})", lesson=8, dataset=_name)(_launches)


#: (the ping-pong misses under the counters: ``DELIVERY_DATASET``, ``bench_gemm_orders.py --l2 --l2-set delivery``,
#: 2026-12-03; :func:`h100lab.design.traffic.delivery_rows`, :func:`h100lab.design.traffic.placement_round_rows`)
#: a launch is L2 -> SM delivery-bound when L2 delivers at least this share of the highest rate the SMs' L2 reads
#: reached (:func:`h100lab.design.traffic.lrc_ceiling_tb_s`) and DRAM reads at most ``DRAM_SHARE`` of lesson 5's
#: read ceiling
DELIVERY_SHARE = 0.8
DRAM_SHARE = 0.7
#: a row-major run delivers at least this many times its grouped control's bytes
DELIVERY_RATIO = 1.7


def delivery_verdict(ds: Dataset | str | None = None) -> dict:
    """The account of the ping-pong misses on :data:`DELIVERY_DATASET`: ``rows`` (:func:`delivery_rows` with
    ``error``, ``bound``: "delivery" when L2 -> SM delivery-bound as :data:`DELIVERY_SHARE` and :data:`DRAM_SHARE`
    say, and ``control_ratio``: its bytes over those of the grouped run of the same form, schedule and shape),
    ``slow`` (the runs the model times more than 10 % too slow), ``ceiling_tb_s``, ``hbm_tb_s`` and ``placement``
    (:func:`placement_round_rows`). {} without the dataset."""
    from ..design import perf, traffic
    from ..sim.timing import read_ceiling

    ds = _dataset(ds, DELIVERY_DATASET)
    if ds is None:
        return {}
    rows = traffic.delivery_rows(ds)
    ceiling = traffic.lrc_ceiling_tb_s()
    hbm = read_ceiling(perf.calibrated().timing) * 1e-3                 # B/ns -> TB/s
    grouped = {(r["variant"], r["schedule"], r["shape"]): r for r in rows if r["group"] == 8 and r["raster"] == 0}
    for r in rows:
        c = grouped.get((r["variant"], r["schedule"], r["shape"]))
        r["error"] = r["model_ms"] / r["timed_ms"] - 1.0
        r["bound"] = ("delivery" if r["tex_tb_s"] >= DELIVERY_SHARE * ceiling and r["dram_tb_s"] <= DRAM_SHARE * hbm
                      else "other")
        r["control_ratio"] = r["tex_gb"] / c["tex_gb"] if c is not None and c is not r else None
    return {"rows": rows, "slow": [r for r in rows if r["error"] > TOLERANCE], "ceiling_tb_s": ceiling,
            "hbm_tb_s": hbm, "placement": traffic.placement_round_rows(ds)}


def _delivery(ds: Dataset) -> CheckResult:
    v = delivery_verdict(ds)
    if not v or not v["slow"]:
        return CheckResult(1, 1, [], note=f"{ds.name}: no run the model times too slow")
    bad = [r for r in v["slow"] if r["bound"] != "delivery"
           or (r["control_ratio"] is not None and r["control_ratio"] < DELIVERY_RATIO)]
    moved = [x for x in v["placement"] if x["same_sm"] > 0.1]
    return CheckResult(len(v["slow"]) + len(v["placement"]), len(bad) + len(moved) + (not v["placement"]),
                       [{"case": r["label"], "L2 -> SM": f"{r['tex_tb_s']:.2f} TB/s", "DRAM": f"{r['dram_tb_s']:.2f} TB/s",
                         "grouped's bytes": r["control_ratio"]} for r in bad][:5],
                       f"{len(v['slow'])} runs the model times > 10 % slow, each delivered from L2 at ≥ "
                       f"{DELIVERY_SHARE:.0%} of {v['ceiling_tb_s']:.1f} TB/s with DRAM ≤ {DRAM_SHARE:.0%} of "
                       f"{v['hbm_tb_s']:.1f} TB/s; later rounds on the first round's SM: "
                       + ", ".join(f"{100 * x['same_sm']:.1f} %" for x in v["placement"]))


silicon_check("The ping-pong misses under the counters (l08/gemm_l2_delivery, Nsight Compute, three launches a run): "
              "every run the time model times more than 10 % too slow is L2 -> SM delivery-bound — L2 delivers at "
              f"least {DELIVERY_SHARE:.0%} of the SMs' highest L2 read rate, DRAM reads at most {DRAM_SHARE:.0%} of "
              f"its ceiling — and delivers at least {DELIVERY_RATIO}× its grouped order's bytes; the CTAs after a "
              "launch's first round land on other SMs than the first round's (diagnosis: the model's delivery bound "
              "takes the row-major runs whose wave's working set fits in L2; past it, the model still counts the "
              "window's DRAM bytes)", lesson=8, dataset=DELIVERY_DATASET)(_delivery)


#: the ping-pong kernel traced in the two order families (:func:`h100lab.design.traffic.skew_rows`): a launch whose
#: CTAs 0 and grid / 2 start the same tile more than DRIFT_APART of the run apart has drifted; DRIFT_TOGETHER: in step
DRIFT_APART, DRIFT_TOGETHER = 0.10, 0.01


def _skew_pingpong(ds: Dataset) -> CheckResult:
    from ..design import traffic

    rows = traffic.skew_rows(ds)
    if not rows:
        return CheckResult(1, 1, [], note=f"{ds.name}: no traced launch")
    # the account: row-major apart at the large shapes (8192 rows and columns), close at 4096³; grouped together
    bad = [r for r in rows if (r["group"] == 1 and r["shape"][0] >= 8192 and r["drift_share"] < DRIFT_APART)
           or (r["group"] == 1 and r["shape"][0] < 8192 and r["drift_share"] > DRIFT_APART)
           or (r["group"] != 1 and r["drift_share"] > DRIFT_TOGETHER)]
    return CheckResult(len(rows), len(bad), [{"case": f"{'×'.join(map(str, r['shape']))} group {r['group']}",
                                              "drift": f"{r['drift_us']:.1f} µs of {r['run_us']:.0f}"} for r in bad],
                       "; ".join(f"{'×'.join(map(str, r['shape']))} group {r['group']}: {r['drift_us']:.1f} µs of "
                                 f"{r['run_us']:.0f}" for r in rows))


silicon_check("The ping-pong kernel traced (l08/gemm_skew_pingpong, CTAs 0 and 66): in the row-major order its CTAs "
              f"drift more than {DRIFT_APART:.0%} of the run apart at 8192 rows and columns and less at 4096³; in the "
              f"grouped order they stay within {DRIFT_TOGETHER:.0%} (diagnosis of the row-major reuse loss: not in "
              "the model)", lesson=8, dataset=SKEW_PINGPONG_DATASET)(_skew_pingpong)


# ------------------------------------------------------------------------------------------------
# the model's cycles and clock apart: every bf16 form under Nsight Compute

#: ``benchmarks/ncu_gemm_forms.py``: the nine bf16 forms of the two bf16 tables at their four shapes below 16384³ and
#: three forms at 16384³, two launches each under Nsight Compute (``--clock-control none``)
FORMS_NCU_DATASET = "l08/gemm_ncu_forms"
#: the same for the FP8 forms (``--fp8``: eight forms at the four shapes, two at 16384³)
FORMS_NCU_FP8_DATASET = "l08/gemm_ncu_forms_fp8"
#: what the model achieves on those launches' times (goal: all within ±TOLERANCE; then the cycles and the clock each)
#: (the form clock, the model: bf16 39 of 39 in time, cycles and 28 in clock; FP8 28 of 34 in time — the one-clock
#: model 37 of 39 and 31 of 34: the FP8 floor fell from 90 % with the switch)
ACHIEVED_FORMS_NCU = 0.94
ACHIEVED_FORMS_NCU_FP8 = 0.82


def form_counter_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """Per (shape, variant) of :data:`FORMS_NCU_DATASET` (or :data:`FORMS_NCU_FP8_DATASET`; a record's ``grid`` is its
    persistent grid), the mean of its profiled launches — ``ms``, ``ghz``
    (``gpc__cycles_elapsed.max.per_second``), ``mcycles`` (``gpc__cycles_elapsed.max``, millions), ``tensor_busy``
    (``sm__pipe_tensor_cycles_active``, fraction of elapsed), ``dram_gb`` (read), ``l2_hit`` (%) — and the model for
    one launch (the sustained clock): ``model_ms``, ``model_ghz`` (its first wave's clock), ``model_mcycles`` (each
    wave's mainloop and exposed epilogue at its own clock, plus the fill: :func:`h100lab.design.perf.launch_mcycles`),
    ``model_busy`` (the launch's MACs at the dense rate of its type — 2048 per SM clock for bf16, 4096 for e4m3 —
    over the SMs and the model's cycles: the busy fraction a tensor pipe that is busy exactly its MACs' cycles would
    read), and the errors ``error`` (time), ``cycle_error`` and ``clock_error`` (model
    / measured − 1). [] without the dataset."""
    from ..design import perf
    from ..design.tiles import _DTYPES
    from ..specs import FLOP_PER_SM_PER_CLOCK, H200_SXM

    ds = _dataset(ds, FORMS_NCU_DATASET)
    if ds is None:
        return []
    p = params if params is not None else perf.calibrated()
    sms = ds.meta.get("sm_count", H200_SXM.sm_count)
    out = []
    for (v, M, N, K, grid), c in perf.form_counter_means(ds.records).items():
        f = perf.form(v)
        rate = FLOP_PER_SM_PER_CLOCK[_DTYPES[f.atype][1]] / 2
        pr = perf.predict(f, M, N, K, sms=grid or sms, params=p, launches=1)
        mc = perf.launch_mcycles(pr)
        row = {"variant": v, "shape": (M, N, K), "launches": c["launches"], "ms": c["gpu__time_duration.sum"] * 1e-6,
               "ghz": c["gpc__cycles_elapsed.max.per_second"] * 1e-9,
               "mcycles": c["gpc__cycles_elapsed.max"] * 1e-6,
               "tensor_busy": c["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"] / 100,
               "dram_gb": c["dram__bytes_read.sum"] * 1e-9, "l2_hit": c["lts__t_sector_hit_rate.pct"],
               "model_ms": pr.time_ms, "model_ghz": pr.waves[0].clock_ghz or pr.clock_ghz,
               "model_mcycles": mc, "model_busy": M * N * K / rate / sms / (mc * 1e6)}
        row.update(error=row["model_ms"] / row["ms"] - 1, cycle_error=row["model_mcycles"] / row["mcycles"] - 1,
                   clock_error=row["model_ghz"] / row["ghz"] - 1)
        out.append(row)
    return out


def form_counter_summary(ds: Dataset | str | None = None, params=None, tol: float = TOLERANCE) -> dict:
    """:func:`form_counter_rows` counted: ``n``, ``time`` / ``cycles`` / ``clock`` (rows within ``tol``; the clock
    within ``tol`` / 2), the medians of the cycle and the clock errors, and the measured clock's range per variant."""
    from statistics import median

    rs = form_counter_rows(ds, params)
    if not rs:
        return {"n": 0}
    clocks: dict = {}
    for r in rs:
        clocks.setdefault(r["variant"], []).append(r["ghz"])
    return {"n": len(rs), "time": sum(abs(r["error"]) <= tol for r in rs),
            "cycles": sum(abs(r["cycle_error"]) <= tol for r in rs),
            "clock": sum(abs(r["clock_error"]) <= tol / 2 for r in rs),
            "cycle_error_median": median(r["cycle_error"] for r in rs),
            "clock_error_median": median(r["clock_error"] for r in rs),
            "clock_range": {v: (min(c), max(c)) for v, c in clocks.items()}}


def _ncu_example(r: dict) -> dict:
    """A check's example of one Nsight Compute launch (:func:`form_counter_rows`): its shape and form, and the errors
    of the time, the cycles and the clock."""
    return {"case": f"{'×'.join(map(str, r['shape']))} {r['variant']}", "time": f"{100 * r['error']:+.1f} %",
            "cycles": f"{100 * r['cycle_error']:+.1f} %", "clock": f"{100 * r['clock_error']:+.1f} %"}


def _forms_ncu_result(ds: Dataset, floor: float) -> CheckResult:
    """A check of the model on an Nsight Compute forms run: the times at least ``floor`` within ±TOLERANCE; the
    five worst misses with their cycle and clock errors; the cycle and clock agreement in the note."""
    rs = form_counter_rows(ds)
    s = form_counter_summary(ds)
    return CheckResult(s["n"], beyond_floor(s["n"], s["n"] - s["time"], floor),
                       [_ncu_example(r) for r in sorted(rs, key=lambda r: -abs(r["error"]))
                        if abs(r["error"]) > TOLERANCE][:5],
                       f"time {s['time']}/{s['n']} within ±{TOLERANCE:.0%}; cycles {s['cycles']}/{s['n']} (median "
                       f"{100 * s['cycle_error_median']:+.1f} %); clock {s['clock']}/{s['n']} within "
                       f"±{TOLERANCE / 2:.0%} (median {100 * s['clock_error_median']:+.1f} %)")


@silicon_check(f"Capstone GEMM time model on every bf16 form under Nsight Compute (l08/gemm_ncu_forms, nine forms at "
               f"four shapes and three at 16384³, one launch each; nothing fitted on it): at least "
               f"{ACHIEVED_FORMS_NCU:.0%} of the times within ±{TOLERANCE:.0%} (goal: the time, and the cycles and the "
               "clock each; the model's cycles are high and its one clock is high, and the two cancel)", lesson=8,
               dataset=FORMS_NCU_DATASET)
def _forms_ncu(ds: Dataset) -> CheckResult:
    return _forms_ncu_result(ds, ACHIEVED_FORMS_NCU)


# ------------------------------------------------------------------------------------------------
# the form clock: the model, with the cycles and the clock right (the one-clock model beside it)

#: what the form clock achieves on the launches of :data:`FORMS_NCU_DATASET` it was not fitted on
#: (1280 × 3840 × 8192, 1408 × 3072 × 8192, 16384³): time and cycles within ±TOLERANCE at every one but the plain
#: 128 × 128 form at 16384³ — its cycles +11.0 % (time +3.2 %), +9.7 % before its DRAM bytes were charged with its
#: drift at the tile reads' rate (:mod:`h100lab.validation.l08_reuse`): its clock, 7 % over the launch's, was
#: already most of that
ACHIEVED_FORM_CLOCK_NCU = 20 / 21
#: and on every held-out timing record, the first bf16 tables timed as today's kernel: 276 of 286 with its own reuse
#: window (20 CTAs; the model, with its own of 24: 274 on that reference, 277 on the first tables as first recorded).
#: With the model's window it had 279 — the window is refitted with each model's constants since, which puts the
#: row-major ping-pong at 4096³ +25 % (:func:`form_clock_diagnosis`, ``window``)
#: With the working-set gate on the FP8 scale loads: 275 (one FP8 record, 4096³ staggered 128 × 192, −9.4 →
#: −10.1 %)
ACHIEVED_FORM_CLOCK_HELD = 0.96


def _held_counts(rep: PerfReport, tol: float) -> dict:
    """Per reference (``today``: the report's own records, the first tables timed as today's kernel; ``first``: the
    first tables as first recorded, :attr:`Row.first_error`): the held-out count, per family, the worst |error| and
    the misses (label → error)."""
    held = rep.part("held-out")
    out = {}
    for ref, err in (("today", lambda r: r.error), ("first", lambda r: r.first_error)):
        fam: dict = {}
        for r in held:
            w, n = fam.get(r.family, (0, 0))
            fam[r.family] = (w + (abs(err(r)) <= tol), n + 1)
        out[ref] = {"within": sum(abs(err(r)) <= tol for r in held), "n": len(held), "families": fam,
                    "worst": max(abs(err(r)) for r in held),
                    "misses": {r.label: err(r) for r in held if abs(err(r)) > tol}}
    return out


def _held_ncu_rows(p, ds: Dataset | str | None = None) -> list[dict]:
    """:func:`form_counter_rows` under ``p`` of the launches the form clock is not fitted on (shapes other than
    :data:`h100lab.design.perf.FORM_CLOCK_SHAPES`)."""
    from ..design import perf

    fitted = set(map(tuple, perf.FORM_CLOCK_SHAPES))
    return [r for r in form_counter_rows(ds, params=p) if tuple(r["shape"]) not in fitted]


def form_clock_diagnosis(tol: float = TOLERANCE) -> dict:
    """The form clock, the model (``perf.calibrated()``: every wave at the clock its own activity
    gives it, two constants from Nsight Compute's clocks of every bf16 form at 4096³ and 8192³, the TMA's writes
    weighed ω in the shared-memory bound, ω from the same launches' cycles, today's kernel's repeats as the first
    tables' times, its own reuse window; :func:`h100lab.design.perf.form_clock_ratio`) against the one-clock model
    that was the model before it (``perf.calibrated(form_clock=False)``: one clock fitted on the times), on every
    kind of held-out evidence. Per model (``one_clock``, ``form``): per reference
    (``first``: the committed first tables as first recorded; ``today``: their five-process repeats) the held-out
    count (``within``, ``n``), per family, the misses (label → error) and the worst |error| (:func:`_held_counts`);
    the Nsight Compute launches (:func:`form_counter_summary`: ``ncu``, the held-out ones ``ncu_held``, the FP8 ones
    ``ncu_fp8``); the kernel A/B run's today's side (:func:`kernel_ab_summary`); the FP8 forms of the four k-block
    trace runs at each trace's clock (``traces``: within, n — :func:`trace_rows`,
    :func:`h100lab.design.perf.at_clock`); the clock runs (``clock_runs``: each run's error at the clock nvidia-smi
    read and at the model's own clock, :func:`clock_rows`); its ``window`` and the order sweep's held-out ping-pong
    records with it (``orders``: within, n — :func:`h100lab.design.traffic.orders_report`). Also the form clock's
    constants (``form_clock``, ``omega``, ``throttled_ghz``) and the one-clock model's clock ``tensor_ghz``.
    Remembered per process and by :mod:`h100lab.fitcache` under the committed data (:func:`h100lab.data.digest`):
    the chapter, its checks and the tests read the same."""
    from .. import data, fitcache

    if ("form_clock", tol) not in _CACHE:
        _CACHE[("form_clock", tol)] = fitcache.memo("l08_form_clock_diagnosis", [data.digest(), tol],
                                                   lambda: _form_clock_diagnosis(tol))
    return _CACHE[("form_clock", tol)]


def _form_clock_diagnosis(tol: float) -> dict:
    from ..design import perf, traffic

    out: dict = {}
    today = perf.todays_records(perf.load_records(perf.timing_datasets()))
    for name, p in (("one_clock", perf.calibrated(form_clock=False)), ("form", perf.calibrated())):
        d = _held_counts(report(today, params=p, tol=tol), tol)
        s = form_counter_summary(params=p, tol=tol)
        d["ncu"] = {k: s[k] for k in ("n", "time", "cycles", "clock", "cycle_error_median", "clock_error_median")}
        held_ncu = _held_ncu_rows(p)
        d["ncu_held"] = {"n": len(held_ncu), "time": sum(abs(r["error"]) <= tol for r in held_ncu),
                         "cycles": sum(abs(r["cycle_error"]) <= tol for r in held_ncu)}
        f8 = form_counter_summary(FORMS_NCU_FP8_DATASET, params=p, tol=tol)
        d["ncu_fp8"] = {k: f8[k] for k in ("n", "time", "cycles", "clock", "cycle_error_median",
                                           "clock_error_median")} if f8["n"] else {}
        d["kernel_ab"] = kernel_ab_summary(params=p, tol=tol)["model_new"]
        tr = [r for ds in TRACE_RUNS for r in trace_rows(ds, p) if r["variant"].startswith("fp8")]
        d["traces"] = (sum(abs(r["error"]) <= tol for r in tr), len(tr))
        d["clock_runs"] = {f"{r['gemm']} {r['M']}³": (r["error"], r["model_fitted_clock_ms"] / r["measured_ms"] - 1)
                           for r in clock_rows("all", p)}
        d["window"] = p.reuse_window
        orders = [r for r in traffic.orders_report(params=p) if r.part == "held-out"]
        d["orders"] = (sum(abs(r.error) <= tol for r in orders), len(orders))
        out[name] = d
    p = perf.calibrated()
    out.update(form_clock=p.form_clock, omega=p.smem_write_weight, throttled_ghz=p.throttled_ghz,
               tensor_ghz=perf.calibrated(form_clock=False).tensor_ghz)
    return out


@silicon_check(f"Capstone GEMM time model, the form clock (each wave at its own activity's clock, the TMA's "
               f"writes weighed in the shared-memory bound; fitted on the 4096³ and 8192³ launches of "
               f"l08/gemm_ncu_forms): at least {ACHIEVED_FORM_CLOCK_NCU:.0%} of the other launches (1280 × 3840 × 8192, "
               f"1408 × 3072 × 8192, 16384³) within ±{TOLERANCE:.0%} in time and in SM cycles", lesson=8,
               dataset=FORMS_NCU_DATASET)
def _form_clock_ncu(ds: Dataset) -> CheckResult:
    from ..design import perf

    p = perf.calibrated()
    held = _held_ncu_rows(p, ds)
    good = [abs(r["error"]) <= TOLERANCE and abs(r["cycle_error"]) <= TOLERANCE for r in held]
    return CheckResult(len(held), beyond_floor(len(held), len(held) - sum(good), ACHIEVED_FORM_CLOCK_NCU),
                       [_ncu_example(r) for r, g in zip(held, good) if not g][:5],
                       f"{sum(good)}/{len(held)} within ±{TOLERANCE:.0%} in time and cycles; ω = "
                       f"{p.smem_write_weight:.2f}, 1/f = {p.form_clock[0]:.3f} + {p.form_clock[1]:.3f} · a per GHz")


@silicon_check(f"Capstone GEMM time model on every FP8 form under Nsight Compute (l08/gemm_ncu_forms_fp8, eight forms at "
               f"four shapes and two at 16384³, one launch each; nothing fitted on it): at least "
               f"{ACHIEVED_FORMS_NCU_FP8:.0%} of the times within ±{TOLERANCE:.0%} (goal: the time, the cycles and the "
               "clock each; the cycles are short at the small shapes and long at 8192³)", lesson=8,
               dataset=FORMS_NCU_FP8_DATASET)
def _forms_ncu_fp8(ds: Dataset) -> CheckResult:
    return _forms_ncu_result(ds, ACHIEVED_FORMS_NCU_FP8)


@silicon_check(f"Capstone GEMM time model, the form clock, on every held-out timing record of data/l08, the first bf16 "
               f"tables timed as today's kernel (their five-process repeats), each model with its own reuse window: "
               f"at least {ACHIEVED_FORM_CLOCK_HELD:.1%} within ±{TOLERANCE:.0%}, and no fewer than the one-clock "
               "model it replaced on the same records (goal: every record)", lesson=8, dataset=FORMS_NCU_DATASET)
def _form_clock_held(ds: Dataset) -> CheckResult:
    d = form_clock_diagnosis()
    f, m = d["form"], d["one_clock"]
    n = f["today"]["n"]
    bad = beyond_floor(n, n - f["today"]["within"], ACHIEVED_FORM_CLOCK_HELD)
    if f["today"]["within"] < m["today"]["within"]:
        bad = max(bad, 1)
    return CheckResult(n, bad, [{"case": k, "error": f"{100 * e:+.1f} %"}
                                for k, e in sorted(f["today"]["misses"].items(), key=lambda x: -abs(x[1]))][:5],
                       f"{f['today']['within']}/{n} within ±{TOLERANCE:.0%} on today's kernel (the one-clock model: "
                       f"{m['today']['within']}; on the first tables as first recorded {f['first']['within']} and "
                       f"{m['first']['within']}); reuse windows {f['window']} and {m['window']} CTAs")


# ------------------------------------------------------------------------------------------------
# the drift law: the reuse window across K, tested on depths never run before

#: the order sweep's fresh depths (``bench_gemm_orders.py --shapes ... --variants pingpong --name
#: l08/gemm_orders_k``): where the drift law (:func:`h100lab.design.traffic.window_at`, exponent 0.5) and one window
#: at every K predict different times for some tile orders; predicted (:func:`drift_law_predictions`,
#: ``benchmarks/predictions/l08_gemm_orders_k.json``) and committed before the run
DRIFT_SHAPES = ((8192, 8192, 2048), (8192, 8192, 12288), (8192, 8192, 24576), (4096, 4096, 16384), (4096, 4096, 2048))
DRIFT_DATASET = "l08/gemm_orders_k"
#: the tile orders of the sweep: (group, raster), as ``bench_gemm_orders.ORDERS``
DRIFT_ORDERS = tuple((g, r) for r in (0, 1) for g in (1, 2, 4, 8, 16))


def drift_law_predictions(shapes: Sequence = DRIFT_SHAPES) -> list[dict]:
    """The persistent ping-pong form on 132 CTAs at each of ``shapes`` in every tile order of :data:`DRIFT_ORDERS`,
    predicted three ways (ms): ``law`` — the form clock (then a hypothesis, the model since) with the drift law
    (exponent :data:`h100lab.design.traffic.DRIFT_EXPONENT`: its window at K,
    :func:`h100lab.design.traffic.window_at`), ``const`` — the same constants with its window at every K (the model
    now), ``model`` — the one-clock model (the model then; its own window at every K); with each ``window`` used —
    each as registered, without the delivery bound the models have had since (:attr:`h100lab.design.perf.PerfParams.
    delivery_floor_tb_s` 0; :func:`drift_law_rows` adds the model now). [model]"""
    from dataclasses import replace as _replace

    from ..design import perf, traffic

    const, m = (_replace(p, delivery_floor_tb_s=0.0) for p in (perf.calibrated(), perf.calibrated(form_clock=False)))
    law = _replace(const, window_k_exponent=traffic.DRIFT_EXPONENT)
    out = []
    for M, N, K in shapes:
        for g, r in DRIFT_ORDERS:
            t = {k: perf.predict("pingpong", M, N, K, sms=132, group=g, raster=r, params=p).time_ms
                 for k, p in (("law", law), ("const", const), ("model", m))}
            out.append({"M": M, "N": N, "K": K, "group": g, "raster": r, **t,
                        "law_window": traffic.window_at(law.reuse_window, K, law.window_k_exponent),
                        "const_window": const.reuse_window, "model_window": m.reuse_window})
    return out


#: what the model achieves on each fresh-depth run (:data:`DRIFT_DATASET` and its second process, ``_b``; nothing
#: fitted on them): the form clock with its one window (``const``) 35 and 32 of 50 ping-pong records within
#: ±TOLERANCE; the one-clock model, the model when these were predicted (``model``), 38 and 38 — the floor fell
#: from 75 % with the switch; the drift law 36 and 35. With the delivery bound of a ping-pong wave out of step
#: (:func:`h100lab.design.perf.delivery_waves`, in both models since; not in the predictions registered for these
#: runs, which :func:`drift_law_predictions` reproduces) the model now (``now``) 39 and 36
ACHIEVED_DRIFT_MODEL = 0.72


def drift_law_rows(ds: Dataset | str | None = None) -> list[dict]:
    """Each persistent ping-pong record of a fresh-depth run (default :data:`DRIFT_DATASET`; ``_b`` its second
    process) next to :func:`drift_law_predictions`: the measured median ``ms`` and the error of each prediction
    as registered (``law``, ``const``, ``model``) with its window, and ``now_error`` — the model now
    (:func:`h100lab.design.perf.calibrated`, with its delivery bound). [] when it is not committed."""
    from .. import data
    from ..design import perf

    if ds is None or isinstance(ds, str):
        name = ds or DRIFT_DATASET
        if not data.available(name):
            return []
        ds = data.load(name)
    recs = [r for r in ds.records if r.get("kind") == "orders" and r.get("variant") == "pingpong" and r.get("ok")
            and r.get("schedule") == "persistent" and "median_ms" in r]
    shapes = tuple(dict.fromkeys((r["M"], r["N"], r["K"]) for r in recs))
    pred = {(p["M"], p["N"], p["K"], p["group"], p["raster"]): p for p in drift_law_predictions(shapes)}
    out = []
    for r in recs:
        p = pred.get((r["M"], r["N"], r["K"], r["group"], r["raster"]))
        if p is None:
            continue
        m = float(r["median_ms"])
        now = perf.predict("pingpong", r["M"], r["N"], r["K"], sms=132, group=r["group"], raster=r["raster"]).time_ms
        out.append({"shape": (r["M"], r["N"], r["K"]), "group": r["group"], "raster": r["raster"], "ms": m,
                    **{f"{k}_error": x / m - 1 for k, x in (("law", p["law"]), ("const", p["const"]),
                                                           ("model", p["model"]), ("now", now))},
                    **{f"{k}_window": p[f"{k}_window"] for k in ("law", "const", "model")}})
    return out


def _within(rows: Sequence[dict], keys: Sequence[str], tol: float = TOLERANCE, suffix: str = "") -> dict:
    """{key: how many of ``rows`` have ``|row[key + suffix]| <= tol``} — a registered round's counts per prediction."""
    return {k: sum(abs(r[k + suffix]) <= tol for r in rows) for k in keys}


def drift_law_summary(tol: float = TOLERANCE) -> dict:
    """Per fresh-depth run (:data:`DRIFT_DATASET`, ``_b``): n and the records within ±``tol`` of each prediction."""
    out = {}
    for name in (DRIFT_DATASET, DRIFT_DATASET + "_b"):
        rs = drift_law_rows(name)
        if rs:
            out[name] = {"n": len(rs), **_within(rs, ("law", "const", "model", "now"), tol, "_error")}
    return out


def _drift_check(ds: Dataset) -> CheckResult:
    rs = drift_law_rows(ds)
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no persistent ping-pong record to predict")
    n = len(rs)
    within = _within(rs, ("law", "const", "model", "now"), suffix="_error")
    bad = [r for r in rs if abs(r["now_error"]) > TOLERANCE]         # the model now: the form clock, one window
    return CheckResult(n, beyond_floor(n, len(bad), ACHIEVED_DRIFT_MODEL),
                       [{"case": f"{'×'.join(map(str, r['shape']))} group {r['group']} raster {'MN'[r['raster']]}",
                         "model": f"{100 * r['now_error']:+.1f} %", "drift law": f"{100 * r['law_error']:+.1f} %"}
                        for r in sorted(bad, key=lambda r: -abs(r["now_error"]))[:5]],
                       f"the model (the form clock, one window, the delivery bound) {within['now']}/{n} within "
                       f"±{TOLERANCE:.0%}; as registered before the run: the form clock {within['const']}/{n}, the "
                       f"one-clock model {within['model']}/{n}, the drift law {within['law']}/{n}")


@silicon_check(f"Capstone GEMM time model on the order sweep at five depths never run before (the ping-pong form in "
               f"every tile order; nothing fitted on it): at least {ACHIEVED_DRIFT_MODEL:.0%} within ±{TOLERANCE:.0%} "
               "(goal: every record; the floor was 75 % under the one-clock model) — and the drift law's "
               "predictions, committed before the run, recorded beside it",
               lesson=8, dataset=DRIFT_DATASET)
def _drift(ds: Dataset) -> CheckResult:
    return _drift_check(ds)


@silicon_check(f"Capstone GEMM time model on the order sweep at five fresh depths, a second process: at least "
               f"{ACHIEVED_DRIFT_MODEL:.0%} within ±{TOLERANCE:.0%} (goal: every record)", lesson=8,
               dataset=DRIFT_DATASET + "_b")
def _drift_b(ds: Dataset) -> CheckResult:
    return _drift_check(ds)


# ------------------------------------------------------------------------------------------------
# the delivery bound of a ping-pong wave out of step, tested on shapes never run before

#: the order sweep's shapes for the delivery bound (``bench_gemm_orders.py --shapes ... --variants pingpong --pairs
#: --name l08/gemm_orders_delivery``; nothing of data/l08 had timed them): four where the bound takes the row-major
#: order (a wave's working set under the L2: 6144 × 6144 × 4096, 5120³, 8192 × 4096 × 4096, 4096 × 4096 × 6144) and
#: two where it should change nothing — 3072³ (B sharers 12 CTAs apart: the lonely share under the threshold) and
#: 4096 × 8192 × 4096 (the row-major wave's working set over the L2); registered before the run
#: (:func:`delivery_round_predictions`, ``benchmarks/predictions/l08_gemm_orders_delivery.json``)
DELIVERY_SHAPES = ((6144, 6144, 4096), (5120, 5120, 5120), (8192, 4096, 4096), (4096, 4096, 6144), (3072, 3072, 3072),
                   (4096, 8192, 4096))
DELIVERY_ROUND_DATASET = "l08/gemm_orders_delivery"
#: the pairs schedule's tile orders in the sweep (as ``bench_gemm_orders.PAIR_ORDERS``)
DELIVERY_PAIR_ORDERS = ((1, 0), (8, 0), (1, 1))


def _delivery_runs(shapes: Sequence) -> list[tuple]:
    return ([(s, "persistent", g, r) for s in shapes for g, r in DRIFT_ORDERS]
            + [(s, "pairs", g, r) for s in shapes for g, r in DELIVERY_PAIR_ORDERS])


def delivery_round_predictions(shapes: Sequence = DELIVERY_SHAPES, pairs: bool = False) -> list[dict]:
    """The ping-pong form at each of ``shapes``, persistent on 132 CTAs in every tile order of :data:`DRIFT_ORDERS`
    and in the pairs schedule in :data:`DELIVERY_PAIR_ORDERS`, predicted (ms) by ``model`` and by ``plain``; with
    ``bound`` (the model's first-wave bound), ``lonely`` (the launch's lonely share,
    :func:`h100lab.design.traffic.lonely_share_of`) and ``ws_mb`` (the largest wave's working set) [model].

    * ``pairs`` False — the first delivery round, as registered: ``model`` the model with its delivery bound of a
      ping-pong wave out of step (:func:`h100lab.design.perf.delivery_waves`) as it was then
      (:attr:`h100lab.design.perf.PerfParams.delivery_pairs` False), ``plain`` the same constants without the bound
      (``delivery_floor_tb_s`` 0);
    * ``pairs`` True — the second: ``model`` the model (the bound with its two refinements of the pairs schedule,
      ``delivery_pairs``), ``plain`` the bound as the first round had it."""
    from dataclasses import replace as _replace

    from ..design import perf, traffic

    now = perf.calibrated()
    first = _replace(now, delivery_pairs=False)
    p, plain = (now, first) if pairs else (first, _replace(first, delivery_floor_tb_s=0.0))
    out = []
    for (M, N, K), sched, g, r in _delivery_runs(shapes):
        f = perf.form("pingpong", schedule=sched)
        a = perf.predict(f, M, N, K, sms=132, group=g, raster=r, params=p)
        b = perf.predict(f, M, N, K, sms=132, group=g, raster=r, params=plain)
        ws = max(x.working_set for x in perf.delivery_waves(f, M, N, K, 132, g, r, p.reuse_window, pairs))
        out.append({"M": M, "N": N, "K": K, "schedule": sched, "group": g, "raster": r, "model": a.time_ms,
                    "plain": b.time_ms, "bound": a.bound,
                    "lonely": traffic.lonely_share_of("pingpong", sched, M, N, K, g, r, p.reuse_window),
                    "ws_mb": ws / 1e6})
    return out


#: the delivery round's predictions file (``benchmarks/predict_delivery.py``)
DELIVERY_ROUND_FILE = "l08_gemm_orders_delivery.json"
#: the second delivery round (``benchmarks/predict_delivery.py --round 2``; ``bench_gemm_orders.py --shapes ...
#: --variants pingpong --pairs --name l08/gemm_orders_delivery2``): five shapes no run had timed where the two
#: refinements of the pairs schedule (:attr:`h100lab.design.perf.PerfParams.delivery_pairs`, read off the first
#: round's pairs misses) move the row-major pairs launch 16-33 % — a two-tile wave's working set over the L2, each
#: in-flight set's under it
DELIVERY2_SHAPES = ((4096, 4096, 6656), (6144, 4096, 6144), (5120, 6144, 4608), (3072, 6144, 4608),
                    (3072, 4096, 6656))
DELIVERY2_DATASET = "l08/gemm_orders_delivery2"
DELIVERY2_FILE = "l08_gemm_orders_delivery2.json"
#: the delivery round's Nsight Compute run (``bench_gemm_orders.py --l2 --l2-set delivery_round``): the lonely-share
#: threshold on runs it never saw
DELIVERY_ROUND_L2_DATASET = "l08/gemm_l2_delivery_round"
#: what the model as registered achieves on each process of the round (64 and 65 of 78 within ±TOLERANCE; without
#: the bound 53 and 54): the floor of its check
ACHIEVED_DELIVERY_ROUND = 0.82
#: the same for the second round (62 and 61 of 65; the first round's bound 57 and 56)
ACHIEVED_DELIVERY2 = 0.93


class DeliveryRound(NamedTuple):
    """One delivery round: its ``shapes``, its predictions ``file``, whether its model has the pairs refinements
    (``pairs``, :func:`delivery_round_predictions`), its check's ``floor`` and what its ``plain`` prediction is."""

    shapes: tuple
    file: str
    pairs: bool
    floor: float
    plain: str


#: each delivery round, by its dataset
DELIVERY_ROUNDS = {
    DELIVERY_ROUND_DATASET: DeliveryRound(DELIVERY_SHAPES, DELIVERY_ROUND_FILE, False, ACHIEVED_DELIVERY_ROUND,
                                          "without the bound"),
    DELIVERY2_DATASET: DeliveryRound(DELIVERY2_SHAPES, DELIVERY2_FILE, True, ACHIEVED_DELIVERY2,
                                     "the first round's bound")}


def delivery_round_rows(ds: Dataset | str | None = None, params=None) -> list[dict]:
    """Each ping-pong record of a delivery-round run (a dataset of :data:`DELIVERY_ROUNDS`, default the first;
    ``_b`` its second process) next to the predictions registered before it (its file): the measured median ``ms``,
    the errors of the two registered predictions (``model`` and ``plain``, :func:`delivery_round_predictions`),
    whether the two differed by more than the tolerance (``decisive``), ``bound``, ``lonely``, ``ws_mb`` as
    registered, and ``now`` — the model as it is (``params``, default :func:`h100lab.design.perf.calibrated`). []
    when the run is not committed. Nothing was fitted on it."""
    from ..design import perf

    ds = committed_run(ds or DELIVERY_ROUND_DATASET)
    if ds is None:
        return []
    base = first_process(ds.name)
    if base not in DELIVERY_ROUNDS:
        raise ValueError(f"{ds.name}: not a delivery round ({sorted(DELIVERY_ROUNDS)}, or _b)")
    reg = {(r["M"], r["N"], r["K"], r["schedule"], r["group"], r["raster"]): r
           for r in registered_rows(DELIVERY_ROUNDS[base].file)}
    p = params if params is not None else perf.calibrated()
    out = []
    for r in ds.records:
        if r.get("kind") != "orders" or r.get("variant") != "pingpong" or not r.get("ok") or "median_ms" not in r:
            continue
        g = reg.get((r["M"], r["N"], r["K"], r["schedule"], r["group"], r["raster"]))
        if g is None:
            continue
        ms = float(r["median_ms"])
        now = perf.predict(perf.form("pingpong", schedule=r["schedule"]), r["M"], r["N"], r["K"], sms=132,
                           group=r["group"], raster=r["raster"], params=p).time_ms
        out.append({"shape": (r["M"], r["N"], r["K"]), "schedule": r["schedule"], "group": r["group"],
                    "raster": r["raster"], "ms": ms, "model": g["model"] / ms - 1, "plain": g["plain"] / ms - 1,
                    "decisive": abs(g["model"] / g["plain"] - 1) > TOLERANCE, "bound": g["bound"],
                    "lonely": g["lonely"], "ws_mb": g["ws_mb"], "now": now / ms - 1})
    return out


def delivery_round_summary(tol: float = TOLERANCE, round_: str = DELIVERY_ROUND_DATASET) -> dict:
    """Per committed process of a delivery round (``round_``, a dataset of :data:`DELIVERY_ROUNDS`): ``n``, the
    records within ±``tol`` of the two registered predictions (``model``, ``plain``) and of the model now
    (``now``); the records where the two registered predictions differ (``decisive``) and of those the ones each got
    within (``decisive_model``, ``decisive_plain``)."""
    out = {}
    for name in (round_, round_ + "_b"):
        rs = delivery_round_rows(name)
        if not rs:
            continue
        dec = [r for r in rs if r["decisive"]]
        d = _within(dec, ("model", "plain"), tol)
        out[name] = {"n": len(rs), **_within(rs, ("model", "plain", "now"), tol), "decisive": len(dec),
                     "decisive_model": d["model"], "decisive_plain": d["plain"]}
    return out


def _delivery_round_check(ds: Dataset) -> CheckResult:
    rs = delivery_round_rows(ds)
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no ping-pong record of the registered round")
    n = len(rs)
    rnd = DELIVERY_ROUNDS[first_process(ds.name)]
    floor, plain = rnd.floor, rnd.plain
    within = _within(rs, ("model", "plain", "now"))
    dec = _within([r for r in rs if r["decisive"]], ("model", "plain"))
    bad = sorted((r for r in rs if abs(r["model"]) > TOLERANCE), key=lambda r: -abs(r["model"]))
    # the change must win where it decides: more records within than without it, there and overall
    lost = int(dec["model"] <= dec["plain"] or within["model"] <= within["plain"])
    return CheckResult(n, beyond_floor(n, len(bad), floor) + lost,
                       [{"case": f"{'×'.join(map(str, r['shape']))} {r['schedule']} group {r['group']} raster "
                                 f"{'MN'[r['raster']]}", "model (registered)": f"{100 * r['model']:+.1f} %",
                         plain: f"{100 * r['plain']:+.1f} %"} for r in bad[:5]],
                       f"the model as registered {within['model']}/{n} within ±{TOLERANCE:.0%}, {plain} "
                       f"{within['plain']}/{n}; where the two differ ({sum(r['decisive'] for r in rs)}): "
                       f"{dec['model']} against {dec['plain']}; the model now {within['now']}/{n}")


for _suffix in ("", "_b"):
    silicon_check(f"The delivery bound of a ping-pong wave out of step, on six shapes no run had timed (the order "
                  f"sweep, persistent and pairs; predictions registered before the run, nothing fitted on it"
                  + ("; a second process" if _suffix else "") + f"): at least {ACHIEVED_DELIVERY_ROUND:.0%} "
                  f"within ±{TOLERANCE:.0%}, and more records within than the same model without the bound, where "
                  f"the two differ and overall (goal: every record)", lesson=8,
                  dataset=DELIVERY_ROUND_DATASET + _suffix)(_delivery_round_check)
    silicon_check(f"The delivery bound's two refinements of the pairs schedule (a wave's working set per in-flight "
                  f"set, a delivery-bound wave's fills and epilogues hidden), on five more shapes no run had timed "
                  f"(predictions registered before the run, nothing fitted on it"
                  + ("; a second process" if _suffix else "") + f"): at least {ACHIEVED_DELIVERY2:.0%} within "
                  f"±{TOLERANCE:.0%}, and more records within than the first round's bound, where the two differ "
                  f"and overall (goal: every record)", lesson=8,
                  dataset=DELIVERY2_DATASET + _suffix)(_delivery_round_check)


def delivery_round_lonely(ds: Dataset | str | None = None) -> list[dict]:
    """The delivery round's Nsight Compute runs (default :data:`DELIVERY_ROUND_L2_DATASET`) against the lonely-share
    threshold fitted before them (:func:`h100lab.design.traffic.lonely_rows` with the model's window and
    :attr:`h100lab.design.perf.PerfParams.lonely_share`): each row with ``out_of_step`` (lonely share over the
    threshold), ``unmerged`` (delivered over :data:`h100lab.design.traffic.UNMERGED_ABOVE`) and ``right``."""
    from ..design import perf, traffic

    ds = committed_run(ds or DELIVERY_ROUND_L2_DATASET)
    if ds is None:
        return []
    t = perf.calibrated().lonely_share
    rows = traffic.lonely_rows(ds.name)
    return [dict(r, out_of_step=r["lonely"] > t, unmerged=r["delivered"] > traffic.UNMERGED_ABOVE,
                 right=(r["lonely"] > t) == (r["delivered"] > traffic.UNMERGED_ABOVE)) for r in rows]


#: the lonely-share threshold on the round's counter runs: at most this many called wrong (of 20: one, 6144 × 6144 ×
#: 4096 in groups of 16 along N, a lonely share of 0.347 against the threshold's 0.353, delivered every byte)
DELIVERY_ROUND_WRONG = 1


def _delivery_round_l2(ds: Dataset) -> CheckResult:
    rs = delivery_round_lonely(ds)
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no ping-pong counter run")
    wrong = [r for r in rs if not r["right"]]
    return CheckResult(len(rs), max(0, len(wrong) - DELIVERY_ROUND_WRONG),
                       [{"case": r["label"], "lonely share": f"{r['lonely']:.3f}",
                         "delivered / requested": f"{r['delivered']:.2f}"} for r in wrong][:5],
                       f"{len(rs) - len(wrong)}/{len(rs)} runs on the side of the threshold their L2 -> SM bytes "
                       f"say")


silicon_check("The lonely-share threshold (read off l08/gemm_l2_traffic's counters) on the delivery round's shapes "
              "under Nsight Compute, runs it never saw: a launch over the threshold delivers every requested byte "
              f"from L2, one under it merges (at most {DELIVERY_ROUND_WRONG} called wrong; goal: none)", lesson=8,
              dataset=DELIVERY_ROUND_L2_DATASET)(_delivery_round_l2)


# ------------------------------------------------------------------------------------------------
# the fresh-shape test: every form of the kernel at shapes no run had timed, predicted before the run

#: seven shapes no earlier run had timed (issue 17: a timing model predicts): a cube between the measured ones, a
#: wide shallow shape, a deep narrow one, a short-and-wide and a tall-and-thin pair (the same tiles, transposed), a
#: mid-size deep one and a cube whose runs of 23 launches (predicted ~70–260 ms, form by form) straddle the model's
#: sustained/throttled boundary (:attr:`h100lab.design.perf.PerfParams.long_run_ms`)
FRESH_SHAPES = ((6144, 6144, 6144), (10240, 10240, 4096), (3072, 3072, 16384), (2048, 12288, 8192),
                (12288, 2048, 8192), (5120, 5120, 10240), (12288, 12288, 12288))
#: the runs (``benchmarks/bench_gemm.py --shapes ... --name``; each in two processes, the second ``_b``) by mode:
#: :data:`h100lab.design.perf.PROSPECTIVE_DATASETS`, kept out of :func:`report`'s campaign
FRESH_DATASETS = {"bf16": "l08/gemm_fresh", "fp8": "l08/gemm_fresh_fp8"}
#: the second prospective round, registered with a capacity rule read off the first round's FP8 misses (the scale
#: loads' DRAM rate counting a wave's panels less those still in an LRU L2 of 60 MiB; refuted by this round and
#: not in the model, :func:`fresh_lru_verdict`): seven more shapes, chosen to put B (re-read by every group of tile
#: rows) in and out of L2 — a tall and a wide pair (B 34 against 67 MB), 8192 × 8192 at a shallow K (B 34 MB, the
#: same M and N as 8192³), a cube whose B just fits, one whose B just spills, a tall-thin shape (B 25 MB) and its
#: transpose
FRESH2_SHAPES = ((8192, 4096, 8192), (4096, 8192, 8192), (8192, 8192, 4096), (7168, 7168, 5120),
                 (9216, 9216, 6144), (16384, 3072, 8192), (3072, 16384, 8192))
FRESH2_DATASETS = {"bf16": "l08/gemm_fresh2", "fp8": "l08/gemm_fresh2_fp8"}
#: the third round, the first registered with the form clock as the model and with the working-set gate on its FP8
#: scale loads (perf.SCALE_WORKING_SET_MB, read off the lead pairs of the first two rounds' shapes): seven more
#: shapes, their first waves' working sets across the gate (16–52 MB: below it, in its ramp, above it), tall, wide
#: and square, every run in the sustained regime
FRESH3_SHAPES = ((7168, 7168, 7168), (5120, 12288, 6144), (12288, 5120, 9216), (3584, 14336, 8192),
                 (14336, 3584, 12288), (8192, 6144, 16384), (10240, 8192, 5120))
FRESH3_DATASETS = {"bf16": "l08/gemm_fresh3", "fp8": "l08/gemm_fresh3_fp8"}
#: each round: its runs by mode and its predictions file under ``benchmarks/predictions``
FRESH_ROUNDS = ((FRESH_SHAPES, FRESH_DATASETS, "l08_gemm_fresh.json"),
                (FRESH2_SHAPES, FRESH2_DATASETS, "l08_gemm_fresh2.json"),
                (FRESH3_SHAPES, FRESH3_DATASETS, "l08_gemm_fresh3.json"))
#: the forms each run times: bench_gemm.py's defaults for the mode (``tests/test_l08_fresh.py`` checks they agree)
FRESH_VARIANTS = {
    "bf16": ("cooperative", "cooperative_inflight", "cooperative_n128", "cooperative_n128_inflight", "pingpong",
             "pingpong_inflight", "pingpong_n128_inflight", "cooperative_inflight_tmastore",
             "cooperative_n128_inflight_tmastore", "cooperative_tmastore", "cooperative_inflight_cluster2",
             "cooperative_n128_inflight_cluster2", "cooperative_inflight_tmastore_cluster2",
             "cooperative_inflight_tmastore_cluster2_ctascope"),
    "fp8": ("fp8_cooperative_staggered_tmastore", "fp8_cooperative_tmastore", "fp8_cooperative_staggered",
            "fp8_cooperative", "fp8_cooperative_staggered_tmastore_cluster2_ctascope",
            "fp8_cooperative_tmastore_cluster2", "fp8_cooperative_n192_staggered_tmastore",
            "fp8_cooperative_n192_tmastore", "fp8_cooperative_n192_staggered", "fp8_cooperative_n192",
            "fp8_cooperative_m256_tmastore", "fp8_cooperative_m256", "fp8_cooperative_n192_tmastore_lead2",
            "fp8_cooperative_n192_tmastore_lead3", "fp8_cooperative_tmastore_lead2",
            "fp8_cooperative_m256_tmastore_lead2")}
#: the launches of each timed record (bench_gemm.py's default ``--warmup`` 3 + ``--repeats`` 20): what sets the
#: regime a prediction is made in
FRESH_LAUNCHES = 23


def _fresh_record(variant: str, shape: Sequence[int], dataset: str) -> dict:
    """The timing record the run will write for ``variant`` at ``shape``, as far as a prediction reads it: the
    persistent grid of ``benchmarks/bench_gemm.py`` (:func:`h100lab.design.capstone.grid_size` on every SM — the
    committed runs held 66 clusters of two, so 132 slots for every form), group 8 along M, the launches."""
    from ..design import capstone as cap
    from ..specs import H200_SXM

    M, N, K = (int(x) for x in shape)
    return {"variant": variant, "M": M, "N": N, "K": K, "group": 8, "raster": 0, "dataset": dataset,
            "grid": cap.grid_size(cap.variant(variant), M, N, H200_SXM.sm_count), "launches": FRESH_LAUNCHES}


def fresh_predictions(shapes: Sequence = FRESH_SHAPES, datasets: dict = FRESH_DATASETS) -> list[dict]:
    """Every form of :data:`FRESH_VARIANTS` at each of ``shapes`` on the run's grid (:func:`_fresh_record`),
    predicted by the one-clock model (the model then: ``model`` ms and its ``regime``) and by the form clock (then a
    hypothesis, the model since: ``form`` ms) — what
    ``benchmarks/predict_fresh.py`` commits before the run. [model]"""
    from ..design import perf

    m, h = perf.calibrated(form_clock=False), perf.calibrated()
    out = []
    for mode, variants in FRESH_VARIANTS.items():
        for shape in shapes:
            for v in variants:
                r = _fresh_record(v, shape, datasets[mode])
                a, b = perf.predict_record(r, m), perf.predict_record(r, h)
                out.append({"mode": mode, "variant": v, "M": r["M"], "N": r["N"], "K": r["K"], "grid": r["grid"],
                            "model": a.time_ms, "regime": a.regime, "form": b.time_ms})
    return out


def fresh_params_key() -> str:
    """SHA-256 of the two models' constants (``repr`` of :func:`h100lab.design.perf.calibrated` with and without
    the form clock): the predictions file records it, so a later model's predictions are told from the ones
    registered before the run."""
    import hashlib

    from ..design import perf

    return hashlib.sha256((repr(perf.calibrated(form_clock=False)) + repr(perf.calibrated())).encode()).hexdigest()


def registered_file(file: str) -> dict | None:
    """A predictions file registered before its run (``benchmarks/predictions/<file>``, the repository's); None when
    it is not there (an installed package without the repository)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "predictions" / file
    return json.loads(path.read_text()) if path.is_file() else None


def registered_rows(file: str) -> list[dict]:
    """The rows of a predictions file registered before its run (:func:`registered_file`); [] when it is not there."""
    reg = registered_file(file)
    return reg["rows"] if reg is not None else []


def committed_run(ds: Dataset | str) -> Dataset | None:
    """``ds`` itself, or the committed dataset of that name; None when it is not committed
    (:func:`h100lab.data.committed`)."""
    from .. import data

    return data.committed(ds)


def registered_errors(ds: Dataset | str, registered: dict) -> list[tuple[dict, dict]]:
    """(record, row) for each timed record of a committed run (``ds``: a dataset or its name) whose shape and form a
    registered predictions file holds (``registered``: ((M, N, K), variant) → row with ``model_ms``, model name → ms):
    ``row`` has the ``shape``, ``variant``, median ``ms`` and ``err`` (model name → predicted / measured − 1). []
    when the run is not committed."""
    from ..design import perf

    ds = committed_run(ds)
    out = []
    for r in perf.timing_records_of(ds) if ds is not None else ():
        row = registered.get(((r["M"], r["N"], r["K"]), r["variant"]))
        if row is not None:
            ms = float(r["median_ms"])
            out.append((dict(r, dataset=ds.name), {"shape": (r["M"], r["N"], r["K"]), "variant": r["variant"],
                                                   "ms": ms, "err": {k: x / ms - 1 for k, x in row["model_ms"].items()}}))
    return out


def fresh_registered(file: str = "l08_gemm_fresh.json") -> dict:
    """The predictions registered before a fresh-shape round (:func:`registered_rows` of ``file``;
    :data:`FRESH_ROUNDS`): {(mode, variant, M, N, K): row of :func:`fresh_predictions` as written then}; {} when the
    file is not there."""
    return {(r["mode"], r["variant"], r["M"], r["N"], r["K"]): r for r in registered_rows(file)}


def _fresh_mode(name: str) -> tuple:
    """(mode, predictions file) of a fresh-shape run's dataset, (None, None) for any other."""
    base = first_process(name)
    return next(((m, file) for _, ds, file in FRESH_ROUNDS for m, d in ds.items() if d == base), (None, None))


def fresh_rows(ds: Dataset | str, params=None) -> list[dict]:
    """Each timed record of one fresh-shape run (a dataset of :data:`FRESH_ROUNDS` or its second process ``_b``) in
    the tile order predicted (group 8 along M): the measured median ``ms``; ``registered`` and ``form`` — the
    errors of the one-clock model's and the form clock's predictions as registered before the run
    (:func:`fresh_registered`); ``model`` — the error of the model as it is now (``params``, default
    :func:`h100lab.design.perf.calibrated`) on the record itself, and its ``regime`` and ``bound``. [] when the run
    is not committed. Nothing was fitted on these records."""
    from ..design import perf

    ds = committed_run(ds)
    if ds is None:
        return []
    mode, file = _fresh_mode(ds.name)
    if mode is None:
        raise ValueError(f"{ds.name}: not a fresh-shape run "
                         f"({sorted(d for _, ds_, _ in FRESH_ROUNDS for d in ds_.values())}, or _b)")
    reg = fresh_registered(file)
    p = params if params is not None else perf.calibrated()
    out = []
    for r in perf.timing_records_of(ds):
        if r.get("variant") not in FRESH_VARIANTS[mode] or (r.get("group", 8), r.get("raster", 0)) != (8, 0):
            continue
        ms = float(r["median_ms"])
        pr = perf.predict_record(r, p)
        g = reg.get((mode, r["variant"], r["M"], r["N"], r["K"]))
        out.append({"mode": mode, "variant": r["variant"], "shape": (r["M"], r["N"], r["K"]), "ms": ms,
                    "registered": g["model"] / ms - 1 if g else None, "form": g["form"] / ms - 1 if g else None,
                    "model": pr.time_ms / ms - 1, "regime": pr.regime, "bound": pr.bound})
    return out


def fresh_summary(tol: float = TOLERANCE) -> dict:
    """Per committed fresh-shape run: ``n`` and the records within ±``tol`` of each prediction (``registered``,
    ``form``, ``model``: :func:`fresh_rows`), and per shape the registered model's (within, n)."""
    out = {}
    for base in (d for _, ds, _ in FRESH_ROUNDS for d in ds.values()):
        for name in (base, base + "_b"):
            rs = fresh_rows(name)
            if not rs:
                continue
            d = {"n": len(rs), **{k: sum(r[k] is not None and abs(r[k]) <= tol for r in rs)
                                  for k in ("registered", "form", "model")}}
            d["by_shape"] = {s: (sum(abs(r["registered"]) <= tol for r in rs if r["shape"] == s and
                                     r["registered"] is not None), sum(r["shape"] == s for r in rs))
                             for s in dict.fromkeys(r["shape"] for r in rs)}
            out[name] = d
    return out


#: what the model achieves on the prospective runs, per mode (the lowest of the four runs): the form clock, the model
#: since these runs decided it — bf16 97, 95, 98 and 98 of 98 records within ±TOLERANCE, FP8 94, 95, 95 and 95 of 112
#: (as registered: the same but 96 in the second round's first FP8 run, registered with the capacity rule since
#: removed); the one-clock model, the model when the predictions were registered: bf16 78, 79, 86, 88; FP8 96, 96,
#: 93, 93 (the floors rose from 79 % and 83 % with the switch). With the working-set gate on the scale loads since
#: (perf.SCALE_WORKING_SET_MB, its bounds read off the ncu launches at these very shapes: post hoc) FP8 102, 102, 110
#: and 110 of 112
ACHIEVED_FRESH = {"bf16": 0.96, "fp8": 0.91}


def _fresh_check(ds: Dataset) -> CheckResult:
    rs = fresh_rows(ds)
    if not rs:
        return CheckResult(1, 1, [], note=f"{ds.name}: no timed record of the predicted forms")
    mode, n = rs[0]["mode"], len(rs)
    within = {k: sum(r[k] is not None and abs(r[k]) <= TOLERANCE for r in rs) for k in ("registered", "form", "model")}
    bad = sorted((r for r in rs if abs(r["model"]) > TOLERANCE), key=lambda r: -abs(r["model"]))
    return CheckResult(n, beyond_floor(n, len(bad), ACHIEVED_FRESH[mode]),
                       [{"case": f"{'×'.join(map(str, r['shape']))} {r['variant']}", "measured_ms": round(r["ms"], 4),
                         "model": f"{100 * r['model']:+.1f} %",
                         "form clock (registered)": f"{100 * r['form']:+.1f} %" if r["form"] is not None else "-"}
                        for r in bad[:5]],
                       f"the model (the form clock) {within['model']}/{n} within ±{TOLERANCE:.0%}, as registered "
                       f"before the run {within['form']}/{n}; the one-clock model, the model then, registered beside "
                       f"it: {within['registered']}/{n}")


def _register_fresh_check(datasets: dict, file: str, mode: str, suffix: str) -> None:
    name = datasets[mode] + suffix
    what = {"bf16": "every bf16 form", "fp8": "every FP8 form"}[mode]
    title = (f"Capstone GEMM time model on seven shapes no run had timed, {what}, predictions registered before the "
             f"run (benchmarks/predictions/{file}; nothing fitted on it"
             + ("; a second process" if suffix else "") + f"): at least {ACHIEVED_FRESH[mode]:.0%} within "
             f"±{TOLERANCE:.0%} (goal: every record — not met; the registered counts of the form clock and of the "
             "one-clock model, the model then, recorded)")
    def run(ds: Dataset) -> CheckResult:
        return _fresh_check(ds)
    silicon_check(title, lesson=8, dataset=name)(run)


for _, _datasets, _file in FRESH_ROUNDS:
    for _mode in _datasets:
        for _suffix in ("", "_b"):
            _register_fresh_check(_datasets, _file, _mode, _suffix)


def fresh_residency_rows(pair: tuple = ("fp8_cooperative_tmastore", "fp8_cooperative_tmastore_lead2")) -> list[dict]:
    """The open FP8 item of the prospective test, as data (a diagnosis; nothing fitted into the model): per fresh
    shape, the 128 × 128 TMA-store form with its scales loaded one k-block ahead (``pair[0]``, lead 1) against two
    ahead (``pair[1]``, lead 2, whose loads' latency is hidden), each the mean of the two processes' medians:
    ``ratio`` lead 1 / lead 2 on silicon and in the model (``model_ratio``), the model's error on lead 1
    (``model``, as registered), and the bytes of each operand (``a_mb``, ``b_mb``: M·K and N·K e4m3 bytes, MB) —
    in the tile order run (groups of 8 tile rows along M) every group reads all of B again."""
    reg = fresh_registered()
    ms: dict = {}
    for suffix in ("", "_b"):
        for r in fresh_rows(FRESH_DATASETS["fp8"] + suffix):
            if r["variant"] in pair:
                ms.setdefault((r["shape"], r["variant"]), []).append(r["ms"])
    out = []
    for shape in FRESH_SHAPES:
        got = [ms.get((shape, v)) for v in pair]
        if not all(got):
            continue
        one, two = (sum(x) / len(x) for x in got)
        p1, p2 = (reg[("fp8", v, *shape)]["model"] for v in pair)
        M, N, K = shape
        out.append({"shape": shape, "a_mb": M * K / 1e6, "b_mb": N * K / 1e6, "lead1_ms": one, "lead2_ms": two,
                    "ratio": one / two, "model_ratio": p1 / p2, "model": p1 / one - 1})
    return out


def fresh_lru_verdict(tol: float = TOLERANCE) -> dict:
    """The capacity rule registered for the second round (a wave's panels less those still in an LRU L2 of 60 MiB
    as the scale loads' DRAM load), judged on that round's FP8 records: per process the records within ±``tol`` of
    the model as registered with the rule (``with_rule``) and of the model as it is, without it (``without``), and
    of the form clock as registered (with the rule: ``form``); ``n``. {} before the round is committed."""
    out = {}
    for suffix in ("", "_b"):
        rs = fresh_rows(FRESH2_DATASETS["fp8"] + suffix)
        if rs:
            out[FRESH2_DATASETS["fp8"] + suffix] = {
                "n": len(rs), "with_rule": sum(abs(r["registered"]) <= tol for r in rs),
                "without": sum(abs(r["model"]) <= tol for r in rs), "form": sum(abs(r["form"]) <= tol for r in rs)}
    return out
