"""The one trace record format shared by the simulator (:mod:`h100lab.sim`), the hazard checker
(:mod:`h100lab.sync.hazards`) and the timeline plots (:mod:`h100lab.viz.timeline`).

A trace is a list of :class:`Record` — one per executed instruction or asynchronous operation::

    field   type   meaning
    ------  -----  -------------------------------------------------------------------------------
    t0      float  start, ns: when the instruction issued (for a wait: when waiting began)
    t1      float  end, ns: when it finished (for an async op: when its data landed / it completed;
                   for a wait: when it returned True)
    actor   str    the thread, warp or warpgroup that executed the instruction ("cta0.producer");
                   for an async operation, the thread that issued it
    op      str    the PTX mnemonic (see OPS below)
    lane    str    the timeline row the interval is drawn on (usually actor; "cta0.tma" for copies)
    proxy   str    "generic" or "async" for a shared-memory access, "" otherwise
    access  str    "r", "w" or "" — how the op touches shared memory [addr, addr+size)
    addr    int    shared-memory byte address of the access, −1 if none
    size    int    bytes accessed (0 if none)
    bar     int    mbarrier address (mbarrier ops, mbarrier-tracked copies), named-barrier id (bar.*),
                   0 for barrier.cluster; −1 if none
    phase   int    mbarrier phase number (0, 1, 2, … — not the parity) the arrive/complete-tx went
                   into or the wait observed completing; named/cluster barrier generation; −1 if none
    sem     str    "release", "acquire", "relaxed" or "" (default semantics of the op)
    group   int    bulk async-group index of a bulk_group copy (per issuing thread, 0, 1, …); for
                   cp.async.bulk.wait_group the newest group it guarantees complete; −1 if none
    cta     int    rank of the CTA whose shared memory ``addr`` / ``bar`` belong to
    label   str    free text for plots ("stage 2", "k=5")

OPS understood by the hazard checker (others are drawn but ignored):
``ld.shared`` / ``st.shared`` / ``compute`` / ``wgmma`` (memory accesses through ``proxy``),
``mbarrier.init``, ``mbarrier.inval``, ``mbarrier.arrive`` (and ``.expect_tx`` / ``arrive_drop``
variants: any op starting with ``mbarrier.arrive``), ``mbarrier.expect_tx``, ``mbarrier.complete_tx``,
``mbarrier.try_wait`` / ``mbarrier.test_wait`` (recorded when they returned True),
``cp.async.bulk`` (any op starting with it that carries ``bar`` ≥ 0: mbarrier completion; or
``group`` ≥ 0: bulk-group completion), ``cp.async.bulk.commit_group``, ``cp.async.bulk.wait_group``
(``.read``), ``fence.proxy.async``, ``fence.acq_rel``, ``bar.sync``, ``bar.arrive``,
``barrier.cluster.arrive``, ``barrier.cluster.wait``.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

__all__ = ["Record", "record", "lanes", "busy_time", "as_dicts"]


class Record(NamedTuple):
    """One executed operation (the field table is in this module's docstring)."""

    t0: float
    t1: float
    actor: str
    op: str
    lane: str = ""
    proxy: str = ""
    access: str = ""
    addr: int = -1
    size: int = 0
    bar: int = -1
    phase: int = -1
    sem: str = ""
    group: int = -1
    cta: int = 0
    label: str = ""

    @property
    def duration(self) -> float:
        """``t1 - t0`` in ns."""
        return self.t1 - self.t0

    def where(self) -> str:
        """The accessed shared-memory range, e.g. ``smem[0x0400, +4096)``."""
        return f"cta{self.cta} smem[{self.addr:#06x}, +{self.size})" if self.addr >= 0 else ""

    def __str__(self) -> str:
        s = f"{self.t0:9.1f}–{self.t1:9.1f} ns  {self.actor:>16}  {self.op}"
        if self.addr >= 0:
            s += f" {self.access}:{self.where()}"
        if self.bar >= 0:
            s += f" bar={self.bar:#x} ph={self.phase}"
        return s


def record(t0: float, t1: float, actor: str, op: str, **kw) -> Record:
    """Make a record; ``lane`` defaults to ``actor``."""
    kw.setdefault("lane", actor)
    return Record(float(t0), float(t1), actor, op, **kw)


def lanes(trace: Iterable[Record]) -> list[str]:
    """The distinct lanes of a trace in order of first appearance."""
    seen: dict[str, None] = {}
    for r in trace:
        seen.setdefault(r.lane or r.actor, None)
    return list(seen)


def busy_time(trace: Iterable[Record], lane: str, ops: tuple[str, ...] | None = None,
              t0: float | None = None, t1: float | None = None) -> float:
    """Total time (ns) during which ``lane`` is covered by at least one record (optionally only
    records whose op starts with one of ``ops``), clipped to ``[t0, t1]``. Overlaps count once."""
    iv = sorted((r.t0, r.t1) for r in trace
                if (r.lane or r.actor) == lane and (ops is None or r.op.startswith(ops)))
    total, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if t0 is not None:
            s = max(s, t0)
        if t1 is not None:
            e = min(e, t1)
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def as_dicts(trace: Iterable[Record]) -> list[dict]:
    """Plain dicts (e.g. for JSON)."""
    return [r._asdict() for r in trace]
