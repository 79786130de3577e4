"""The machine: a GPU of SMs whose warps are processes and whose units are resources.

Layout of the model (all numbers come from one :class:`~h100lab.sim.timing.Timing` table)::

    GPU ── engine (clock, events)          ── trace: list[Record]  (h100lab.sync.trace format)
     └── SM i   (one CTA; ``ctas_per_sm`` consecutive ones share one physical SM's units)
          ├── smem     SharedMemory (bytes; mbarriers live in it)
          ├── hbm      Pipe (B/ns)  — this CTA's equal slice of the device memory bandwidth,
          │                           hbm_bytes_per_ns / hbm_sharers (reads and writes both count)
          ├── tma      Pipe (B/ns)  — the bulk-copy (TMA) unit: cp.async.bulk loads and stores
          ├── lsu      Pipe (B/ns)  — ld.shared / st.shared
          ├── tensor   Pipe (MAC/ns) — wgmma-style tensor-core work
          ├── named    NamedBarriers (bar.sync / bar.arrive, ids 0–15)
          └── warps    Warp — one process each, written as a generator function

A warp program is a generator function taking its :class:`Warp`. Every instruction is a method
that performs the instruction's effect on the model state *now*, appends its trace record, and
returns what the warp must ``yield`` to spend the instruction's time: a delay, a
:class:`~h100lab.sim.engine.Sleep` carrying a result, or an event to wait on. So every instruction
is written ``yield w.<instruction>(...)``, and ``x = yield w.<instruction>(...)`` gets its result
(a state token, the completed phase, a group index)::

    def producer(w, stages, iters):
        for k in range(iters):
            s = k % stages
            yield w.wait(EMPTY + 8 * s, parity=((k // stages) & 1) ^ 1)
            yield w.arrive_expect_tx(FULL + 8 * s, TILE)
            yield w.cp_async_bulk(BUF + s * TILE, TILE, bar=FULL + 8 * s)

    gpu = GPU(num_sms=1)
    sm = gpu.sms[0]
    sm.spawn("producer", producer, 4, 100)
    gpu.run()

Plugging in new work (lessons 4–8): an asynchronous unit is a :class:`~h100lab.sim.resources.Pipe`
(or several, :func:`~h100lab.sim.resources.reserve_path`) plus a completion callback scheduled with
``gpu.engine.at(t_done, fn, arg)``; see :meth:`Warp.cp_async_bulk` for the pattern (reserve the
pipes, schedule completion, on completion perform complete-tx on the mbarrier and append a record).
"""
from __future__ import annotations

import math
import struct
from typing import Callable, Generator

from ..sync.groups import BulkGroups
from ..sync import mbarrier as mb_ops
from ..sync.mbarrier import MBarrier, MBarrierError

_new = tuple.__new__   # Record rows are built with tuple.__new__(Record, (...)): no Python frame per record
_PARITY = 1 << 61   # the phase-parity bit of the mbarrier word (h100lab.sync.mbarrier encoding)
# the 8-byte little-endian word of SharedMemory.load_u64 / store_u64, called without the method frame
_unpack_u64 = struct.Struct("<Q").unpack_from
_pack_u64 = struct.Struct("<Q").pack_into
from ..sync.named import ClusterBarrier, NamedBarriers
from ..sync.smem import SMEM_MAX_PER_BLOCK, SharedMemory
from ..sync.trace import Record
from .engine import Deadlock, Engine, Event, SimulationError, Sleep
from .resources import Pipe, reserve_path
from .timing import Timing, default_timing, read_ceiling, store_rate, write_cost

__all__ = ["GPU", "SM", "Warp", "SimBarrier"]


class SimBarrier:
    """An mbarrier in the simulator: its state is the 8 bytes at ``addr`` of the SM's shared memory
    (read, passed through the pure functions of :mod:`h100lab.sync.mbarrier`, written back), plus the
    number of completed phases and the events waiters sleep on."""

    __slots__ = ("mb", "smem", "addr", "completions", "events", "label", "engine")

    def __init__(self, sm: "SM", addr: int, label: str):
        self.mb = MBarrier(sm.smem, addr)
        self.smem = sm.smem
        self.addr = addr
        self.completions = 0          # phases completed so far = number of the current phase
        self.events: dict[int, Event] = {}
        self.label = label
        self.engine = sm.engine

    def completion(self, phase: int, delay: float = 0.0) -> Event:
        """The event triggered when phase number ``phase`` completes (waiters resume ``delay`` ns
        later: the try_wait wake-up latency)."""
        ev = self.events.get(phase)
        if ev is None:
            # the label is formatted only if read (deadlock reports): "<label> phase <n> (parity <n & 1>)"
            ev = self.events[phase] = Event(self.engine, ("{} phase {} (parity {})", self.label, phase, phase & 1),
                                            delay)
            if phase < self.completions:
                ev.succeed(phase)
        return ev

    def apply(self, fn, *args):
        """Apply word operation ``fn(word, *args)`` (:mod:`h100lab.sync.mbarrier`'s ``word_*``) to the
        barrier's bytes; wake the waiters of a phase it completes. Returns the token (or None)."""
        smem, addr = self.smem, self.addr
        if smem._objects.get(addr) != "mbarrier":
            self.mb.state   # raises the "not a valid mbarrier" error
        buf = smem.bytes
        old = _unpack_u64(buf, addr)[0]       # = smem.load_u64(addr)
        out = fn(old, *args)
        if out.__class__ is tuple:
            new, tok = out
        else:
            new, tok = out, None
        _pack_u64(buf, addr, new)             # = smem.store_u64(addr, new)
        if (new ^ old) & _PARITY:
            k = self.completions
            self.completions = k + 1
            ev = self.events.pop(k, None)
            if ev is not None:
                ev.succeed(k)
        return tok

    def parity_done(self, parity: int) -> bool:
        """``try_wait.parity(parity)`` on the current bytes (PTX §9.7.13.15.16)."""
        smem = self.smem
        if smem._objects.get(self.addr) != "mbarrier":
            self.mb.state
        if parity not in (0, 1):
            raise MBarrierError(f"phaseParity {parity!r} must be 0 or 1 (PTX §9.7.13.15.16)")
        return ((_unpack_u64(smem.bytes, self.addr)[0] >> 61) & 1) != parity


