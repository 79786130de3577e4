"""Lesson 7 model-vs-silicon checks: sparse wgmma (every output of every form, invalid metadata included), the FP8
GEMM tile with per-block scales and two-level accumulation, the stmatrix + TMA-store epilogue, long FP8 chains —
each bit for bit — and the wgmma timing model (calibrated on a documented subset, checked on the rest).

Datasets from ``python -m h100lab.measure.l07``; the inputs of every record are regenerated from its seed
(:mod:`h100lab.measure.l07`). A record that failed to run on the GPU counts as a mismatch.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..data import Dataset
from . import CheckResult, beyond_floor, silicon_check

__all__ = ["check", "compare_record", "check_timing", "meta_rules", "same_cycles", "switch_costs", "zero_rule_check",
           "DATASETS",
           "BIT_EXACT", "ZERO_RULE", "TIMING", "TIMING_TOLERANCE", "TIMING_FLOOR"]

BIT_EXACT = ("l07/sparse", "l07/fp8_gemm", "l07/epilogue", "l07/fp8_accumulation")
#: bit-exact under the measured alignment of zero factors (:func:`zero_rule_check`)
ZERO_RULE = ("l07/sparse_meta", "l07/zero_align")
TIMING = ("l07/wgmma_depth", "l07/wgmma_timing")
DATASETS = BIT_EXACT + ZERO_RULE + TIMING + ("l07/wgmma_deps",)
#: a held-out timing case passes when the model is within this relative error of the median measured cycles — the
#: book's ±10 % (it was ±15 %, which every held-out record met; at ±10 % two miss, one per dataset: TIMING_FLOOR)
TIMING_TOLERANCE = 0.10
#: each timing dataset's level (fraction of its held-out records within :data:`TIMING_TOLERANCE`; regression guard)
#: on the committed H200 runs (error: model / silicon − 1) — goal: all; reached: l07/wgmma_depth 70 of 71
#: (dep_chain_n64_a2_g1_d1_static, one 64-column group per wait on a two-accumulator chain: 47,875 cycles measured,
#: 53,371 modelled, +11.5 %), l07/wgmma_timing 58 of 59 (tim_bf16_n256_g2_d2: 87,173 measured, 77,192 modelled,
#: −11.4 %)
TIMING_FLOOR = {"l07/wgmma_depth": 0.98, "l07/wgmma_timing": 0.98}


def compare_record(r: dict[str, Any], zero_rule: bool = False) -> tuple[int, int, dict | None]:
    """(values compared, values different, first difference or None) for one bit-exact record; ``zero_rule``: the
    prediction with the measured alignment of zero factors (:func:`h100lab.measure.l07.numerics_model`)."""
    from ..measure.l04 import unpack
    from ..measure.l07 import model_outputs

    if not r.get("ok", False):
        return 1, 1, {"id": r["id"], "error": r.get("error", "did not run")}
    want = model_outputs(r, zero_rule=zero_rule)
    n = bad = 0
    first = None
    for k, m in want.items():
        m = np.ascontiguousarray(m).reshape(-1)
        got = unpack(r[k]).view(m.dtype)
        if got.shape != m.shape:
            return 1, 1, {"id": r["id"], "output": k, "size": [int(got.size), int(m.size)]}
        diff = np.flatnonzero(got != m)
        n += got.size
        bad += diff.size
        if diff.size and first is None:
            i = int(diff[0])
            first = {"id": r["id"], "output": k, "index": i, "silicon": int(got[i]), "model": int(m[i])}
    return n, bad, first


def check(records: Sequence[dict[str, Any]], per_value: bool = False, zero_rule: bool = False) -> CheckResult:
    """Records (or, with ``per_value``, output values) whose silicon outputs differ from the model's; timing
    records go to :func:`check_timing`. ``zero_rule``: predict with the measured alignment of zero factors."""
    if records and records[0].get("kind") == "timing":
        return check_timing(records)
    cases = mism = 0
    examples = []
    unmodelled = []
    for r in records:
        n, b, first = compare_record(r, zero_rule=zero_rule)
        if n == 0:
            unmodelled.append(r["id"])
            continue
        cases += n if per_value else 1
        mism += b if per_value else int(b > 0)
        if first is not None and len(examples) < 5:
            examples.append(first)
    note = f"measured, not modelled: {', '.join(unmodelled)}" if unmodelled else ""
    return CheckResult(cases, mism, examples, note)


def meta_rules(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule table of the metadata probe (``l07/sparse_meta``, :func:`h100lab.measure.l07.meta_cases`): for each
    record and each metadata value ``v`` (CTA v), the gather codes ``c`` (0..15: the B element spliced from halves
    ``c & 3`` (low) and ``c >> 2`` (high) of the pair for tf32, B rows ``c & 3`` and ``c >> 2`` of the group for
    2:4 types — :func:`h100lab.tensorcore.sparsity.gather_b`) that reproduce **every** output of the CTA bit for
    bit when nibble ``v`` is read as code ``c`` (``v`` itself is tried first; all 16 only when it fails).
    Returns one row per (record, v): ``form``, ``input``, ``nibble``, ``valid`` (PTX ISA), ``codes`` (the matching
    codes; ``[v]`` = the gather rule, ``[]`` = no gather code explains it), ``deterministic`` (the repeated launch
    gave the same bits)."""
    from ..measure.l04 import unpack
    from ..measure.l07 import build_sparse, META_PROBES, numerics_model
    from ..tensorcore import fragments, sparsity

    out = []
    for r in records:
        if r.get("kind") != "sparse" or r.get("input") not in META_PROBES or not r.get("ok"):
            continue
        b = build_sparse(r)
        sp = b["spec"]
        regs = unpack(r["d"]).view(np.uint32).reshape(r["grid"], 128, sp.d_regs)
        again = unpack(r["d1"]).view(np.uint32).reshape(regs.shape) if "d1" in r else regs
        nibbles = r.get("nibbles", range(16))
        for g in range(r["grid"]):
            v = int(nibbles[g])
            vals = regs[g] if sp.dtype != "f16" else None
            if vals is None:
                vals = np.stack([regs[g] & 0xFFFF, regs[g] >> 16], axis=2).reshape(128, sp.n // 2).astype(np.uint16)
            got = fragments.accumulator_to_matrix(vals, sp.n)
            A, nib, B = b["vals"][g][0], b["nib"][g][0], b["B"][g][0].T

            def explains(code):
                want = sparsity.mma_sp(A, np.where(nib == v, code, nib), B, None, atype=sp.atype, btype=sp.btype,
                                       dtype=sp.dtype, invalid="hardware",
                                       model=numerics_model(sp.atype, sp.dtype, zero_rule=True))
                return bool((want == got).all())
            codes = [v] if explains(v) else [c for c in range(16) if c != v and explains(c)]
            valid = v in sparsity.VALID_TF32 if sp.atype == "tf32" else v not in sparsity.INVALID_2_4
            out.append(dict(form=r["form"], input=r["input"], nibble=v, valid=valid, codes=codes,
                            deterministic=bool((again[g] == regs[g]).all())))
    return out


def check_timing(records: Sequence[dict[str, Any]], tolerance: float = TIMING_TOLERANCE,
                 calibration: Sequence[dict[str, Any]] | None = None, floor: float = 1.0) -> CheckResult:
    """Calibrate :mod:`h100lab.tensorcore.timing` on its documented subset (:func:`~h100lab.tensorcore.timing.
    is_calibration`) of ``calibration`` (default: ``records``) and count the held-out ``records`` whose prediction
    is off by more than ``tolerance`` (a failed record always counts); mismatches are those beyond what ``floor``
    (the fraction that must be within) allows. The note: how many are within, the floor, the largest error."""
    from ..tensorcore import timing
    ok = [r for r in (records if calibration is None else calibration) if r.get("ok")]
    params = timing.calibrate(ok)
    cases = mism = 0
    worst = 0.0
    examples = []
    for r in records:
        if r.get("ok") and timing.is_calibration(r):
            continue
        cases += 1
        if not r.get("ok"):
            mism += 1
            examples.append({"id": r["id"], "error": r.get("error")})
            continue
        got = float(np.median(r["cycles"]))
        want = timing.predict_case(r, params)
        err = abs(want - got) / got
        worst = max(worst, err)
        if err > tolerance:
            mism += 1
            if len(examples) < 5:
                examples.append({"id": r["id"], "silicon": got, "model": round(want, 1)})
    return CheckResult(cases, beyond_floor(cases, mism, floor), examples,
                       f"{cases - mism} of {cases} held-out records within ±{tolerance:.0%} (floor {floor:.0%}; "
                       f"largest error {worst:.1%}); calibrated on "
                       "h100lab.tensorcore.timing.CALIBRATION")


def _timing_records() -> list[dict[str, Any]]:
    from .. import data
    return [r for name in TIMING if data.available(name) for r in data.load(name).records]


def same_cycles(records: Sequence[dict[str, Any]], tolerance: float = 0.02) -> CheckResult:
    """Groups on one accumulator that every wgmma reads (``chain``) and groups that overwrite it (``fresh``,
    scale-d = 0) take the same cycles at every depth and N of ``l07/wgmma_depth``: the tensor core keeps no
    dependency between groups (:mod:`h100lab.tensorcore.timing`)."""
    by = {(r["mode"], r["n"], r["sets"], r["per_group"], r["depth"]): r for r in records if r.get("ok")}
    cases = mism = 0
    examples = []
    for (mode, n, a, g, d), r in by.items():
        twin = by.get(("chain", n, a, g, d))
        if mode != "fresh" or twin is None:
            continue
        cases += 1
        x, y = float(np.median(r["cycles"])), float(np.median(twin["cycles"]))
        if abs(x - y) > tolerance * y:
            mism += 1
            examples.append({"id": r["id"], "fresh": x, "chain": y})
    return CheckResult(cases, mism, examples, f"{cases} fresh/chain pairs, within ±{tolerance:.0%}")


def switch_costs(deps: Sequence[dict[str, Any]], static: Sequence[dict[str, Any]]) -> CheckResult:
    """Every ``l07/wgmma_deps`` record (the wait depth chosen by a run-time switch) takes at least as long as its
    compile-time twin in ``l07/wgmma_depth`` (2 % clock noise allowed): the switch only adds warp work, which is
    why the model leaves that dataset out."""
    twin = {(r["mode"], r["n"], r["sets"], r["per_group"], r["depth"]): r for r in static if r.get("ok")}
    cases = mism = 0
    examples = []
    for r in deps:
        t = twin.get((r["mode"], r["n"], r["sets"], r["per_group"], r["depth"]))
        if not r.get("ok") or t is None:
            continue
        cases += 1
        x, y = float(np.median(r["cycles"])), float(np.median(t["cycles"]))
        if x < 0.98 * y:
            mism += 1
            examples.append({"id": r["id"], "run_time": x, "compile_time": y})
    return CheckResult(cases, mism, examples, f"{cases} records with a compile-time twin")


@silicon_check("Sparse wgmma (2:4 / 1:2): every output of every type, selector and metadata kind", lesson=7,
               dataset="l07/sparse")
def _sparse(ds: Dataset) -> CheckResult:
    return check(ds.records, per_value=True)


@silicon_check("FP8 GEMM tile: per-block scales, two-level accumulation, bf16 stmatrix/TMA epilogue", lesson=7,
               dataset="l07/fp8_gemm")
def _fp8_gemm(ds: Dataset) -> CheckResult:
    return check(ds.records, per_value=True)


@silicon_check("stmatrix epilogue: bf16 / f16 / e4m3 staging tiles stored by TMA", lesson=7, dataset="l07/epilogue")
def _epilogue(ds: Dataset) -> CheckResult:
    return check(ds.records, per_value=True)


@silicon_check("FP8 accumulation along chains of wgmmas (K up to 1536)", lesson=7, dataset="l07/fp8_accumulation")
def _accumulation(ds: Dataset) -> CheckResult:
    return check(ds.records, per_value=True)


def zero_rule_check(records: Sequence[dict[str, Any]]) -> CheckResult:
    """:func:`check` (per value) with the measured alignment of zero factors — a product with a zero factor takes
    no part (:data:`h100lab.measure.l07.ZERO_EXPONENT_MEASURED`) — and, in the note, how many outputs lesson 6's
    default accumulator model (a zero counted with exponent -126) gets wrong; none once that default is changed."""
    res = check(records, per_value=True, zero_rule=True)
    plain = check(records, per_value=True)
    note = (f"with the measured zero rule; the default numerics model differs on {plain.mismatches} of {plain.cases} "
            "outputs (numerics.AccumulatorModel.zero_exponent = -126 counts a zero)" if plain.mismatches else
            "the default numerics model already has the measured zero rule")
    return CheckResult(res.cases, res.mismatches, res.examples, note)


@silicon_check("Sparse metadata probe: every 4-bit metadata value (valid and invalid) on designed inputs, tf32 and f16",
               lesson=7, dataset="l07/sparse_meta")
def _sparse_meta(ds: Dataset) -> CheckResult:
    return zero_rule_check(ds.records)


@silicon_check(f"wgmma timing model, held out: the records of the first timing kernel (run-time group size), at least "
               f"{TIMING_FLOOR['l07/wgmma_timing']:.0%} within ±{TIMING_TOLERANCE:.0%} (goal: all; not met — "
               "tim_bf16_n256_g2_d2 −11.4 %)", lesson=7, dataset="l07/wgmma_timing")
def _timing(ds: Dataset) -> CheckResult:
    return check_timing(ds.records, calibration=_timing_records(), floor=TIMING_FLOOR["l07/wgmma_timing"])


@silicon_check(f"wgmma timing model, held out: the group sizes, depths, N and accumulator sets of l07_wgmma_deps.cu "
               f"(depth compiled in), at least {TIMING_FLOOR['l07/wgmma_depth']:.0%} within ±{TIMING_TOLERANCE:.0%} "
               "(goal: all; not met — dep_chain_n64_a2_g1_d1_static +11.5 %)", lesson=7, dataset="l07/wgmma_depth")
def _depth(ds: Dataset) -> CheckResult:
    return check_timing(ds.records, calibration=_timing_records(), floor=TIMING_FLOOR["l07/wgmma_depth"])


@silicon_check("wgmma groups on a chained accumulator time like overwritten ones (no dependency between groups)",
               lesson=7, dataset="l07/wgmma_depth")
def _chain(ds: Dataset) -> CheckResult:
    return same_cycles(ds.records)


@silicon_check("wgmma depth chosen at run time: never faster than compiled in (the switch is warp work)", lesson=7,
               dataset="l07/wgmma_deps")
def _switch(ds: Dataset) -> CheckResult:
    from .. import data
    static = data.load("l07/wgmma_depth").records if data.available("l07/wgmma_depth") else []
    return switch_costs(ds.records, static)


@silicon_check("Tensor-core alignment: a product with a zero factor takes no part (dense tf32 and bf16)", lesson=7,
               dataset="l07/zero_align")
def _zero(ds: Dataset) -> CheckResult:
    return zero_rule_check(ds.records)
