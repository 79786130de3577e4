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
overhead folded into ``wait``. Until the dataset exists the defaults are priors (peak rate, guessed latency).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

__all__ = ["WgmmaTiming", "PRIOR", "exec_cycles", "simulate", "pattern", "predict_case", "calibrate", "promotion_cost",
           "two_level_program",
           "is_calibration", "Timeline", "utilisation"]

#: dense tensor-core MACs per SM per clock (hopper-spec-facts §1.1)
RATE = {"bf16": 2048, "f16": 2048, "tf32": 1024, "e4m3": 4096, "e5m2": 4096, "s8": 4096, "u8": 4096}
_K = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}


@dataclass(frozen=True)
class WgmmaTiming:
    """Model constants (cycles): ``issue`` per wgmma, ``min_exec`` least execution time, ``slowdown`` on the
    peak rate, ``latency`` from the end of execution to visible results, ``wait`` cost of a wait_group."""

    issue: float = 8.0
    min_exec: float = 16.0
    slowdown: float = 1.0
    latency: float = 100.0
    wait: float = 20.0


PRIOR = WgmmaTiming()


def exec_cycles(atype: str, n: int, params: WgmmaTiming = PRIOR) -> float:
    """Tensor-core cycles of one m64nN wgmma of dense type ``atype`` (``sp_<t>`` for sparse: the same cycles)."""
    t = atype[3:] if atype.startswith("sp_") else atype
    if t not in RATE:
        raise ValueError(f"type {atype!r}: one of {sorted(RATE)} (or sp_<type>)")
    macs = 64 * n * _K[t]
    return max(params.min_exec, params.slowdown * macs / RATE[t])


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
    """Run ``program``: ("mma", atype, n) | ("commit",) | ("wait", N) | ("work", cycles)."""
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
            open_done.append(end + params.latency)
        elif op[0] == "commit":
            groups.append(max(open_done) if open_done else t)
            open_done = []
        elif op[0] == "wait":
            n = int(op[1])
            if len(groups) > n:
                t = max(t, max(groups[:len(groups) - n]))
                groups = groups[len(groups) - n:] if n else []
            t += params.wait
        elif op[0] == "work":
            t += float(op[1])
        else:
            raise ValueError(f"unknown op {op!r}")
    return Timeline(t, busy, spans)


def pattern(atype: str, n: int, per_group: int, depth: int, iters: int) -> list[tuple]:
    """The program of ``l07_wgmma_timing.cu``: ``iters`` × (per_group wgmmas, commit, wait depth), wait 0."""
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


def is_calibration(c: dict[str, Any]) -> bool:
    """The documented calibration subset: bf16, N ∈ {64, 256}, the latency (1, 0) and throughput (16, 1) patterns."""
    return c["type"] == "bf16" and c["n"] in (64, 256) and (c["per_group"], c["depth"]) in ((1, 0), (16, 1))


def calibrate(records: Sequence[dict[str, Any]], prior: WgmmaTiming = PRIOR) -> WgmmaTiming:
    """Fit ``slowdown`` (throughput cycles per wgmma at N = 256), then ``latency`` (latency pattern), keeping
    ``issue``, ``min_exec`` and ``wait`` at their priors [assumption]; returns the prior without calibration data."""
    cal = [r for r in records if r.get("ok", True) and is_calibration(r) and r.get("cycles")]
    if not cal:
        return prior
    p = prior
    thr = [r for r in cal if r["per_group"] == 16]
    if thr:
        per = [float(np.median(r["cycles"])) / (r["iters"] * r["per_group"]) for r in thr if r["n"] == 256] or \
              [float(np.median(r["cycles"])) / (r["iters"] * r["per_group"]) for r in thr]
        n = 256 if any(r["n"] == 256 for r in thr) else thr[0]["n"]
        p = replace(p, slowdown=max(0.1, float(np.median(per)) / (n / 2)))
    lat = [r for r in cal if r["per_group"] == 1]
    if lat:
        # cycles/iter = issue + exec + latency + wait  (one wgmma per group, wait 0)
        ls = [float(np.median(r["cycles"])) / r["iters"] - p.issue - exec_cycles("bf16", r["n"], p) - p.wait
              for r in lat]
        p = replace(p, latency=max(0.0, float(np.median(ls))))
    return p


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
