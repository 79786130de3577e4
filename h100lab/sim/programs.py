"""A warp-specialised producer/consumer program whose synchronisation steps can be removed one by one
— the hazard lab of lesson 3.

Three warps share one CTA (seed lesson 3 §14: producer/consumer roles):

* **producer** — initialises the barriers, then for every tile: waits until the buffer is empty,
  ``mbarrier.arrive.expect_tx`` on ``full[s]``, ``cp.async.bulk`` global → shared (async proxy);
* **consumer** — waits on ``full[s]``, reads the tile with ``ld.shared`` (generic proxy), computes,
  ``fence.proxy.async``, arrives on ``empty[s]``; every ``out_every`` tiles it writes a result tile to
  a staging buffer with ``st.shared`` (after ``bar.sync 1, 64`` says the staging buffer is free),
  ``fence.proxy.async``, and arrives (``.release``) on the ``staged`` mbarrier;
* **storer** — waits on ``staged``, issues the TMA store ``cp.async.bulk.global.shared::cta.bulk_group``
  (async-proxy read of the staging buffer), ``commit_group``, ``wait_group.read 0``, and hands the
  staging buffer back with ``bar.arrive 1, 64`` (a named barrier used producer/consumer style,
  PTX §9.7.13.1).

Each entry of :data:`STEPS` names one synchronisation step. :func:`run_program` first runs the
complete program, then the program without the requested steps *on the same schedule*: a removed wait
becomes a sleep of exactly the time it waited in the complete run, a removed fence a sleep of the
fence's time, a removed ``.release`` a ``.relaxed`` arrive. So the variant computes the same values at
the same times — by luck of timing — and the hazard checker (:mod:`h100lab.sync.hazards`) shows what
no longer orders the accesses.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sync.hazards import Hazard, check
from ..sync.trace import Record
from .engine import Sleep
from .machine import GPU
from .timing import Timing, default_timing

__all__ = ["STEPS", "ProgramRun", "run_program"]

STEPS: dict[str, str] = {
    "init_sync": "bar.sync 0 after mbarrier.init: every warp sees the initialised barriers",
    "full_wait": "consumer: mbarrier.try_wait.parity on full[s] before reading the tile",
    "empty_wait": "producer: mbarrier.try_wait.parity on empty[s] before refilling the buffer",
    "consumer_fence": "consumer: fence.proxy.async after its generic reads, before releasing the buffer",
    "store_fence": "consumer: fence.proxy.async after writing the staging buffer, before the TMA store",
    "release": "consumer: arrive on 'staged' with .release semantics (removed: .relaxed)",
    "staged_wait": "storer: mbarrier.try_wait.parity on 'staged' before issuing the TMA store",
    "store_read_wait": "storer: cp.async.bulk.wait_group.read 0 before handing the staging buffer back",
}

_FULL, _EMPTY, _STAGED = 0, 256, 504
_BUF = 1024


@dataclass
class ProgramRun:
    """The variant's trace, the hazards the checker reports, and the total time (ns)."""

    removed: tuple[str, ...]
    trace: list[Record] = field(repr=False)
    hazards: list[Hazard]
    total_ns: float


class _Sync:
    """Performs a synchronisation step, or (when removed) sleeps the time it took in the full run."""

    def __init__(self, removed: set[str], durations: dict | None):
        self.removed = removed
        self.durations = durations
        self.seen: dict[tuple, float] = {} if durations is None else None
        self.count: dict[tuple, int] = {}

    def step(self, w, name: str, make):
        key = (w.name, name, self.count.get((w.name, name), 0))
        self.count[(w.name, name)] = key[2] + 1
        if name in self.removed:
            return Sleep(self.durations[key])
        if self.seen is not None:
            self.seen[key] = w.now
        return make()

    def done(self, w, name: str) -> None:
        """Called right after a step completes, to record its duration in the full run."""
        if self.seen is not None and name not in self.removed:
            key = (w.name, name, self.count[(w.name, name)] - 1)
            self.seen[key] = w.now - self.seen[key]


