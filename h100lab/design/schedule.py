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
schedule); :func:`l2_reuse` estimates the DRAM traffic of a tile order from the panels each wave touches
([model]: a wave's distinct A and B panels are read from DRAM once, every other read of them hits L2, nothing
survives from one wave to the next; the capacity of L2 is not modelled).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ScheduleError", "static_order", "tile_at", "cta_tiles", "grouped_order", "Waves", "waves",
           "StreamKSegment", "stream_k", "L2Estimate", "l2_reuse"]


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
    """Every tile in the order of :func:`tile_at` (a permutation of the tile grid)."""
    return [tile_at(t, tiles_m, tiles_n, group, raster) for t in range(tiles_m * tiles_n)]


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
    """Bytes of A and B the tiles request (``requested``), read from DRAM (``dram``, [model] above) and the hit
    rate 1 - dram / requested; ``per_wave`` distinct (A panels, B panels) of each wave."""

    requested: int
    dram: int
    hit_rate: float
    per_wave: list


def l2_reuse(order: list, ctas: int, bm: int, bn: int, K: int, elem_bytes: int = 2) -> L2Estimate:
    """L2-reuse estimate of a tile order run by ``ctas`` persistent CTAs: wave w is order[w·ctas:(w+1)·ctas];
    each tile requests its A panel (bm × K) and B panel (bn × K); a wave reads each distinct panel from DRAM once."""
    _pos("ctas", ctas)
    req = dram = 0
    per = []
    for w in range(0, len(order), ctas):
        wave = order[w:w + ctas]
        ms = {t[:-1] for t in wave}                    # (problem,) m  — works for (m, n) and (i, m, n)
        ns = {t[:-2] + t[-1:] for t in wave}
        per.append((len(ms), len(ns)))
        req += len(wave) * (bm + bn) * K * elem_bytes
        dram += (len(ms) * bm + len(ns) * bn) * K * elem_bytes
    return L2Estimate(req, dram, 1 - dram / req if req else 0.0, per)
