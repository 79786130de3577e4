"""Lesson 5's copy goal, second race: ``python -m h100lab.measure.copy_race2 [--out DIR] [--quick] [--budget-s S]``.

Writes ``l05/copy_race2`` (``h100lab.data``; metadata: GPU, driver, CUDA, date, exact command, buffer bytes, repeats,
``complete``). Every SM-issued copy of ``l05/copy_race`` (bulk, tensor, warp-specialised, all boxes, L2 promotions,
refill lags, CTAs per SM, destination offsets) levelled off at ~0.95× ``cuMemcpyDtoDAsync``. This run races copies
not tried there, at 1 GiB, each copy checked word by word (``verify_copy`` of ``l03_stream.cu``):

* phase ``A`` (one pass, :func:`plan_a`): the register copies of ``l05_copy_race2.cu`` — ``U`` 16-byte loads in flight
  per thread, three load forms (plain, ``.nc.L1::no_allocate``, ``+ .L2::256B``) and two
  store forms (write-back, ``.cs``), grid shapes of :data:`REG_SHAPES`,
  vectors interleaved over the grid or one contiguous chunk per CTA — and the one-thread bulk copy with its own L2
  policy on loads and on stores (:data:`POL_SHAPES` × :data:`POL_PAIRS`); large grids of short contiguous chunks
  (:data:`REG_BIG_SHAPES`, :data:`POL_BIG_SHAPES`: blocks in waves, as a non-persistent copy kernel runs);
  the two paths mixed (:data:`HYBRID_KERNELS`: LSU loads + bulk stores, bulk loads + LSU stores);
  ``cuMemcpyDtoDAsync`` every
  :data:`MEMCPY_EVERY` variants;
* phase ``B`` (:data:`ROUNDS` rounds): each round ``cuMemcpyDtoDAsync``, the :data:`TOP` fastest correct phase-A
  variants and the references of :data:`REFERENCES` (the best copies of ``l05/copy_race``), ``2 × repeats`` timed
  launches each; ``ratio_round`` = GB/s over the round's memcpy;
* phase ``overlap``: whether the memcpy needs the SMs — :meth:`Race2Backend.overlap` times it (and, as a control, a
  register copy) on a non-blocking stream alone and while ``occupy`` holds every SM's thread slots on the legacy
  stream for :data:`OCCUPY_NS`; a copy engine finishes in its own time, an SM kernel waits for the spinner.

``--plan 2`` writes ``l05/copy_race2_b`` instead: phase A is :func:`plan_2`, the first run's leads followed up
(register copies over grids sized from the copy, bulk copies with ``evict_last`` loads and ``evict_first`` stores,
persistent and not); phases B and overlap as above. ``--plan 3`` writes ``l05/copy_race2_c``: phase A is
:func:`plan_3`, bulk copies only (the TMA path) over non-persistent grids sized from the copy, so that phase B
times the best bulk copies over rounds against the memcpy; ``--plan 4`` (``l05/copy_race2_d``) follows plan 3's
best up: grids of one to four tiles per CTA (:func:`plan_4`).

The plan (which variants, the order of the kernels' parameters, ratios, the best-of summary) is plain Python run on
a fake backend by ``tests/test_l05_copy_race2.py``. Expected wall time on an H200: about a minute
(:func:`estimate_seconds`).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from .timing_sweep import GIB, STREAM_HEADER, TIMEOUT_NS, Budget, CudaBackend, Runner, _med

__all__ = ["REG_KERNELS", "REG_SHAPES", "REG_BIG_SHAPES", "REG_BIG_KERNELS", "POL_SHAPES", "POL_PAIRS", "POL_BIG_SHAPES",
           "POLICIES", "HYBRID_KERNELS", "HYBRID_SHAPES", "REFERENCES", "ROUNDS", "TOP", "MEMCPY_EVERY", "OCCUPY_NS", "BOOK_COPY", "BOOK_COPY_DATASET", "REGISTER_COPY", "book_copy_rounds",
           "reg_form", "hybrid_smem", "plan_a", "plan_2", "PLANS", "PLAN2_REG_KERNELS", "PLAN2_THREADS",
           "PLAN2_POL_SHAPES", "PLAN2_POL_PAIRS", "PLAN2_POL_BIG", "plan_3", "PLAN3_POL_TILES", "PLAN3_PER_SM",
           "PLAN3_POL_PAIRS", "plan_4", "PLAN4_TILES_KIB", "PLAN4_TILES_PER_CTA", "PLAN4_POL_PAIRS",
           "PLAN_DATASETS", "estimate_seconds", "best_of", "race_table", "race_summary", "chapter_figures", "Race2Backend", "Race2Runner", "main"]

#: the register copies of l05_copy_race2.cu (name → load form, store form, loads in flight per thread)
REG_KERNELS = ("reg_copy_plain_wb_u2", "reg_copy_plain_wb_u4", "reg_copy_plain_wb_u8", "reg_copy_plain_wb_u16",
               "reg_copy_plain_cs_u8", "reg_copy_nc_wb_u8", "reg_copy_nc_cs_u4", "reg_copy_nc_cs_u8",
               "reg_copy_nc_cs_u16", "reg_copy_pf_wb_u8", "reg_copy_pf_cs_u8", "reg_copy_nc_cs_u2", "reg_copy_plain_cs_u4",
               "reg_copy_pf_cs_u16")
#: (blocks per SM, threads per block) of the register copies; U = 16 keeps to ≤ 512 threads (its registers)
REG_SHAPES = ((1, 1024), (2, 1024), (2, 512), (4, 512), (8, 256), (16, 128))
#: large grids (not persistent: blocks run in waves, the copy's footprint walks the buffer in launch order) for
#: :data:`REG_BIG_KERNELS`: 31, 124, 496 blocks per SM of 256 threads — at 1 GiB and part 1, chunks of ~256, ~64
#: and ~16 KiB per block
REG_BIG_SHAPES = ((31, 256), (124, 256), (496, 256))
REG_BIG_KERNELS = ("reg_copy_plain_wb_u4", "reg_copy_plain_wb_u8", "reg_copy_nc_cs_u4", "reg_copy_nc_cs_u8",
                   "reg_copy_plain_cs_u4")
#: the bulk copy with L2 policies: (tile KiB, stages, CTAs per SM, refill lag) — the best shapes of l05/copy_tune
POL_SHAPES = ((64, 2, 1, 1), (32, 6, 1, 3), (16, 6, 2, 3))
#: the bulk copy over large grids of short contiguous chunks (not persistent; no policy): (tile KiB, stages, CTAs per
#: SM of the grid, lag) — 1 GiB over 1056 / 8448 CTAs: 1 MiB / 127 KiB each
POL_BIG_SHAPES = ((16, 4, 8, 1), (16, 4, 64, 1), (32, 3, 64, 1))
#: createpolicy codes of bulk_copy_pol (0 none, 1 evict_first, 2 evict_last, 3 evict_normal, 4 evict_unchanged)
POLICIES = ("none", "evict_first", "evict_last", "evict_normal", "evict_unchanged")
#: (load policy, store policy) pairs
POL_PAIRS = ((0, 0), (1, 2), (2, 1), (1, 4), (4, 1), (0, 1), (2, 2), (3, 3))
#: references raced in every phase-B round: the best copies of l05/copy_race (timing_sweep._race_record kinds)
REFERENCES = (("tensor_ws 256×32×6 lag3 L2_256B", "tensor_ws", (256, 32, 6, 1, 3, 0, "L2_256B")),
              ("tma_copy 256×64×3 L2_256B", "tma_copy", (256, 64, 3, 1, "L2_256B")),
              ("device_copy 4×256", "device_copy", (4, 256)))
#: the mixed-path copies of l05_copy_race2.cu (LSU loads + bulk stores, bulk loads + LSU stores): U → (blocks per
#: SM, threads) — 2 × U × 512 bytes of shared memory per warp, at most ~200 KiB per SM
HYBRID_KERNELS = ("lsu_tma_copy_u4", "lsu_tma_copy_u8", "tma_lsu_copy_u4", "tma_lsu_copy_u8")
HYBRID_SHAPES = {4: ((1, 1024), (2, 512), (4, 256), (8, 128)), 8: ((1, 512), (2, 256), (3, 256), (4, 128))}
ROUNDS, TOP, MEMCPY_EVERY = 5, 8, 24
#: the book's copy kernel (chapter 5, from l05/copy_race2_d — issue 13 asks for a TMA copy): kind bulk_pol (tile
#: KiB, stages, CTAs per SM in the launch, lag, load policy, store policy, part) — bulk_copy_pol with 64 KiB tiles,
#: two stages, two tiles per CTA (63 CTAs per SM in the launch), evict_last loads, evict_first stores, one chunk per
#: CTA. The fastest register copy (l05/copy_race2_b: one 16-byte vector per thread, 256 threads per block) is
#: :data:`REGISTER_COPY`.
BOOK_COPY = ("bulk_pol", (64, 2, 63, 1, 2, 1, 1))
BOOK_COPY_DATASET = "l05/copy_race2_d"
REGISTER_COPY = ("reg_grid", ("reg_copy_nc_cs_u1", 256, 0, 1))
OCCUPY_NS = 20_000_000
_LD = {"plain": "ld.global.v4", "nc": "ld.global.nc.L1::no_allocate.v4", "pf": "ld.global.nc.L1::no_allocate.L2::256B.v4"}
_ST = {"wb": "st.global.v4", "cs": "st.global.cs.v4", "ef": "st.global.L2::cache_hint(evict_first).v4",
       "el": "st.global.L2::cache_hint(evict_last).v4"}


def reg_form(kernel: str) -> dict[str, Any]:
    """``{ld, st, unroll, ld_ptx, st_ptx}`` of a register copy's entry name ``reg_copy_<ld>_<st>_u<U>``."""
    parts = kernel.split("_")
    if len(parts) != 5 or parts[:2] != ["reg", "copy"] or parts[2] not in _LD or parts[3] not in _ST \
            or not parts[4].startswith("u") or not parts[4][1:].isdigit():
        raise ValueError(f"{kernel!r} is not a register copy of l05_copy_race2.cu (reg_copy_<ld>_<st>_u<U>)")
    return dict(ld=parts[2], st=parts[3], unroll=int(parts[4][1:]), ld_ptx=_LD[parts[2]], st_ptx=_ST[parts[3]])


