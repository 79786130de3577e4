"""A small timing model of ``wgmma`` with commit groups in flight: how long a sequence of wgmma / commit_group /
wait_group takes one warpgroup, and how busy it keeps the SM's tensor cores.

The program order is the PTX ISA's (§9.7.15.7: ``wgmma.mma_async`` is issued and returns at once, ``commit_group``
closes a group, ``wait_group N`` blocks until at most N groups are pending); the program the model runs is the one
the SASS shows (``WARPGROUP.ARRIVE`` for ``wgmma.fence``, ``HGMMA`` with ``gsb0`` on the wgmma that closes a group,
``WARPGROUP.DEPBAR.LE gsb0, N`` for the wait). The cycle counts are a model:

* **warp**: issuing a wgmma costs :attr:`WgmmaTiming.issue`, a ``wgmma.fence`` :attr:`~WgmmaTiming.fence`, a
  ``wait_group`` :attr:`~WgmmaTiming.wait` after its groups are visible, a taken loop branch
  :attr:`~WgmmaTiming.loop` (``("work", c)`` for any other instructions);
* **tensor cores**: one wgmma at a time, in issue order, ``max(min_exec, slowdown·N/2 + overhead)`` cycles
  (``sparse_extra`` added inside the max for ``.sp``) — ``rate`` the dense peak per SM per clock (hopper-spec-facts §1.1: 2048 MAC
  for f16/bf16, 1024 tf32, 4096 fp8 / int8: every dense m64nNk form is ``N/2`` cycles at peak);
* **latency**: a wgmma's results are visible at ``max(start + latency_start, end + latency_tail)``;
* **no dependency between groups**: a wgmma that accumulates into registers an earlier group still writes waits
  for nothing but the tensor core (measured: chained and independent accumulators, and overwriting ones, time
  the same).

Measured on the H200 (``data/l07/wgmma_depth``: ``l07_wgmma_deps.cu`` with the wait depth compiled in, 1024
wgmmas per run; :func:`calibrate`): every m64nN bf16 wgmma takes ``N/2`` cycles back to back (0.2 more); a
group's results are visible ~38 cycles after its last wgmma leaves the tensor core; the warp spends ~12 cycles
per group on fence, issue and wait and ~22 on a taken loop branch. So one group in flight (``wait_group 1``)
already hides the latency from N = 256 on and from four m64n64 wgmmas per group; smaller groups want 2–3 — and
**groups on one chained accumulator overlap exactly like groups on independent ones** (the hypothesis that a
read-modify-write of the same accumulator serialises them is refuted: ``chain``, ``fresh`` (scale-d = 0) and
2 or 4 accumulator sets give the same cycles wherever the warp's own loop is not the bound).

The first timing kernel (``l07_wgmma_timing.cu``, ``data/l07/wgmma_timing``) took the group size at run time,
and ptxas then (read with ``cuobjdump -sass`` from the cubin NVRTC 13.0 built on the H200) closes every group with an **empty HGMMA**
(``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0``), makes each wgmma of a group's remainder (size mod 4) a
group of its own, recomputes the descriptors and reads the depth through a jump table every iteration.
``wait_group 1`` there waits for every real wgmma (only the empty one may stay pending), which is why that
kernel showed no overlap at depth 1; the model runs that program (:func:`pattern` with
``kernel="l07_wgmma_timing"``) with the loop's extra warp work per code path calibrated on five of its records
and its ``min_exec`` and ``sparse_extra`` on two more (:data:`CALIBRATION`).

Calibration (:func:`calibrate`) uses a documented subset (:func:`is_calibration`); every other record of
``l07/wgmma_depth`` and ``l07/wgmma_timing`` is held out (:func:`h100lab.validation.l07.check_timing`).
``l07/wgmma_deps`` (the same kernels with the depth chosen at run time by a switch) is informative only: the
switch's branches cost the warp more than the tensor core takes. Assumptions: one warpgroup alone on the SM; no
memory stalls (operands already in shared memory, the same tile every time); clock64 overhead folded into
``wait``. Without the datasets the defaults are priors.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

__all__ = ["WgmmaTiming", "PRIOR", "exec_cycles", "simulate", "pattern", "predict_case", "calibrate", "promotion_cost",
           "two_level_program", "calibrated", "CALIBRATION", "KERNELS", "kernel_of",
           "is_calibration", "Timeline", "utilisation"]

#: dense tensor-core MACs per SM per clock (hopper-spec-facts §1.1)
RATE = {"bf16": 2048, "f16": 2048, "tf32": 1024, "e4m3": 4096, "e5m2": 4096, "s8": 4096, "u8": 4096}
_K = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}


@dataclass(frozen=True)
class WgmmaTiming:
    """Model constants (cycles): ``issue`` per wgmma; execution ``max(min_exec, slowdown·N/2 + overhead)``
    (+ ``sparse_extra`` for ``.sp``); results visible at ``max(start + latency_start, end + latency_tail)``;
    ``wait`` cost of a wait_group, ``fence`` of a wgmma.fence, ``loop`` of a taken loop branch. The rest is the
    extra warp work of ``l07_wgmma_timing.cu``'s loop (run-time group size, :func:`pattern`): ``work`` before its
    wgmmas (reading the group size, branching to the block sizes, recomputing the descriptors), ``work_wait[d]``
    between the empty HGMMA and ``wait_group d`` (the depth read through a jump table: each depth its own path),
    ``work_block4`` more when the group runs through the loop of 4-wgmma blocks."""

    issue: float = 8.0
    min_exec: float = 16.0
    slowdown: float = 1.0
    overhead: float = 0.0
    sparse_extra: float = 0.0
    latency_start: float = 0.0
    latency_tail: float = 40.0
    wait: float = 4.0
    fence: float = 0.0
    loop: float = 20.0
    work: float = 0.0
    work_wait: tuple = (0.0, 0.0, 0.0, 0.0)
    work_block4: float = 0.0


PRIOR = WgmmaTiming()


def exec_cycles(atype: str, n: int, params: WgmmaTiming = PRIOR) -> float:
    """Tensor-core cycles of one m64nN wgmma of dense type ``atype`` (``sp_<t>`` for sparse: ``sparse_extra`` more
    than the dense line of the same N, the same floor ``min_exec``)."""
    sparse = atype.startswith("sp_")
    t = atype[3:] if sparse else atype
    if t not in RATE:
        raise ValueError(f"type {atype!r}: one of {sorted(RATE)} (or sp_<type>)")
    macs = 64 * n * _K[t]
    return max(params.min_exec, params.slowdown * macs / RATE[t] + params.overhead +
               (params.sparse_extra if sparse else 0.0))


@dataclass
class Timeline:
    """``cycles`` total; ``busy`` tensor-core cycles; ``spans``: (issue, start, end) per wgmma."""

    cycles: float
    busy: float
    spans: list

    @property
    def utilisation(self) -> float:
        return self.busy / self.cycles if self.cycles else 0.0


def simulate(program: Sequence[tuple], params: WgmmaTiming = PRIOR) -> Timeline:
    """Run ``program``: ("mma", atype, n) | ("commit",) | ("wait", N) | ("fence",) | ("loop",) | ("work", cycles).

    ``mma``: issued ``issue`` cycles later, started when the tensor core is free (in issue order), visible at
    ``max(start + latency_start, end + latency_tail)`` — whatever accumulator it uses (no dependency between
    groups, measured); ``commit`` closes the open group (an empty group is visible at once); ``wait N`` blocks
    until at most N groups are pending, then costs ``wait``; ``fence``, ``loop`` cost their constants."""
    return _run(program, params, None, True)


def _run(program: Sequence[tuple], params: WgmmaTiming, named: dict | None, keep_spans: bool) -> Timeline:
    """:func:`simulate`'s loop (``named``: cycles of the timing kernel's named ``("work", name)`` ops, or None).

    Written for speed (:func:`calibrate` runs it ~1000 times on programs of ~1000 wgmmas) with the same floating
    point operations in the same order as the plain statement of the rules: a two-argument ``max(a, b)`` is
    ``b if b > a else a`` (what ``max`` returns), the open group's visible time is a running maximum (the maximum
    of the list), each wgmma's execution cycles are computed once per (type, N)."""
    issue, lat_start, lat_tail = params.issue, params.latency_start, params.latency_tail
    wait_c, fence_c, loop_c = params.wait, params.fence, params.loop
    execs: dict = {}
    t = 0.0
    tc_free = 0.0
    open_max = None                 # visible time of the open group so far (None: no wgmma in it)
    groups: list[float] = []        # visible time of each committed group
    spans: list = []
    busy = 0.0
    for op in program:
        kind = op[0]
        if kind == "mma":
            e = execs.get(op[1:])
            if e is None:
                e = execs[op[1:]] = exec_cycles(op[1], op[2], params)
            t += issue
            start = tc_free if tc_free > t else t
            end = start + e
            tc_free = end
            busy += e
            if keep_spans:
                spans.append((t, start, end))
            a, b = start + lat_start, end + lat_tail
            v = b if b > a else a
            if open_max is None or v > open_max:
                open_max = v
        elif kind == "commit":
            groups.append(t if open_max is None else open_max)
            open_max = None
        elif kind == "wait":
            n = int(op[1])
            if len(groups) > n:
                m = max(groups[:len(groups) - n])
                if m > t:
                    t = m
                groups = groups[len(groups) - n:] if n else []
            t += wait_c
        elif kind == "fence":
            t += fence_c
        elif kind == "loop":
            t += loop_c
        elif kind == "work":
            w = op[1]
            t += named[w] if named is not None and isinstance(w, str) else float(w)
        else:
            raise ValueError(f"unknown op {op!r}")
    return Timeline(t, busy, spans)


