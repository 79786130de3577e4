"""Resources of the machine model: units with a bandwidth that serve requests in FIFO order.

A :class:`Pipe` is a server with a bandwidth (units per ns — bytes for the TMA unit, LSUs and HBM,
multiply-accumulates for the tensor cores). A request of ``amount`` units that arrives at ``t``
starts when the pipe is free, occupies it for ``amount / bandwidth`` ns, and the caller adds the
operation's fixed latency on top: ``done = start + amount/bandwidth + latency``. Latency is
pipelined (many requests can be in flight); bandwidth is not (requests queue). This is the
latency–bandwidth ("LogP-style") model; its assumption is FIFO service, not processor sharing.

A request that crosses several pipes (an SM's TMA unit, then the GPU's HBM) reserves all of them
for the same start time and takes as long as the slowest (:func:`reserve_path`) — a cut-through model.

Pipes keep their busy time, so ``pipe.utilization(t)`` is the achieved fraction of peak.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["Pipe", "reserve_path"]


class Pipe:
    """A FIFO server with ``bandwidth`` units/ns. ``name`` labels it in traces and reports."""

    __slots__ = ("name", "bandwidth", "unit", "free_at", "busy", "served")

    def __init__(self, name: str, bandwidth: float, unit: str = "B"):
        if not bandwidth > 0:
            raise ValueError(f"pipe {name!r}: bandwidth must be positive, got {bandwidth}")
        self.name = name
        self.bandwidth = float(bandwidth)
        self.unit = unit
        self.free_at = 0.0
        self.busy = 0.0
        self.served = 0.0

    def __repr__(self) -> str:
        return f"Pipe({self.name!r}, {self.bandwidth:g} {self.unit}/ns)"

    def reserve(self, t: float, amount: float) -> tuple[float, float]:
        """Serve ``amount`` units arriving at ``t``: returns ``(start, finish)`` of its service."""
        if amount < 0:
            raise ValueError(f"pipe {self.name!r}: negative amount {amount}")
        start = t if t > self.free_at else self.free_at
        dur = amount / self.bandwidth
        self.free_at = start + dur
        self.busy += dur
        self.served += amount
        return start, start + dur

    def utilization(self, elapsed: float) -> float:
        """Busy time over ``elapsed`` ns (0 … 1)."""
        return self.busy / elapsed if elapsed > 0 else 0.0


def reserve_path(pipes: Sequence[Pipe], t: float, amount: float) -> tuple[float, float]:
    """Reserve ``amount`` on every pipe of a path at one common start (the latest free time among
    them); the transfer lasts ``amount / min(bandwidth)``. Returns ``(start, finish)``."""
    if len(pipes) == 2:                       # the bulk-copy path (TMA unit, memory slice): no loops
        a, b = pipes
        start = t
        if a.free_at > start:
            start = a.free_at
        if b.free_at > start:
            start = b.free_at
        da, db = amount / a.bandwidth, amount / b.bandwidth
        a.free_at = start + da
        a.busy += da
        a.served += amount
        b.free_at = start + db
        b.busy += db
        b.served += amount
        return start, start + amount / (b.bandwidth if b.bandwidth < a.bandwidth else a.bandwidth)
    start = t
    for p in pipes:
        if p.free_at > start:
            start = p.free_at
    slowest = min(p.bandwidth for p in pipes)
    for p in pipes:
        dur = amount / p.bandwidth
        p.free_at = start + dur
        p.busy += dur
        p.served += amount
    return start, start + amount / slowest