def _producer(w, cfg, sync: _Sync):
    S, T = cfg["stages"], cfg["tile_bytes"]
    for s in range(S):
        yield w.init(_FULL + 8 * s, 1, f"full[{s}]")
        yield w.init(_EMPTY + 8 * s, 1, f"empty[{s}]")
    yield w.init(_STAGED, 1, "staged")
    yield sync.step(w, "init_sync", lambda: w.bar_sync(0, 96))
    sync.done(w, "init_sync")
    for k in range(cfg["tiles"]):
        s = k % S
        yield sync.step(w, "empty_wait", lambda: w.wait(_EMPTY + 8 * s, ((k // S) & 1) ^ 1))
        sync.done(w, "empty_wait")
        yield w.arrive_expect_tx(_FULL + 8 * s, T)
        yield w.cp_async_bulk(_BUF + s * T, T, _FULL + 8 * s, label=f"tile {k}")


def _consumer(w, cfg, sync: _Sync):
    S, T, O = cfg["stages"], cfg["tile_bytes"], cfg["out_bytes"]
    staging = _BUF + S * T
    yield sync.step(w, "init_sync", lambda: w.bar_sync(0, 96))
    sync.done(w, "init_sync")
    for k in range(cfg["tiles"]):
        s = k % S
        yield sync.step(w, "full_wait", lambda: w.wait(_FULL + 8 * s, (k // S) & 1))
        sync.done(w, "full_wait")
        yield w.ld_shared(_BUF + s * T, T, label=f"tile {k}")
        yield w.compute(cfg["compute_ns"], label=f"tile {k}")
        yield sync.step(w, "consumer_fence", w.fence_proxy_async)
        sync.done(w, "consumer_fence")
        yield w.arrive(_EMPTY + 8 * s)
        if (k + 1) % cfg["out_every"] == 0:
            j = k // cfg["out_every"]
            yield w.bar_sync(1, 64)                          # the staging buffer is free
            yield w.st_shared(staging, O, label=f"out {j}")
            yield sync.step(w, "store_fence", w.fence_proxy_async)
            sync.done(w, "store_fence")
            sem = "relaxed" if "release" in sync.removed else "release"
            yield w.arrive(_STAGED, sem=sem)


def _storer(w, cfg, sync: _Sync):
    S, T, O = cfg["stages"], cfg["tile_bytes"], cfg["out_bytes"]
    staging = _BUF + S * T
    outs = cfg["tiles"] // cfg["out_every"]
    yield sync.step(w, "init_sync", lambda: w.bar_sync(0, 96))
    sync.done(w, "init_sync")
    yield w.bar_arrive(1, 64)                                # staging starts free
    for j in range(outs):
        yield sync.step(w, "staged_wait", lambda: w.wait(_STAGED, j & 1))
        sync.done(w, "staged_wait")
        yield w.cp_async_bulk_store(staging, O, label=f"out {j}")
        yield w.commit_group()
        yield sync.step(w, "store_read_wait", lambda: w.wait_group(0, read=True))
        sync.done(w, "store_read_wait")
        if j + 1 < outs:
            yield w.bar_arrive(1, 64)
    yield w.wait_group(0)


def _run(cfg, timing, removed: set[str], durations):
    gpu = GPU(timing, num_sms=1, cta_threads=96)
    sm = gpu.sms[0]
    sync = _Sync(removed, durations)
    sm.spawn("producer", _producer, cfg, sync)
    sm.spawn("consumer", _consumer, cfg, sync)
    sm.spawn("storer", _storer, cfg, sync)
    total = gpu.run()
    return gpu.trace, total, sync.seen


def run_program(remove=(), *, stages: int = 2, tiles: int = 6, tile_bytes: int = 2048, out_bytes: int = 1024,
                out_every: int = 2, compute_ns: float = 300.0, timing: Timing | None = None) -> ProgramRun:
    """Run the three-warp program without the synchronisation steps in ``remove`` (names from
    :data:`STEPS`) on the complete program's schedule, and check its trace for hazards."""
    removed = tuple(sorted(set(remove)))
    unknown = [r for r in removed if r not in STEPS]
    if unknown:
        raise ValueError(f"unknown step(s) {unknown}; the steps are {list(STEPS)}")
    if tiles < 1 or out_every < 1 or tiles % out_every:
        raise ValueError(f"tiles ({tiles}) must be a positive multiple of out_every ({out_every})")
    if tile_bytes % 16 or out_bytes % 16:
        raise ValueError("tile and output sizes must be multiples of 16 B (cp.async.bulk, PTX §9.7.9.25.4.1)")
    timing = timing if timing is not None else default_timing()
    cfg = dict(stages=stages, tiles=tiles, tile_bytes=tile_bytes, out_bytes=out_bytes, out_every=out_every,
               compute_ns=compute_ns)
    full_trace, total, durations = _run(cfg, timing, set(), None)
    if removed:
        trace, total, _ = _run(cfg, timing, set(removed), durations)
    else:
        trace = full_trace
    return ProgramRun(removed, trace, check(trace), total)