#: the kernels whose loops :func:`pattern` writes out
KERNELS = ("l07_wgmma_deps", "l07_wgmma_timing")


def pattern(atype: str, n: int, per_group: int, depth: int, iters: int, *, sets: int = 1,
            kernel: str = "l07_wgmma_deps") -> list[tuple]:
    """The program of a timing kernel's loop: ``iters`` groups of ``per_group`` wgmmas, ``commit``, ``wait depth``,
    then ``wait 0``.

    ``l07_wgmma_deps`` (compile-time group size and depth): per group a fence, the wgmmas, commit, wait; a loop
    branch every ``sets`` groups (the loop body holds one group per accumulator set). ``l07_wgmma_timing``
    (run-time group size, as ptxas compiled it — module docstring): per iteration the loop's extra ``work``, a
    fence; the group's wgmmas as blocks of 16, 8 and 4 (a fence and one group each) and the size-mod-4 rest one
    group each (a fence each); an empty m64n8 HGMMA (a fence, its own group); the wait; the loop branch."""
    return list(_pattern(atype, n, per_group, depth, iters, sets, kernel))


@lru_cache(maxsize=256)
def _pattern(atype: str, n: int, per_group: int, depth: int, iters: int, sets: int, kernel: str) -> tuple:
    """:func:`pattern` as a tuple, once per arguments and process (:func:`calibrate` asks for the same dozen
    programs ~1000 times)."""
    if kernel == "l07_wgmma_deps":
        prog = []
        for i in range(iters):
            prog += [("fence",)] + [("mma", atype, n)] * per_group + [("commit",), ("wait", depth)]
            if (i + 1) % sets == 0:
                prog.append(("loop",))
        return tuple(prog + [("wait", 0)])
    if kernel != "l07_wgmma_timing":
        raise ValueError(f"kernel {kernel!r}: one of {KERNELS}")
    blocks, rest = [], per_group - per_group % 4
    for size in (16, 8):
        while rest >= size and (size == 16 or rest > 4):
            blocks.append(size)
            rest -= size
    blocks += [4] * (rest // 4) + [1] * (per_group % 4)
    prog = []
    for _ in range(iters):
        prog += [("work", "pre" if 4 not in blocks else "pre4"), ("fence",)]
        for size in blocks:
            prog += [("fence",)] + [("mma", atype, n)] * size + [("commit",)]
        prog += [("fence",), ("mma", "f16", 8), ("commit",), ("work", f"wait{min(depth, 3)}"), ("wait", depth),
                 ("loop",)]
    return tuple(prog + [("wait", 0)])


def _named(params: WgmmaTiming) -> dict[str, float]:
    """The timing kernel's named extra work (``("work", "pre" | "pre4" | "wait<d>")``) → cycles of ``params``."""
    return {"pre": params.work, "pre4": params.work + params.work_block4,
            **{f"wait{d}": params.work_wait[d] for d in range(4)}}


def utilisation(atype: str, n: int, per_group: int, depth: int, iters: int = 64,
                params: WgmmaTiming = PRIOR) -> float:
    """Tensor-core busy fraction of :func:`pattern`."""
    return simulate(pattern(atype, n, per_group, depth, iters), params).utilisation


def kernel_of(c: dict[str, Any]) -> str:
    """The kernel a timing record measured: ``l07_wgmma_deps`` (kind ``timing_dep``) or ``l07_wgmma_timing``."""
    return "l07_wgmma_deps" if c.get("kind") == "timing_dep" else "l07_wgmma_timing"


def predict_case(c: dict[str, Any], params: WgmmaTiming = PRIOR) -> float:
    """Predicted clock64 cycles of a ``l07/wgmma_timing`` or ``l07/wgmma_depth`` record."""
    if c.get("kind") == "timing_dep" and not c.get("static"):
        raise ValueError(f"{c['id']}: the run-time depth switch of l07/wgmma_deps is not modelled (its branches cost "
                         "the warp more than the tensor core takes); l07/wgmma_depth measured the same loops")
    prog = _pattern(c["type"], c["n"], c["per_group"], c["depth"], c["iters"], c.get("sets", 1), kernel_of(c))
    return _run(prog, params, _named(params), False).cycles


#: cycles to issue one wgmma [assumption: the warp's fence + issue + wait, measured together, split with 4 here]
ISSUE = 4.0

#: the documented calibration subset: (kernel, type, N, per_group, depth, sets)
CALIBRATION = {("l07_wgmma_deps", "bf16", 64, 16, 1, 1),      # back to back at N = 64  → exec line
               ("l07_wgmma_deps", "bf16", 256, 4, 1, 1),      # back to back at N = 256 → exec line
               ("l07_wgmma_deps", "bf16", 64, 1, 0, 1),       # one wgmma waited for    → latency_tail
               ("l07_wgmma_deps", "bf16", 64, 1, 0, 4),       # the same, 4 groups per loop → loop
               ("l07_wgmma_deps", "bf16", 64, 1, 3, 1),       # warp-bound loop         → issue + fence + wait
               ("l07_wgmma_timing", "bf16", 16, 16, 1, 1),    # timing kernel: min_exec
               ("l07_wgmma_timing", "sp_bf16", 64, 16, 1, 1),  # timing kernel: sparse_extra
               ("l07_wgmma_timing", "bf16", 256, 1, 0, 1),    # timing kernel: work (the latency shows)
               ("l07_wgmma_timing", "bf16", 64, 1, 0, 1),     # timing kernel: work_wait[0] (warp-bound)
               ("l07_wgmma_timing", "bf16", 64, 1, 1, 1),     # timing kernel: work_wait[1]
               ("l07_wgmma_timing", "bf16", 64, 1, 2, 1),     # timing kernel: work_wait[2] (= [3])
               ("l07_wgmma_timing", "bf16", 64, 4, 0, 1)}     # timing kernel: work_block4


def _key(c: dict[str, Any]) -> tuple:
    return (kernel_of(c), c["type"], c["n"], c["per_group"], c["depth"], c.get("sets", 1))


def is_calibration(c: dict[str, Any]) -> bool:
    """Whether a timing record belongs to :data:`CALIBRATION` (chained mode, compile-time depth for
    ``l07_wgmma_deps``). Everything else is held out; ``l07/wgmma_deps`` records (run-time depth) are neither."""
    if c.get("kind") == "timing_dep" and (not c.get("static") or c.get("mode") != "chain"):
        return False
    return _key(c) in CALIBRATION


def _med(r):
    return float(np.median(r["cycles"]))


def calibrate(records: Sequence[dict[str, Any]], prior: WgmmaTiming = PRIOR) -> WgmmaTiming:
    """Fit the constants on the calibration subset (:func:`is_calibration`), each from the record that isolates it:

    * ``slowdown``, ``overhead``: cycles per wgmma of back-to-back groups at N = 64 and 256 (a line in N/2);
    * ``loop``: one group per loop vs four (``sets`` 1 vs 4) at depth 0, N = 64: 3/4 of a loop branch apart;
    * ``issue + fence + wait``: the warp-bound loop (depth 3, one m64n64 wgmma per group) minus ``loop`` — split
      as ``issue`` = :data:`ISSUE` and the rest half to ``fence``, half to ``wait`` [assumption: the three are
      not separable here; the split only matters for long groups, where the tensor core binds];
    * ``latency_tail``: one wgmma waited for (depth 0, N = 64) minus the warp's share and the execution;
      ``latency_start`` 0 (no floor measured: the depth-0 loop grows by exactly the execution from N = 64 to 256);
    * the timing kernel (one constant per record, by bisection, in this order and twice round): ``work`` (N =
      256, one wgmma per group, depth 0: the tensor core's latency shows), ``work_wait[d]`` (N = 64, one wgmma,
      depth d = 0, 1, 2; depth 3 as 2: the jump table sends 2 and 3 the same way), ``work_block4`` (N = 64, 4
      per group), ``min_exec`` (N = 16 back to back), ``sparse_extra`` (sparse N = 64 back to back).

    Without calibration records: the prior. A pure function of the calibration records' content, ``prior`` and the
    package's code: computed once per content (:func:`h100lab.fitcache.memo`: once per process, and kept on disk
    for the next — lesson 7's check and lesson 8's time model both ask, in several chapters)."""
    from .. import fitcache

    cal = {_key(r): r for r in records if r.get("ok", True) and r.get("cycles") and is_calibration(r)}
    if not cal:
        return prior
    parts = {"prior": repr(prior), "records": sorted(cal.items(), key=lambda kv: kv[0])}
    return fitcache.memo("wgmma-calibrate", parts, lambda: _calibrate(cal, prior))


def _calibrate(cal: dict, prior: WgmmaTiming) -> WgmmaTiming:
    """:func:`calibrate` on ``cal`` (calibration key → record)."""
    p = prior

    def per(key):
        r = cal[key]
        return _med(r) / (r["iters"] * r["per_group"])

    d = "l07_wgmma_deps"
    t = "l07_wgmma_timing"
    if (d, "bf16", 64, 16, 1, 1) in cal and (d, "bf16", 256, 4, 1, 1) in cal:
        a, b = per((d, "bf16", 64, 16, 1, 1)), per((d, "bf16", 256, 4, 1, 1))
        slope = (b - a) / (128 - 32)
        p = replace(p, slowdown=slope, overhead=a - slope * 32)
    if (d, "bf16", 64, 1, 0, 1) in cal and (d, "bf16", 64, 1, 0, 4) in cal:
        p = replace(p, loop=(per((d, "bf16", 64, 1, 0, 1)) - per((d, "bf16", 64, 1, 0, 4))) * 4 / 3)
    if (d, "bf16", 64, 1, 3, 1) in cal:
        rest = per((d, "bf16", 64, 1, 3, 1)) - p.loop - ISSUE
        p = replace(p, issue=ISSUE, fence=rest / 2, wait=rest / 2)
    if (d, "bf16", 64, 1, 0, 1) in cal:
        p = replace(p, latency_start=0.0, latency_tail=per((d, "bf16", 64, 1, 0, 1)) - p.issue - p.fence - p.wait -
                    p.loop - exec_cycles("bf16", 64, p))
    # refine by simulation (the closed forms above ignore the loop's start and drain): each constant from its record
    steps = [((d, "bf16", 64, 16, 1, 1), lambda q, v: replace(q, overhead=v), -16.0, 64.0),
             ((d, "bf16", 256, 4, 1, 1), lambda q, v: replace(q, slowdown=v), 0.5, 2.0),
             ((d, "bf16", 64, 1, 3, 1), lambda q, v: replace(q, fence=v, wait=v), 0.0, 200.0),
             ((d, "bf16", 64, 1, 0, 1), lambda q, v: replace(q, latency_tail=v), 0.0, 1000.0)] + \
        [((t, "bf16", 256, 1, 0, 1), lambda q, v: replace(q, work=v), 0.0, 2000.0)] + \
        [((t, "bf16", 64, 1, k, 1), lambda q, v, k=k: replace(q, work_wait=q.work_wait[:k] + (v,) * (4 - k)), 0.0,
          2000.0) for k in range(3)] + \
        [((t, "bf16", 64, 4, 0, 1), lambda q, v: replace(q, work_block4=v), -500.0, 2000.0),
         ((t, "bf16", 16, 16, 1, 1), lambda q, v: replace(q, min_exec=v), 1.0, 128.0),
         ((t, "sp_bf16", 64, 16, 1, 1), lambda q, v: replace(q, sparse_extra=v), 0.0, 128.0)]
    for _ in range(3):
        for key, make, lo, hi in steps:
            if key in cal:
                p = make(p, _fit(lambda v: make(p, v), cal[key], lo, hi))
    return p


def _fit(make, r, lo: float, hi: float) -> float:
    """The value of one constant (``make(v)`` → params) that makes :func:`predict_case` of record ``r`` equal its
    median cycles: bisection (the prediction grows with each of these constants)."""
    want = _med(r)
    for _ in range(30):
        mid = (lo + hi) / 2
        if predict_case(r, make(mid)) < want:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def calibrated() -> WgmmaTiming:
    """:func:`calibrate` on ``data/l07/wgmma_depth`` and ``data/l07/wgmma_timing`` (those present), else
    :data:`PRIOR`; once per data folder and process."""
    from .. import data
    key = str(data.data_dir())
    if key not in _CALIBRATED:
        recs = []
        for name in ("l07/wgmma_depth", "l07/wgmma_timing"):
            if data.available(name):
                recs += data.load(name).records
        _CALIBRATED[key] = calibrate(recs) if recs else PRIOR
    return _CALIBRATED[key]


_CALIBRATED: dict[str, WgmmaTiming] = {}


def two_level_program(n: int = 64, k_steps: int = 64, interval: int = 4, promote_cycles: float = 40.0,
                      atype: str = "e4m3") -> list[tuple]:
    """One warpgroup's FP8 tile loop with promotion every ``interval`` wgmmas: the window's wgmmas, commit,
    wait 0 (the partial sum must be complete), then ``promote_cycles`` of CUDA-core work (the N/2 FFMA and the
    scale loads of each thread) — ``interval = k_steps`` is one-level accumulation. [model: one warpgroup, no
    second warpgroup to overlap the promotion, as DeepGEMM's ping-pong would.]"""
    if interval < 1 or k_steps % interval:
        raise ValueError("the promotion interval must divide the number of wgmmas")
    prog = []
    for _ in range(k_steps // interval):
        prog += [("mma", atype, n)] * interval + [("commit",), ("wait", 0), ("work", promote_cycles)]
    return prog


def promotion_cost(interval: int, n: int = 64, k_steps: int = 64, promote_cycles: float = 40.0,
                   params: WgmmaTiming = PRIOR) -> float:
    """Cycles of the loop with promotion every ``interval`` wgmmas divided by the cycles of one-level accumulation
    (≥ 1: the price of the better precision)."""
    t = simulate(two_level_program(n, k_steps, interval, promote_cycles), params).cycles
    t0 = simulate(two_level_program(n, k_steps, k_steps, promote_cycles), params).cycles
    return t / t0
