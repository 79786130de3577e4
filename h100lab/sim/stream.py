"""The TMA + mbarrier streaming pipeline of ``l03_stream.cu`` in the simulator, and its closed form.

The kernel (``h100lab/cuda/kernels/l03_stream.cu``, measured by ``python -m h100lab.measure.timing_sweep``):
one producer thread per CTA fills ``stages`` shared-memory buffers with ``cp.async.bulk`` (one mbarrier
``full[s]`` per stage, completed by the copy's bytes); consumers hand a buffer back on ``empty[s]``. Three
modes: ``load`` (two consumer warps wait and hand back at once), ``consume`` (both read their half of every
tile with 16-byte shared loads and sum it), ``copy`` (one consumer thread stores the tile back with a bulk store,
waits until the store has read the buffer — ``wait_group.read 0``, or with ``lag`` the previous store's —
and hands the buffer back). ``grid`` CTAs, ``ctas_per_sm`` per SM, each streaming ``tiles`` tiles.

:func:`simulate_stream` runs that program on :class:`~h100lab.sim.machine.GPU` (any memory model; model 2
is the one it was written for), simulating a symmetric subset of the grid (``sim_sms`` SMs, the memory's
rate scaled to their share) and a truncated tile count whose steady-state period extrapolates the rest.
:func:`analytic_stream` is the closed form of the same schedule in model 2, and :func:`analytic_stream_batch` the
same for many runs at once (NumPy, bit for bit the same numbers), fast enough to fit the timing table on hundreds of
runs (:mod:`h100lab.validation.timing`); ``tests/test_timing_model.py`` checks the two
agree. Symbols (all :class:`~h100lab.sim.timing.Timing` entries or :class:`StreamKernel` constants)::

    transfer   X_tma = c · (T / tma_bytes_per_ns [+ T / store rate for a copy])   (c CTAs per SM share the TMA unit)
               X_ops = c · n_copies · tma_op_ns                   (the SM's issue limit)
               X_mem = G · T · (1 [+ w for a copy]) / R           (the device's memory, R read ceiling)
               X_lsu = c · T / smem_bytes_per_ns                  (consume: the SM's shared-memory reads)
    consumer   C = wait_hit + work(mode) + arrive + loop
    producer   Q = wait_hit + expect_tx + tma_issue + loop
    round trip RT = expect_tx + tma_issue + tma_op + T / b1 + L + wake + work(mode) + wake
               (b1 = min(tma_bytes_per_ns, R) with a shared memory queue, R / G with slices;
                L = tma_latency + tma_latency_per_kb · T/KiB [+ dram_latency for a DRAM source])
    period     P = max(C, Q, X_tma, X_ops, X_mem, X_lsu, RT / stages)      (closed form: their k-norm, soft_period)
    span       ≈ first-tile latency + (tiles − 1) · P + drain;   kernel time = span + launch_ns

``work(load) = 0``; ``work(consume) = smem_latency + T / smem_bytes_per_ns (both halves through the LSUs) +
consume_fixed_ns + (T/2) / consume_warp_bytes_per_ns + fence``; ``work(copy) = max(tma_issue, [tma_issue +] tma_op + T / store rate + tma_store_read_ns) + commit`` (the store
must have read the buffer before it is handed back; the bracket is absent when the issue overlaps the travel,
assumption c' of :mod:`h100lab.sim.timing`). The period is the hard maximum of the bounds in the simulator and
their smooth maximum (``period_sharpness``, assumption i) in the closed form. Assumptions beyond those of the timing table: the two
consumer warps run in parallel; the kernel's loop and bookkeeping cost ``loop_ns`` per tile per thread; the
producer and consumer start together after the barrier initialisation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .machine import GPU
from .timing import Timing, default_timing, read_ceiling, soft_periods, store_rate, write_cost

__all__ = ["StreamKernel", "STREAM_KERNEL", "StreamConfig", "StreamResult", "simulate_stream", "analytic_stream",
           "StreamAnalytic", "config_from_record", "StreamBatch", "analytic_stream_batch", "BOUNDS"]

MODES = ("load", "consume", "copy")
FULL, EMPTY, BUF = 0, 64, 1024        # barriers and tiles in shared memory, as l03_stream.cu lays them out


@dataclass(frozen=True)
class StreamKernel:
    """Constants of ``l03_stream.cu``'s own code (not of the GPU), fitted with the timing table:
    ``consume_warp_bytes_per_ns`` one consumer warp's read-and-sum rate, ``consume_fixed_ns`` its cost per tile
    beyond that, ``loop_ns`` one loop iteration's bookkeeping per thread, ``launch_ns`` the launch overhead a
    CUDA-event kernel time adds to the CTAs' span. Starting values: order of magnitude only."""

    consume_warp_bytes_per_ns: float = 60.0
    consume_fixed_ns: float = 40.0
    loop_ns: float = 10.0
    launch_ns: float = 4000.0

    def with_values(self, **kw) -> "StreamKernel":
        return replace(self, **kw)