def hybrid_smem(kernel: str, threads: int) -> int:
    """Dynamic shared memory of a mixed-path copy: 2 buffers of U × 512 bytes per warp (``tma_lsu``: after 1 KiB of
    mbarriers)."""
    if kernel not in HYBRID_KERNELS:
        raise ValueError(f"{kernel!r} is not a mixed-path copy of l05_copy_race2.cu ({', '.join(HYBRID_KERNELS)})")
    u = int(kernel.rsplit("_u", 1)[1])
    return (1024 if kernel.startswith("tma_lsu") else 0) + -(-threads // 32) * 2 * u * 512


def plan_a(quick: bool = False) -> list[tuple[str, str, tuple]]:
    """Phase A: (name, kind, configuration). ``reg``: (kernel, blocks/SM, threads, part); ``bulk_pol``: (tile KiB,
    stages, CTAs/SM, lag, load policy, store policy, part). ``--quick``: a handful of each."""
    out: list[tuple[str, str, tuple]] = []
    kernels = REG_KERNELS if not quick else ("reg_copy_plain_wb_u4", "reg_copy_nc_cs_u8", "reg_copy_pf_cs_u16")
    shapes = REG_SHAPES if not quick else ((2, 1024), (8, 256))
    for k in kernels:
        f = reg_form(k)
        for bps, thr in shapes + (REG_BIG_SHAPES if k in REG_BIG_KERNELS and not quick else ()):
            if f["unroll"] >= 16 and thr > 512:
                continue
            for part in (0, 1):
                out.append((f"{k[9:]} {bps}×{thr} {'chunk' if part else 'interleaved'}", "reg", (k, bps, thr, part)))
    for tkb, st, per, lag in (POL_SHAPES if not quick else POL_SHAPES[:1]):
        for pl, ps in (POL_PAIRS if not quick else POL_PAIRS[:3]):
            out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{lag} ld:{POLICIES[pl]} st:{POLICIES[ps]}", "bulk_pol",
                        (tkb, st, per, lag, pl, ps, 0)))
        out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{lag} ld:evict_first st:evict_last chunk", "bulk_pol",
                    (tkb, st, per, lag, 1, 2, 1)))
    for k in (HYBRID_KERNELS if not quick else HYBRID_KERNELS[::3]):
        for bps, thr in HYBRID_SHAPES[int(k.rsplit("_u", 1)[1])][: None if not quick else 1]:
            out.append((f"{k} {bps}×{thr}", "hybrid", (k, bps, thr)))
    for tkb, st, per, lag in (POL_BIG_SHAPES if not quick else ()):
        out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{lag} chunk", "bulk_pol", (tkb, st, per, lag, 0, 0, 1)))
    return out


