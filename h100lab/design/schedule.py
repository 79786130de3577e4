"""Persistent tile schedulers, wave quantization and an L2-reuse estimate per tile order (lesson 8).

A persistent GEMM launches at most one CTA per SM and lets CTA ``b`` of ``G`` take tiles ``b, b + G, b + 2G, ...``
of a linear tile order. Which (m, n) tile a linear index names is the scheduler's choice:

* :func:`static_order` — the grouped ("swizzled") rasterization of ``l08_gemm.cu``'s ``tile_coords``: walk
  ``group`` tile-rows along M (``raster="m"``) — or ``group`` tile-columns along N (``raster="n"``) — before moving
  to the next column (row), so the tiles running at the same time share A and B panels in L2. ``group = 1`` with
  raster M is the plain row-major order (N fastest), ``group`` ≥ the tile-rows the column-major one;
* :func:`grouped_order` — grouped GEMM: several problems' tiles concatenated into one linear order;
* :func:`stream_k` — a first Stream-K: the ``tiles × k_iters`` MAC-loop iterations cut into ``G`` equal
  contiguous ranges, so every CTA does the same work and tiles split between CTAs need a fix-up (partial sums
  added by a second CTA). Fix-up roles, locks and hybrid data-parallel + Stream-K come later (lesson 8.1).

:func:`waves` gives the wave-quantization figures (the last, partial wave leaves SMs idle in a data-parallel
schedule); :func:`l2_reuse` estimates the DRAM traffic of a tile order from the panels each wave touches and where
its CTAs are in their k-loops when they read them: a wave's distinct A and B panels are read from DRAM once, and a
panel's k-slice again whenever it left L2 — whose capacity (the H200's 60 MiB, half of it per partition) holds
only what the wave brought in since — before the next tile sharing it came to it (:func:`slice_loads`,
:func:`panel_loads`: CTAs spread within a launch round, launch rounds lagging one another, :func:`launch_round`);
nothing survives from one wave to the next. With the CTAs in lockstep (the default) the capacity never binds and
each distinct panel is read once per wave.

What the H200 says (``data/l08/gemm_orders``, ``benchmarks/bench_gemm_orders.py``; checked by
``tests/test_schedule_l2.py``): with 64 × 256 ping-pong tiles the orders that put the tiles sharing a B panel on
nearby CTAs (grouped along M, column-major, grouped by 2 along N) all run close to the fastest, and those that
put them 8 or more CTAs apart (row-major; grouped by 8 or 16 along N) up to twice as long, at every K measured —
while the number of distinct panels in a wave does not tell them apart (grouped by 2 along M touches as many as
row-major). A lockstep wave cannot lose that reuse whatever the capacity; a spread or a lag between the CTAs that
share a panel can (the parameters above). Tried against the sweep through the lesson-8 time model (a lag per
launch round or per CTA in ns, converted with the tile's time at the tensor rate; either fixed point; with and
without a spread), a lag fitted on the row-major record brings it within ±10 % but leaves the orders grouped
along N too fast and makes the 128 × 256 row-major and the K = 4096 ones too slow: no setting moved more than a
few of the sweep's 156 records into ±10 %, so the defaults stay the lockstep estimate and the lesson-8 model
(:mod:`h100lab.design.perf`, which calls this with the defaults) is unchanged by the capacity. The traced launches
(``data/l08/gemm_skew``, ``bench_gemm_orders.py --skew``; cooperative 128 × 256 tiles, the only form with
timestamps) then showed why: the CTAs of a persistent launch start within a thousandth of the run of each other
(no launch lag), and in the row-major order two CTAs of the wave start every tile within 1 % of a tile of each
other (the grouped order drifts more) — the row-major wave stays in lockstep, where this model keeps every reuse.
The loss of the far-apart B sharers is therefore not a capacity effect of cooperative CTAs out of step. The time
model now takes the tile order's DRAM traffic from :mod:`h100lab.design.traffic` (in step for the cooperative forms,
this module's estimate with its defaults; for ping-pong forms a reuse window of consecutive CTAs, fitted on the
sweep), and Nsight Compute counted the DRAM bytes (``data/l08/gemm_l2_traffic``, ``bench_gemm_orders.py --l2``):
the lockstep estimate is right for every grouped order; the row-major ping-pong order at 8192³ reads ~3× it; at
4096³ the row-major order reads no more than the grouped one while it runs longer; and a plain launch fills one GPC
after another, so CTAs far apart in the launch sit on different GPCs [open: why sharing breaks down between them,
and only at 8192³]. The ping-pong kernel traced the same way (``data/l08/gemm_skew_pingpong``,
:func:`h100lab.design.traffic.skew_rows`) does drift: in the row-major order CTA 66 runs a quarter of the run
ahead of CTA 0 at 8192³ and at 8192 × 8192 × 4096 (2–3 % at 4096³), in the grouped order they stay together — the
form that loses reuse in that order is the one whose CTAs fall out of step in it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

__all__ = ["ScheduleError", "static_order", "tile_at", "cta_tiles", "grouped_order", "Waves", "waves",
           "StreamKSegment", "stream_k", "L2Estimate", "l2_reuse", "slice_loads", "panel_loads",
           "launch_round", "ROUND_CTAS"]


#: CTAs per launch round (:func:`launch_round`): two per TPC × the H200's 8 GPCs (``data/l02/gpc_map``,
#: ``data/l02/placement``)
ROUND_CTAS = 16


class ScheduleError(ValueError):
    """A scheduler asked for something that cannot be scheduled."""


def _pos(name, v, low=1):
    if int(v) != v or v < low:
        raise ScheduleError(f"{name} = {v}: must be an integer >= {low}")


def tile_at(t: int, tiles_m: int, tiles_n: int, group: int = 1, raster: str = "m") -> tuple[int, int]:
    """The (m, n) tile at position ``t`` of the grouped order (the kernel's ``tile_coords``): with raster ``"m"``
    a group is ``group`` consecutive tile-rows, walked down M first: t → (first + r % size, r // size) with
    r = t mod (group·tiles_n) and size = min(group, tiles_m - first); raster ``"n"`` swaps the roles of M and N."""
    _pos("tiles_m", tiles_m)
    _pos("tiles_n", tiles_n)
    _pos("group", group)
    if raster not in ("m", "n"):
        raise ScheduleError(f"raster {raster!r}: rasterize along 'm' or 'n'")
    if not 0 <= t < tiles_m * tiles_n:
        raise ScheduleError(f"tile {t} outside 0..{tiles_m * tiles_n - 1}")
    major, minor = (tiles_m, tiles_n) if raster == "m" else (tiles_n, tiles_m)
    per = group * minor
    first = (t // per) * group
    r = t % per
    size = min(major - first, group)
    a, b = first + r % size, r // size
    return (a, b) if raster == "m" else (b, a)


def static_order(tiles_m: int, tiles_n: int, group: int = 1, raster: str = "m") -> list[tuple[int, int]]:
    """Every tile in the order of :func:`tile_at` (a permutation of the tile grid); a fresh list each call (the
    order of one grid is computed once per process: the time model asks for the same few grids hundreds of times)."""
    return list(_static_order(tiles_m, tiles_n, group, raster))


@functools.lru_cache(maxsize=256)
def _static_order(tiles_m: int, tiles_n: int, group: int, raster: str) -> tuple[tuple[int, int], ...]:
    return tuple(tile_at(t, tiles_m, tiles_n, group, raster) for t in range(tiles_m * tiles_n))


def cta_tiles(order: list, ctas: int) -> list[list]:
    """The persistent assignment: CTA b gets order[b], order[b + ctas], ..."""
    _pos("ctas", ctas)
    return [order[b::ctas] for b in range(ctas)]


def grouped_order(problems: list[tuple[int, int]], bm: int, bn: int, group: int = 1,
                  raster: str = "m") -> list[tuple[int, int, int]]:
    """Grouped GEMM: problems (M_i, N_i) tiled by bm × bn, each problem's tiles in :func:`static_order`, problems
    one after another in one linear order of (problem, m, n) — one persistent launch for all of them."""
    _pos("bm", bm)
    _pos("bn", bn)
    out = []
    for i, (M, N) in enumerate(problems):
        _pos("M", M)
        _pos("N", N)
        out += [(i, m, n) for m, n in static_order(-(-M // bm), -(-N // bn), group, raster)]
    return out


@dataclass(frozen=True)
class Waves:
    """Wave quantization of ``tiles`` equal tiles on ``ctas`` persistent CTAs: ``waves`` = ceil(tiles / ctas),
    ``last`` tiles in the last wave, ``efficiency`` = tiles / (waves · ctas) — the fraction of CTA-slots doing
    work; ``idle_sms_last`` SMs idle during the last wave."""

    tiles: int
    ctas: int
    waves: int
    last: int
    efficiency: float
    idle_sms_last: int


def waves(tiles: int, ctas: int) -> Waves:
    """Wave figures of a data-parallel (one tile at a time per CTA) schedule."""
    _pos("tiles", tiles)
    _pos("ctas", ctas)
    w = -(-tiles // ctas)
    last = tiles - (w - 1) * ctas
    return Waves(tiles, ctas, w, last, tiles / (w * ctas), ctas - last)


@dataclass(frozen=True)
class StreamKSegment:
    """CTA ``cta`` does MAC iterations [k_begin, k_end) of tile ``tile``; ``owner``: it finishes the tile (its
    range reaches the tile's last iteration) and so adds the other segments' partial sums (fix-up)."""

    cta: int
    tile: int
    k_begin: int
    k_end: int
    owner: bool


def stream_k(tiles: int, k_iters: int, ctas: int) -> list[list[StreamKSegment]]:
    """Stream-K split: iteration i of the tiles·k_iters total (tile i // k_iters, k-step i % k_iters) goes to CTA
    b when b·T // G <= i < (b + 1)·T // G; each CTA's range cut at tile boundaries into segments."""
    _pos("tiles", tiles)
    _pos("k_iters", k_iters)
    _pos("ctas", ctas)
    total = tiles * k_iters
    out = []
    for b in range(ctas):
        lo, hi = b * total // ctas, (b + 1) * total // ctas
        segs = []
        i = lo
        while i < hi:
            tile = i // k_iters
            end = min(hi, (tile + 1) * k_iters)
            segs.append(StreamKSegment(b, tile, i - tile * k_iters, end - tile * k_iters, end == (tile + 1) * k_iters))
            i = end
        out.append(segs)
    return out


@dataclass(frozen=True)
class L2Estimate:
    """Bytes of A and B the tiles request (``requested``), read from DRAM (``dram``) and the hit rate
    1 − dram / requested; ``per_wave``: per wave, the (A, B) panel reads from DRAM — the distinct panels with
    unlimited L2 or CTAs in lockstep, more (an expected value, fractional) where a panel's k-slices leave L2
    between two of its tiles and are read again; ``distinct``: per wave, the distinct (A panels, B panels); the
    ``capacity`` (bytes one wave's reuse has: ``l2_bytes / partitions``; ``math.inf``: unlimited), ``spread`` and
    ``lag`` the estimate was made with (:func:`l2_reuse`)."""

    requested: int
    dram: float
    hit_rate: float
    per_wave: list
    distinct: list = field(default_factory=list)
    capacity: float = math.inf
    spread: float = 0.0
    lag: float = 0.0


def slice_loads(users: int, reach: float) -> float:
    """Expected DRAM reads of one k-slice of a panel that ``users`` tiles read, when the tiles' positions in their
    k-loops are independent and uniform over a window and the slice stays in L2 for ``reach`` (a fraction of that
    window, ≥ 0) after each read: ``1 + (users − 1) · (1 − reach)^users`` (1 for ``reach ≥ 1``).

    The rule: under LRU a read hits when the previous read of the same slice was less than ``reach`` ago (every read
    renews the line), so after the first read one more miss comes per gap between two consecutive users longer than
    ``reach``; each of the ``users − 1`` gaps between n independent uniform points of a unit window exceeds r with
    probability (1 − r)^n (the spacings of uniform order statistics are Beta(1, n))."""
    _pos("users", users)
    if reach < 0:
        raise ScheduleError(f"reach = {reach}: a fraction of the window, >= 0")
    return 1.0 + (users - 1) * max(0.0, 1.0 - reach) ** users


def launch_round(cta: int, round_ctas: int = ROUND_CTAS) -> int:
    """The launch round of CTA ``cta`` of a wave: ``cta // round_ctas`` — [assumption] the hardware hands CTAs out
    in index order, one GPC after another, so each GPC gets its next CTAs once every ``round_ctas``. The default, 16,
    is two CTAs per TPC × the 8 GPCs, the order in which clusters of two are placed (``data/l02/placement``: CTAs 2i
    and 2i + 1 on one TPC, consecutive TPCs in different GPCs); a plain launch places its first CTAs one per TPC
    (``data/l08/gemm_skew``: CTAs 0 and 1 on two TPCs), so for it this is a model, not a measurement."""
    _pos("round_ctas", round_ctas)
    if int(cta) != cta or cta < 0:
        raise ScheduleError(f"cta = {cta}: an index in the wave, >= 0")
    return int(cta) // int(round_ctas)


def panel_loads(rounds: list, reach: float, spread: float, lag: float) -> float:
    """Expected DRAM reads of one k-slice of a panel whose tiles' CTAs are in launch rounds ``rounds``: the CTAs of
    round r run ``lag`` · r of a k-loop behind round 0, each with its own uniform ``spread``; the slice stays
    ``reach`` (fractions of a k-loop) after each read. Consecutive rounds whose lag apart, ``lag`` · Δr, is within
    the reach form one cluster (the later round's first read finds the line of the earlier round's last); each
    cluster of u users costs :func:`slice_loads` (u, reach / spread) (1 with ``spread`` 0). ``lag`` 0: one cluster
    (:func:`slice_loads` of all users); ``spread`` 0: one read per cluster."""
    if not rounds:
        raise ScheduleError("a panel read by no tile")
    rs = sorted(rounds)
    clusters, n = [], 1
    for a, b in zip(rs, rs[1:]):
        if lag * (b - a) > reach:
            clusters.append(n)
            n = 0
        n += 1
    clusters.append(n)
    if spread == 0:
        return float(len(clusters)) if len(clusters) > 1 else 1
    y = reach / spread
    return sum(slice_loads(u, y) for u in clusters)


def l2_reuse(order: list, ctas: int, bm: int, bn: int, K: int, elem_bytes: int = 2, *, l2_bytes: float | None = None,
             partitions: int = 2, spread: float = 0.0, lag: float = 0.0, round_ctas: int = ROUND_CTAS) -> L2Estimate:
    """L2-reuse estimate of a tile order run by ``ctas`` persistent CTAs: wave w is order[w·ctas:(w+1)·ctas] (tile
    ``c`` of a wave on the wave's CTA ``c``); each tile requests its A panel (bm × K) and B panel (bn × K) one
    k-slice at a time; a wave reads each distinct panel from DRAM once, and again for each tile that comes to a
    k-slice after it left L2.

    ``l2_bytes`` (default the H200's, :data:`h100lab.specs.H200_SXM`: 60 MiB, as ``cudaDeviceProp.l2CacheSize``
    reports it; ``math.inf``: unlimited), ``partitions`` (2: the two halves of the H100/H200 L2), ``spread`` (how
    far apart the CTAs of one launch round are in their k-loops, as a fraction of one tile's k-loop, 0 to 1; 0: in
    lockstep), ``lag`` (how far each launch round runs behind the one before, a fraction of a k-loop, ≥ 0) and
    ``round_ctas`` (:func:`launch_round`). The defaults (``spread`` = ``lag`` = 0: CTAs in lockstep) give every
    distinct panel of a wave one read whatever the L2 — the estimate before the capacity came in; the caller that
    knows how its CTAs drift passes ``spread`` and ``lag``.

    [model]: a tile's position in its k-loop is its CTA's round's lag plus its own uniform spread
    (:func:`panel_loads`); the wave brings its DRAM bytes D into L2 evenly over its k-loop; a line stays while fewer
    than C = ``l2_bytes / partitions`` bytes came in after its last read (LRU within one half: the wave's CTAs sit
    in both halves, each keeping its own copy of what its SMs read), so a k-slice stays C / D of a k-loop — the
    reach; each panel costs :func:`panel_loads` reads; D depends on those reads: the least fixed point, iterated up
    from the distinct panels (the reads only grow with D). Nothing survives from one wave to the next (as with
    unlimited L2)."""
    _pos("ctas", ctas)
    for name, v in (("bm", bm), ("bn", bn), ("K", K), ("elem_bytes", elem_bytes), ("partitions", partitions),
                    ("round_ctas", round_ctas)):
        _pos(name, v)
    cap = _default_l2() if l2_bytes is None else l2_bytes
    if not cap > 0:
        raise ScheduleError(f"l2_bytes = {cap}: an L2 holds a positive number of bytes")
    if not 0 <= spread <= 1:
        raise ScheduleError(f"spread = {spread}: a fraction of one tile's k-loop, 0 (lockstep) to 1")
    if not lag >= 0:
        raise ScheduleError(f"lag = {lag}: a fraction of one tile's k-loop per launch round, >= 0")
    capacity = cap / partitions
    pa, pb = bm * K * elem_bytes, bn * K * elem_bytes
    req = 0
    dram = 0.0
    per, distinct = [], []
    lockstep = (spread == 0 and lag == 0) or math.isinf(capacity)
    for w in range(0, len(order), ctas):
        wave = order[w:w + ctas]
        if lockstep:                                        # one read per distinct panel: count them
            da, db = len({t[:-1] for t in wave}), len({t[:-2] + t[-1:] for t in wave})
            distinct.append((da, db))
            per.append((da, db))
            req += len(wave) * (pa + pb)
            dram += da * pa + db * pb
            continue
        ua, ub = {}, {}
        for c, t in enumerate(wave):
            r = c // round_ctas
            ua.setdefault(t[:-1], []).append(r)            # (problem,) m  — works for (m, n) and (i, m, n)
            ub.setdefault(t[:-2] + t[-1:], []).append(r)
        la, lb = _wave_loads(list(ua.values()), list(ub.values()), pa, pb, capacity, spread, lag)
        distinct.append((len(ua), len(ub)))
        per.append((la, lb))
        req += len(wave) * (pa + pb)
        dram += la * pa + lb * pb
    return L2Estimate(req, dram, 1 - dram / req if req else 0.0, per, distinct, capacity, spread, lag)


def _wave_loads(rounds_a: list, rounds_b: list, pa: int, pb: int, capacity: float, spread: float, lag: float):
    """(A panel reads, B panel reads) of one wave: the least fixed point of D = Σ reads · panel bytes with the
    reads of :func:`panel_loads` at reach C / D, iterated up from the distinct panels. Integers when nothing is
    read twice."""
    la, lb = len(rounds_a), len(rounds_b)
    if (spread == 0 and lag == 0) or math.isinf(capacity):
        return la, lb
    d = la * pa + lb * pb
    for _ in range(500):
        reach = capacity / d
        na = sum(panel_loads(r, reach, spread, lag) for r in rounds_a)
        nb = sum(panel_loads(r, reach, spread, lag) for r in rounds_b)
        nd = na * pa + nb * pb
        if nd <= d * (1 + 1e-12):
            break
        la, lb, d = na, nb, nd
    if la == len(rounds_a) and lb == len(rounds_b):
        return len(rounds_a), len(rounds_b)
    return la, lb


def _default_l2() -> int:
    from ..specs import H200_SXM
    return H200_SXM.l2_bytes