class GPU:
    """``num_sms`` CTAs (each an :class:`SM` object) sharing the device memory, one engine and one trace.
    ``cluster_size`` groups consecutive CTAs into clusters (CTA rank = index % cluster_size).

    Memory model (assumptions, :mod:`h100lab.sim.timing`): the device bandwidth ``hbm_bytes_per_ns`` is
    split into equal FIFO slices, one per CTA, among ``hbm_sharers`` CTAs (default ``num_sms``) — a
    static processor-sharing approximation, exact while all of them stream. ``hbm_sharers`` larger than
    ``num_sms`` simulates a few CTAs of a symmetric whole-GPU grid. ``ctas_per_sm`` consecutive CTAs
    run on one physical SM and share its TMA unit, LSUs and tensor cores.

    Memory model 2 (``timing.memory_model == 2``, :mod:`h100lab.sim.timing` assumptions a-h): with
    ``memory_shared`` one FIFO server (``self.hbm``) of rate ``hbm_read_bytes_per_ns × num_sms / hbm_sharers``
    serves every simulated CTA (written bytes cost :func:`~h100lab.sim.timing.write_cost` each), otherwise equal
    slices of that rate; each physical SM has a TMA op queue (``sm.tma_ops``, one copy per ``tma_op_ns``) and a
    DSMEM pipe (``sm.dsmem``)."""

    def __init__(self, timing: Timing | None = None, *, num_sms: int = 1, trace: bool = True,
                 smem_bytes: int = SMEM_MAX_PER_BLOCK, cta_threads: int = 384, cluster_size: int = 1,
                 ctas_per_sm: int = 1, hbm_sharers: int | None = None):
        if num_sms < 1 or num_sms % cluster_size:
            raise ValueError(f"{num_sms} SMs cannot be split into clusters of {cluster_size}")
        if ctas_per_sm < 1 or num_sms % ctas_per_sm:
            raise ValueError(f"{num_sms} CTAs cannot be placed {ctas_per_sm} per SM")
        if hbm_sharers is not None and hbm_sharers < num_sms:
            raise ValueError(f"the memory is shared by at least the {num_sms} simulated CTAs, not {hbm_sharers}")
        self.timing = timing if timing is not None else default_timing()
        self.engine = Engine()
        self.trace: list[Record] | None = [] if trace else None
        self._late: list[list] = []    # async-op records finalised after the run (group indices)
        self.hbm_sharers = hbm_sharers or num_sms
        self.ctas_per_sm = ctas_per_sm
        self.cluster_size = cluster_size
        self.num_sms = num_sms
        self._clusters: dict[int, ClusterBarrier] = {}
        self._cluster_events: dict[tuple[int, int], Event] = {}
        self._cluster_done: dict[tuple[int, int], float] = {}     # model 2: when each phase's last arrival landed
        t = self.timing
        self.model2 = t.memory_model >= 2
        self.write_cost = write_cost(t) if self.model2 else 1.0
        self.hbm: Pipe | None = None
        if self.model2 and t.memory_shared:
            self.hbm = Pipe("hbm", read_ceiling(t) * num_sms / self.hbm_sharers)
        self.sms = [SM(self, i, smem_bytes, cta_threads) for i in range(num_sms)]
        for i, sm in enumerate(self.sms):
            if i % ctas_per_sm:
                host = self.sms[i - i % ctas_per_sm]
                sm.tma, sm.lsu, sm.tensor = host.tma, host.lsu, host.tensor
                sm.tma_ops, sm.dsmem = host.tma_ops, host.dsmem

    def hbm_utilization(self, elapsed: float) -> float:
        """Fraction of the device memory bandwidth the simulated CTAs used over ``elapsed`` ns (0 … 1)."""
        if elapsed <= 0:
            return 0.0
        if self.hbm is not None:
            return self.hbm.busy / elapsed
        return sum(sm.hbm.busy for sm in self.sms) / (elapsed * self.num_sms)

    def hbm_bytes(self) -> float:
        """Bytes the simulated CTAs moved through the memory (reads plus writes; model 2: read-byte units)."""
        if self.hbm is not None:
            return self.hbm.served
        return sum(sm.hbm.served for sm in self.sms)

    def run(self, until: float | None = None) -> float:
        """Run to completion; returns the end time (ns). Raises Deadlock (with the state of every
        mbarrier that has waiters) if warps are stuck."""
        try:
            t = self.engine.run(until)
        except Deadlock as d:
            states = [f"{sb.label}: {sb.mb!r}" for sm in self.sms for sb in sm.bars.values() if sb.events]
            d.args = (d.args[0] + ("; barriers: " + "; ".join(states) if states else ""),)
            raise
        finally:
            self._finalise()
        return t

    def _finalise(self) -> None:
        if self.trace is None:
            return
        for item in self._late:
            warp, fields, op = item
            g = warp.groups.group_of(op)
            self.trace.append(_new(Record, (*fields[:12], g, *fields[13:])))
        self._late.clear()

    def cluster_barrier(self, cluster: int, threads: int) -> ClusterBarrier:
        """The ``barrier.cluster`` of cluster ``cluster`` with ``threads`` participants."""
        cb = self._clusters.get(cluster)
        if cb is None:
            cb = self._clusters[cluster] = ClusterBarrier(threads)
        elif cb.threads != threads:
            raise ValueError(f"cluster {cluster}: barrier made for {cb.threads} threads, asked for {threads}")
        return cb


