"""Distributed shared memory (DSMEM): one cluster's shared memories, ``mapa``, loads/stores/atomics, and
``barrier.cluster`` — a functional model that detects the races a missing cluster barrier causes.

Rules [CPG §6.2.5 #distributed-shared-memory; PTX §9.7.9.23 #data-movement-and-conversion-instructions-mapa,
``getctarank``; PTX §9.7.13.3 #parallel-synchronization-and-communication-instructions-barrier-cluster;
hopper-spec-facts §12]:

* every CTA of a cluster keeps its own shared memory; DSMEM is their union, addressed in the
  ``.shared::cluster`` state space. ``mapa.shared::cluster d, a, rank`` maps an address ``a`` of the
  executing CTA's shared memory to the same offset in CTA ``rank`` — a **rank** (``%cluster_ctarank``),
  not a block id; ``getctarank`` tells which rank owns an address;
* ``ld``/``st``/``atom`` with ``.shared::cluster`` work on any CTA of the cluster;
* the target CTA must be running: a CTA must not touch a peer's shared memory before the peer has
  started (synchronise the cluster first, ``cluster.sync()`` = ``barrier.cluster.arrive`` + ``wait``),
  nor after the peer has exited (synchronise before exiting);
* ``barrier.cluster.arrive`` marks a thread's arrival without waiting; ``barrier.cluster.wait`` waits until
  every non-exited thread of the cluster has arrived; each thread arrives once per phase, and the barrier
  re-arms itself. Default semantics ``.release`` / ``.acquire``: writes before the arrive are visible after
  the wait.

State is plain: ``mem`` is a ``(cluster_size, 0x400 + smem_bytes)`` ``np.uint8`` array, one row per CTA's
shared-memory slot; each operation is a method taking the executing rank and the operands. Shared
addresses are the H200's ([HW], :mod:`h100lab.memory.spaces`): byte ``o`` of CTA ``r`` is
``(r << 24) | o`` — in ``.shared::cluster`` and, for the CTA itself, in ``.shared::cta`` alike — and a
CTA's variables start at ``o = 0x400``, after the 1 KB the system reserves per block [CPG §20.8.3].
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..memory.spaces import SHARED_RESERVED, cluster_address, split_cluster_address
from ..ptx.types import decode, encode, ptx_type

__all__ = [
    "DsmemError", "RankError", "PeerNotRunning", "SharedAddressError", "BarrierError", "NOT_STARTED", "RUNNING",
    "EXITED", "ClusterBarrier", "ClusterSharedMemory", "StepEvent", "RingTrace", "ring_exchange",
]

NOT_STARTED, RUNNING, EXITED = "not started", "running", "exited"


class DsmemError(ValueError):
    """A distributed-shared-memory operation breaks a rule (the message names it)."""


class RankError(DsmemError):
    """A rank outside ``0 <= rank < %cluster_nctarank``."""


class PeerNotRunning(DsmemError):
    """An access to the shared memory of a CTA that has not started or has already exited."""

    def __init__(self, msg: str, target: int, state: str):
        super().__init__(msg)
        self.target, self.state = target, state


class SharedAddressError(DsmemError):
    """A shared address outside the CTA's shared memory, in its reserved first 1 KB, or not aligned to the
    access size."""


class BarrierError(DsmemError):
    """``barrier.cluster`` misuse: a second arrive in one phase, a wait without an arrive, a deadlock."""


class ClusterBarrier:
    """The cluster's hardware barrier (``barrier.cluster``) [PTX §9.7.13.3]: counts the arrivals of the
    cluster's threads; a phase completes when every non-exited thread has arrived, then re-arms."""

    def __init__(self, cluster_size: int, threads_per_cta: int = 1):
        self.cluster_size, self.threads_per_cta = cluster_size, threads_per_cta
        self.phase = 0
        self.arrived: set[tuple[int, int]] = set()
        self.exited: set[tuple[int, int]] = set()
        self.pending: dict[tuple[int, int], int] = {}   # thread -> phase it arrived in, until its wait

    def _thread(self, rank: int, tid: int) -> tuple[int, int]:
        if not 0 <= rank < self.cluster_size:
            raise RankError(f"rank {rank} is outside the cluster (0 <= rank < {self.cluster_size})")
        if not 0 <= tid < self.threads_per_cta:
            raise BarrierError(f"thread {tid} is outside the CTA ({self.threads_per_cta} threads)")
        if (rank, tid) in self.exited:
            raise BarrierError(f"thread {tid} of CTA {rank} has exited")
        return (rank, tid)

    @property
    def expected(self) -> int:
        """Threads the current phase waits for: every thread of the cluster that has not exited."""
        return self.cluster_size * self.threads_per_cta - len(self.exited)

    def _maybe_complete(self) -> None:
        if self.arrived and len(self.arrived - self.exited) >= self.expected:
            self.phase += 1
            self.arrived.clear()

    def arrive(self, rank: int, tid: int = 0) -> None:
        """``barrier.cluster.arrive``: record the thread's arrival, without waiting."""
        t = self._thread(rank, tid)
        if t in self.pending:
            raise BarrierError(f"thread {tid} of CTA {rank} arrives twice in one phase: each thread arrives exactly "
                               "once per phase and must wait before arriving again [PTX barrier.cluster]")
        self.arrived.add(t)
        self.pending[t] = self.phase
        self._maybe_complete()

    def test_wait(self, rank: int, tid: int = 0) -> bool:
        """Whether ``barrier.cluster.wait`` would return now (the thread's phase has completed)."""
        t = self._thread(rank, tid)
        if t not in self.pending:
            raise BarrierError(f"thread {tid} of CTA {rank} waits without having arrived: it would wait for its own "
                               "arrival forever (barrier.cluster.wait needs a prior arrive)")
        return self.phase > self.pending[t]

    def wait(self, rank: int, tid: int = 0) -> bool:
        """``barrier.cluster.wait``: ``True`` and consume the arrival if the phase completed, ``False`` if the
        thread must keep waiting."""
        if self.test_wait(rank, tid):
            del self.pending[(rank, tid)]
            return True
        return False

    def thread_exit(self, rank: int, tid: int = 0) -> None:
        """An exited thread no longer counts; the phase may complete without it."""
        t = self._thread(rank, tid)
        self.exited.add(t)
        self.pending.pop(t, None)
        self.arrived.discard(t)
        self._maybe_complete()