#: plan 2 (after the first run, data/l05/copy_race2 with ``plan == 1``: the fastest copies were register copies over
#: non-persistent grids of ~65 K blocks, and bulk copies with evict_last loads and evict_first stores): register
#: copies over grids sized from the copy — ``vpt`` vectors per thread, grid = ⌈n16 / (threads × vpt)⌉ —
#: interleaved (each thread vpt / U unrolled rounds spread over the whole buffer) or one contiguous chunk per block
PLAN2_REG_KERNELS = ("reg_copy_nc_cs_u1", "reg_copy_plain_wb_u1", "reg_copy_nc_cs_u2", "reg_copy_nc_cs_u4", "reg_copy_nc_cs_u8", "reg_copy_nc_cs_u16",
                     "reg_copy_plain_wb_u4", "reg_copy_plain_wb_u8", "reg_copy_nc_wb_u8", "reg_copy_plain_cs_u8",
                     "reg_copy_pf_cs_u8")
PLAN2_THREADS = (128, 256, 512, 1024)
#: plan 2's bulk copies: persistent shapes (tile KiB, stages, CTAs/SM, lag) × policy pairs around evict_last loads +
#: evict_first stores, and non-persistent grids of short chunks with and without that pair
PLAN2_POL_SHAPES = ((64, 2, 1, 1), (64, 3, 1, 2), (32, 6, 1, 3), (16, 12, 1, 3), (16, 6, 2, 3), (32, 3, 2, 2))
PLAN2_POL_PAIRS = ((2, 1), (2, 0), (0, 1), (2, 4), (3, 1))
PLAN2_POL_BIG = ((16, 4, 8, 1), (16, 4, 64, 1), (32, 3, 64, 1), (64, 2, 32, 1))


def plan_2(quick: bool = False) -> list[tuple[str, str, tuple]]:
    """Plan 2's phase A: ``reg_grid``: (kernel, threads, part, vectors per thread); ``bulk_pol`` as in
    :func:`plan_a`; the mixed-path copies of :func:`plan_a`."""
    out: list[tuple[str, str, tuple]] = []
    for k in (PLAN2_REG_KERNELS if not quick else PLAN2_REG_KERNELS[1:3]):
        u = reg_form(k)["unroll"]
        for thr in (PLAN2_THREADS if not quick else (256,)):
            if u >= 16 and thr > 512:
                continue
            for part in (0, 1):
                for vpt in (((u, 2 * u, 4 * u) if u > 1 else (1, 2, 4, 8)) if not quick else (u,)):
                    out.append((f"{k[9:]} {thr} thr, {vpt} vec/thr, {'chunk' if part else 'interleaved'}", "reg_grid",
                                (k, thr, part, vpt)))
    for tkb, st, per, lag in (PLAN2_POL_SHAPES if not quick else PLAN2_POL_SHAPES[:1]):
        for pl, ps in (PLAN2_POL_PAIRS if not quick else PLAN2_POL_PAIRS[:1]):
            out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{lag} ld:{POLICIES[pl]} st:{POLICIES[ps]}", "bulk_pol",
                        (tkb, st, per, lag, pl, ps, 0)))
    for tkb, st, per, lag in (PLAN2_POL_BIG if not quick else ()):
        for pl, ps in ((0, 0), (2, 1)):
            out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{lag} ld:{POLICIES[pl]} st:{POLICIES[ps]} chunk",
                        "bulk_pol", (tkb, st, per, lag, pl, ps, 1)))
    out += [p for p in plan_a(quick) if p[1] == "hybrid"]
    return out


