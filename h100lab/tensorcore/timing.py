"""A small timing model of ``wgmma`` with commit groups in flight: how long a sequence of wgmma / commit_group /
wait_group takes one warpgroup, and how busy it keeps the SM's tensor cores.

The program order is the PTX ISA's (§9.7.15.7: ``wgmma.mma_async`` is issued and returns at once, ``commit_group``
closes a group, ``wait_group N`` blocks until at most N groups are pending). The cycle counts are a model:

* **issue**: the warpgroup spends :attr:`WgmmaTiming.issue` cycles issuing each wgmma;
* **execution**: the tensor cores take one wgmma at a time, in order, for ``max(min_exec, MACs / rate)`` cycles —
  ``rate`` the dense peak per SM per clock (hopper-spec-facts §1.1: 2048 MAC for f16/bf16, 1024 tf32, 4096 fp8 /
  int8; sparse counts the K/2 stored products twice as fast, i.e. the dense cycles of the same N), scaled by
  :attr:`WgmmaTiming.slowdown`; every dense m64nNk form takes ``N/2`` cycles at peak;
* **latency**: a wgmma's results are visible :attr:`WgmmaTiming.latency` cycles after it leaves the tensor core;
  a ``wait_group`` returns when the groups it waits for are visible, plus :attr:`WgmmaTiming.wait` cycles.

Calibration (:func:`calibrate`) uses a documented subset of ``data/l07/wgmma_timing`` (:func:`is_calibration`:
bf16 at N = 64 and 256, latency and throughput patterns); every other record — the other N, tf32, e4m3, s8,
sparse bf16 and the group-depth patterns — is held out (:func:`h100lab.validation.l07.check_timing`).
Assumptions: one warpgroup alone on the SM; no memory stalls (operands already in shared memory); clock64
overhead folded into ``wait``. Without the dataset the defaults are priors (peak rate, guessed latency).

Measured on the H200 (data/l07/wgmma_timing, :func:`calibrated`): every dense type takes the same cycles per
m64nN wgmma — about ``N/2 + 14`` (≥ 35) back to back, i.e. the datasheet's peak rates — and a sparse one about 17
more; one wgmma waited for alone costs ~270 cycles (N ≤ 128). **Where the model misses** (held out, reported
by :func:`h100lab.validation.l07.check_timing`): the group-depth patterns with one accumulator chained across
groups — on the H200 ``wait_group 1`` or ``2`` after small groups buys little (N = 64, one wgmma per group:
~262–290 cycles per group at every depth), while the model lets the groups overlap; the mechanism (the
per-group ``wgmma.fence`` or the accumulator dependency across a commit) is not identified.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

__all__ = ["WgmmaTiming", "PRIOR", "exec_cycles", "simulate", "pattern", "predict_case", "calibrate", "promotion_cost",
           "two_level_program", "calibrated", "CALIBRATION",
           "is_calibration", "Timeline", "utilisation"]

#: dense tensor-core MACs per SM per clock (hopper-spec-facts §1.1)
RATE = {"bf16": 2048, "f16": 2048, "tf32": 1024, "e4m3": 4096, "e5m2": 4096, "s8": 4096, "u8": 4096}
_K = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}


@dataclass(frozen=True)
class WgmmaTiming:
    """Model constants (cycles): ``issue`` per wgmma; execution ``max(min_exec, slowdown·N/2 + overhead)``
    (+ ``sparse_extra`` for ``.sp``); results visible at ``max(start + latency_start, end + latency_tail)``;
    ``wait`` cost of a wait_group."""

    issue: float = 8.0
    min_exec: float = 16.0
    slowdown: float = 1.0
    overhead: float = 0.0
    sparse_extra: float = 0.0
    latency_start: float = 200.0
    latency_tail: float = 100.0
    wait: float = 20.0


PRIOR = WgmmaTiming()


def exec_cycles(atype: str, n: int, params: WgmmaTiming = PRIOR) -> float:
    """Tensor-core cycles of one m64nN wgmma of dense type ``atype`` (``sp_<t>`` for sparse: the dense cycles of the
    same N plus ``sparse_extra``)."""
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
    """Run ``program``: ("mma", atype, n) | ("commit",) | ("wait", N) | ("fence",) | ("work", cycles)."""
    t = 0.0
    tc_free = 0.0
    open_done: list[float] = []
    groups: list[float] = []        # visible time of each committed group
    spans = []
    busy = 0.0
    for op in program:
        if op[0] == "mma":
            e = exec_cycles(op[1], op[2], params)
            t += params.issue
            start = max(t, tc_free)
            end = start + e
            tc_free = end
            busy += e
            spans.append((t, start, end))
            open_done.append(max(start + params.latency_start, end + params.latency_tail))
        elif op[0] == "commit":
            groups.append(max(open_done) if open_done else t)
            open_done = []
        elif op[0] == "wait":
            n = int(op[1])
            if len(groups) > n:
                t = max(t, max(groups[:len(groups) - n]))
                groups = groups[len(groups) - n:] if n else []
            t += params.wait
        elif op[0] == "fence":
            # wgmma.fence on registers that in-flight wgmmas write, modelled as waiting for them [hypothesis;
            # not used by pattern(): the H200's throughput pattern shows no such drain]
            pend = open_done + groups
            if pend:
                t = max(t, max(pend))
        elif op[0] == "work":
            t += float(op[1])
        else:
            raise ValueError(f"unknown op {op!r}")
    return Timeline(t, busy, spans)


def pattern(atype: str, n: int, per_group: int, depth: int, iters: int) -> list[tuple]:
    """The program of ``l07_wgmma_timing.cu``: ``iters`` × (per_group wgmmas, commit, wait depth), wait 0 (its
    per-group ``wgmma.fence`` is not modelled: see the module docstring's measured miss)."""
    prog = []
    for _ in range(iters):
        prog += [("mma", atype, n)] * per_group + [("commit",), ("wait", depth)]
    return prog + [("wait", 0)]


def utilisation(atype: str, n: int, per_group: int, depth: int, iters: int = 64,
                params: WgmmaTiming = PRIOR) -> float:
    """Tensor-core busy fraction of :func:`pattern`."""
    return simulate(pattern(atype, n, per_group, depth, iters), params).utilisation


def predict_case(c: dict[str, Any], params: WgmmaTiming = PRIOR) -> float:
    """Predicted clock64 cycles of a ``l07/wgmma_timing`` case."""
    return simulate(pattern(c["type"], c["n"], c["per_group"], c["depth"], c["iters"]), params).cycles


#: the documented calibration subset: (type, N, per_group, depth)
CALIBRATION = {("bf16", 16, 16, 1), ("bf16", 64, 16, 1), ("bf16", 256, 16, 1), ("bf16", 64, 1, 0),
               ("bf16", 256, 1, 0), ("sp_bf16", 64, 16, 1)}


def is_calibration(c: dict[str, Any]) -> bool:
    """Whether a timing record belongs to :data:`CALIBRATION`: bf16 throughput at N = 16, 64, 256, bf16 latency at
    N = 64, 256, sparse bf16 throughput at N = 64. Everything else (tf32, e4m3, s8, other N, sparse at other N,
    every group-depth pattern) is held out."""
    return (c["type"], c["n"], c["per_group"], c["depth"]) in CALIBRATION


def _med(r):
    return float(np.median(r["cycles"]))


def calibrate(records: Sequence[dict[str, Any]], prior: WgmmaTiming = PRIOR) -> WgmmaTiming:
    """Fit the constants on the calibration subset (:func:`is_calibration`) of ``l07/wgmma_timing``:
    throughput per wgmma at N = 64, 256 → ``slowdown`` and ``overhead`` (a line in N/2); at N = 16 → ``min_exec``;
    sparse N = 64 → ``sparse_extra``; latency at N = 64 → ``latency_start`` (issue, wait at their priors
    [assumption]) and at N = 256 → ``latency_tail``. Without calibration records: the prior."""
    cal = {(r["type"], r["n"], r["per_group"], r["depth"]): r for r in records
           if r.get("ok", True) and r.get("cycles") and is_calibration(r)}
    if not cal:
        return prior
    p = prior

    def per(key):
        r = cal[key]
        return _med(r) / (r["iters"] * r["per_group"])
    if ("bf16", 64, 16, 1) in cal and ("bf16", 256, 16, 1) in cal:
        a, b = per(("bf16", 64, 16, 1)), per(("bf16", 256, 16, 1))
        slope = (b - a) / (128 - 32)
        p = replace(p, slowdown=slope, overhead=a - slope * 32)
    if ("bf16", 16, 16, 1) in cal:
        p = replace(p, min_exec=per(("bf16", 16, 16, 1)))
    if ("sp_bf16", 64, 16, 1) in cal:
        p = replace(p, sparse_extra=per(("sp_bf16", 64, 16, 1)) - exec_cycles("bf16", 64, p))
    if ("bf16", 64, 1, 0) in cal:
        r = cal[("bf16", 64, 1, 0)]
        p = replace(p, latency_start=_med(r) / r["iters"] - p.issue - p.wait)
    if ("bf16", 256, 1, 0) in cal:
        r = cal[("bf16", 256, 1, 0)]
        p = replace(p, latency_tail=_med(r) / r["iters"] - p.issue - p.wait - exec_cycles("bf16", 256, p))
    return p


def calibrated() -> WgmmaTiming:
    """:func:`calibrate` on ``data/l07/wgmma_timing`` when the dataset exists, else :data:`PRIOR`."""
    from .. import data
    if not data.available("l07/wgmma_timing"):
        return PRIOR
    return calibrate(data.load("l07/wgmma_timing").records)


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