class SM:
    """One SM running one CTA: shared memory, units, barriers and warps."""

    def __init__(self, gpu: GPU, index: int, smem_bytes: int, cta_threads: int):
        t = gpu.timing
        self.gpu = gpu
        self.engine = gpu.engine
        self.index = index
        self.cluster = index // gpu.cluster_size
        self.rank = index % gpu.cluster_size
        self.prefix = "" if gpu.num_sms == 1 else f"sm{index}."
        self.smem = SharedMemory(smem_bytes, cta_rank=self.rank)
        if not gpu.model2:
            self.hbm = Pipe(f"sm{index}.hbm", t.hbm_bytes_per_ns / gpu.hbm_sharers)
        elif gpu.hbm is not None:
            self.hbm = gpu.hbm                                   # (b) one device-wide queue
        else:
            self.hbm = Pipe(f"sm{index}.hbm", read_ceiling(t) / gpu.hbm_sharers)
        self.tma = Pipe(f"sm{index // gpu.ctas_per_sm}.tma", t.tma_bytes_per_ns)
        self.tma_ops = (Pipe(f"sm{index // gpu.ctas_per_sm}.tma_ops", 1.0 / t.tma_op_ns, "op")
                        if gpu.model2 and t.tma_op_ns > 0 else None)
        loaded = (t.params["dsmem_loaded_bytes_per_ns"].value + t.params["dsmem_loaded_per_doubling_bytes_per_ns"].value
                  * math.log2(min(gpu.cluster_size, 8))) if gpu.model2 else 0.0
        # (h') while more than one cluster runs, every SM streams against the others: the loaded DSMEM rate
        self.dsmem = Pipe(f"sm{index // gpu.ctas_per_sm}.dsmem",
                          loaded if loaded > 0 and gpu.num_sms > gpu.cluster_size else t.dsmem_bytes_per_ns)
        self.lsu = Pipe(f"sm{index}.lsu", t.smem_bytes_per_ns)
        self.tensor = Pipe(f"sm{index}.tensor", t.tensor_macs_per_ns, "MAC")
        self.named = NamedBarriers(cta_threads)
        self._named_events: dict[tuple[int, int], Event] = {}
        self.bars: dict[int, SimBarrier] = {}
        self.warps: list[Warp] = []

    def __repr__(self) -> str:
        return f"SM({self.index})"

    def spawn(self, name: str, program: Callable[..., Generator], *args, threads: int = 32, **kw) -> "Warp":
        """Start ``program(warp, *args, **kw)`` as a warp process named ``name`` (``threads``: how
        many threads it stands for in named/cluster barriers — 32 for a warp, 128 for a warpgroup)."""
        w = Warp(self, name, threads)
        self.warps.append(w)
        self.engine.process(program(w, *args, **kw), w.actor)
        return w

    def barrier(self, addr: int) -> SimBarrier:
        """The simulator's barrier at ``addr`` (it must have been initialised by a warp)."""
        sb = self.bars.get(addr)
        if sb is None:
            # let the byte model raise its own "used before init" error
            MBarrier(self.smem, addr).state
            raise SimulationError(f"no mbarrier at {addr:#x}")
        return sb

    def async_op(self, amount: float, fn: Callable[[object], None], arg: object = None, *, start: float | None = None,
                 pipes: tuple[Pipe, ...] | None = None, latency: float | None = None) -> float:
        """Run asynchronous work on this SM's units and call ``fn(arg)`` when it completes.

        ``amount`` units (bytes, MACs) go through ``pipes`` — by default the bulk-copy path, this SM's
        TMA unit and this CTA's slice of the device memory — from ``start`` (default: now), FIFO behind earlier work; the work
        completes ``latency`` ns (default: the table's ``tma_latency_ns``) after its last unit left
        the slowest pipe. Returns the completion time. This is how an asynchronous unit is plugged in:
        a TMA tensor copy, a multicast, a wgmma group each reserve their pipes and schedule their
        completion (mbarrier complete-tx, a group's done event) here."""
        path = pipes if pipes is not None else (self.tma, self.hbm)
        _, fin = reserve_path(path, self.engine.now if start is None else start, amount)
        done = fin + (self.gpu.timing.tma_latency_ns if latency is None else latency)
        self.engine.at(done, fn, arg)
        return done

    def peer(self, rank: int) -> "SM":
        """The SM of this cluster running CTA rank ``rank``."""
        if not 0 <= rank < self.gpu.cluster_size:
            raise ValueError(f"CTA rank {rank} outside the cluster of {self.gpu.cluster_size}")
        return self.gpu.sms[self.cluster * self.gpu.cluster_size + rank]