#: plan 3 (after plan 2, data/l05/copy_race2_b: the register copy won over a grid of one vector per thread; the best
#: bulk copy, 0.997× in its one phase-A pass, was a non-persistent grid of short chunks with evict_last loads and
#: evict_first stores, never timed over rounds): bulk copies only (cp.async.bulk loads and stores, the TMA path),
#: over grids sized from the copy — a few tiles per CTA, many CTAs in waves, as the winning register copy runs —
#: (tile KiB, stages) × CTAs per SM in the launch × policy pairs × (chunk, interleaved); phase B then times the best
#: bulk copies over rounds
PLAN3_POL_TILES = ((4, 1), (4, 2), (8, 1), (8, 2), (16, 1), (16, 2), (32, 1), (32, 2))
PLAN3_PER_SM = (32, 64, 128, 256, 512)
PLAN3_POL_PAIRS = ((2, 1), (0, 0), (0, 1))


def plan_3(quick: bool = False) -> list[tuple[str, str, tuple]]:
    """Plan 3's phase A: ``bulk_pol`` only (as in :func:`plan_a`), non-persistent grids with at least one tile per
    CTA (``CTAs per SM`` × 132 ≤ tiles of the 1 GiB copy); lag = stages − 1."""
    out: list[tuple[str, str, tuple]] = []
    tiles = PLAN3_POL_TILES if not quick else PLAN3_POL_TILES[2:3]
    for tkb, st in tiles:
        n_tiles = (1 << 30) // (tkb * 1024)
        for per in (PLAN3_PER_SM if not quick else PLAN3_PER_SM[:1]):
            if 132 * per > n_tiles:
                continue
            for pl, ps in (PLAN3_POL_PAIRS if not quick else PLAN3_POL_PAIRS[:1]):
                for part in (1, 0):
                    out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{st - 1} ld:{POLICIES[pl]} st:{POLICIES[ps]} "
                                f"{'chunk' if part else 'interleaved'}", "bulk_pol", (tkb, st, per, st - 1, pl, ps, part)))
    return out


#: plan 4 (after plan 3, data/l05/copy_race2_c: the best bulk copies over rounds, 0.998-0.999× the memcpy, ran
#: grids of about two to four tiles per CTA with two stages, evict_last loads and evict_first stores; the larger the
#: grid, the better): grids sized by tiles per CTA — ⌈tiles / (132 · tiles per CTA)⌉ CTAs per SM in the launch —
#: from one to four tiles, stages up to the tiles a CTA has, three policy pairs around that best
PLAN4_TILES_KIB = (4, 8, 16, 32, 64)
PLAN4_TILES_PER_CTA = (1, 2, 3, 4)
PLAN4_POL_PAIRS = ((2, 1), (3, 1), (2, 4))


