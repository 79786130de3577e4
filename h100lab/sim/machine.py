"""The machine: a GPU of SMs whose warps are processes and whose units are resources.

Layout of the model (all numbers come from one :class:`~h100lab.sim.timing.Timing` table)::

    GPU ── engine (clock, events)          ── trace: list[Record]  (h100lab.sync.trace format)
     ├── hbm   Pipe  (B/ns, shared by all SMs)
     └── SM i
          ├── smem     SharedMemory (bytes; mbarriers live in it)
          ├── tma      Pipe (B/ns)  — the bulk-copy (TMA) unit: cp.async.bulk loads and stores
          ├── lsu      Pipe (B/ns)  — ld.shared / st.shared
          ├── tensor   Pipe (MAC/ns) — wgmma-style tensor-core work
          ├── named    NamedBarriers (bar.sync / bar.arrive, ids 0–15)
          └── warps    Warp — one process each, written as a generator function

A warp program is a generator function taking its :class:`Warp`; every instruction is a method used
with ``yield from`` (it advances the warp's time and records a trace record)::

    def producer(w, stages, iters):
        for k in range(iters):
            s = k % stages
            yield from w.wait(EMPTY + 8 * s, parity=((k // stages) & 1) ^ 1)
            yield from w.arrive_expect_tx(FULL + 8 * s, TILE)
            yield from w.cp_async_bulk(BUF + s * TILE, TILE, bar=FULL + 8 * s)

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

from typing import Callable, Generator

from ..sync.groups import BulkGroups
from ..sync.mbarrier import MBarrier
from ..sync.named import ClusterBarrier, NamedBarriers
from ..sync.smem import SMEM_MAX_PER_BLOCK, SharedMemory
from ..sync.trace import Record
from .engine import Engine, Event, SimulationError
from .resources import Pipe, reserve_path
from .timing import Timing, default_timing

__all__ = ["GPU", "SM", "Warp", "SimBarrier"]


class SimBarrier:
    """An mbarrier in the simulator: the byte-backed :class:`~h100lab.sync.mbarrier.MBarrier` plus the
    number of completed phases and the events waiters sleep on."""

    __slots__ = ("mb", "completions", "events", "label", "engine")

    def __init__(self, sm: "SM", addr: int, label: str):
        self.mb = MBarrier(sm.smem, addr)
        self.completions = 0          # phases completed so far = number of the current phase
        self.events: dict[int, Event] = {}
        self.label = label
        self.engine = sm.engine

    def completion(self, phase: int) -> Event:
        """The event triggered when phase number ``phase`` completes."""
        ev = self.events.get(phase)
        if ev is None:
            ev = self.events[phase] = Event(self.engine, f"{self.label} phase {phase} "
                                                         f"(parity {phase & 1}) [{self.mb!r}]")
            if phase < self.completions:
                ev.succeed(phase)
        return ev

    def update(self, old_parity: int) -> bool:
        """After a counter update: if the parity flipped, a phase completed — wake its waiters."""
        if self.mb.phase != old_parity:
            k = self.completions
            self.completions = k + 1
            ev = self.events.pop(k, None)
            if ev is not None:
                ev.succeed(k)
            return True
        return False


class GPU:
    """``num_sms`` SMs sharing HBM, one engine and one trace. ``cluster_size`` groups consecutive SMs
    into clusters (CTA rank = index % cluster_size)."""

    def __init__(self, timing: Timing | None = None, *, num_sms: int = 1, trace: bool = True,
                 smem_bytes: int = SMEM_MAX_PER_BLOCK, cta_threads: int = 384, cluster_size: int = 1):
        if num_sms < 1 or num_sms % cluster_size:
            raise ValueError(f"{num_sms} SMs cannot be split into clusters of {cluster_size}")
        self.timing = timing if timing is not None else default_timing()
        self.engine = Engine()
        self.trace: list[Record] | None = [] if trace else None
        self._late: list[list] = []    # async-op records finalised after the run (group indices)
        self.hbm = Pipe("hbm", self.timing.hbm_bytes_per_ns)
        self.cluster_size = cluster_size
        self.num_sms = num_sms
        self._clusters: dict[int, ClusterBarrier] = {}
        self._cluster_events: dict[tuple[int, int], Event] = {}
        self.sms = [SM(self, i, smem_bytes, cta_threads) for i in range(num_sms)]

    def run(self, until: float | None = None) -> float:
        """Run to completion; returns the end time (ns). Raises Deadlock if warps are stuck."""
        t = self.engine.run(until)
        self._finalise()
        return t

    def _finalise(self) -> None:
        if self.trace is None:
            return
        for item in self._late:
            warp, fields, op = item
            g = warp.groups.group_of(op)
            self.trace.append(Record(*fields[:12], g, *fields[13:]))
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
        self.tma = Pipe(f"sm{index}.tma", t.tma_bytes_per_ns)
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

    def peer(self, rank: int) -> "SM":
        """The SM of this cluster running CTA rank ``rank``."""
        if not 0 <= rank < self.gpu.cluster_size:
            raise ValueError(f"CTA rank {rank} outside the cluster of {self.gpu.cluster_size}")
        return self.gpu.sms[self.cluster * self.gpu.cluster_size + rank]


class Warp:
    """A warp (or warpgroup, or elected thread) executing a program: its instructions are the
    generator methods below, each recording one :class:`~h100lab.sync.trace.Record`."""

    def __init__(self, sm: SM, name: str, threads: int = 32):
        self.sm = sm
        self.gpu = sm.gpu
        self.engine = sm.engine
        self.t = sm.gpu.timing
        self.name = name
        self.actor = sm.prefix + name
        self.threads = threads
        self.groups = BulkGroups()
        self._group_events: dict[int, tuple[Event, Event]] = {}
        self._op_seq = 0
        self.trace = sm.gpu.trace

    def __repr__(self) -> str:
        return f"Warp({self.actor!r})"

    @property
    def now(self) -> float:
        """Current simulated time (ns)."""
        return self.engine.now

    def _rec(self, t0, t1, op, proxy="", access="", addr=-1, size=0, bar=-1, phase=-1, sem="", group=-1,
             cta=None, label="", lane=None) -> None:
        if self.trace is not None:
            self.trace.append(Record(t0, t1, self.actor, op, lane or self.actor, proxy, access, addr, size,
                                     bar, phase, sem, group, self.sm.rank if cta is None else cta, label))

    def _target(self, cta: int | None) -> SM:
        return self.sm if cta is None or cta == self.sm.rank else self.sm.peer(cta)

    # -- plain work -----------------------------------------------------------------------------
    def compute(self, ns: float, label: str = "compute") -> Generator:
        """Busy on the CUDA cores for ``ns`` ns (no memory access)."""
        t0 = self.engine.now
        yield float(ns)
        self._rec(t0, self.engine.now, "compute", label=label)

    def sleep(self, ns: float) -> Generator:
        """Idle for ``ns`` ns (not recorded)."""
        yield float(ns)

    def ld_shared(self, addr: int, size: int, label: str = "") -> Generator:
        """``ld.shared`` of ``size`` bytes (all lanes together) through the LSUs: generic-proxy read."""
        self.sm.smem.check_range(addr, size)
        t0 = self.engine.now
        _, fin = self.sm.lsu.reserve(t0, size)
        yield fin + self.t.smem_latency_ns - t0
        self._rec(t0, self.engine.now, "ld.shared", "generic", "r", addr, size, label=label)

    def st_shared(self, addr: int, size: int, label: str = "") -> Generator:
        """``st.shared`` of ``size`` bytes through the LSUs: generic-proxy write."""
        self.sm.smem.check_range(addr, size)
        t0 = self.engine.now
        _, fin = self.sm.lsu.reserve(t0, size)
        yield max(fin - t0, self.t.issue_ns)
        self._rec(t0, self.engine.now, "st.shared", "generic", "w", addr, size, label=label)

    def mma(self, macs: float, reads: tuple = (), label: str = "wgmma") -> Generator:
        """Tensor-core work of ``macs`` multiply-accumulates reading shared-memory operands
        ``reads = ((addr, size), …)`` through the async proxy (wgmma; PTX §9.7.15.4), waited for."""
        t0 = self.engine.now
        _, fin = self.sm.tensor.reserve(t0, macs)
        yield fin + self.t.wgmma_latency_ns - t0
        t1 = self.engine.now
        if not reads:
            self._rec(t0, t1, "wgmma", label=label)
        for a, n in reads:
            self._rec(t0, t1, "wgmma", "async", "r", a, n, label=label)

    # -- fences ---------------------------------------------------------------------------------
    def fence_proxy_async(self) -> Generator:
        """``fence.proxy.async.shared::cta``: orders this thread's generic-proxy accesses with later
        async-proxy accesses and vice versa (PTX §9.7.13.4, async proxy §9.7.9.25.2)."""
        t0 = self.engine.now
        yield self.t.fence_ns
        self._rec(t0, self.engine.now, "fence.proxy.async")

    def fence_acq_rel(self) -> Generator:
        """``fence.acq_rel.cta``: makes a following relaxed arrive act as a release and a preceding
        relaxed wait act as an acquire (PTX §9.7.13.4, memory model §8.9)."""
        t0 = self.engine.now
        yield self.t.fence_ns
        self._rec(t0, self.engine.now, "fence.acq_rel")

    # -- mbarrier -------------------------------------------------------------------------------
    def init(self, bar: int, count: int, name: str = "") -> Generator:
        """``mbarrier.init.shared::cta.b64 [bar], count`` (PTX §9.7.13.15.9)."""
        sm = self.sm
        if bar in sm.bars and sm.bars[bar].mb.valid:
            sm.bars[bar].mb.init(count)   # raises the re-init error
        sb = SimBarrier(sm, bar, name or f"mbarrier@{bar:#x}")
        sb.mb.init(count, rank=sm.rank)
        sm.bars[bar] = sb
        t0 = self.engine.now
        yield self.t.issue_ns
        self._rec(t0, self.engine.now, "mbarrier.init", bar=bar, phase=0, label=sb.label)

    def inval(self, bar: int) -> Generator:
        """``mbarrier.inval`` (PTX §9.7.13.15.10)."""
        sb = self.sm.barrier(bar)
        sb.mb.inval(rank=self.sm.rank)
        t0 = self.engine.now
        yield self.t.issue_ns
        self._rec(t0, self.engine.now, "mbarrier.inval", bar=bar, label=sb.label)

    def _arrive_like(self, bar, cta, op, fn, *args, sem="release", **kw):
        sm = self._target(cta)
        sb = sm.barrier(bar)
        old = sb.mb.phase
        ph = sb.completions
        tok = fn(sb.mb, *args, rank=self.sm.rank, **kw)
        sb.update(old)
        t0 = self.engine.now
        yield self.t.mbarrier_arrive_ns
        self._rec(t0, self.engine.now, op, bar=bar, phase=ph, sem=sem, cta=sm.rank, label=sb.label)
        return tok

    def arrive(self, bar: int, count: int = 1, *, sem: str = "release", no_complete: bool = False,
               cta: int | None = None) -> Generator:
        """``mbarrier.arrive{.sem}{.noComplete} [bar]{, count}`` → state token (PTX §9.7.13.15.13).
        ``sem="relaxed"`` drops the release ordering (§9.7.13.15.13, memory model)."""
        op = "mbarrier.arrive" + (".noComplete" if no_complete else "")
        return (yield from self._arrive_like(bar, cta, op, MBarrier.arrive, count, sem=sem,
                                             no_complete=no_complete))

    def arrive_drop(self, bar: int, count: int = 1, *, sem: str = "release", no_complete: bool = False,
                    cta: int | None = None) -> Generator:
        """``mbarrier.arrive_drop`` (PTX §9.7.13.15.14)."""
        op = "mbarrier.arrive_drop" + (".noComplete" if no_complete else "")
        return (yield from self._arrive_like(bar, cta, op, MBarrier.arrive_drop, count, sem=sem,
                                             no_complete=no_complete))

    def arrive_expect_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Generator:
        """``mbarrier.arrive.expect_tx [bar], nbytes`` (PTX §9.7.13.15.13)."""
        return (yield from self._arrive_like(bar, cta, "mbarrier.arrive.expect_tx",
                                             MBarrier.arrive_expect_tx, nbytes))

    def expect_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Generator:
        """``mbarrier.expect_tx [bar], nbytes`` — relaxed (PTX §9.7.13.15.11)."""
        return (yield from self._arrive_like(bar, cta, "mbarrier.expect_tx", MBarrier.expect_tx, nbytes,
                                             sem="relaxed"))

    def complete_tx(self, bar: int, nbytes: int, *, cta: int | None = None) -> Generator:
        """``mbarrier.complete_tx [bar], nbytes`` by a thread — relaxed (PTX §9.7.13.15.12)."""
        return (yield from self._arrive_like(bar, cta, "mbarrier.complete_tx", MBarrier.complete_tx, nbytes,
                                             sem="relaxed"))

    def wait(self, bar: int, parity: int, *, sem: str = "acquire", test: bool = False) -> Generator:
        """``mbarrier.try_wait.parity{.acquire|.relaxed}`` in a loop until it returns True
        (PTX §9.7.13.15.16): returns at once if the phase with this parity has completed, otherwise
        sleeps until the current phase completes. Returns the completed phase number (−1 for the
        fictional phase before phase 0)."""
        sb = self.sm.barrier(bar)
        t0 = self.engine.now
        if sb.mb.try_wait_parity(parity, rank=self.sm.rank):
            observed = sb.completions - 1
            yield self.t.wait_hit_ns
        else:
            observed = sb.completions
            yield sb.completion(observed)
            yield self.t.wait_wake_ns
        op = "mbarrier.test_wait.parity" if test else "mbarrier.try_wait.parity"
        self._rec(t0, self.engine.now, op, bar=bar, phase=observed, sem=sem, label=sb.label)
        return observed

    # -- bulk copies --------------------------------------------------------------------------------
    def cp_async_bulk(self, dst: int, nbytes: int, bar: int, *, label: str = "",
                      cta: int | None = None) -> Generator:
        """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], nbytes,
        [bar]`` (PTX §9.7.9.25.4.1): the TMA unit writes ``nbytes`` into shared memory at ``dst``
        (async proxy) and then performs complete-tx(nbytes) on the mbarrier ``bar``. The issuing warp
        continues after the issue cost."""
        if nbytes % 16 or dst % 16:
            raise ValueError(f"cp.async.bulk of {nbytes} B to {dst:#x}: size must be a multiple of 16 and "
                             f"the shared-memory address 16-byte aligned (PTX §9.7.9.25.4.1)")
        sm = self._target(cta)
        sm.smem.check_range(dst, nbytes)
        sb = sm.barrier(bar)
        t0 = self.engine.now
        yield self.t.tma_issue_ns
        _, fin = reserve_path((self.sm.tma, self.gpu.hbm), self.engine.now, nbytes)
        self.engine.at(fin + self.t.tma_latency_ns, self._bulk_done,
                       (t0, sm, dst, nbytes, bar, sb, label or sb.label))

    def _bulk_done(self, arg) -> None:
        t0, sm, dst, nbytes, bar, sb, label = arg
        ph = sb.completions
        old = sb.mb.phase
        sb.mb.complete_tx(nbytes, rank=sm.rank)
        sb.update(old)
        self._rec(t0, self.engine.now, "cp.async.bulk.shared::cluster.global", "async", "w", dst, nbytes,
                  bar, ph, "release", -1, sm.rank, label, lane=f"{self.sm.prefix}tma")

    def cp_async_bulk_store(self, src: int, nbytes: int, *, label: str = "") -> Generator:
        """``cp.async.bulk.global.shared::cta.bulk_group [dst], [src], nbytes`` (PTX §9.7.9.25.4.1):
        the TMA unit reads ``nbytes`` of shared memory at ``src`` (async proxy) and writes global
        memory; completion is tracked by this warp's bulk async-groups."""
        if nbytes % 16 or src % 16:
            raise ValueError(f"cp.async.bulk of {nbytes} B from {src:#x}: size must be a multiple of 16 "
                             f"and the shared-memory address 16-byte aligned (PTX §9.7.9.25.4.1)")
        self.sm.smem.check_range(src, nbytes)
        t0 = self.engine.now
        yield self.t.tma_issue_ns
        now = self.engine.now
        _, fin = reserve_path((self.sm.tma, self.gpu.hbm), now, nbytes)
        self._op_seq += 1
        op = self._op_seq
        self.groups.issue(op)
        read_ev = Event(self.engine, f"{self.actor} bulk store {op} read")
        done_ev = Event(self.engine, f"{self.actor} bulk store {op} complete")
        self._group_events[op] = (read_ev, done_ev)
        done = fin + self.t.tma_latency_ns
        self.engine.at(fin, self._store_read, op)
        self.engine.at(done, self._store_done, op)
        if self.trace is not None:
            fields = [t0, done, self.actor, "cp.async.bulk.global.shared::cta.bulk_group",
                      f"{self.sm.prefix}tma", "async", "r", src, nbytes, -1, -1, "", -1, self.sm.rank,
                      label or "bulk store"]
            self.gpu._late.append([self, fields, op])

    def _store_read(self, op) -> None:
        self.groups.complete(op, read_only=True)
        self._group_events[op][0].succeed(op)

    def _store_done(self, op) -> None:
        self.groups.complete(op)
        self._group_events[op][1].succeed(op)

    def commit_group(self) -> Generator:
        """``cp.async.bulk.commit_group`` (PTX §9.7.9.25.6.1); returns the new group's index."""
        g = self.groups.commit()
        t0 = self.engine.now
        yield self.t.issue_ns
        self._rec(t0, self.engine.now, "cp.async.bulk.commit_group", group=g)
        return g

    def wait_group(self, n: int, *, read: bool = False) -> Generator:
        """``cp.async.bulk.wait_group{.read} n`` (PTX §9.7.9.25.6.2): until at most the ``n`` most
        recent groups are pending (``.read``: until their sources have been read)."""
        t0 = self.engine.now
        ops = self.groups.waits_for(n, read=read)
        if ops:
            yield self.engine.all_of([self._group_events[o][0 if read else 1] for o in ops])
        yield self.t.wait_hit_ns
        op = "cp.async.bulk.wait_group.read" if read else "cp.async.bulk.wait_group"
        self._rec(t0, self.engine.now, op, group=self.groups.covered_group(n))

    # -- named barriers and the cluster barrier ---------------------------------------------------------
    def _named_event(self, bid: int, gen: int) -> Event:
        key = (bid, gen)
        ev = self.sm._named_events.get(key)
        if ev is None:
            ev = self.sm._named_events[key] = Event(self.engine, f"bar {bid} generation {gen}")
        return ev

    def bar_sync(self, barrier_id: int = 0, nthreads: int | None = None) -> Generator:
        """``bar.sync a{, b}`` (``__syncthreads()`` is ``bar.sync 0``) (PTX §9.7.13.1)."""
        gen, done = self.sm.named.sync(barrier_id, nthreads, self.actor, threads=self.threads)
        ev = self._named_event(barrier_id, gen)
        t0 = self.engine.now
        if done:
            self.sm._named_events.pop((barrier_id, gen)).succeed(gen)
        yield ev
        yield self.t.bar_sync_ns
        self._rec(t0, self.engine.now, "bar.sync", bar=barrier_id, phase=gen)

    def bar_arrive(self, barrier_id: int, nthreads: int) -> Generator:
        """``bar.arrive a, b`` (PTX §9.7.13.1): signal arrival without waiting."""
        gen, done = self.sm.named.arrive(barrier_id, nthreads, self.actor, threads=self.threads)
        if done:
            self._named_event(barrier_id, gen)
            self.sm._named_events.pop((barrier_id, gen)).succeed(gen)
        t0 = self.engine.now
        yield self.t.issue_ns
        self._rec(t0, self.engine.now, "bar.arrive", bar=barrier_id, phase=gen)

    def cluster_arrive(self, participants: int, *, sem: str = "release") -> Generator:
        """``barrier.cluster.arrive{.release|.relaxed}`` (PTX §9.7.13.3); ``participants`` is the
        number of threads of the cluster taking part (the barrier is created on first use)."""
        cb = self.gpu.cluster_barrier(self.sm.cluster, participants)
        ph, done = cb.arrive(self.actor, self.threads)
        if done:
            self._cluster_event(ph).succeed(ph)
        t0 = self.engine.now
        yield self.t.issue_ns
        self._rec(t0, self.engine.now, "barrier.cluster.arrive", bar=0, phase=ph, sem=sem)

    def _cluster_event(self, ph: int) -> Event:
        key = (self.sm.cluster, ph)
        ev = self.gpu._cluster_events.get(key)
        if ev is None:
            ev = self.gpu._cluster_events[key] = Event(self.engine, f"barrier.cluster {key[0]} phase {ph}")
        return ev

    def cluster_wait(self, participants: int) -> Generator:
        """``barrier.cluster.wait{.acquire}`` (PTX §9.7.13.3)."""
        cb = self.gpu.cluster_barrier(self.sm.cluster, participants)
        ph = cb.wait_phase(self.actor)
        t0 = self.engine.now
        yield self._cluster_event(ph)
        yield self.t.cluster_barrier_ns
        self._rec(t0, self.engine.now, "barrier.cluster.wait", bar=0, phase=ph, sem="acquire")