_ATOM_OPS = {
    "add": lambda old, v: old + v, "min": min, "max": max, "exch": lambda old, v: v,
    "and": lambda old, v: old & v, "or": lambda old, v: old | v, "xor": lambda old, v: old ^ v,
}


class ClusterSharedMemory:
    """The shared memories of one cluster, their CTAs' run states, and the cluster barrier.

    ``cluster_size`` CTAs (ranks ``0 … cluster_size−1``), each with ``smem_bytes`` bytes of shared memory for
    its variables (window offsets ``0x400 … 0x400 + smem_bytes``) and ``threads_per_cta`` threads for the
    barrier. Every CTA starts ``not started``.
    """

    def __init__(self, cluster_size: int, smem_bytes: int = 1024, threads_per_cta: int = 1):
        if not 1 <= cluster_size <= 16:
            raise RankError(f"a cluster has 1 to 16 CTAs on sm_90, got {cluster_size}")
        if not 0 < smem_bytes <= 232448:
            raise SharedAddressError(f"shared memory per CTA is 1 .. 232448 B (227 KB), got {smem_bytes}")
        self.cluster_size, self.smem_bytes = cluster_size, smem_bytes
        self.mem = np.zeros((cluster_size, SHARED_RESERVED + smem_bytes), dtype=np.uint8)
        self.state = [NOT_STARTED] * cluster_size
        self.barrier = ClusterBarrier(cluster_size, threads_per_cta)

    # -- CTA lifetime ------------------------------------------------------------------------------
    def _rank(self, rank: int, what: str = "rank") -> int:
        rank = operator.index(rank)
        if not 0 <= rank < self.cluster_size:
            raise RankError(f"{what} {rank} is outside the cluster: 0 <= rank < %cluster_nctarank = {self.cluster_size}")
        return rank

    def start(self, rank: int) -> None:
        r = self._rank(rank)
        if self.state[r] != NOT_STARTED:
            raise DsmemError(f"CTA {r} has already started")
        self.state[r] = RUNNING

    def exit(self, rank: int) -> None:
        r = self._rank(rank)
        if self.state[r] != RUNNING:
            raise DsmemError(f"CTA {r} is {self.state[r]}, it cannot exit")
        self.state[r] = EXITED
        for t in range(self.barrier.threads_per_cta):
            if (r, t) not in self.barrier.exited:
                self.barrier.thread_exit(r, t)

    def _running(self, rank: int) -> int:
        r = self._rank(rank, "executing rank")
        if self.state[r] != RUNNING:
            raise DsmemError(f"CTA {r} is {self.state[r]}: only a running CTA executes instructions")
        return r

    # -- addresses ---------------------------------------------------------------------------------
    def address(self, rank: int, offset: int = SHARED_RESERVED) -> int:
        """The shared address of window offset ``offset`` (default ``0x400``: the first variable) of CTA
        ``rank`` — what ``cvta.to.shared`` of that variable returns in that CTA ([HW]): ``(rank << 24) | offset``."""
        return cluster_address(self._rank(rank), offset, self.cluster_size)

    def _window(self, addr: int, what: str) -> tuple[int, int]:
        owner, off = split_cluster_address(addr)
        t = self._rank(owner, f"{what}: address {addr:#x} names rank")
        if off < SHARED_RESERVED:
            raise SharedAddressError(f"{what}: offset {off:#x} is in the first {SHARED_RESERVED} B of the CTA's "
                                     f"shared memory, which the system reserves per block [CPG §20.8.3]; "
                                     f"variables start at {SHARED_RESERVED:#x}")
        if off >= SHARED_RESERVED + self.smem_bytes:
            raise SharedAddressError(f"{what}: offset {off:#x} is beyond CTA {t}'s {self.smem_bytes} B of shared "
                                     f"memory (window offsets {SHARED_RESERVED:#x} .. "
                                     f"{SHARED_RESERVED + self.smem_bytes:#x})")
        return t, off

    def mapa(self, rank: int, addr: int, target: int) -> int:
        """``mapa.shared::cluster.u32 d, addr, target``: the ``.shared::cluster`` address of the same offset in
        CTA ``target`` [PTX §9.7.9.23] — on an H200 the rank bits replaced ([HW]). ``addr`` must be an address
        of the executing CTA's shared memory."""
        r = self._running(rank)
        t = self._rank(target, "mapa target rank")
        owner, off = self._window(addr, "mapa")
        if owner != r:
            raise SharedAddressError(f"mapa's source {addr:#x} belongs to CTA {owner}, not to the executing CTA {r}; "
                                     "mapa maps an address of the executing CTA [PTX mapa]")
        return cluster_address(t, off, self.cluster_size)

    def getctarank(self, rank: int, addr: int) -> int:
        """``getctarank.shared::cluster.u32 d, addr``: the rank whose shared memory ``addr`` points into."""
        self._running(rank)
        return self._window(addr, "getctarank")[0]

    def _resolve(self, rank: int, addr: int, nbytes: int, op: str) -> tuple[int, int]:
        r = self._running(rank)
        addr = operator.index(addr)
        t, off = self._window(addr, op)
        if off % nbytes:
            raise SharedAddressError(f"{op}: address {addr:#x} is not aligned to the {nbytes}-byte access size "
                                     "(shared-memory accesses are naturally aligned) [PTX §6.4.1 addresses]")
        if off + nbytes > SHARED_RESERVED + self.smem_bytes:
            raise SharedAddressError(f"{op}: offset {off:#x} + {nbytes} B is beyond CTA {t}'s "
                                     f"{self.smem_bytes} B of shared memory")
        if self.state[t] != RUNNING:
            when = ("before it has started: synchronise the cluster first (barrier.cluster.arrive + wait, "
                    "cluster.sync()) so every CTA is running" if self.state[t] == NOT_STARTED else
                    "after it has exited: its shared memory is gone; synchronise the cluster before any CTA exits")
            raise PeerNotRunning(f"CTA {r} {op} the shared memory of CTA {t} {when} [CPG §6.2.5]", t, self.state[t])
        return t, off

    # -- memory operations -------------------------------------------------------------------------
    def _read(self, t: int, off: int, ty) -> int:
        return int.from_bytes(self.mem[t, off:off + ty.bits // 8].tobytes(), "little")

    def _write(self, t: int, off: int, bits: int, ty) -> None:
        self.mem[t, off:off + ty.bits // 8] = np.frombuffer(bits.to_bytes(ty.bits // 8, "little"), np.uint8)

    def ld(self, rank: int, addr: int, type: str = ".u32"):
        """``ld.shared::cluster.type d, [addr]`` (``addr`` may be the executing CTA's own ``.shared::cta`` address,
        which is also a cluster address)."""
        ty = ptx_type(type)
        t, off = self._resolve(rank, addr, ty.bits // 8, "loads from")
        return decode(self._read(t, off, ty), ty)

    def st(self, rank: int, addr: int, value, type: str = ".u32") -> None:
        """``st.shared::cluster.type [addr], value``."""
        ty = ptx_type(type)
        t, off = self._resolve(rank, addr, ty.bits // 8, "stores into")
        self._write(t, off, encode(value, ty), ty)

    def atom(self, rank: int, op: str, addr: int, value, type: str = ".u32", compare=None):
        """``atom.shared::cluster.op.type d, [addr], value`` (``cas`` takes ``compare``); returns the old value
        [PTX #parallel-synchronization-and-communication-instructions-atom]. Integer results wrap modulo 2^n."""
        ty = ptx_type(type)
        if op not in _ATOM_OPS and op != "cas":
            raise DsmemError(f"atom.{op}: supported operations are {sorted(_ATOM_OPS) + ['cas']}")
        if ty.is_float and op not in ("add", "exch", "min", "max"):
            raise DsmemError(f"atom.{op} is not defined for {ty.name} (floats take add, exch, min, max)")
        t, off = self._resolve(rank, addr, ty.bits // 8, f"atom.{op} on")
        old = decode(self._read(t, off, ty), ty)
        if op == "cas":
            if compare is None:
                raise DsmemError("atom.cas needs the compare value")
            new = value if old == compare else old
        else:
            new = _ATOM_OPS[op](old, value)
        if not ty.is_float:
            mask = (1 << ty.bits) - 1
            new &= mask
            if ty.kind == "signed" and new >> (ty.bits - 1):
                new -= 1 << ty.bits
        self._write(t, off, encode(new, ty), ty)
        return old


# ----------------------------------------------------------------------------------------- ring demo

@dataclass(frozen=True)
class StepEvent:
    """One executed instruction of the ring exchange."""

    step: int
    rank: int
    op: str
    detail: str
    states: tuple[str, ...]            # every CTA's state after the step
    slots: tuple[int, ...]             # every CTA's receive slot after the step
    blocked: bool = False              # a wait that did not return yet
    error: str | None = None
    remote: int | None = None          # the peer rank a remote access touched


@dataclass(frozen=True)
class RingTrace:
    """The stepped run of :func:`ring_exchange`."""

    cluster_size: int
    mode: str
    values: tuple[int, ...]
    events: tuple[StepEvent, ...]
    received: tuple[int | None, ...]
    error: str | None = None
    error_type: str | None = None
    expected: tuple[int, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No error, and every CTA received its left neighbour's value."""
        return self.error is None and self.received == self.expected


BUF, OWN = SHARED_RESERVED, SHARED_RESERVED + 4     # receive slot, own value (offsets in each CTA's window)


def _program(mode: str, n: int, r: int, value: int, sync_start: bool, sync_exit: bool) -> list[tuple]:
    if mode == "push":       # write my value into my right neighbour's slot
        prog = [("start",)]
        if sync_start:
            prog += [("arrive",), ("wait",)]
        prog += [("mapa", BUF, (r + 1) % n), ("st_remote", value), ("arrive",), ("wait",), ("ld_local", BUF)]
        if sync_exit:
            prog += [("arrive",), ("wait",)]
        return prog + [("exit",)]
    if mode == "pull":       # publish my value, then read my left neighbour's
        prog = [("start",), ("st_local", OWN, value)]
        if sync_start:
            prog += [("arrive",), ("wait",)]
        prog += [("mapa", OWN, (r - 1) % n), ("ld_remote",)]
        if sync_exit:
            prog += [("arrive",), ("wait",)]
        return prog + [("exit",)]
    raise DsmemError(f"ring mode is 'push' or 'pull', got {mode!r}")


def ring_exchange(cluster_size: int, values=None, *, mode: str = "push", sync_start: bool = True,
                  sync_exit: bool = True, schedule: str = "greedy", order=None) -> RingTrace:
    """Every CTA of a cluster passes a value to its right neighbour (rank ``r`` → ``(r+1) % n``) through
    DSMEM, stepped one instruction at a time; returns the trace.

    ``mode="push"``: ``mapa`` the neighbour's receive slot, ``st.shared::cluster`` into it, barrier, read the
    own slot. ``mode="pull"``: store the own value locally, barrier, ``mapa`` + ``ld.shared::cluster`` from
    the left neighbour. ``sync_start`` / ``sync_exit`` put a ``barrier.cluster`` (arrive + wait) after the
    CTA starts / before it exits: the push needs the first (a peer may not have started), the pull the
    second (a peer may have exited). ``schedule``: ``"greedy"`` runs one CTA until it blocks or exits, then
    the next (in ``order``, default rank order); ``"round-robin"`` one instruction per CTA in turn. A race
    that hits is reported in ``error`` (the first :class:`DsmemError`), and the run stops there.
    """
    n = operator.index(cluster_size)
    if not 1 <= n <= 16:
        raise RankError(f"a cluster has 1 to 16 CTAs on sm_90, got {n}")
    vals = tuple(int(v) for v in (values if values is not None else [100 + r for r in range(n)]))
    if len(vals) != n:
        raise DsmemError(f"ring_exchange needs one value per CTA ({n}), got {len(vals)}")
    order = list(range(n)) if order is None else [int(r) for r in order]
    if sorted(order) != list(range(n)):
        raise DsmemError(f"order must be a permutation of the ranks 0..{n - 1}, got {order}")
    if schedule not in ("greedy", "round-robin"):
        raise DsmemError(f"schedule is 'greedy' or 'round-robin', got {schedule!r}")
    cs = ClusterSharedMemory(n, smem_bytes=64)
    progs = [_program(mode, n, r, vals[r], sync_start, sync_exit) for r in range(n)]
    pc = [0] * n
    regs: list[dict] = [{} for _ in range(n)]
    received: list[int | None] = [None] * n
    events: list[StepEvent] = []
    error = etype = None
    current = [order[0]]

    def slots() -> tuple[int, ...]:
        return tuple(int.from_bytes(cs.mem[r, BUF:BUF + 4].tobytes(), "little") if mode == "push" else
                     (received[r] or 0) for r in range(n))

    def done(r: int) -> bool:
        return pc[r] >= len(progs[r])

    def step(r: int) -> tuple[bool, str | None]:
        """Execute one instruction of CTA r; returns (progressed, error)."""
        current[0] = r
        op = progs[r][pc[r]]
        kind = op[0]
        remote = None
        blocked = False
        if kind == "start":
            cs.start(r)
            detail = "starts"
        elif kind == "arrive":
            cs.barrier.arrive(r)
            detail = "barrier.cluster.arrive"
        elif kind == "wait":
            if cs.barrier.wait(r):
                detail = "barrier.cluster.wait returns"
            else:
                blocked, detail = True, "barrier.cluster.wait blocks"
        elif kind == "mapa":
            regs[r]["remote"] = cs.mapa(r, cs.address(r, op[1]), op[2])
            detail = f"mapa(offset {op[1]:#x}, rank {op[2]}) = {regs[r]['remote']:#010x}"
        elif kind == "st_remote":
            remote = cs.getctarank(r, regs[r]["remote"])
            cs.st(r, regs[r]["remote"], op[1])
            detail = f"st.shared::cluster {op[1]} into CTA {remote}"
        elif kind == "st_local":
            cs.st(r, cs.address(r, op[1]), op[2])
            detail = f"st.shared::cta {op[2]} (own value)"
        elif kind == "ld_local":
            received[r] = cs.ld(r, cs.address(r, op[1]))
            detail = f"ld.shared::cta -> {received[r]}"
        elif kind == "ld_remote":
            remote = cs.getctarank(r, regs[r]["remote"])
            received[r] = cs.ld(r, regs[r]["remote"])
            detail = f"ld.shared::cluster from CTA {remote} -> {received[r]}"
        elif kind == "exit":
            cs.exit(r)
            detail = "exits"
        else:  # pragma: no cover - programs are built above
            raise AssertionError(kind)
        if not blocked:
            pc[r] += 1
        events.append(StepEvent(len(events), r, kind, detail, tuple(cs.state), slots(), blocked, None, remote))
        return not blocked, None

    def runnable(r: int) -> bool:
        if done(r):
            return False
        if progs[r][pc[r]][0] == "wait":
            return cs.barrier.test_wait(r)
        return True

    try:
        if schedule == "greedy":
            i = 0
            while not all(done(r) for r in range(n)):
                cand = [order[(i + k) % n] for k in range(n)]
                r = next((c for c in cand if runnable(c)), None)
                if r is None:
                    raise BarrierError("deadlock: every unfinished CTA waits at barrier.cluster for a thread that "
                                       "will never arrive")
                i = order.index(r)
                while runnable(r):
                    step(r)
                if not done(r):
                    step(r)          # record the blocking wait once
                i = (i + 1) % n
        else:
            while not all(done(r) for r in range(n)):
                progressed = False
                for r in order:
                    if done(r):
                        continue
                    if progs[r][pc[r]][0] == "wait" and not cs.barrier.test_wait(r):
                        continue
                    step(r)
                    progressed = True
                if not progressed:
                    raise BarrierError("deadlock: every unfinished CTA waits at barrier.cluster for a thread that "
                                       "will never arrive")
    except DsmemError as exc:
        error, etype = str(exc), type(exc).__name__
        events.append(StepEvent(len(events), current[0], "error", str(exc), tuple(cs.state), slots(), False, str(exc),
                                getattr(exc, "target", None)))
    expected = tuple(vals[(r - 1) % n] for r in range(n))
    return RingTrace(n, mode, vals, tuple(events), tuple(received), error, etype, expected)