def plan_4(quick: bool = False) -> list[tuple[str, str, tuple]]:
    """Plan 4's phase A: ``bulk_pol`` only over grids of a given number of tiles per CTA (``CTAs per SM`` =
    ⌈tiles of the 1 GiB copy / (132 · tiles per CTA)⌉), stages 1 … min(tiles per CTA, 4) within 192 KiB of buffers,
    lag = stages − 1."""
    out: list[tuple[str, str, tuple]] = []
    for tkb in (PLAN4_TILES_KIB if not quick else PLAN4_TILES_KIB[1:2]):
        n_tiles = (1 << 30) // (tkb * 1024)
        for tpc in (PLAN4_TILES_PER_CTA if not quick else (2,)):
            per = -(-n_tiles // (132 * tpc))
            for st in sorted({1 if tpc == 1 else 2, min(tpc, 4)}):
                if st * tkb > 192:
                    continue
                for pl, ps in (PLAN4_POL_PAIRS if not quick else PLAN4_POL_PAIRS[:1]):
                    for part in (0, 1):
                        out.append((f"bulk_pol {tkb}K×{st}×{per}/SM lag{st - 1} ld:{POLICIES[pl]} st:{POLICIES[ps]} "
                                    f"{'chunk' if part else 'interleaved'}", "bulk_pol",
                                    (tkb, st, per, st - 1, pl, ps, part)))
    return out


PLANS = {1: plan_a, 2: plan_2, 3: plan_3, 4: plan_4}
#: the dataset each plan writes
PLAN_DATASETS = {1: "l05/copy_race2", 2: "l05/copy_race2_b", 3: "l05/copy_race2_c", 4: "l05/copy_race2_d"}


def estimate_seconds(quick: bool = False, plan: int = 1) -> float:
    """Wall time on an H200: compiles (~15 s) plus ~40 ms per checked-and-timed variant at 1 GiB."""
    n = len(PLANS[plan](quick))
    return 15.0 + 0.04 * (n + n // MEMCPY_EVERY + 1) + ROUNDS * 0.06 * (TOP + len(REFERENCES) + 1) + 1.0


def best_of(recs: Sequence[dict[str, Any]], phase: str = "B") -> dict[str, Any] | None:
    """The copy of ``phase`` with the highest median ``ratio_round`` over its rounds (correct records only):
    ``{name, kind, ratio_median, ratio_rounds, gbps_median, memcpy_gbps_median, rounds}``; None without one."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        if r.get("phase") == phase and r["kind"] != "memcpy":
            by.setdefault(r["name"], []).append(r)
    rows = []
    for name, rs in by.items():
        if not all(r.get("correct") for r in rs):
            continue
        rows.append(dict(name=name, kind=rs[0]["kind"], ratio_median=_med([r["ratio_round"] for r in rs]),
                         ratio_rounds=[r["ratio_round"] for r in rs], gbps_median=_med([r["gbps"] for r in rs]),
                         rounds=len(rs)))
    if not rows:
        return None
    b = max(rows, key=lambda r: r["ratio_median"])
    b["memcpy_gbps_median"] = _med([r["gbps"] for r in recs if r.get("phase") == phase and r["kind"] == "memcpy"])
    return b


def race_table(recs: Sequence[dict[str, Any]], phase: str = "B") -> list[dict[str, Any]]:
    """One row per copy of ``phase`` (memcpy first, then by median ratio, fastest first): ``{variant, kind, rounds,
    GB/s (median), ratio (median of rounds), ratio (min–max)}``; a copy with a failed check in any round is left
    out (its name is in ``failed`` of :func:`race_summary`)."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in recs:
        if r.get("phase") == phase:
            by.setdefault((r["kind"], r["name"]), []).append(r)
    rows = []
    for (kind, name), rs in by.items():
        if not all(r.get("correct") for r in rs):
            continue
        q = [r["ratio_round"] for r in rs]
        rows.append({"variant": name, "kind": kind, "rounds": len(rs),
                     "GB/s (median)": round(_med([r["gbps"] for r in rs])), "ratio (median of rounds)": round(_med(q), 3),
                     "ratio (min–max)": f"{min(q):.3f}–{max(q):.3f}"})
    rows.sort(key=lambda x: (x["kind"] != "memcpy", -x["ratio (median of rounds)"]))
    return rows


def race_summary(recs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the chapter reports: the phase-B best (:func:`best_of`), the number of phase-A variants and of failed
    checks, the best phase-A ratio, and the overlap phase's verdict (``memcpy_needs_sms``: True when every memcpy
    beside the spinner was delayed, False when none was, None when mixed or not measured; ``control_delayed``: the
    same for the register copy, which must be delayed for the test to mean anything)."""
    a = [r for r in recs if r.get("phase") == "A" and r["kind"] != "memcpy"]
    ok_a = [r for r in a if r.get("correct")]
    ov = [r for r in recs if r.get("phase") == "overlap"]

    def verdict(name: str):
        d = [r["delayed"] for r in ov if r["name"] == name]
        return None if not d or (any(d) and not all(d)) else all(d)
    mem = [r for r in ov if r["name"] == "memcpy"]
    return {"best": best_of(recs), "variants_a": len(a), "failed": sorted({r["name"] for r in recs
                                                                          if r["kind"] != "overlap"
                                                                          and not r.get("correct")}),
            "best_a_ratio": max((r["ratio_round"] for r in ok_a), default=float("nan")),
            "memcpy_needs_sms": verdict("memcpy"),
            "control_delayed": verdict(next((r["name"] for r in ov if r["name"] != "memcpy"), "")),
            "memcpy_alone_ms": _med([r["alone_ms"] for r in mem]) if mem else float("nan"),
            "memcpy_beside_ms": _med([r["with_occupy_ms"] for r in mem]) if mem else float("nan"),
            "occupy_ms": _med([r["occupy_ms"] for r in ov]) if ov else float("nan")}


def book_copy_rounds(recs: Sequence[dict[str, Any]], copy: tuple = BOOK_COPY) -> list[dict[str, Any]]:
    """The phase-B records of ``copy`` (default :data:`BOOK_COPY`; one per round, each with ``ratio_round`` over its
    round's memcpy)."""
    kind, cfg = copy
    return [r for r in recs if r.get("phase") == "B" and r["kind"] == kind and tuple(r["config"]) == cfg]


def chapter_figures(runs: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """The numbers chapter 5 quotes from one or more runs (``l05/copy_race2``, ``l05/copy_race2_b``; records each):
    ``best`` (the copy with the highest median phase-B ratio over all runs, :func:`best_of`, with ``min`` / ``max``
    of its rounds, its run's index, its ``kernel``, ``grid``, ``block`` and ``bytes``), ``variants`` (phase-A copies tried, all runs), ``failed`` (checks that
    failed), ``persistent_best`` (the best phase-A ratio of a register copy over a persistent grid, ≤ 16 blocks per
    SM), ``by_vectors_per_thread`` (grids sized from the copy: vectors per thread → the best phase-A ratio),
    ``plain_best_one_vector`` (the best plain ``ld``/``st`` copy of one vector per thread, phase A),
    ``tma_best`` / ``tma_best_name`` (the best bulk copy with a policy pair, phase A), ``tma_rounds`` (the bulk
    copy — the TMA path — with the highest median phase-B ratio over all runs, as ``best``; None without one),
    ``tma_evict_first_ld``
    (the best bulk copy whose loads carry evict_first), ``memcpy_gbps`` (median of every phase-B memcpy), and the
    overlap phase's verdict of the first run that has one (:func:`race_summary`)."""
    best, out = None, {"variants": 0, "failed": 0}
    tma_b = None
    a_all: list[dict[str, Any]] = []
    mem: list[float] = []
    summ = None
    for i, recs in enumerate(runs):
        s = race_summary(recs)
        out["variants"] += s["variants_a"]
        out["failed"] += len(s["failed"])
        b = s["best"]
        if b and (best is None or b["ratio_median"] > best["ratio_median"]):
            rec = next(r for r in recs if r.get("phase") == "B" and r["name"] == b["name"])
            best = dict(b, run=i, min=min(b["ratio_rounds"]), max=max(b["ratio_rounds"]), grid=rec.get("grid"),
                        block=rec.get("block"), kernel=rec.get("kernel"), bytes=rec.get("bytes"))
        tb_i = best_of([r for r in recs if r["kind"] in ("bulk_pol", "memcpy")])
        if tb_i and (tma_b is None or tb_i["ratio_median"] > tma_b["ratio_median"]):
            tma_b = dict(tb_i, run=i, min=min(tb_i["ratio_rounds"]), max=max(tb_i["ratio_rounds"]))
        a_all += [r for r in recs if r.get("phase") == "A" and r["kind"] != "memcpy" and r.get("correct")]
        mem += [r["gbps"] for r in recs if r.get("phase") == "B" and r["kind"] == "memcpy"]
        if summ is None and s["memcpy_needs_sms"] is not None:
            summ = s
    pers = [r["ratio_round"] for r in a_all if r["kind"] == "reg" and r["blocks_per_sm"] <= 16]
    pol = [r for r in a_all if r["kind"] == "bulk_pol" and (r["policy_ld"], r["policy_st"]) != ("none", "none")]
    tb = max(pol, key=lambda r: r["ratio_round"], default=None)
    ef = [r["ratio_round"] for r in pol if r["policy_ld"] == "evict_first"]
    by_vpt: dict[int, float] = {}
    for r in a_all:
        if r["kind"] == "reg_grid":
            v = int(r["vectors_per_thread"])
            by_vpt[v] = max(by_vpt.get(v, 0.0), r["ratio_round"])
    same = [r["ratio_round"] for r in a_all if r["kind"] == "reg_grid" and r["ld"] == "plain" and r["st"] == "wb"
            and best and r["name"] != best["name"] and r["vectors_per_thread"] == 1]
    out.update(best=best, tma_rounds=tma_b, persistent_best=max(pers, default=float("nan")), by_vectors_per_thread=by_vpt,
               plain_best_one_vector=max(same, default=float("nan")),
               tma_best=tb["ratio_round"] if tb else float("nan"), tma_best_name=tb["name"] if tb else "(none)",
               tma_evict_first_ld=max(ef, default=float("nan")), memcpy_gbps=_med(mem) if mem else float("nan"),
               memcpy_needs_sms=summ["memcpy_needs_sms"] if summ else None,
               control_delayed=summ["control_delayed"] if summ else None,
               memcpy_alone_ms=summ["memcpy_alone_ms"] if summ else float("nan"),
               memcpy_beside_ms=summ["memcpy_beside_ms"] if summ else float("nan"),
               occupy_ms=summ["occupy_ms"] if summ else float("nan"))
    return out


class Race2Backend(CudaBackend):
    """:class:`CudaBackend` plus a second (non-blocking) stream for the overlap phase."""

    def overlap(self, occupy, occ_grid: int, occ_block: int, occ_args: tuple, job: Callable[[Any], None],
                *, settle_s: float = 0.002) -> dict[str, float]:
        """``job(stream)`` timed with CUDA events on a non-blocking stream, alone and then while ``occupy`` runs on
        the legacy stream (launched first; the host waits ``settle_s`` so it holds the SMs before the job is
        issued). Returns ``{alone_ms, with_occupy_ms, occupy_ms}``."""
        from ..cuda import device

        d = device._ready()
        s = device.check(d.cuStreamCreate(int(d.CUstream_flags.CU_STREAM_NON_BLOCKING)), "cuStreamCreate")
        ev = [device.check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate") for _ in range(6)]
        try:
            device.check(d.cuEventRecord(ev[0], s), "cuEventRecord")
            job(s)
            device.check(d.cuEventRecord(ev[1], s), "cuEventRecord")
            device.check(d.cuStreamSynchronize(s), "cuStreamSynchronize")
            device.check(d.cuEventRecord(ev[2], d.CUstream(0)), "cuEventRecord")
            device._launch(occupy, device._config(occupy, occ_grid, occ_block, 0, None), occ_args)
            device.check(d.cuEventRecord(ev[3], d.CUstream(0)), "cuEventRecord")
            time.sleep(settle_s)
            device.check(d.cuEventRecord(ev[4], s), "cuEventRecord")
            job(s)
            device.check(d.cuEventRecord(ev[5], s), "cuEventRecord")
            device.check(d.cuCtxSynchronize(), "cuCtxSynchronize")

            def el(a, b):
                return float(device.check(d.cuEventElapsedTime(ev[a], ev[b]), "cuEventElapsedTime"))
            return dict(alone_ms=el(0, 1), with_occupy_ms=el(4, 5), occupy_ms=el(2, 3))
        finally:
            for e in ev:
                device.check(d.cuEventDestroy(e), "cuEventDestroy")
            device.check(d.cuStreamDestroy(s), "cuStreamDestroy")

    def memcpy_on(self, stream, dst, src, nbytes: int) -> None:
        from ..cuda import device

        d = device._ready()
        device.check(d.cuMemcpyDtoDAsync(dst.ptr, src.ptr, int(nbytes), stream), "cuMemcpyDtoDAsync")

    def launch_on(self, stream, kernel, grid, block, *args, shared_mem: int = 0) -> None:
        from ..cuda import device

        device._launch(kernel, device._config(kernel, grid, block, shared_mem, None, stream), args)


class Race2Runner(Runner):
    """:class:`~h100lab.measure.timing_sweep.Runner` with the second race (``plan``: which phase-A plan, :data:`PLANS`)."""

    def __init__(self, gpu, *, plan: int = 1, **kw):
        super().__init__(gpu, **kw)
        if plan not in PLANS:
            raise ValueError(f"plan {plan}: one of {sorted(PLANS)}")
        self.plan = plan

    def _reg_record(self, name: str, cfg: tuple, nb: int, reps: int, verify) -> dict[str, Any]:
        kern, bps, thr, part = cfg
        k = self.gpu.function("l05_copy_race2", kern)
        return self._checked(name, "reg", cfg, k, self.num_sms * bps, thr, 0,
                             lambda src, dst, err: (src, dst, np.int64(nb // 16), np.int32(part), err), nb, reps,
                             verify, extra=dict(reg_form(kern), kernel=kern, blocks_per_sm=bps, threads=thr, part=part))

    def _reg_grid_record(self, name: str, cfg: tuple, nb: int, reps: int, verify) -> dict[str, Any]:
        kern, thr, part, vpt = cfg
        k = self.gpu.function("l05_copy_race2", kern)
        grid = -(-(nb // 16) // (thr * vpt))
        return self._checked(name, "reg_grid", cfg, k, grid, thr, 0,
                             lambda src, dst, err: (src, dst, np.int64(nb // 16), np.int32(part), err), nb, reps,
                             verify, extra=dict(reg_form(kern), kernel=kern, threads=thr, part=part,
                                                vectors_per_thread=vpt))

    def _hybrid_record(self, name: str, cfg: tuple, nb: int, reps: int, verify) -> dict[str, Any]:
        kern, bps, thr = cfg
        k = self.gpu.function("l05_copy_race2", kern)
        k.set_max_dynamic_shared_memory(self.optin)
        timeout = (np.int64(TIMEOUT_NS),) if kern.startswith("tma_lsu") else ()
        return self._checked(name, "hybrid", cfg, k, self.num_sms * bps, thr, hybrid_smem(kern, thr),
                             lambda src, dst, err: (src, dst, np.int64(nb // 16)) + timeout + (err,), nb, reps, verify,
                             extra=dict(kernel=kern, blocks_per_sm=bps, threads=thr))

    def _pol_record(self, name: str, cfg: tuple, nb: int, reps: int, verify) -> dict[str, Any]:
        tkb, st, per, lag, pl, ps, part = cfg
        k = self.gpu.function("l05_copy_race2", "bulk_copy_pol")
        k.set_max_dynamic_shared_memory(self.optin)
        return self._checked(name, "bulk_pol", cfg, k, self.num_sms * per, 32, STREAM_HEADER + st * tkb * 1024,
                             lambda src, dst, err: (src, dst, np.int64(nb), np.int32(tkb * 1024), np.int32(st),
                                                    np.int32(lag), np.int32(pl), np.int32(ps), np.int32(part),
                                                    np.int64(TIMEOUT_NS), err), nb, reps, verify,
                             extra=dict(tile_bytes=tkb * 1024, stages=st, ctas_per_sm=per, lag=lag,
                                        policy_ld=POLICIES[pl], policy_st=POLICIES[ps], part=part))

    def _checked(self, name, kind, cfg, k, grid, block, smem, make_args, nb, reps, verify, extra) -> dict[str, Any]:
        """dst poisoned, one launch, every word verified, then ``reps`` timed launches after a warm-up."""
        src, dst = self.buffers()
        err = self.gpu.zeros(1, np.uint32)
        args = make_args(src, dst, err)
        self.gpu.memset32(dst, 0xFFFFFFFF, nb // 4)
        self.gpu.launch(k, grid, block, *args, shared_mem=smem)
        self.gpu.sync()
        bad = self._copy_bad_words(verify, dst, nb)
        ms = self.gpu.timed([lambda: self.gpu.launch(k, grid, block, *args, shared_mem=smem)
                             for _ in range(reps + 1)])[1:]
        e = int(self.gpu.to_host(err)[0])
        return dict(kind=kind, name=name, config=list(cfg), **extra, grid=grid, block=block, smem_bytes=smem, bytes=nb,
                    moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms), gbps=2 * nb / (_med(ms) * 1e6),
                    samples_ms=ms, bad_words=bad, error_bits=e, correct=bad == 0 and e == 0)

    def _any(self, name: str, kind: str, cfg: tuple, nb: int, reps: int, verify) -> dict[str, Any]:
        try:
            if kind == "reg":
                return self._reg_record(name, cfg, nb, reps, verify)
            if kind == "bulk_pol":
                return self._pol_record(name, cfg, nb, reps, verify)
            if kind == "hybrid":
                return self._hybrid_record(name, cfg, nb, reps, verify)
            if kind == "reg_grid":
                return self._reg_grid_record(name, cfg, nb, reps, verify)
            return self._race_record(name, kind, cfg, nb, reps, verify)
        except Exception as exc:                   # one variant's failure (a launch refused) must not cost the others
            return dict(kind=kind, name=name, config=list(cfg), correct=False, gbps=0.0,
                        error=f"{type(exc).__name__}: {exc}")

    def _memcpy(self, nb: int, reps: int, **extra) -> dict[str, Any]:
        r = self._memcpy_record(nb, reps, **extra)
        r.update(name="cuMemcpyDtoDAsync", config=[])
        return r

    def step_copyrace2(self) -> list[dict[str, Any]]:
        """Phases A, B and overlap of the module docstring; every record carries ``phase`` and ``ratio_round``
        (phase A: over the nearest memcpy before it)."""
        verify = self.gpu.function("l03_stream", "verify_copy")
        nb = GIB if not self.quick else self.buf_bytes // 4
        reps = self.repeats
        recs: list[dict[str, Any]] = []
        mc = self._memcpy(nb, reps, phase="A", round=0)
        mc["ratio_round"] = 1.0
        recs.append(mc)
        self.say(f"copyrace2: memcpy {mc['gbps']:.0f} GB/s")
        plan = PLANS[self.plan](self.quick)
        for i, (name, kind, cfg) in enumerate(plan):
            if self.budget.over():
                self.say(f"copyrace2: budget spent after {i} of {len(plan)} phase-A variants")
                break
            r = self._any(name, kind, cfg, nb, reps, verify)
            r.update(phase="A", round=0, ratio_round=r["gbps"] / mc["gbps"])
            recs.append(r)
            if (i + 1) % MEMCPY_EVERY == 0:
                mc = self._memcpy(nb, reps, phase="A", round=(i + 1) // MEMCPY_EVERY)
                mc["ratio_round"] = 1.0
                recs.append(mc)
        ok = sorted((r for r in recs if r["kind"] != "memcpy" and r.get("correct")), key=lambda r: -r["ratio_round"])
        top = [(r["name"], r["kind"], tuple(r["config"])) for r in ok[:TOP]]
        bad = [r for r in recs if not r.get("correct")]
        if ok:
            self.say(f"copyrace2 A: {len(ok)} correct, {len(bad)} failed; best {ok[0]['name']} "
                     f"{ok[0]['gbps']:.0f} GB/s = {ok[0]['ratio_round']:.3f}×")
        for rnd in range(ROUNDS):
            if self.budget.over():
                break
            mc = self._memcpy(nb, 2 * reps, phase="B", round=rnd)
            mc["ratio_round"] = 1.0
            row = [mc]
            for name, kind, cfg in top + [x for x in REFERENCES if x[0] not in {t[0] for t in top}]:
                r = self._any(name, kind, cfg, nb, 2 * reps, verify)
                r.update(phase="B", round=rnd, ratio_round=r["gbps"] / mc["gbps"])
                row.append(r)
            recs += row
            b = max((r for r in row[1:] if r.get("correct")), key=lambda r: r["gbps"], default=None)
            self.say(f"copyrace2 B round {rnd}: memcpy {mc['gbps']:.0f} GB/s; best "
                     + (f"{b['name']} {b['gbps']:.0f} GB/s = {b['ratio_round']:.3f}×" if b else "none"))
        if not self.budget.over() and hasattr(self.gpu, "overlap"):
            recs += self._overlap(nb)
        b = best_of(recs)
        if b:
            self.say(f"copyrace2: best over {b['rounds']} rounds {b['name']}: median {b['ratio_median']:.3f}× memcpy")
        return recs

    def _overlap(self, nb: int) -> list[dict[str, Any]]:
        """Phase overlap: memcpy and a register copy on a second stream, alone and beside ``occupy`` (3 times each)."""
        src, dst = self.buffers()
        occ = self.gpu.function("l05_copy_race2", "occupy")
        done = self.gpu.zeros(1, np.uint32)
        reg = self.gpu.function("l05_copy_race2", "reg_copy_plain_wb_u4")
        err = self.gpu.zeros(1, np.uint32)
        grid = self.num_sms * 2
        jobs = {"memcpy": lambda s: self.gpu.memcpy_on(s, dst, src, nb),
                "reg_copy_plain_wb_u4 4×256": lambda s: self.gpu.launch_on(
                    s, reg, self.num_sms * 4, 256, src, dst, np.int64(nb // 16), np.int32(0), err)}
        out = []
        for name, job in jobs.items():
            for rep in range(3):
                t = self.gpu.overlap(occ, grid, 1024, (np.int64(OCCUPY_NS), done), job)
                out.append(dict(kind="overlap", phase="overlap", name=name, round=rep, bytes=nb, occupy_ns=OCCUPY_NS,
                                occupy_grid=grid, occupy_block=1024, **t, correct=True,
                                delayed=bool(t["with_occupy_ms"] > t["alone_ms"] + 0.5 * OCCUPY_NS * 1e-6)))
            self.say(f"overlap {name}: alone {out[-1]['alone_ms']:.3f} ms, beside the spinner "
                     f"{out[-1]['with_occupy_ms']:.3f} ms (spinner {out[-1]['occupy_ms']:.3f} ms)")
        blocks = int(self.gpu.to_host(done)[0])
        for r in out:
            r["occupy_blocks_done"] = blocks
        return out


def main(argv: Sequence[str] | None = None) -> int:
    from . import begin
    from .. import data

    def extra(ap):
        ap.add_argument("--budget-s", type=float, default=170.0,
                        help="wall-clock budget in seconds; past it the run stops and writes what it has")
        ap.add_argument("--plan", type=int, default=1, choices=sorted(PLANS),
                        help="phase-A plan: 1 the first race (plan_a), 2 the second (plan_2, data/l05/copy_race2_b), "
                             "3 bulk copies over grids sized from the copy (plan_3, data/l05/copy_race2_c), "
                             "4 bulk copies by tiles per CTA (plan_4, data/l05/copy_race2_d)")
        ap.add_argument("--memcpy-only", action="store_true",
                        help="only three 1 GiB cuMemcpyDtoDAsync calls, nothing written (to run under nsys)")

    s = begin("copy_race2", argv, __doc__.splitlines()[0], "fewer variants, a smaller copy (a smoke test)", extra)
    if s is None:
        return 2
    runner = Race2Runner(Race2Backend(), quick=s.args.quick, budget=Budget(s.args.budget_s), plan=s.args.plan)
    if s.args.memcpy_only:
        src, dst = runner.buffers()
        ms = runner.gpu.timed([lambda: runner.gpu.memcpy_dtod(dst, src, GIB) for _ in range(3)])
        runner.say(f"memcpy only: {', '.join(f'{x:.3f}' for x in ms)} ms per 1 GiB")
        return 0
    runner.say(f"copy race 2 (plan {runner.plan}) on {s.meta['gpu']}: {len(PLANS[runner.plan](s.args.quick))} phase-A "
               f"variants, estimated {estimate_seconds(s.args.quick, runner.plan):.0f} s, budget {s.args.budget_s:.0f} s")
    recs = runner.step_copyrace2()
    bad = [r for r in recs if not r.get("correct")]
    meta = dict(s.meta, step="copyrace2", complete=not runner.budget.over(), buffer_bytes=runner.buf_bytes,
                timeout_ns=TIMEOUT_NS, repeats=runner.repeats, quick=runner.quick, rounds=ROUNDS, top=TOP,
                occupy_ns=OCCUPY_NS, plan=runner.plan)
    path = data.write(PLAN_DATASETS[runner.plan], recs, meta)
    runner.say(f"copyrace2: {len(recs)} records ({len(bad)} failed their check) → {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
