"""A hazard checker for traces of shared-memory programs: every RAW / WAR / WAW pair of accesses to the
same bytes that no synchronisation orders, with the fence or barrier that is missing.

Input: a trace in the :mod:`h100lab.sync.trace` format (from the simulator, or written by hand).
Method: vector clocks (happens-before, as in data-race detectors such as FastTrack), run over the
records in time order, with three clocks per thread:

* ``vc`` — what the thread's next access is ordered after, following PTX's synchronisation rules:
  program order; ``mbarrier.arrive`` (default ``.release``) → ``mbarrier.try_wait`` returning True
  (default ``.acquire``) on the same phase [PTX §9.7.13.15.13, §9.7.13.15.16]; ``bar.sync`` /
  ``bar.arrive`` → ``bar.sync`` of the same barrier generation [PTX §9.7.13.1, §8.9.4];
  ``barrier.cluster.arrive`` → ``.wait`` [PTX §9.7.13.3]; a bulk copy's complete-tx → the wait that
  observes its phase (the complete-tx is a release *for the copy's own accesses only*, not the
  issuer's history [PTX §8.9.1.1, §9.7.9.25.4.1]); ``cp.async.bulk.wait_group{.read}`` → the copies of
  the groups it covers [PTX §9.7.9.25.6.2]. A ``.relaxed`` arrive or wait orders nothing unless a
  ``fence.acq_rel`` follows the wait / precedes the arrive [PTX §8.8 fence patterns].
* ``pf`` — the part of ``vc`` that has passed a ``fence.proxy.async``: a generic access is visible to
  a later async-proxy access only if a proxy fence lies on the path between them [PTX §8.6,
  §9.7.9.25.2]. The completion of a bulk copy carries an implicit generic↔async proxy fence, so its
  result reaches generic loads through ``pf`` as well once its completion is observed [§9.7.9.25.2].
* ``svc`` — ``vc`` as it would be if every ``.relaxed`` arrive/wait were ``.release``/``.acquire``;
  used only to name the missing piece.

Each asynchronous copy is performed by an *async agent* that starts from the issuing thread's clocks
at the issue (so the producer's earlier wait on the "empty" barrier orders the copy after the
consumers' reads). Copies that one thread tracks with one mbarrier form one agent stream whose clock
is the barrier phase; bulk-group copies of one thread form a stream whose clock is the group index.

Model choices (documented, conservative): a proxy fence anywhere on the synchronisation path orders a
generic access with a later async access (the CUTLASS idiom — each writer fences before the barrier —
satisfies the stricter reading that the writer itself must fence); generic *reads* followed by async
writes also need the fence (PTX §8.6 asks for a proxy fence between proxies in every direction;
libraries whose consumers read through wgmma — the async proxy — need none). Scopes (``.cta`` vs
``.cluster``) are not checked.

Also reported, as kind ``INIT``: an mbarrier used by a thread whose clocks do not include the
``mbarrier.init`` (missing ``__syncthreads()`` after initialisation — seed lesson 3 §12).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable

from .trace import Record

__all__ = ["Hazard", "check", "summarize"]

_BLOCKING = ("mbarrier.try_wait", "mbarrier.test_wait", "bar.sync", "barrier.cluster.wait",
             "cp.async.bulk.wait_group")
_UNCOMMITTED = 1 << 40


@dataclass(frozen=True)
class Hazard:
    """One unordered pair of accesses: ``first`` happened earlier in the trace than ``second``."""

    kind: str        # "RAW", "WAR", "WAW" or "INIT"
    first: Record
    second: Record
    missing: str     # what would order them, in words
    count: int = 1   # how many times the same pair (same actors, ops, bytes) occurred
    fix: str = ""    # the instruction (or qualifier) that is missing, e.g. "fence.proxy.async"

    def __str__(self) -> str:
        a, b = self.first, self.second
        if self.kind == "INIT":
            return (f"INIT: {b.actor} uses mbarrier {a.label or hex(a.bar)} at {b.t0:.0f} ns ({b.op}) but "
                    f"is not ordered after its mbarrier.init by {a.actor} — missing: {self.missing}")
        where = b.where() or a.where()
        times = f" (×{self.count})" if self.count > 1 else ""
        return (f"{self.kind} on {where}: {b.actor} {b.op} at {b.t0:.0f} ns vs {a.actor} {a.op} at "
                f"{a.t0:.0f} ns{times} — missing: {self.missing}")


def _join(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if dst.get(k, -1) < v:
            dst[k] = v


class _Clocks:
    __slots__ = ("vc", "pf", "svc", "rel", "acq")

    def __init__(self, vc=None, pf=None, svc=None):
        self.vc = vc if vc is not None else {}
        self.pf = pf if pf is not None else {}
        self.svc = svc if svc is not None else {}
        self.rel = None    # snapshot published by relaxed arrives after a fence.acq_rel
        self.acq = None    # clocks seen by relaxed waits, taken by the next fence.acq_rel

    def copy(self) -> "_Clocks":
        return _Clocks(dict(self.vc), dict(self.pf), dict(self.svc))


class _Sync:
    """Clocks published into one synchronisation object instance (a barrier phase/generation)."""

    __slots__ = ("vc", "pf", "svc")

    def __init__(self):
        self.vc, self.pf, self.svc = {}, {}, {}


@dataclass
class _Access:
    actor: str
    clock: int
    proxy: str
    access: str
    rec: Record
    stream_op: Record | None = None


class _Checker:
    def __init__(self):
        self.clocks: dict[str, _Clocks] = {}
        self.sync: dict[tuple, _Sync] = {}
        self.ranges: dict[int, dict[tuple[int, int], list]] = {}   # cta -> (addr,size) -> [last_w, reads]
        self.inits: dict[tuple[int, int], tuple[str, int, Record]] = {}
        self.found: dict[tuple, Hazard] = {}
        self.init_reported: set = set()
        self.bar_names: dict[tuple[int, int], str] = {}

    # -- clocks -------------------------------------------------------------------------------
    def actor(self, name: str) -> _Clocks:
        c = self.clocks.get(name)
        if c is None:
            c = self.clocks[name] = _Clocks()
        return c

    def tick(self, name: str) -> tuple[_Clocks, int]:
        c = self.actor(name)
        v = c.vc.get(name, 0) + 1
        c.vc[name] = v
        c.svc[name] = v
        return c, v

    def obj(self, key: tuple) -> _Sync:
        s = self.sync.get(key)
        if s is None:
            s = self.sync[key] = _Sync()
        return s

    def release(self, c: _Clocks, key: tuple, sem: str) -> None:
        s = self.obj(key)
        _join(s.svc, c.svc)
        if sem == "relaxed":
            if c.rel is not None:   # fence.acq_rel earlier in program order
                _join(s.vc, c.rel[0])
                _join(s.pf, c.rel[1])
            return
        _join(s.vc, c.vc)
        _join(s.pf, c.pf)

    def acquire(self, c: _Clocks, key: tuple, sem: str) -> None:
        s = self.sync.get(key)
        if s is None:
            return
        _join(c.svc, s.svc)
        if sem == "relaxed":
            if c.acq is None:
                c.acq = ({}, {})
            _join(c.acq[0], s.vc)
            _join(c.acq[1], s.pf)
            return
        _join(c.vc, s.vc)
        _join(c.pf, s.pf)

    # -- memory -------------------------------------------------------------------------------
    def ordered(self, a: _Access, b_actor: str, b_proxy: str, bc: _Clocks) -> tuple[bool, bool, bool]:
        """(ordered, ordered_if_fenced, ordered_if_strong) for earlier access ``a`` and a new access."""
        if a.actor == b_actor and "~" not in b_actor:   # program order of one thread
            if a.proxy == b_proxy or a.proxy == "async":
                return True, True, True
            ok = bc.pf.get(a.actor, 0) >= a.clock
            return ok, True, ok
        hb = bc.vc.get(a.actor, 0) >= a.clock
        strong = bc.svc.get(a.actor, 0) >= a.clock
        if a.proxy == "generic" and b_proxy == "async":
            return bc.pf.get(a.actor, 0) >= a.clock, hb, strong
        return hb, hb, strong

    def access(self, rec: Record, actor: str, clock: int, bc: _Clocks) -> None:
        if rec.addr < 0 or rec.size <= 0 or rec.access not in ("r", "w"):
            return
        lo, hi = rec.addr, rec.addr + rec.size
        table = self.ranges.setdefault(rec.cta, {})
        new = _Access(actor, clock, rec.proxy or "generic", rec.access, rec)
        for (a0, n), (last_w, reads) in table.items():
            if a0 >= hi or lo >= a0 + n:
                continue
            if last_w is not None:
                self.pair(last_w, new, bc)
            if rec.access == "w":
                for r in reads.values():
                    self.pair(r, new, bc)
        slot = table.get((lo, rec.size))
        if slot is None:
            slot = table[(lo, rec.size)] = [None, {}]
        if rec.access == "w":
            slot[0] = new
            slot[1] = {}
        else:
            slot[1][actor] = new

    def pair(self, a: _Access, b: _Access, bc: _Clocks) -> None:
        if a.access == "r" and b.access == "r":
            return
        ok, if_fenced, if_strong = self.ordered(a, b.actor, b.proxy, bc)
        if ok:
            return
        kind = {"wr": "RAW", "rw": "WAR", "ww": "WAW"}[a.access + b.access]
        missing, fix = self.diagnose(a, b, if_fenced, if_strong)
        ra, rb = a.rec, b.rec
        key = (kind, ra.actor, ra.op, rb.actor, rb.op, ra.cta, min(ra.addr, rb.addr), missing)
        h = self.found.get(key)
        self.found[key] = Hazard(kind, ra, rb, missing, 1, fix) if h is None else Hazard(
            kind, h.first, h.second, missing, h.count + 1, fix)

    def bar_name(self, rec: Record) -> str:
        return self.bar_names.get((rec.cta, rec.bar), f"mbarrier@{rec.bar:#x}")

    def diagnose(self, a: _Access, b: _Access, if_fenced: bool, if_strong: bool) -> tuple[str, str]:
        """(the fix in words, the missing instruction or qualifier)."""
        ra, rb = a.rec, b.rec
        if if_fenced and a.proxy == "generic" and b.proxy == "async":
            return (f"fence.proxy.async: {ra.actor}'s generic {ra.op} must pass a proxy fence before the "
                    f"synchronisation that orders it before the async-proxy {rb.op}", "fence.proxy.async")
        if if_strong:
            return ("release/acquire: an mbarrier.arrive or wait on the path is .relaxed — use the default "
                    ".release / .acquire semantics (or fence.acq_rel beside the relaxed operation)", ".release")
        a_copy = ra.op.startswith("cp.async.bulk") and ra.bar >= 0
        b_copy = rb.op.startswith("cp.async.bulk") and rb.bar >= 0
        if a_copy and b_copy and ra.access == rb.access == "w":
            return (f"the completion of the earlier copy (phase {ra.phase} of {self.bar_name(ra)}) must be "
                    f"observed by a wait whose thread then hands the buffer back to {rb.actor} before the "
                    f"refill (the consumer's try_wait on {self.bar_name(ra)}, then its arrive on 'empty')",
                    "mbarrier.try_wait.parity")
        if a_copy and ra.access == "w":
            return (f"mbarrier.try_wait.parity on {self.bar_name(ra)} (phase {ra.phase}, parity "
                    f"{ra.phase & 1}) by {rb.actor} before its {rb.op}", "mbarrier.try_wait.parity")
        if b_copy and rb.access == "w":
            fence = " (after a fence.proxy.async, since its reads were generic)" if a.proxy == "generic" else ""
            return (f"{ra.actor} must mbarrier.arrive on an 'empty' barrier after its last read{fence}, and "
                    f"{rb.actor} must wait on that barrier before issuing {rb.op}", "mbarrier.try_wait.parity")
        if ra.op.startswith("cp.async.bulk") and ra.access == "r":
            return (f"cp.async.bulk.wait_group.read by {ra.actor} before {rb.actor} overwrites the source"
                    + ("" if ra.actor == rb.actor else ", then a barrier from it to the writer"),
                    "cp.async.bulk.wait_group.read")
        if a.proxy == "generic" and b.proxy == "async" and ra.access == "w":
            return (f"a barrier (e.g. bar.sync) between {ra.actor}'s {ra.op} and {rb.actor}'s {rb.op}, with "
                    f"fence.proxy.async before it", "bar.sync")
        return (f"a barrier between {ra.actor} and {rb.actor} (bar.sync, or mbarrier.arrive → "
                f"mbarrier.try_wait)", "bar.sync")

    def check_init(self, rec: Record, c: _Clocks, by: str) -> None:
        key = (rec.cta, rec.bar)
        init = self.inits.get(key)
        if init is None:
            return
        who, clock, irec = init
        if who == by or c.vc.get(who, 0) >= clock:
            return
        if (key, by) in self.init_reported:
            return
        self.init_reported.add((key, by))
        fix = "bar.sync 0 (__syncthreads()) after mbarrier.init, before other threads use the barrier"
        self.found[("INIT", key, by)] = Hazard("INIT", irec, rec, fix, 1, "bar.sync")

    # -- driver -------------------------------------------------------------------------------
    def run(self, trace: Iterable[Record]) -> list[Hazard]:
        per_actor: dict[str, list[Record]] = {}
        for _, r in sorted(enumerate(trace), key=lambda x: (x[1].t0, x[0])):
            per_actor.setdefault(r.actor, []).append(r)
        heap: list = []
        seq = 0
        pos = {a: 0 for a in per_actor}

        def push(t, rank, kind, actor, rec):
            nonlocal seq
            seq += 1
            heapq.heappush(heap, (t, rank, seq, kind, actor, rec))

        for a, recs in per_actor.items():
            push(recs[0].t0, 1, "begin", a, recs[0])
        while heap:
            t, _, _, kind, actor, rec = heapq.heappop(heap)
            if kind == "done":
                self.complete(rec, actor)
                continue
            if kind == "begin":
                blocking = self.begin(rec, actor)
                if blocking:
                    push(rec.t1, 2, "end", actor, rec)
                    continue
                if rec.bar >= 0 and rec.op.startswith("cp.async.bulk"):
                    push(rec.t1, 0, "done", actor, rec)
            else:
                self.end(rec, actor)
            pos[actor] += 1
            if pos[actor] < len(per_actor[actor]):
                nxt = per_actor[actor][pos[actor]]
                push(max(nxt.t0, t), 1, "begin", actor, nxt)
        prio = {"INIT": 0, "RAW": 0, "WAR": 0, "WAW": 1}     # a WAW beside a RAW/WAR is the lesser news
        return sorted(self.found.values(), key=lambda h: (h.second.t0, prio[h.kind], h.first.t0))

    def stream(self, rec: Record, actor: str) -> tuple[str, int]:
        if rec.bar >= 0:
            return f"{actor}~async@{rec.cta}:{rec.bar:#x}", rec.phase + 1
        return f"{actor}~bulk", (rec.group + 1) if rec.group >= 0 else _UNCOMMITTED

    def begin(self, rec: Record, actor: str) -> bool:
        op = rec.op
        c, clock = self.tick(actor)
        if op.startswith("cp.async.bulk") and "wait_group" not in op and "commit" not in op:
            if rec.bar >= 0:
                self.check_init(rec, c, actor)
            name, sclock = self.stream(rec, actor)
            agent = c.copy()
            self.access(rec, name, sclock, agent)
            return False
        if op == "mbarrier.init":
            self.inits[(rec.cta, rec.bar)] = (actor, clock, rec)
            if rec.label:
                self.bar_names[(rec.cta, rec.bar)] = rec.label
            return False
        if op.startswith("mbarrier."):
            self.check_init(rec, c, actor)
            if op.startswith(("mbarrier.arrive",)):
                self.release(c, ("mbar", rec.cta, rec.bar, rec.phase), rec.sem or "release")
                return False
            if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
                return True
            return False
        if op == "fence.proxy.async":
            c.pf = dict(c.vc)
            return False
        if op.startswith("fence.acq_rel") or op.startswith("fence.sc"):
            if c.acq is not None:
                _join(c.vc, c.acq[0])
                _join(c.pf, c.acq[1])
                c.acq = None
            c.rel = (dict(c.vc), dict(c.pf))
            return False
        if op in ("bar.sync", "bar.arrive"):
            self.release(c, ("bar", rec.cta, rec.bar, rec.phase), "release")
            return op == "bar.sync"
        if op == "barrier.cluster.arrive":
            self.release(c, ("cluster", rec.phase), rec.sem or "release")
            return False
        if op.startswith(_BLOCKING):
            return True
        self.access(rec, actor, clock, c)
        return False

    def end(self, rec: Record, actor: str) -> None:
        c = self.actor(actor)
        op = rec.op
        if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
            if rec.phase >= 0:
                self.acquire(c, ("mbar", rec.cta, rec.bar, rec.phase), rec.sem or "acquire")
        elif op == "bar.sync":
            self.acquire(c, ("bar", rec.cta, rec.bar, rec.phase), "acquire")
        elif op == "barrier.cluster.wait":
            self.acquire(c, ("cluster", rec.phase), rec.sem or "acquire")
        elif op.startswith("cp.async.bulk.wait_group"):
            if rec.group >= 0:
                s = {f"{actor}~bulk": rec.group + 1}
                _join(c.vc, s)
                _join(c.pf, s)
                _join(c.svc, s)

    def complete(self, rec: Record, actor: str) -> None:
        """A copy finished: its mbarrier complete-tx publishes the copy's own accesses (release,
        with the implicit proxy fence)."""
        if rec.bar < 0:
            return
        name, sclock = self.stream(rec, actor)
        s = self.obj(("mbar", rec.cta, rec.bar, rec.phase))
        for d in (s.vc, s.pf, s.svc):
            if d.get(name, -1) < sclock:
                d[name] = sclock


def check(trace: Iterable[Record]) -> list[Hazard]:
    """All hazards of a trace (see the module docstring for the rules), ordered by time of the later
    access. Each distinct pair (same actors, ops and bytes, same fix) is reported once with a count."""
    return _Checker().run(list(trace))


def summarize(hazards: list[Hazard]) -> str:
    """One line per hazard, or "no hazards"."""
    return "\n".join(str(h) for h in hazards) if hazards else "no hazards"