class Warp:
    """A warp (or warpgroup, or elected thread) executing a program. Each instruction method applies
    the instruction to the model, records one :class:`~h100lab.sync.trace.Record` and returns what
    to ``yield``: ``yield w.arrive(bar)``, ``phase = yield w.wait(bar, parity)``."""

    def __init__(self, sm: SM, name: str, threads: int = 32):
        self.sm = sm
        self.gpu = sm.gpu
        self.engine = sm.engine
        t = sm.gpu.timing
        self.t = t
        self.name = name
        self.actor = sm.prefix + name
        self.threads = threads
        self._rank = sm.rank              # %cluster_ctarank of this warp's CTA (fixed)
        self.groups = BulkGroups()
        self._group_events: dict[int, tuple[Event, Event]] = {}
        self._op_seq = 0
        self.trace = sm.gpu.trace
        self._tma_lane = f"{sm.prefix}tma"
        # the table's numbers, read once (the hot path avoids attribute lookups on the table)
        self._issue, self._arrive_ns, self._hit = t.issue_ns, t.mbarrier_arrive_ns, t.wait_hit_ns
        self._wake, self._fence = t.wait_wake_ns, t.fence_ns
        self._smem_lat, self._tma_issue, self._tma_lat = t.smem_latency_ns, t.tma_issue_ns, t.tma_latency_ns
        self._overlap = bool(t.params["tma_issue_overlap"].value) if "tma_issue_overlap" in t.params else False
        self._m2 = sm.gpu.model2

    def __repr__(self) -> str:
        return f"Warp({self.actor!r})"

    @property
    def now(self) -> float:
        """Current simulated time (ns)."""
        return self.engine.now

    def _rec(self, t0, t1, op, proxy="", access="", addr=-1, size=0, bar=-1, phase=-1, sem="", group=-1,
             cta=None, label="", lane=None) -> None:
        if self.trace is not None:
            self.trace.append(_new(Record, (t0, t1, self.actor, op, lane or self.actor, proxy, access, addr, size,
                                     bar, phase, sem, group, self._rank if cta is None else cta, label)))

    def _target(self, cta: int | None) -> SM:
        return self.sm if cta is None or cta == self._rank else self.sm.peer(cta)

    # -- plain work -----------------------------------------------------------------------------
    def compute(self, ns: float, label: str = "compute") -> float:
        """Busy on the CUDA cores for ``ns`` ns (no memory access)."""
        now = self.engine.now
        if self.trace is not None:
            self.trace.append(_new(Record, (now, now + ns, self.actor, "compute", self.actor, "", "", -1, 0, -1, -1,
                                     "", -1, self._rank, label)))
        return float(ns)

    def ld_shared(self, addr: int, size: int, label: str = "") -> float:
        """``ld.shared`` of ``size`` bytes (all lanes together) through the LSUs: a generic-proxy read
        (PTX §9.7.9.8); time = queueing + size / smem bandwidth + latency."""
        self.sm.smem.check_range(addr, size)
        now = self.engine.now
        _, fin = self.sm.lsu.reserve(now, size)
        t1 = fin + self._smem_lat
        if self.trace is not None:
            self.trace.append(_new(Record, (now, t1, self.actor, "ld.shared", self.actor, "generic", "r", addr, size,
                                     -1, -1, "", -1, self._rank, label)))
        return t1 - now

    def st_shared(self, addr: int, size: int, label: str = "") -> float:
        """``st.shared`` of ``size`` bytes through the LSUs: a generic-proxy write (PTX §9.7.9.9)."""
        self.sm.smem.check_range(addr, size)
        now = self.engine.now
        _, fin = self.sm.lsu.reserve(now, size)
        t1 = max(fin, now + self._issue)
        if self.trace is not None:
            self.trace.append(_new(Record, (now, t1, self.actor, "st.shared", self.actor, "generic", "w", addr, size,
                                     -1, -1, "", -1, self._rank, label)))
        return t1 - now

    def mma(self, macs: float, reads: tuple = (), label: str = "wgmma") -> float:
        """Tensor-core work of ``macs`` multiply-accumulates reading shared-memory operands
        ``reads = ((addr, size), …)`` through the async proxy (wgmma, PTX §9.7.15.4), waited for
        (like ``wgmma.mma_async`` + ``wgmma.wait_group 0``)."""
        now = self.engine.now
        _, fin = self.sm.tensor.reserve(now, macs)
        t1 = fin + self.t.wgmma_latency_ns
        if not reads:
            self._rec(now, t1, "wgmma", label=label)
        for a, n in reads:
            self.sm.smem.check_range(a, n)
            self._rec(now, t1, "wgmma", "async", "r", a, n, label=label)
        return t1 - now

    # -- fences ---------------------------------------------------------------------------------
    def fence_proxy_async(self) -> float:
        """``fence.proxy.async.shared::cta``: orders this thread's generic-proxy accesses with later
        async-proxy accesses and vice versa (PTX §9.7.13.4 membar/fence; async proxy §9.7.9.25.2)."""
        now = self.engine.now
        if self.trace is not None:
            self.trace.append(_new(Record, (now, now + self._fence, self.actor, "fence.proxy.async", self.actor, "",
                                     "", -1, 0, -1, -1, "", -1, self._rank, "")))
        return self._fence

    def fence_acq_rel(self) -> float:
        """``fence.acq_rel.cta``: a following relaxed arrive then acts as a release, a preceding relaxed
        wait as an acquire (PTX §9.7.13.4; memory model §8.8 fence–operation patterns)."""
        now = self.engine.now
        self._rec(now, now + self._fence, "fence.acq_rel")
        return self._fence

    # -- mbarrier -------------------------------------------------------------------------------
    def init(self, bar: int, count: int, name: str = "") -> float:
        """``mbarrier.init.shared::cta.b64 [bar], count`` (PTX §9.7.13.15.9)."""
        sm = self.sm
        sb = SimBarrier(sm, bar, name or f"mbarrier@{bar:#x}")
        sb.mb.init(count, rank=sm.rank)      # raises on re-init of a live barrier, misalignment, range
        sm.bars[bar] = sb
        now = self.engine.now
        self._rec(now, now + self._issue, "mbarrier.init", bar=bar, phase=0, label=sb.label)
        return self._issue

    def inval(self, bar: int) -> float:
        """``mbarrier.inval`` (PTX §9.7.13.15.10)."""
        sb = self.sm.barrier(bar)
        sb.mb.inval(rank=self._rank)
        now = self.engine.now
        self._rec(now, now + self._issue, "mbarrier.inval", bar=bar, label=sb.label)
        return self._issue

    def _arrive_like(self, bar, cta, op, fn, arg, sem="release", no_complete=False, cost=None):
        sm = self.sm if cta is None or cta == self._rank else self.sm.peer(cta)
        sb = sm.bars.get(bar) or sm.barrier(bar)
        ph = sb.completions
        tok = sb.apply(fn, arg, True) if no_complete else sb.apply(fn, arg)
        now = self.engine.now
        c = self._arrive_ns if cost is None else cost
        if self.trace is not None:
            self.trace.append(_new(Record, (now, now + c, self.actor, op, self.actor, "", "", -1, 0, bar,
                                     ph, sem, -1, sm.rank, sb.label)))
        return Sleep(c, tok if sm is self.sm else None)

    def arrive(self, bar: int, count: int = 1, *, sem: str = "release", no_complete: bool = False,
               cta: int | None = None) -> Sleep:
        """``mbarrier.arrive{.sem}{.noComplete} [bar]{, count}``; the yield returns the state token
        (None for another CTA's barrier) (PTX §9.7.13.15.13). ``sem="relaxed"``: no release ordering."""
        op = "mbarrier.arrive.noComplete" if no_complete else "mbarrier.arrive"
        return self._arrive_like(bar, cta, op, mb_ops.word_arrive, count, sem, no_complete)

    def arrive_drop(self, bar: int, count: int = 1, *, sem: str = "release", no_complete: bool = False,
                    cta: int | None = None) -> Sleep:
        """``mbarrier.arrive_drop{.noComplete}`` (PTX §9.7.13.15.14)."""
        op = "mbarrier.arrive_drop.noComplete" if no_complete else "mbarrier.arrive_drop"
        return self._arrive_like(bar, cta, op, mb_ops.word_arrive_drop, count, sem, no_complete)

    def arrive_expect_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Sleep:
        """``mbarrier.arrive.expect_tx [bar], nbytes`` (PTX §9.7.13.15.13). Costs the warp
        ``mbarrier_arrive_ns`` (model 2: ``mbarrier_expect_tx_ns``)."""
        return self._arrive_like(bar, cta, "mbarrier.arrive.expect_tx", mb_ops.word_arrive_expect_tx, nbytes,
                                 cost=self.t.mbarrier_expect_tx_ns if self._m2 else None)

    def expect_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Sleep:
        """``mbarrier.expect_tx [bar], nbytes`` — relaxed (PTX §9.7.13.15.11)."""
        return self._arrive_like(bar, cta, "mbarrier.expect_tx", mb_ops.word_expect_tx, nbytes, "relaxed")

    def complete_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Sleep:
        """``mbarrier.complete_tx [bar], nbytes`` by a thread — relaxed (PTX §9.7.13.15.12)."""
        return self._arrive_like(bar, cta, "mbarrier.complete_tx", mb_ops.word_complete_tx, nbytes, "relaxed")

    def wait(self, bar: int, parity: int, *, sem: str = "acquire", test: bool = False):
        """``mbarrier.try_wait.parity{.acquire|.relaxed}`` looped until True (PTX §9.7.13.15.16):
        returns at once if the phase with this parity has completed, otherwise sleeps until the
        current phase completes plus the wake-up latency. The yield returns the completed phase
        number (−1 for the fictional phase before phase 0)."""
        sb = self.sm.bars.get(bar) or self.sm.barrier(bar)
        now = self.engine.now
        op = "mbarrier.test_wait.parity" if test else "mbarrier.try_wait.parity"
        smem = sb.smem                        # sb.parity_done(parity), inlined
        if smem._objects.get(bar) != "mbarrier":
            sb.mb.state
        if parity not in (0, 1):
            raise MBarrierError(f"phaseParity {parity!r} must be 0 or 1 (PTX §9.7.13.15.16)")
        if ((_unpack_u64(smem.bytes, bar)[0] >> 61) & 1) != parity:
            observed = sb.completions - 1
            if self.trace is not None:
                self.trace.append(_new(Record, (now, now + self._hit, self.actor, op, self.actor, "", "", -1, 0, bar,
                                         observed, sem, -1, self._rank, sb.label)))
            return Sleep(self._hit, observed)
        ev = sb.completion(sb.completions, self._wake)
        if self.trace is not None:
            ev.on(self._wait_rec, (now, op, bar, sem, sb))
        return ev

    def _wait_rec(self, arg) -> None:
        t0, op, bar, sem, sb = arg
        now = self.engine.now
        self.trace.append(_new(Record, (t0, now + self._wake, self.actor, op, self.actor, "", "", -1, 0, bar,
                                 sb.completions - 1, sem, -1, self._rank, sb.label)))

    # -- bulk copies --------------------------------------------------------------------------------
    def cp_async_bulk(self, dst: int, nbytes: int, bar: int, *, label: str = "", cta: int | None = None,
                      dram: bool = False) -> float:
        """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], nbytes,
        [bar]`` (PTX §9.7.9.25.4.1): the TMA unit writes ``nbytes`` into shared memory at ``dst``
        (async proxy) and then performs complete-tx(nbytes) on the mbarrier ``bar``. The issuing warp
        only spends the issue cost. Size and address must be multiples of 16.

        Model 2 (:mod:`h100lab.sim.timing` c, d): the copy waits for its slot in the SM's TMA op queue, lands
        ``tma_latency_ns + tma_latency_per_kb_ns × KiB`` after its transfer, plus ``dram_latency_ns`` when
        ``dram`` (its source is not in L2). Model 1 ignores ``dram``."""
        if nbytes % 16 or dst % 16 or nbytes <= 0:
            raise ValueError(f"cp.async.bulk of {nbytes} B to {dst:#x}: size must be a positive multiple of "
                             f"16 and the shared-memory address 16-byte aligned (PTX §9.7.9.25.4.1)")
        sm = self.sm if cta is None or cta == self._rank else self.sm.peer(cta)
        sm.smem.check_range(dst, nbytes)
        sb = sm.bars.get(bar) or sm.barrier(bar)
        eng = self.engine
        t0 = eng.now
        me = self.sm                          # me.async_op(nbytes, ..., start=t0 + issue), inlined
        if self._m2:
            eng.at(self.load_done_v2(t0, nbytes, dram), self._bulk_done, (t0, sm, dst, nbytes, bar, sb,
                                                                         label or sb.label))
            return self._tma_issue
        _, fin = reserve_path((me.tma, me.hbm), t0 + self._tma_issue, nbytes)
        eng.at(fin + self._tma_lat, self._bulk_done, (t0, sm, dst, nbytes, bar, sb, label or sb.label))
        return self._tma_issue

    def _tma_slot(self, t: float) -> float:
        """Model 2 (d): when the SM's TMA unit starts on a copy handed over at ``t`` (its op queue)."""
        ops = self.sm.tma_ops
        if ops is None:
            return t
        return ops.reserve(t, 1.0)[1]

    def load_done_v2(self, t0: float, nbytes: int, dram: bool, hbm_bytes: float | None = None) -> float:
        """Model 2: reserve one global → shared copy of ``nbytes`` issued at ``t0`` (op queue, then the TMA unit
        and the memory server cut-through; ``hbm_bytes`` read bytes, default ``nbytes``, 0 for an L2 hit) and
        return when it lands (assumption c)."""
        t = self.t
        a = self._tma_slot(t0 if self._overlap else t0 + self._tma_issue)
        me = self.sm
        if hbm_bytes is None:
            hbm_bytes = nbytes
        if hbm_bytes:
            _, f1 = me.tma.reserve(a, nbytes)
            _, f2 = me.hbm.reserve(a, hbm_bytes)
            fin = f1 if f1 > f2 else f2
        else:
            fin = me.tma.reserve(a, nbytes)[1]
        return fin + t.tma_latency_ns + nbytes * (t.tma_latency_per_kb_ns / 1024.0) + (t.dram_latency_ns if dram
                                                                                       else 0.0)

    def _bulk_done(self, arg) -> None:
        t0, sm, dst, nbytes, bar, sb, label = arg
        ph = sb.completions
        sb.apply(mb_ops.word_complete_tx, nbytes)
        if self.trace is not None:
            self.trace.append(_new(Record, (t0, self.engine.now, self.actor, "cp.async.bulk.shared::cluster.global",
                                     self._tma_lane, "async", "w", dst, nbytes, bar, ph, "release", -1, sm.rank,
                                     label)))

    def cp_async_bulk_store(self, src: int, nbytes: int, *, label: str = "") -> float:
        """``cp.async.bulk.global.shared::cta.bulk_group [dst], [src], nbytes`` (PTX §9.7.9.25.4.1):
        the TMA unit reads ``nbytes`` of shared memory at ``src`` (async proxy) and writes global
        memory; completion is tracked by this warp's bulk async-groups."""
        if nbytes % 16 or src % 16 or nbytes <= 0:
            raise ValueError(f"cp.async.bulk of {nbytes} B from {src:#x}: size must be a positive multiple "
                             f"of 16 and the shared-memory address 16-byte aligned (PTX §9.7.9.25.4.1)")
        self.sm.smem.check_range(src, nbytes)
        t0 = self.engine.now
        if self._m2:
            read_at, done = self.store_done_v2(t0, nbytes)
        else:
            _, fin = reserve_path((self.sm.tma, self.sm.hbm), t0 + self._tma_issue, nbytes)
            read_at, done = fin, fin + self._tma_lat
        self._op_seq += 1
        op = self._op_seq
        self.groups.issue(op)
        read_ev = Event(self.engine, f"{self.actor} bulk store {op} read")
        done_ev = Event(self.engine, f"{self.actor} bulk store {op} complete")
        self._group_events[op] = (read_ev, done_ev)
        self.engine.at(read_at, self._store_read, op)
        self.engine.at(done, self._store_done, op)
        if self.trace is not None:
            fields = [t0, done, self.actor, "cp.async.bulk.global.shared::cta.bulk_group", self._tma_lane,
                      "async", "r", src, nbytes, -1, -1, "", -1, self._rank, label or "bulk store"]
            self.gpu._late.append([self, fields, op])
        return self._tma_issue

    def store_done_v2(self, t0: float, nbytes: int) -> tuple[float, float]:
        """Model 2: reserve one shared → global store of ``nbytes`` issued at ``t0``: the op queue, the TMA unit
        reading the source, the memory server writing ``nbytes × write_cost``. Returns (source read, complete)
        (assumptions a, d, e)."""
        t = self.t
        a = self._tma_slot(t0 if self._overlap else t0 + self._tma_issue)
        _, f_tma = self.sm.tma.reserve(a, nbytes * t.tma_bytes_per_ns / store_rate(t))   # (e) the store's read rate
        _, f_hbm = self.sm.hbm.reserve(a, nbytes * self.gpu.write_cost)
        return f_tma + t.tma_store_read_ns, max(f_tma, f_hbm) + t.tma_latency_ns

    def _store_read(self, op) -> None:
        self.groups.complete(op, read_only=True)
        self._group_events[op][0].succeed(op)

    def _store_done(self, op) -> None:
        self.groups.complete(op)
        self._group_events[op][1].succeed(op)

    def commit_group(self) -> Sleep:
        """``cp.async.bulk.commit_group`` (PTX §9.7.9.25.6.1); the yield returns the group index."""
        g = self.groups.commit()
        now = self.engine.now
        self._rec(now, now + self._issue, "cp.async.bulk.commit_group", group=g)
        return Sleep(self._issue, g)

    def wait_group(self, n: int, *, read: bool = False):
        """``cp.async.bulk.wait_group{.read} n`` (PTX §9.7.9.25.6.2): until at most the ``n`` most
        recent groups are pending (``.read``: until their sources have been read)."""
        t0 = self.engine.now
        ops = self.groups.waits_for(n, read=read)
        op = "cp.async.bulk.wait_group.read" if read else "cp.async.bulk.wait_group"
        g = self.groups.covered_group(n)
        if not ops:
            self._rec(t0, t0 + self._hit, op, group=g)
            return Sleep(self._hit)
        ev = self.engine.all_of([self._group_events[o][0 if read else 1] for o in ops], f"{self.actor} {op} {n}")
        ev.delay = self._hit
        if self.trace is not None:
            ev.on(lambda _: self._rec(t0, self.engine.now + self._hit, op, group=g))
        return ev

    # -- named barriers and the cluster barrier ---------------------------------------------------------
    def _named_event(self, bid: int, gen: int, nthreads: int | None = None) -> Event:
        key = (bid, gen)
        ev = self.sm._named_events.get(key)
        if ev is None:
            delay = self.t.bar_sync_ns
            if self._m2:                       # (g) plus a cost per participating warp
                n = nthreads if nthreads is not None else self.sm.named.cta_threads
                delay += self.t.bar_sync_per_warp_ns * -(-n // 32)
            ev = self.sm._named_events[key] = Event(self.engine, f"bar {bid} generation {gen}", delay)
        return ev

    def bar_sync(self, barrier_id: int = 0, nthreads: int | None = None) -> Event:
        """``bar.sync a{, b}`` (``__syncthreads()`` is ``bar.sync 0``) (PTX §9.7.13.1). The waiters resume
        ``bar_sync_ns`` (model 2: ``+ bar_sync_per_warp_ns`` per participating warp) after the last arrival."""
        gen, done = self.sm.named.sync(barrier_id, nthreads, self.actor, threads=self.threads)
        ev = self._named_event(barrier_id, gen, nthreads)
        t0 = self.engine.now
        if self.trace is not None:
            ev.on(lambda _: self._rec(t0, self.engine.now + ev.delay, "bar.sync", bar=barrier_id, phase=gen))
        if done:
            self.sm._named_events.pop((barrier_id, gen)).succeed(gen)
        return ev

    def bar_arrive(self, barrier_id: int, nthreads: int) -> float:
        """``bar.arrive a, b`` (PTX §9.7.13.1): signal arrival without waiting."""
        gen, done = self.sm.named.arrive(barrier_id, nthreads, self.actor, threads=self.threads)
        if done:
            self._named_event(barrier_id, gen, nthreads)
            self.sm._named_events.pop((barrier_id, gen)).succeed(gen)
        now = self.engine.now
        self._rec(now, now + self._issue, "bar.arrive", bar=barrier_id, phase=gen)
        return self._issue

    def _cluster_event(self, ph: int) -> Event:
        key = (self.sm.cluster, ph)
        ev = self.gpu._cluster_events.get(key)
        if ev is None:
            t = self.t
            delay = t.cluster_barrier_ns
            if self._m2:                       # (g) plus costs per CTA of the cluster and per warp of a CTA
                w = -(-self.sm.named.cta_threads // 32)
                delay += (t.cluster_barrier_per_cta_ns * self.gpu.cluster_size + t.cluster_barrier_per_warp_ns * w
                          + t.params["cluster_barrier_per_warp2_ns"].value * w * w            # (g')
                          + t.params["cluster_barrier_per_doubling_ns"].value * math.log2(min(self.gpu.cluster_size, 8)))
            ev = self.gpu._cluster_events[key] = Event(self.engine, f"barrier.cluster {key[0]} phase {ph}", delay)
        return ev

    def cluster_arrive(self, participants: int, *, sem: str = "release") -> float:
        """``barrier.cluster.arrive{.release|.relaxed}`` (PTX §9.7.13.3); ``participants`` is the
        number of threads of the cluster taking part (the barrier is created on first use). The issuing warp
        spends ``cluster_arrive_release_ns`` or ``cluster_arrive_relaxed_ns`` (model 1: one issue slot)."""
        if sem not in ("release", "relaxed"):
            raise ValueError(f"barrier.cluster.arrive takes .release or .relaxed, not .{sem} (PTX §9.7.13.3)")
        cb = self.gpu.cluster_barrier(self.sm.cluster, participants)
        now = self.engine.now
        if self._m2:
            # model 2 (g): the arrival is signalled once the arrive's cost is spent (a release first orders the
            # warp's earlier accesses), so the barrier cannot complete before it
            t = self.t
            w = -(-self.sm.named.cta_threads // 32)
            cost = (t.cluster_arrive_release_ns + t.cluster_arrive_release_per_warp_ns * w
                    + t.params["cluster_arrive_release_per_warp2_ns"].value * w * w) if sem == "release" \
                else t.cluster_arrive_relaxed_ns
            ph = cb.phase
            self.engine.at(now + cost, self._cluster_signal, cb)
        else:
            cost = self._issue
            ph, done = cb.arrive(self.actor, self.threads)
            if done:
                self._cluster_event(ph).succeed(ph)
        self._rec(now, now + cost, "barrier.cluster.arrive", bar=0, phase=ph, sem=sem)
        return cost

    def _cluster_signal(self, cb) -> None:
        ph, done = cb.arrive(self.actor, self.threads)
        if done:
            self.gpu._cluster_done[(self.sm.cluster, ph)] = self.engine.now
            self._cluster_event(ph).succeed(ph)

    def ld_shared_cluster(self, addr: int, size: int, cta: int, label: str = "") -> float:
        """``ld.shared::cluster`` of ``size`` bytes at ``addr`` of CTA rank ``cta``'s shared memory (an address
        from ``mapa``, PTX §9.7.9.23, §9.7.9.8): a generic-proxy read through this SM's DSMEM pipe, landing
        ``dsmem_latency_ns`` after its bytes (assumption h); the own rank reads locally like :meth:`ld_shared`."""
        target = self._target(cta)
        self_lat = self.t.params["dsmem_self_latency_ns"].value if self._m2 else 0.0
        if target is self.sm and not self_lat:
            return self.ld_shared(addr, size, label)
        if target is self.sm:                 # (h') the own rank through the cluster path: local bytes, its latency
            self.sm.smem.check_range(addr, size)
            now = self.engine.now
            _, fin = self.sm.lsu.reserve(now, size)
            t1 = fin + self_lat
            self._rec(now, t1, "ld.shared::cluster", "generic", "r", addr, size, cta=target.rank, label=label)
            return t1 - now
        target.smem.check_range(addr, size)
        now = self.engine.now
        _, fin = self.sm.dsmem.reserve(now, size)
        t1 = fin + self.t.dsmem_latency_ns
        self._rec(now, t1, "ld.shared::cluster", "generic", "r", addr, size, cta=target.rank, label=label)
        return t1 - now

    def cluster_wait(self, participants: int) -> Event:
        """``barrier.cluster.wait{.acquire}`` (PTX §9.7.13.3)."""
        cb = self.gpu.cluster_barrier(self.sm.cluster, participants)
        ph = cb.wait_phase(self.actor)
        ev = self._cluster_event(ph)
        t0 = self.engine.now
        if self._m2 and ev.triggered:
            # model 2: every waiter, the last arriver too, resumes the release delay after the last arrival
            left = max(0.0, self.gpu._cluster_done.get((self.sm.cluster, ph), t0) + ev.delay - t0)
            self._rec(t0, t0 + left, "barrier.cluster.wait", bar=0, phase=ph, sem="acquire")
            return Sleep(left, ph)
        if self.trace is not None:
            ev.on(lambda _: self._rec(t0, self.engine.now + ev.delay, "barrier.cluster.wait", bar=0, phase=ph,
                                      sem="acquire"))
        return ev