STREAM_KERNEL = StreamKernel()


@dataclass(frozen=True)
class StreamConfig:
    """One run of ``l03_stream.cu``: ``mode``, ``stages``, ``tile_bytes``, ``grid`` CTAs (``ctas_per_sm`` per SM),
    ``tiles`` per CTA, sources in DRAM (``dram``) or L2, ``lag`` (mode copy: hand back after the next store)."""

    mode: str
    stages: int
    tile_bytes: int
    grid: int = 1
    ctas_per_sm: int = 1
    tiles: int = 64
    dram: bool = True
    lag: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: one of {MODES}")
        if not 1 <= self.stages <= 8:
            raise ValueError(f"stages = {self.stages}: 1 … 8 (l03_stream.cu)")
        if self.tile_bytes <= 0 or self.tile_bytes % 16:
            raise ValueError(f"tile of {self.tile_bytes} B: a positive multiple of 16 B (PTX §9.7.9.25.4.1)")
        if BUF + self.stages * self.tile_bytes > 232_448:
            raise ValueError(f"{self.stages} × {self.tile_bytes} B buffers and the 1 KiB of barriers do not fit the "
                             "227 KB a CTA may use (CPG §20.8.3)")
        if self.grid < 1 or self.ctas_per_sm < 1 or self.tiles < 1:
            raise ValueError("grid, ctas_per_sm and tiles are at least 1")
        if self.grid > 1 and self.grid % self.ctas_per_sm:
            raise ValueError(f"a grid of {self.grid} CTAs cannot be placed {self.ctas_per_sm} per SM")

    @property
    def copies_per_tile(self) -> int:
        return 2 if self.mode == "copy" else 1

    @property
    def moved_bytes(self) -> int:
        """Bytes read + written by the whole launch."""
        return self.grid * self.tiles * self.tile_bytes * self.copies_per_tile


def config_from_record(r: dict) -> StreamConfig:
    """The :class:`StreamConfig` of one ``l03/stream_sweep`` record."""
    return StreamConfig(mode=r["mode"], stages=r["stages"], tile_bytes=r["tile_bytes"], grid=r["grid"],
                        ctas_per_sm=r["ctas_per_sm"] if r["grid"] > 1 else 1, tiles=r["tiles_per_cta"],
                        dram=r["scope"] != "cta_warm", lag=bool(r.get("flags", 0) & 4) and r["stages"] > 1)


@dataclass
class StreamResult:
    """A simulated run: per-CTA span (ns, CTA 0 of the simulated subset), steady period per tile, the kernel time
    (span + launch overhead), bandwidth (read + written bytes per ns = GB/s) and the simulated tile count."""

    config: StreamConfig
    span_ns: float
    period_ns: float
    kernel_ns: float
    simulated_tiles: int
    events: int = 0
    trace: list | None = field(default=None, repr=False)

    @property
    def ns_per_tile(self) -> float:
        return self.span_ns / self.config.tiles

    @property
    def moved_gbps(self) -> float:
        return self.config.moved_bytes / self.kernel_ns


