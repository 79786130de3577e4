"""Copy and compute, in turn or overlapped: the schedule behind lesson 1's picture of asynchrony.

A kernel processes ``tiles`` tiles; each must be copied in (``copy_ns``: the latency of one copy, issue to
arrival) before it is computed on (``compute_ns``). With one buffer the two take turns — the classic
synchronous loop, ``copy_ns + compute_ns`` per tile. With ``buffers`` ≥ 2 the copy of a later tile runs while
an earlier one is computed (the producer may run ``buffers`` − 1 tiles ahead), so the steady state costs
``max(compute_ns, (copy_ns + compute_ns) / buffers)`` per tile: the copy is hidden once
``buffers ≥ (copy_ns + compute_ns) / compute_ns`` (:func:`h100lab.sim.pipeline.buffers_to_hide` with no
transfer term, the same latency-hiding rule lesson 3 derives).

The records use the :mod:`h100lab.sync.trace` format (lane ``"copy engine"`` with op ``cp.async.bulk``, lane
``"SM"`` with op ``compute``), so :func:`h100lab.viz.timeline.gantt` draws them. The model has no bandwidth
term and no issue cost: it is the picture, not the timing model (that is :mod:`h100lab.sim.pipeline`).
"""
from __future__ import annotations

from ..sync.trace import Record

__all__ = ["schedule", "period", "makespan"]


def _check(copy_ns: float, compute_ns: float, tiles: int, buffers: int) -> None:
    if copy_ns < 0 or compute_ns < 0 or copy_ns + compute_ns <= 0:
        raise ValueError(f"copy_ns={copy_ns}, compute_ns={compute_ns}: non-negative, not both zero")
    if tiles < 1 or buffers < 1:
        raise ValueError(f"tiles={tiles}, buffers={buffers}: at least one of each")


def schedule(copy_ns: float, compute_ns: float, tiles: int, buffers: int = 1) -> list[Record]:
    """The trace of ``tiles`` copy/compute pairs with ``buffers`` buffers: copy ``i`` may start once copy
    ``i − 1`` has been issued and buffer ``i mod buffers`` is free (compute ``i − buffers`` has finished);
    compute ``i`` starts when copy ``i`` has arrived and compute ``i − 1`` has finished."""
    _check(copy_ns, compute_ns, tiles, buffers)
    out: list[Record] = []
    copy_end: list[float] = []
    comp_end: list[float] = []
    last_issue = 0.0
    for i in range(tiles):
        free = comp_end[i - buffers] if i >= buffers else 0.0
        start = max(last_issue, free)
        last_issue = start
        copy_end.append(start + copy_ns)
        out.append(Record(start, start + copy_ns, "producer", "cp.async.bulk", lane="copy engine", label=f"copy {i}"))
        c0 = max(copy_end[i], comp_end[i - 1] if i else 0.0)
        comp_end.append(c0 + compute_ns)
        out.append(Record(c0, c0 + compute_ns, "consumer", "compute", lane="SM", label=f"compute {i}"))
    return out


def period(copy_ns: float, compute_ns: float, buffers: int = 1) -> float:
    """Steady-state time per tile: ``copy + compute`` with one buffer, ``max(compute, (copy + compute) /
    buffers)`` with more."""
    _check(copy_ns, compute_ns, 1, buffers)
    return max(compute_ns, (copy_ns + compute_ns) / buffers)


def makespan(trace: list[Record]) -> float:
    """The time from the first record's start to the last record's end."""
    if not trace:
        return 0.0
    return max(r.t1 for r in trace) - min(r.t0 for r in trace)