def _producer(w, cfg: StreamConfig, n: int, k: StreamKernel):
    S, T = cfg.stages, cfg.tile_bytes
    cons = 1 if cfg.mode == "copy" else 2
    for s in range(S):
        yield w.init(FULL + 8 * s, 1, f"full[{s}]")
        yield w.init(EMPTY + 8 * s, cons, f"empty[{s}]")
    yield w.bar_sync(0, 96)
    for i in range(n):
        s = i % S
        yield w.wait(EMPTY + 8 * s, ((i // S) & 1) ^ 1)
        yield w.arrive_expect_tx(FULL + 8 * s, T)
        yield w.cp_async_bulk(BUF + s * T, T, FULL + 8 * s, dram=cfg.dram)
        if k.loop_ns:
            yield k.loop_ns


def _consumer(w, cfg: StreamConfig, n: int, k: StreamKernel, part: int, done: list):
    S, T = cfg.stages, cfg.tile_bytes
    yield w.bar_sync(0, 96)
    half = T // 2
    for i in range(n):
        s = i % S
        yield w.wait(FULL + 8 * s, (i // S) & 1)
        if cfg.mode == "consume":
            yield w.ld_shared(BUF + s * T + part * half, half)
            yield w.compute(k.consume_fixed_ns + half / k.consume_warp_bytes_per_ns)
            yield w.fence_proxy_async()
        yield w.arrive(EMPTY + 8 * s)
        if part == 0:
            done.append(w.now)
        if k.loop_ns:
            yield k.loop_ns
    done.append(w.now)


def _storer(w, cfg: StreamConfig, n: int, k: StreamKernel, done: list):
    S, T = cfg.stages, cfg.tile_bytes
    yield w.bar_sync(0, 96)
    for i in range(n):
        s = i % S
        yield w.wait(FULL + 8 * s, (i // S) & 1)
        yield w.cp_async_bulk_store(BUF + s * T, T)
        yield w.commit_group()
        if cfg.lag:
            yield w.wait_group(1, read=True)
            if i > 0:
                yield w.arrive(EMPTY + 8 * ((i - 1) % S))
        else:
            yield w.wait_group(0, read=True)
            yield w.arrive(EMPTY + 8 * s)
        done.append(w.now)
        if k.loop_ns:
            yield k.loop_ns
    yield w.wait_group(0)
    done.append(w.now)


def simulate_stream(cfg: StreamConfig, timing: Timing | None = None, kernel: StreamKernel = STREAM_KERNEL, *,
                    sim_sms: int = 4, max_tiles: int | None = None, trace: bool = False) -> StreamResult:
    """Run ``l03_stream.cu``'s schedule on the simulator. ``sim_sms`` SMs (``ctas_per_sm`` CTAs each) of the
    grid are simulated, the memory shared as by the whole ``grid`` (``hbm_sharers``: exact for a symmetric
    grid in steady state); at most ``max_tiles`` tiles per CTA (default ``max(4 · stages + 24, 48)``) are
    simulated and the rest extrapolated at the steady period: the time between the consumer's hand-back of
    the last simulated tile and of the tile whole rounds of the stages earlier (a pipeline of S stages may
    repeat in bursts of S tiles)."""
    t = timing if timing is not None else default_timing()
    n_sim = min(cfg.grid, sim_sms * cfg.ctas_per_sm)
    n_sim -= n_sim % cfg.ctas_per_sm if n_sim >= cfg.ctas_per_sm else 0
    n_sim = max(n_sim, 1)
    cap = max_tiles if max_tiles is not None else max(4 * cfg.stages + 24, 48)
    n = min(cfg.tiles, cap)
    gpu = GPU(t, num_sms=n_sim, trace=trace, cta_threads=96, ctas_per_sm=min(cfg.ctas_per_sm, n_sim),
              hbm_sharers=cfg.grid, smem_bytes=BUF + cfg.stages * cfg.tile_bytes)
    finish: list[list[float]] = []
    for sm in gpu.sms:
        done: list[float] = []
        finish.append(done)
        sm.spawn("producer", _producer, cfg, n, kernel)
        if cfg.mode == "copy":
            sm.spawn("consumer", _storer, cfg, n, kernel, done)
            sm.spawn("idle", _idle)
        else:
            for p in range(2):
                sm.spawn(f"consumer{p}", _consumer, cfg, n, kernel, p, done)
    gpu.run()
    span_sim = max(max(d) for d in finish)
    hand = finish[0][:n]                       # CTA 0's hand-back time of each tile
    j = (n // 2) // cfg.stages * cfg.stages
    period = (hand[-1] - hand[-1 - j]) / j if j >= 1 else span_sim / n
    span = span_sim + (cfg.tiles - n) * period
    return StreamResult(cfg, span, period, span + kernel.launch_ns, n, gpu.engine.steps, gpu.trace)


def _idle(w):
    yield w.bar_sync(0, 96)


@dataclass(frozen=True)
class StreamAnalytic:
    """The closed form's terms (ns per tile unless said): consumer C, producer Q, the unit bounds, the round trip
    RT, the period P and which term set it, first-tile latency, drain, span and kernel time (ns)."""

    consumer: float
    producer: float
    x_tma: float
    x_ops: float
    x_mem: float
    x_lsu: float
    round_trip: float
    period: float
    bound: str
    first_ns: float
    drain_ns: float
    span_ns: float
    kernel_ns: float

    def ns_per_tile(self, tiles: int) -> float:
        return self.span_ns / tiles


@dataclass(frozen=True)
class StreamBatch:
    """The columns of many :class:`StreamConfig` for :func:`analytic_stream_batch` (NumPy arrays, one entry per
    configuration): tile bytes ``T``, ``stages``, ``grid``, CTAs per SM ``c``, ``tiles``, the ``mode`` index in
    :data:`MODES`, ``dram``, and the launch's ``moved`` bytes. Build once (:meth:`of`) when the same
    configurations are evaluated under many timing tables (a fit)."""

    T: np.ndarray
    stages: np.ndarray
    grid: np.ndarray
    c: np.ndarray
    tiles: np.ndarray
    mode: np.ndarray
    dram: np.ndarray
    moved: np.ndarray

    @classmethod
    def of(cls, cfgs) -> "StreamBatch":
        cfgs = list(cfgs)
        col = lambda f, dt=np.int64: np.array([f(x) for x in cfgs], dtype=dt)
        return cls(col(lambda x: x.tile_bytes), col(lambda x: x.stages), col(lambda x: x.grid),
                   col(lambda x: x.ctas_per_sm), col(lambda x: x.tiles), col(lambda x: MODES.index(x.mode)),
                   col(lambda x: x.dram, bool), col(lambda x: x.moved_bytes))

    def __len__(self) -> int:
        return len(self.T)


#: the closed form's per-tile bounds, in the order :func:`analytic_stream` names the binding one
BOUNDS = ("consumer", "producer", "tma", "ops", "memory", "lsu", "latency")


def analytic_stream_batch(cfgs, timing: Timing | None = None, kernel: StreamKernel = STREAM_KERNEL) -> dict:
    """:func:`analytic_stream` of many configurations at once (a :class:`StreamBatch` or a sequence of
    :class:`StreamConfig`): a dict of NumPy arrays, one entry per configuration, keyed by
    :class:`StreamAnalytic`'s field names (``bound``: an index into :data:`BOUNDS`).

    The one implementation of the closed form (:func:`analytic_stream` is this on one configuration): NumPy's
    element-wise ``+ − × ÷``, ``minimum`` and ``maximum`` round exactly as Python's float arithmetic does and the
    operations run in the order the formulas are written, and the smooth maximum's powers go through
    :func:`math.pow` (:func:`h100lab.sim.timing.soft_periods`), so every entry is bit for bit the value of the
    scalar formula."""
    t = timing if timing is not None else default_timing()
    b = cfgs if isinstance(cfgs, StreamBatch) else StreamBatch.of(cfgs)
    T, S, G, c = b.T, b.stages, b.grid, b.c
    load, consume, copy = b.mode == 0, b.mode == 1, b.mode == 2
    m2 = t.memory_model >= 2
    R = read_ceiling(t)
    w = write_cost(t) if m2 else 1.0
    shared = m2 and t.memory_shared
    n_cp = np.where(copy, 2, 1)
    op = t.tma_op_ns if m2 else 0.0
    per_kb = t.tma_latency_per_kb_ns if m2 else 0.0
    dram = np.where(b.dram & m2, t.dram_latency_ns, 0.0)
    lat = t.tma_latency_ns + per_kb * T / 1024.0 + dram
    b1 = np.minimum(t.tma_bytes_per_ns, R if shared else R / G)
    loop = kernel.loop_ns
    expect = t.mbarrier_expect_tx_ns if m2 else t.mbarrier_arrive_ns
    # work per mode: load 0; consume one warp's half (work) and both halves (work_rt); copy the store
    half = T / 2
    own = kernel.consume_fixed_ns + half / kernel.consume_warp_bytes_per_ns + t.fence_ns
    work_c = t.smem_latency_ns + half / t.smem_bytes_per_ns + own           # one warp, its own half
    work_rt_c = t.smem_latency_ns + T / t.smem_bytes_per_ns + own           # both halves: the second queues
    store_read = T / store_rate(t) + (t.tma_store_read_ns if m2 else 0.0)
    st_start = 0.0 if (m2 and t.tma_issue_overlap) else t.tma_issue_ns
    work_s = np.maximum(t.tma_issue_ns, st_start + op + store_read) + t.issue_ns + t.wait_hit_ns
    work = np.where(consume, work_c, np.where(copy, work_s, 0.0))
    work_rt = np.where(consume, work_rt_c, np.where(copy, work_s, 0.0))
    C = t.wait_hit_ns + work + t.mbarrier_arrive_ns + loop
    Q = t.wait_hit_ns + expect + t.tma_issue_ns + loop
    x_tma = c * (T / t.tma_bytes_per_ns + np.where(copy, T / store_rate(t), 0.0))   # (e) store rate
    x_ops = c * n_cp * op
    units = T * (1.0 + np.where(copy, w, 0.0))
    x_mem = G * units / R if shared else units / (R / G)
    x_lsu = np.where(consume, c * T / t.smem_bytes_per_ns, 0.0)
    start = 0.0 if (m2 and t.tma_issue_overlap) else t.tma_issue_ns   # (c') issue overlaps travel
    first = start + op + T / b1 + lat + t.wait_wake_ns
    rt = expect + first + work_rt + t.wait_wake_ns   # stage handed back → producer awake again
    terms = np.stack(np.broadcast_arrays(C, Q, x_tma, x_ops, x_mem, x_lsu, rt / S)).astype(float)
    P = soft_periods(terms, t)
    drain = np.where(copy, t.tma_latency_ns + np.maximum(0.0, T * w / (R if shared else R / G)
                                                         - T / t.tma_bytes_per_ns), 0.0)
    span = first + work_rt + t.mbarrier_arrive_ns + loop + (b.tiles - 1) * P + drain
    return {"consumer": terms[0], "producer": terms[1], "x_tma": terms[2], "x_ops": terms[3], "x_mem": terms[4],
            "x_lsu": terms[5], "round_trip": rt, "period": P, "bound": np.argmax(terms, axis=0), "first_ns": first,
            "drain_ns": drain, "span_ns": span, "kernel_ns": span + kernel.launch_ns}


def analytic_stream(cfg: StreamConfig, timing: Timing | None = None,
                    kernel: StreamKernel = STREAM_KERNEL) -> StreamAnalytic:
    """The closed form of :func:`simulate_stream` (module docstring) in memory model 2 (model 1 tables are read
    as model 2 with one ceiling and fixed slices): :func:`analytic_stream_batch` of this one configuration."""
    a = analytic_stream_batch([cfg], timing, kernel)
    return StreamAnalytic(**{k: (BOUNDS[int(v[0])] if k == "bound" else float(v[0])) for k, v in a.items()})


def _round(x: float) -> float:
    return float(f"{x:.6g}") if math.isfinite(x) else x
