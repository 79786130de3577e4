"""DRAM traffic of a GEMM's tile order: which tiles run together and which of them share an L2 read (lesson 8).

**What is in flight together.** A persistent launch of ``G`` CTAs runs wave ``w`` = tiles ``order[w·G:(w+1)·G]`` of
the tile order, tile ``c`` of the wave on CTA ``c`` (:func:`h100lab.design.schedule.cta_tiles`; a ping-pong CTA's two
consumers take its tiles one after the other, so it too has one tile in its k-loop at a time); a launch of one or two
tiles per CTA runs ``SMs × tiles per CTA`` consecutive tiles at a time (the model of
:func:`h100lab.design.perf._layout`). Every tile reads its A panel (``bm × K``) and B panel (``bn × K``) one k-slice
(``bk`` of K) per k-block; the tiles of a wave reading the same panel are its *sharers*.

**Which sharers share a DRAM read.** A k-slice is read from DRAM by the first sharer that asks for it and is an L2 hit
for every later sharer that comes to it before it leaves L2 (a few µs at the HBM rate: the 60 MiB L2 over
~4.7 TB/s) — so whether the sharers share depends on how far apart in time they come to the same k-slice:

* **in step** (the cooperative forms; measured: ``data/l08/gemm_skew``, the traced 128 × 256 cooperative kernel —
  CTAs 0 and 66 start every tile within 0.5 µs of each other in the row-major order, the CTAs of a launch start
  within 0.1 µs): all sharers of a wave read a k-slice within a fraction of a µs, so each distinct panel of a wave
  is read once (:func:`h100lab.design.schedule.l2_reuse` with its defaults — the estimate the time model always
  used);
* **drifting** (the ping-pong forms, one consumer per tile) [model, calibrated]: sharers share a read only within a
  *reuse window* of ``window`` consecutive CTAs of the wave (CTAs ``c`` with the same ``c // window``); sharers in
  different windows each read the k-slice from DRAM. What it stands for: CTAs close in the launch stay close in
  their k-loops, CTAs far apart in the launch drift apart by more than a k-slice's time in L2. Why the ping-pong
  CTAs drift and the cooperative ones do not is not measured (the ping-pong kernel has no trace); the evidence is
  the order sweep (``data/l08/gemm_orders``, ``benchmarks/bench_gemm_orders.py``): the ping-pong form loses time in
  proportion to how far apart (in CTAs) the tiles sharing a B panel run — sharers 1–4 CTAs apart cost nothing,
  8 apart 1.5×, 16 apart 1.7×, 32 apart (row-major at 8192³) 2.1× — while the cooperative form in the same orders
  stays within 6 % of its best. ``bench_gemm_orders.py --l2`` measured the DRAM bytes (below).

The DRAM bytes become a bound of the time model (:func:`h100lab.design.perf.predict`: per k-block, the wave's DRAM
bytes / k-blocks / lesson 5's HBM read ceiling, ``sim.timing.read_ceiling``) and the L2 hit rate its ring latency.

**A wave out of step as a whole** (:func:`lonely_bytes`, :func:`fit_lonely_share`,
:func:`h100lab.design.perf.delivery_waves`; issue 17): where most of a ping-pong wave's bytes are read by tiles alone
in their reuse window (its *lonely share* over :attr:`h100lab.design.perf.PerfParams.lonely_share`), no sharer's
request merges with another's before L2 — L2 delivers every requested byte, and the wave's k-block takes at least its
requested k-slices at the delivery ceiling (:func:`lrc_ceiling_tb_s`); and where the wave's A and B panels fit in the
L2, a k-slice one sharer brought in is still there for the next, so DRAM reads the in-step bytes, not the window's.
Both constants are read off the L2 → SM counters (Nsight Compute, no time): the ceiling is the highest delivery rate
of the :data:`LRC_CALIBRATION` runs, the threshold the one that splits ``l08/gemm_l2_traffic``'s ping-pong runs into
those that merged (under 0.8 of their bytes delivered) and those that did not (over 0.9) — 28 of 29 right, 12 of 12
on the held-out delivery run. It was read off after the time model's misses were known (the row-major ping-pong at
4096³, +25…+27 %, are within since); ``benchmarks/predict_delivery.py`` registered its predictions for six shapes no
run had timed before the H200 ran them (:func:`h100lab.validation.l08.delivery_round_summary`: 64 and 65 of 78
within ±10 % in two processes, 53 and 54 without the bound; where the two differ 11 of 12 against none), and a
second round for the two refinements of the pairs schedule read off the first round's misses
(:attr:`h100lab.design.perf.PerfParams.delivery_pairs`: 62 and 61 of 65 against the first round's bound's 57 and 56,
every one of the 5 records where they differ). What it leaves: waves in step whose working set fits in the L2 still
pay the window's DRAM reads (the groups of 2 along M, 3072³), and groups of 4 and 8 along N drift without being
lonely.

**Calibration** (:func:`calibrated_window`): ``window`` is the one constant, fitted with the lesson-8 time model on a
documented subset — :data:`CALIBRATION`: the ping-pong form in every tile order at 8192 × 8192 × 8192 on 132
CTAs in ``l08/gemm_orders`` — as the window that puts the most of those records within ±10 % (ties: the smallest
median |error|), after the time model's other constants and with them, so each set of constants has its own
(:attr:`h100lab.design.perf.PerfParams.reuse_window`, :func:`fit_window_for`): 20 CTAs with the model's (the form
clock), 24 with the one-clock model's — the sweep at 8192³ barely tells them apart (7 of 10 either way under the
form clock)
while the row-major ping-pong at 4096³ moves by ~15 points between them. Everything else is held out: the ping-pong
records at the other shapes, K, grids and the pairs schedule of the sweep (:func:`orders_report`), and every
record of the lesson-8 time validation (:mod:`h100lab.validation.l08`).

**What the DRAM counters say** (``data/l08/gemm_l2_traffic``, :func:`dram_rows`; Nsight Compute on 52 runs, nothing
fitted on it) — the window is a *time* model, not a faithful byte count:

* the in-step estimate is right where the sharers are in step: within 25 % of the measured DRAM bytes in 33 of 52
  runs — every grouped order, the cooperative forms at 4096³ to 8192³, the shapes whose B fits in L2;
* the ping-pong runs that lose time at 8192³ (row-major, 8 and 16 along N, K = 16384, 16 tile-columns) read about
  3× the in-step bytes (12.9 GB vs 4.3 in row-major) at 3.7–4.0 TB/s — they are DRAM-bound, as the model says,
  but the window counts 1.1–1.5× the measured bytes there (17.5 GB) against an HBM ceiling (lesson 5's read
  streams, 4.7 TB/s) above what these tile reads reach: the two errors offset; where the time does not depend on
  it (grouped orders) the window counts 1.5–5× the measured bytes (3 of 29 ping-pong runs within 25 %);
* at 4096³ the ping-pong row-major order reads no more from DRAM than the grouped one (0.29 vs 0.26 GB) and still
  runs 36 % longer — that loss is not DRAM traffic (the L2-fabric sectors are 1.5× the grouped order's); the model
  charges it to HBM;
* the cooperative form loses reuse too (row-major 8192³: 1.55× the in-step bytes; the 128-column form 1.6–2.2× in
  row-major and grouped by 16; both 1.5–1.7× at 16384³) without being DRAM-bound (≤ 3.5 TB/s);
* the loss is a state a launch falls into, not a fixed property of the order: the 20 timed launches of
  32768 × 2048 × 8192 in row-major order (B-panel sharers 8 CTAs apart, B in L2) split into ~1.8 ms (as grouped)
  and ~2.3 ms, while the same sharing pattern at 8192³ (grouped by 8 along N) is slow in every launch; counted
  launch by launch (``data/l08/gemm_l2_bistable``, 20 launches of each of 5 runs under ncu, bytes and duration from
  the same pass) the slow launches are the ones that read more: 5 of 20 row-major 32768 × 2048 launches take
  1.78 ms and read 1.6 GB (the in-step estimate's bytes), the other 15 take 2.1–2.3 ms and read 2.2–3.4 GB
  (correlation of time and bytes 0.92); the 8192³ row-major launches all read 13–14 GB, the grouped ones all
  2.6 GB. So the time lost is reuse lost, and whether a launch keeps its reuse is not decided by the order alone —
  the window gives the typical time of an order whose launches mostly lose it;
* a plain 132-CTA launch fills one GPC after another (the ``placement`` records with ``data/l02/gpc_map``: CTAs
  0–7 on four 2-SM GPCs, then 8, five × 16, 18 and 18 consecutive CTAs per GPC), so a window of 24 consecutive
  CTAs spans one or two GPCs; reuse domains of exactly one GPC fit the times worse (the small GPCs first).
* two readings of the 4096³ row-major ping-pong records tried on the committed data and not kept (2026-12-03; the
  model's constants unchanged, nothing registered): the window's reads served from L2 wherever the wave's working
  set (:func:`h100lab.design.perf.wave_working_sets`, 38 MB there) fits in the L2 — the in-step time, from
  +25…+27 % to −22 % on those records, nowhere else changed; and the L2 → SM delivery of :func:`lrc_bytes` at the
  highest rate of its calibration runs as a bound of every persistent form, in the period's soft maximum with the
  others (:func:`h100lab.sim.timing.soft_period`) — it binds the 128-column cooperative forms, which run near that
  rate already (+11…+18 % at 4096³ and 8192³), held out 281 → 262 of 286; the two together with the delivery as a
  hard floor of the period instead: held out 282 (the persistent 4096³ record within; the step kernel's pairs
  schedule at 4096³ −22 %: its B sharers share a GPC, so the delivery estimate does not bind), the order sweep's
  held-out ping-pong records 42 of 53 (39), the first fresh bf16 round 95 and 94 of 98 (97 and 95) — no clear gain.
  The truth at 4096³ lies between the in-step and the window reads. Nsight Compute on those launches
  (:func:`delivery_rows`, ``data/l08/gemm_l2_delivery``) then showed why: they are bound by L2 → SM delivery (7–8.4
  TB/s at L2, DRAM under 3 TB/s), not by DRAM — every requested byte, where the GPC count of :func:`lrc_bytes`
  merges some; the model's delivery bound (above) charges every byte, to the waves out of step only. Nor does :func:`capacity_reads` with a drift of the ping-pong's own
  count its DRAM reads: fitted on the eight 8192³ ping-pong runs' counters its best drift (0.03) leaves an rms log
  ratio of 0.51 — groups of 8 and 16 along N read 2.1–2.2× its bytes, row-major 1.5×, the grouped orders along M
  0.6–0.7×.

**The L2's capacity and the CTAs' drift** (:func:`capacity_reads`, issue 17; a byte estimate — in the time model
since for the cooperative forms, each at its own drift, :func:`fit_form_drifts`, charged at the tile reads' rate,
:func:`h100lab.design.perf.fit_tile_read`; registered in :mod:`h100lab.validation.l08_reuse`): the in-step estimate counts each wave's distinct panels once, so it has neither the reuse a small shape gets
from the previous wave's panels still in L2 nor the re-reads of a long launch whose CTAs drift apart. The estimate
starts each tile at its wave × k-loop × the CTA's own speed (``1 + drift · u``, ``u`` spread over ±½), and a
sharer finds a k-slice still in L2 with probability ``exp(−X / C)`` (``X``: the in-step bytes the chip touched since
the previous sharer read it; ``C``: half the L2). One constant, ``drift``, fitted on the DRAM counters of the bf16
cooperative forms in the time model's order (:data:`DRIFT_CALIBRATION`, 11 runs): 0.004 — CTAs 0.4 % apart in
speed across the grid (``data/l08/gemm_skew`` measured ~0.8 % between two CTAs). Byte check (:func:`capacity_rows`;
ratio measured / estimate within 25 %): calibration 11/11 (in step 8/11: 16384³ read 1.48–1.70× it); held out, the
FP8 runs 6/9 (in step 4/9) — 128 × 128 TMA-store 8192³ 1.05, 16384³ 1.30 (in step 1.65), 1280 × 3840 × 8192 0.87
(0.70), 4096³ 0.55 (0.36: A and B fit, the exponential lets too little survive a group), the cluster pairs
0.83–1.04 — and the bf16 runs in other orders 7/12 (in step 7/12; row-major and grouped-by-16 lose reuse the drift
does not explain). Tried in :func:`h100lab.design.perf.scale_read_bytes` (the FP8 scale loads' load, its two
constants refitted on their own subset): at every shape held out 273 → 264/286 (FP8 122 → 113, the fit's intercept
driven to its floor by the 4096³ estimate); only where A and B do not fit in L2 (the present rule kept for the
rest) 273 → 268 (FP8 122 → 117: the two 8192³ +10 % misses gone, the 1280 × 3840 × 8192 and 1408 × 3072 × 8192
forms 10–12 % fast, the 16384³ pair still +10.2 %). So the time model keeps its estimate: a better byte count at
the two-wave shapes makes their loaded latency too short — the latency is not linear in the measured read rate
there either.

**L2 → SM delivery** (:func:`lrc_bytes`, issue 17; a byte estimate, not in the time model): the SMs' L2 read sectors
(``lts__t_sectors_srcunit_tex_op_read``) are 0.43–1.17 of every tile's requested bytes, so requests of sharers are
merged before L2 (Nsight Compute's L2 Request Coalescer, ``lrc``). Rule: a sharer's request merges with probability
``p`` when another sharer of the panel in its wave runs on the same GPC (CTA → SM from the run's ``placement``
record, SM → GPC from ``l02/gpc_map``), never across GPCs; plus ``β`` sectors per in-step DRAM byte. Fitted on the 23
runs at 8192³ (:data:`LRC_CALIBRATION`): p = 0.70 (ping-pong), 0.52 (cooperative), β = 0.80; byte check
(:func:`lrc_rows`) within 10 % / 25 %: calibration 15/23 / 22/23, held out 18/29 / 27/29 (the 4096³ row-major
ping-pong 0.954 vs 0.980 measured; 1280 × 3840 × 8192 read 0.6–0.8× the estimate). Merging within a TPC, within
windows of 2–16 consecutive CTAs, or one p for both forms fit worse (held out 14–17/29 within 10 %). Delivery
ceiling: the highest rate of the calibration runs, 8.62 TB/s (:func:`lrc_ceiling_tb_s`). Tried as a bound of the time
model (the launch's estimate / the ceiling, with the other bounds): beside the reuse window's DRAM bound it binds on
no held-out record (277/286 unchanged); with the DRAM bound on the in-step bytes instead (honest at 4096³, 0.93–0.97
of ncu's bytes) the 4096³ row-major ablation record goes +11.4 → −3.9 %, but the in-step bytes are 3× short of ncu's
where the ping-pong form loses reuse at 8192³ (12.9 vs 4.3 GB): 277 → 272 (steps 28 → 24, ablation 14 → 13) — not
kept. The grouped ping-pong at 8192³ (ablation +10.4 %) is not delivery-bound (6.1 TB/s at L2, 0.51 of its requests).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = ["ORDERS_DATASET", "L2_DATASET", "BISTABLE_DATASET", "CALIBRATION", "WINDOWS", "Traffic", "window_reads",
           "lonely_bytes", "traffic", "MERGED_BELOW", "UNMERGED_ABOVE", "lonely_share_of", "lonely_rows",
           "fit_lonely_share",
           "l2_estimate", "drifts", "is_calibration", "fit_window", "fit_window_for", "window_records",
           "window_at", "WINDOW_K", "DRIFT_EXPONENT", "calibrated_window", "window_for",
           "orders_records", "OrdersRow", "orders_report", "DramRow", "dram_rows", "model_dram_bytes",
           "DeliveryRow", "l2_delivery_rows", "DRIFT_CALIBRATION", "DRIFTS", "capacity_reads", "is_drift_calibration",
           "fit_drift", "calibrated_drift", "CapacityRow", "capacity_rows", "LRC_CALIBRATION", "lrc_parts", "lrc_bytes",
           "fit_lrc", "calibrated_lrc", "is_lrc_calibration", "lrc_ceiling_tb_s", "LrcRow", "lrc_rows",
           "DELIVERY_DATASET", "delivery_rows", "FORM_DRIFT_DATASET", "FORM_DRIFTS", "is_cooperative_run", "launch_runs", "fit_form_drifts",
           "calibrated_form_drifts", "placement_round_rows", "SKEW_PINGPONG_DATASET", "skew_rows"]

#: the order sweep (benchmarks/bench_gemm_orders.py)
ORDERS_DATASET = "l08/gemm_orders"
#: DRAM bytes per run measured by Nsight Compute (benchmarks/bench_gemm_orders.py --l2); nothing is fitted on it
L2_DATASET = "l08/gemm_l2_traffic"
#: the ping-pong records the time model misses under Nsight Compute with the L2 -> SM sectors, and where the CTAs of a
#: launch of several rounds land (``bench_gemm_orders.py --l2 --l2-set delivery``; :func:`delivery_rows`,
#: :func:`placement_round_rows`)
DELIVERY_DATASET = "l08/gemm_l2_delivery"
#: the ping-pong kernel traced (``bench_gemm_orders.py --skew --skew-variant pingpong``): CTAs 0 and 66's tile
#: starts in the row-major and grouped orders (:func:`skew_rows`)
SKEW_PINGPONG_DATASET = "l08/gemm_skew_pingpong"
#: DRAM bytes and duration of each of 20 launches of 5 runs (bench_gemm_orders.py --l2 --l2-set bistable)
BISTABLE_DATASET = "l08/gemm_l2_bistable"
#: the calibration subset of the order sweep: (variant, schedule, M, N, K, grid) — the ping-pong form, persistent on
#: 132 CTAs, at 8192³, in every tile order it was run in (10)
CALIBRATION = (("pingpong", "persistent", 8192, 8192, 8192, 132),)
#: the depth K of :data:`CALIBRATION`: where a fitted window is the window (:func:`window_at`)
WINDOW_K = 8192
#: the drift law's exponent (:func:`window_at`; a hypothesis refuted on fresh depths, in no model)
DRIFT_EXPONENT = 0.5
#: the windows :func:`fit_window` tries (CTAs); ``None``: no window (the whole wave shares, in step)
WINDOWS = (2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, None)


@dataclass(frozen=True)
class Traffic:
    """DRAM traffic of a tile order: ``per_wave`` (A panel reads, B panel reads) per wave — each a count of whole
    panels (``bm × K`` or ``bn × K`` elements), ``distinct`` the distinct (A, B) panels per wave, ``requested``
    and ``dram`` bytes, ``hit_rate`` = 1 − dram / requested, and the ``window`` (None: in step)."""

    per_wave: list
    distinct: list
    requested: int
    dram: float
    hit_rate: float
    window: int | None


def window_reads(wave: Sequence, window: int | None) -> tuple[int, int, int, int]:
    """(A reads, B reads, distinct A, distinct B) of one wave (tile ``c`` of ``wave`` on CTA ``c``; a tile is
    ``(m, n)`` or ``(problem, m, n)``): a panel is read once per reuse window holding one of its sharers
    (``window`` None: once)."""
    if window is not None and (int(window) != window or window < 1):
        raise ValueError(f"window = {window}: a positive number of CTAs, or None (in step)")
    ua: dict = {}
    ub: dict = {}
    for c, t in enumerate(wave):
        key = 0 if window is None else c // int(window)
        ua.setdefault(tuple(t[:-1]), set()).add(key)
        ub.setdefault(tuple(t[:-2]) + (t[-1],), set()).add(key)
    return (sum(len(s) for s in ua.values()), sum(len(s) for s in ub.values()), len(ua), len(ub))


def lonely_bytes(wave: Sequence, window: int, a_bytes: float, b_bytes: float) -> float:
    """The bytes of ``wave`` (tile ``c`` on CTA ``c``; a tile is ``(m, n)``) read by tiles whose panel has no other
    sharer in the same reuse window of ``window`` consecutive CTAs (CTAs ``c`` with the same ``c // window``): each
    tile reads ``a_bytes`` of its A panel and ``b_bytes`` of its B panel, and a panel's read is lonely when the
    tile is its window's only sharer of it [model: the reuse window's own reading — sharers in different windows
    drift apart by more than a k-slice's time]. Between 0 and ``len(wave) · (a_bytes + b_bytes)``; with a window of
    1 every byte is lonely."""
    if int(window) != window or window < 1:
        raise ValueError(f"window = {window}: a positive number of CTAs")
    w = int(window)
    ka: dict = {}
    kb: dict = {}
    for c, t in enumerate(wave):
        ka[(t[0], c // w)] = ka.get((t[0], c // w), 0) + 1
        kb[(t[1], c // w)] = kb.get((t[1], c // w), 0) + 1
    return float(sum((a_bytes if ka[(t[0], c // w)] == 1 else 0.0) + (b_bytes if kb[(t[1], c // w)] == 1 else 0.0)
                     for c, t in enumerate(wave)))


def traffic(order: Sequence, ctas: int, bm: int, bn: int, K: int, elem_bytes: int = 2,
            window: int | None = None) -> Traffic:
    """The DRAM traffic of ``order`` run ``ctas`` tiles at a time (waves of :func:`window_reads`): requested bytes
    = every tile's A and B panels; DRAM bytes = each wave's reads × panel bytes."""
    for name, v in (("ctas", ctas), ("bm", bm), ("bn", bn), ("K", K), ("elem_bytes", elem_bytes)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} = {v}: a positive integer")
    pa, pb = bm * K * elem_bytes, bn * K * elem_bytes
    per, distinct, req, dram = [], [], 0, 0.0
    for w in range(0, len(order), ctas):
        wave = order[w:w + ctas]
        a, b, da, db = window_reads(wave, window)
        per.append((a, b))
        distinct.append((da, db))
        req += len(wave) * (pa + pb)
        dram += a * pa + b * pb
    return Traffic(per, distinct, req, dram, 1 - dram / req if req else 0.0, window)


def l2_estimate(order: Sequence, ctas: int, bm: int, bn: int, K: int, elem_bytes: int = 2,
                window: int | None = None, concurrent: int | None = None):
    """What :func:`h100lab.design.perf._layout` reads per wave of ``ctas`` tiles (``per_wave`` (A, B) panel
    reads): in step (``window`` None) :func:`h100lab.design.schedule.l2_reuse` with its defaults — one read per
    distinct panel; drifting: :func:`traffic` with the reuse window. ``concurrent``: the tiles in flight at once
    when a wave's CTAs run more than one tile each, one after the other (``pairs``: ``ctas`` = 2 × SMs tiles, SMs in
    flight) — a drifting wave's reads are then those of one in-flight set of ``concurrent`` consecutive tiles (the
    mean over the wave's sets), the bytes a k-loop of one tile per CTA reads."""
    if window is None:
        from .schedule import l2_reuse
        return l2_reuse(order, ctas, bm, bn, K, elem_bytes)
    if concurrent is None or concurrent >= ctas:
        return traffic(order, ctas, bm, bn, K, elem_bytes, window)
    sub = traffic(order, concurrent, bm, bn, K, elem_bytes, window)
    per, distinct, k = [], [], -(-ctas // concurrent)
    for w in range(0, len(sub.per_wave), k):
        part = sub.per_wave[w:w + k]
        per.append((sum(a for a, _ in part) / len(part), sum(b for _, b in part) / len(part)))
        distinct.append(sub.distinct[w])
    pa, pb = bm * K * elem_bytes, bn * K * elem_bytes
    req = len(order) * (pa + pb)
    dram = sum((a * pa + b * pb) * min(k, len(sub.per_wave) - i * k) for i, (a, b) in enumerate(per))
    return Traffic(per, distinct, req, dram, 1 - dram / req if req else 0.0, window)


def drifts(f) -> bool:
    """Whether form ``f`` (a :class:`h100lab.design.perf.Form`) is modelled drifting: the ping-pong forms (one
    consumer warpgroup per tile, ``f.pingpong``). The cooperative forms are in step (``data/l08/gemm_skew``)."""
    return bool(getattr(f, "pingpong", False))


def is_calibration(r: dict) -> bool:
    """Whether an order-sweep record is in :data:`CALIBRATION`."""
    return (r.get("variant"), r.get("schedule"), r.get("M"), r.get("N"), r.get("K"), r.get("grid")) in CALIBRATION


def orders_records(datasets: Iterable[str] = (ORDERS_DATASET,)) -> list[dict]:
    """The timed ping-pong records of the order sweep (``kind`` ``orders``, ``ok``, a capstone variant): the
    records the window is fitted on (:func:`is_calibration`) and checked against."""
    from .. import data

    out = []
    for name in datasets:
        if not data.available(name):
            continue
        for r in data.load(name).records:
            if r.get("kind") == "orders" and r.get("ok") and str(r.get("variant", "")).startswith("pingpong") \
                    and r.get("median_ms"):
                out.append(dict(r))
    return out


def _errors(records: Sequence[dict], window, predict: Callable) -> list[float]:
    return [predict(r, window) / float(r["median_ms"]) - 1 for r in records]


def fit_window(records: Sequence[dict], predict: Callable, windows: Sequence = WINDOWS,
               tolerance: float = 0.10) -> int | None:
    """The reuse window (of ``windows``) whose predictions (``predict(record, window)`` → ms) put the most
    ``records`` within ±``tolerance``; ties go to the smallest median |error|, then the smaller window."""
    if not records:
        raise ValueError("no calibration records: the order sweep (data/l08/gemm_orders) is not committed")
    best = None
    for w in windows:
        e = _errors(records, w, predict)
        inside = sum(abs(x) <= tolerance for x in e)
        med = sorted(abs(x) for x in e)[len(e) // 2]
        score = (-inside, med, math.inf if w is None else w)
        if best is None or score < best[0]:
            best = (score, w)
    return best[1]


def _predict_ms(r: dict, window, params=None) -> float:
    from .perf import predict
    return predict(r["variant"], r["M"], r["N"], r["K"], sms=int(r["grid"]) if r.get("schedule") == "persistent"
                   else None, group=int(r["group"]), raster=int(r["raster"]), params=params, window=window).time_ms


_MEMO: dict = {}


def window_records() -> list[dict]:
    """The :data:`CALIBRATION` records of the committed order sweep (what the window is fitted on); [] when it is
    not committed."""
    return [r for r in orders_records() if is_calibration(r)]


def fit_window_for(params) -> int | None:
    """:func:`fit_window` on :func:`window_records` with the lesson-8 time model at ``params`` (every drifting form
    in step while it fits: ``params.reuse_window`` is not read, each window is passed); None (in step) when the
    sweep is not committed. :func:`h100lab.design.perf.calibrated` fits it after each model's own constants and
    keeps it as :attr:`h100lab.design.perf.PerfParams.reuse_window`."""
    recs = window_records()
    if not recs:
        return None
    return fit_window(recs, lambda r, w: _predict_ms(r, w, params))


def calibrated_window() -> int | None:
    """The model's reuse window: :attr:`h100lab.design.perf.PerfParams.reuse_window` of
    :func:`h100lab.design.perf.calibrated` (:func:`fit_window_for` with the model's constants)."""
    from .perf import calibrated
    return calibrated().reuse_window


def window_at(window: int | None, K: int, exponent: float = 0.0) -> int | None:
    """The reuse window at depth ``K`` of a window fitted at :data:`WINDOW_K`: ``round(window · (WINDOW_K / K) **
    exponent)`` CTAs, at least 1 (None stays None: in step). ``exponent`` 0: one window at every K (the model and
    the one-clock model). ``exponent`` 0.5, :data:`DRIFT_EXPONENT` [hypothesis, refuted — the drift law]: the
    CTAs' k-loops drift apart as a random walk, by ∝ √(time) ∝ √K k-slices over a tile, so the CTAs still close
    enough to share a k-slice in L2 fall as 1 / √K. Chosen after the order sweep's best window per shape had been
    seen (28 CTAs at K = 4096, 20–24 at 8192, 16 at 16384 under the form clock), so that sweep was no
    test of it; the sweep at five depths never run before (``data/l08/gemm_orders_k``, ``_b``; predictions committed
    first, :func:`h100lab.validation.l08.drift_law_predictions`) was, and the law failed it: 36 and 35 of 50 within
    ±10 % in the two processes, one window with the same constants 35 and 32, the model 38 and 38. At K = 2048 the
    window does grow, but less (the law's 40 CTAs too fast, one window's 20 too slow); at K ≥ 12288 it does not
    shrink at all — the law's 12–16 CTAs far too slow where the model's 24 comes closest
    (:func:`h100lab.validation.l08.drift_law_rows`)."""
    if window is None or not exponent:
        return window
    return max(1, round(window * (WINDOW_K / int(K)) ** exponent))


def window_for(f, params=None, K: int | None = None) -> int | None:
    """The reuse window the time model uses for form ``f`` at depth ``K`` under ``params`` (default the model,
    :func:`h100lab.design.perf.calibrated`): its :attr:`~h100lab.design.perf.PerfParams.reuse_window` for a drifting
    form (:func:`drifts`) — at ``K`` by :func:`window_at` with its ``window_k_exponent`` — None (in step)
    otherwise. Constants being fitted have ``reuse_window`` None: they are fitted with the in-step estimate (their
    records are grouped orders, group 8 along M, whose sharers of a B panel run on neighbouring CTAs; the window is
    fitted after them, with them)."""
    if not drifts(f):
        return None
    if params is None:
        from .perf import calibrated
        params = calibrated()
    return window_at(params.reuse_window, WINDOW_K if K is None else K, params.window_k_exponent)


@dataclass(frozen=True)
class OrdersRow:
    """One order-sweep record against the model: its label, ``part`` (calibration / held-out), measured and
    predicted ms, the error with the reuse window and ``lockstep_error`` (every sharer of a wave sharing)."""

    label: str
    part: str
    measured_ms: float
    predicted_ms: float
    error: float
    lockstep_error: float


def _run_label(r: dict) -> str:
    """A run of the order sweep or the DRAM-counter run as the tables name it."""
    return (f"{r['M']}×{r['N']}×{r['K']} {r['variant']} ({r['schedule']}, {r['grid']} CTAs) group {r['group']} "
            f"raster {'MN'[int(r['raster'])]}")


def _run_args(r: dict) -> tuple:
    """A run's (variant, schedule, M, N, K, grid, group, raster): the arguments :func:`model_dram_bytes` takes."""
    return (r["variant"], r["schedule"], r["M"], r["N"], r["K"], r["grid"], r["group"], r["raster"])


def _is_counter_run(r: dict, metric: str) -> bool:
    """Whether ``r`` is a Nsight Compute run (``kind`` ``l2``, ok) that carries ``metric``."""
    return r.get("kind") == "l2" and bool(r.get("ok")) and metric in r.get("metrics", {})


def _counter_runs(dataset: str, metric: str) -> list[dict]:
    """The Nsight Compute runs of ``dataset`` that carry ``metric`` (:func:`_is_counter_run`); [] when it is not
    committed."""
    from .. import data

    if not data.available(dataset):
        return []
    return [r for r in data.load(dataset).records if _is_counter_run(r, metric)]


def orders_report(records: Sequence[dict] | None = None, window="model", params=None) -> list[OrdersRow]:
    """Every ping-pong record of the order sweep (:func:`orders_records`) predicted under ``params`` (default the
    model, :func:`h100lab.design.perf.calibrated`) with its reuse window (``window``: another to try) and in step."""
    from .perf import calibrated

    recs = orders_records() if records is None else records
    params = calibrated() if params is None else params
    out = []
    for r in recs:
        p = _predict_ms(r, window, params)         # "model": the params' window at the record's K (window_for)
        p0 = _predict_ms(r, None, params)
        m = float(r["median_ms"])
        out.append(OrdersRow(_run_label(r), "calibration" if is_calibration(r) else "held-out", m, p, p / m - 1,
                             p0 / m - 1))
    return out


def model_dram_bytes(variant: str, schedule: str, M: int, N: int, K: int, grid: int, group: int, raster: int,
                     window) -> float:
    """The DRAM bytes of A and B the time model's layout (:func:`h100lab.design.perf._layout`) reads over a whole
    launch with reuse window ``window`` (None: in step): each wave's reads × its tiles per CTA."""
    from . import perf

    f = perf.form(variant, schedule=schedule)
    sms = int(grid) if schedule == "persistent" else 132
    lay = perf._layout(f, int(M), int(N), int(K), sms, int(group), int(raster), window)
    per = 2 if schedule == "pairs" else 1
    return float(sum(w[1] for w in lay.waves) * per)


@dataclass(frozen=True)
class DramRow:
    """One run of :data:`L2_DATASET`: its label, Nsight Compute's DRAM bytes read (``ncu_bytes``) and kernel
    duration, the DRAM rate they give, the model's bytes in step (``in_step_bytes``) and with the form's window
    (``model_bytes``, the same for a form in step), the L2-fabric bytes (sectors × 32 B) and the timed median."""

    label: str
    variant: str
    ncu_bytes: float
    duration_ms: float
    dram_tb_s: float
    in_step_bytes: float
    model_bytes: float
    fabric_bytes: float
    timed_ms: float


def dram_rows(dataset: str = L2_DATASET) -> list[DramRow]:
    """The model's DRAM bytes next to Nsight Compute's for every profiled run of ``dataset`` (held out: nothing is
    fitted on it). ``[]`` when it is not committed."""
    from .. import data
    from .perf import form

    if not data.available(dataset):
        return []
    recs = data.load(dataset).records
    timed = {(r["variant"], r["schedule"], r["group"], r["raster"], r["M"], r["N"], r["K"], r.get("ctas_arg")): r
             for r in recs if r.get("kind") == "l2time" and r.get("ok")}
    out = []
    for r in recs:
        if not _is_counter_run(r, "dram__bytes_read.sum"):
            continue
        m = r["metrics"]
        t = timed.get((r["variant"], r["schedule"], r["group"], r["raster"], r["M"], r["N"], r["K"],
                       r.get("ctas_arg")), {})
        args = _run_args(r)
        w = window_for(form(r["variant"], schedule=r["schedule"]), None, r["K"])
        dur = m.get("gpu__time_duration.sum", float("nan")) * 1e-6
        out.append(DramRow(_run_label(r), r["variant"], m["dram__bytes_read.sum"], dur,
                           m["dram__bytes_read.sum"] / dur * 1e-9 if dur > 0 else float("nan"),
                           model_dram_bytes(*args, None), model_dram_bytes(*args, w),
                           m.get("lts__t_sectors_srcunit_ltcfabric.sum", float("nan")) * 32,
                           float(t.get("median_ms", float("nan")))))
    return out


@dataclass(frozen=True)
class DeliveryRow:
    """One profiled run of :data:`L2_DATASET`: what L2 delivered to the SMs — ``tex_bytes`` (Nsight Compute's
    ``lts__t_sectors_srcunit_tex_op_read.sum`` × 32 B: sectors the SMs' TMA requests read at the L2 slices),
    ``requested_bytes`` (every tile's A and B panels: tiles × (bm + bn) × K × element bytes, what the kernel's TMA
    copies ask for), their ratio ``tex_per_request``, the rate ``tex_tb_s`` over ``duration_ms`` and the SM clock
    (``sm__cycles_elapsed.avg.per_second``, ``ncu --clock-control none``)."""

    label: str
    variant: str
    shape: tuple
    group: int
    raster: int
    tex_bytes: float
    requested_bytes: float
    tex_per_request: float
    duration_ms: float
    tex_tb_s: float
    sm_mhz: float


def _requested_bytes(f, M: int, N: int, K: int) -> float:
    """What a launch's TMA copies ask L2 for: every tile's A and B panels, tiles × (bm + bn) × K × element bytes."""
    return float(-(-M // f.bm) * -(-N // f.bn) * (f.bm + f.bn) * K * f.elem_bytes)


def l2_delivery_rows(dataset: str = L2_DATASET) -> list[DeliveryRow]:
    """L2 → SM delivery per profiled run of ``dataset`` (a diagnosis; nothing fitted, nothing of it in the time
    model). What it shows on the committed run (H200):

    * the SMs' L2 read sectors top out at ~8.6–8.9 TB/s (the highest ``tex_tb_s`` of the 52 runs), and the runs at
      that rate are the ones the time model misses or over-charges: the 4096³ ping-pong form in row-major order
      (group 1 along M, and group 16 along N — the same order at 16 tile columns) reads 2.63 GB at the L2 slices,
      0.98 of every tile read, where the grouped order (group 8 along M) and group 1 along N read 0.47 — the same
      DRAM bytes (0.29 / 0.26 / 0.30 GB, :func:`dram_rows`), the same L2-fabric bytes within 15 % — and its
      duration is those bytes at that ceiling (2.63 GB / 8.6 TB/s = 0.306 ms, ncu 0.306): the row-major loss at
      4096³ is L2 → SM delivery of requests no sharer merged, not DRAM traffic (the time model charges it to its
      HBM bound with the reuse window's DRAM bytes, ~5× the measured ones — +11 % on the ablation's record);
    * the 128-column cooperative form runs at 8.1–8.6 TB/s at full waves (8192³ in three orders, 16384³) and at
      5.4 TB/s at 1280 × 3840 × 8192, whose last wave holds 36 of 132 CTAs — a delivery ceiling that a partial
      wave relieves, where the time model's shared-memory bound (a per-SM limit) binds in every wave and is
      11–15 % slow at that shape.

    What merges the sharers' requests before they reach L2 in the grouped orders (``tex_per_request`` 0.47–0.8) is
    not measured, so the time model does not count the delivered bytes of a wave in step; the L2 share it already
    has (:func:`h100lab.design.perf.calibrate` ``fit_l2``) counts every tile read and, fitted with the shared-memory
    bound off, does not bind (14.8 TB/s; held out 265/286). A wave out of step as a whole merges nothing: its
    delivery bound (:func:`h100lab.design.perf.delivery_waves`) charges every requested byte. ``[]`` without the
    dataset."""
    from .. import data
    from .perf import form

    if not data.available(dataset):
        return []
    out = []
    for r in data.load(dataset).records:
        m = r.get("metrics") or {}
        if (r.get("kind") != "l2" or not r.get("ok", True) or "lts__t_sectors_srcunit_tex_op_read.sum" not in m
                or "gpu__time_duration.sum" not in m):
            continue
        f = form(r["variant"], schedule=r["schedule"])
        req = _requested_bytes(f, r["M"], r["N"], r["K"])
        tex = m["lts__t_sectors_srcunit_tex_op_read.sum"] * 32.0
        ms = m["gpu__time_duration.sum"] * 1e-6
        out.append(DeliveryRow(_run_label(r), r["variant"], (r["M"], r["N"], r["K"]), int(r["group"]),
                               int(r["raster"]), tex, req, tex / req, ms, tex / (ms * 1e-3) * 1e-12,
                               m.get("sm__cycles_elapsed.avg.per_second", float("nan")) * 1e-6))
    return out


# ------------------------------------------------------------------------------------------------
# DRAM reads with the L2's capacity and the CTAs' drift (issue 17: the FP8 scale loads' load)

#: the DRAM-counter runs the drift rate is fitted on (:func:`fit_drift`): the cooperative bf16 forms of
#: :data:`L2_DATASET` in the order the time model's records use (group 8 along M) — 128 × 256 and 128 × 128 tiles at
#: 4096³, 8192³, 16384³, 1280 × 3840 × 8192 and the tall shapes 16384 × 4096, 32768 × 2048, 65536 × 1024 (K = 8192).
#: Held out for the byte check (:func:`capacity_rows`): every FP8 run (``l08/gemm_l2_traffic_fp8``) and the bf16
#: cooperative runs in other orders (row-major, grouped by 16)
DRIFT_CALIBRATION = {"dataset": L2_DATASET, "variants": ("cooperative", "cooperative_n128"), "group": 8, "raster": 0}
#: the drift rates :func:`fit_drift` tries (relative speed spread of the CTAs, see :func:`capacity_reads`)
DRIFTS = tuple(round(0.0005 * i, 4) for i in range(0, 31))
_PHI = (math.sqrt(5.0) - 1.0) / 2.0


def capacity_reads(f, M: int, N: int, K: int, sms: int, group: int = 8, raster: int = 0, drift: float | None = None,
                   l2_bytes: float | None = None, partitions: int = 2) -> tuple:
    """Per wave of a persistent launch of form ``f`` (the order and grid of :func:`h100lab.design.perf._layout`):
    the DRAM bytes of A and B it reads when the L2 has a capacity and the CTAs drift apart [model; one constant,
    ``drift``, fitted on DRAM counters: :func:`fit_drift`].

    * **drift** — CTA ``c`` runs its k-blocks at a speed ``1 + drift · u_c`` (``u_c`` evenly spread over
      [−½, ½): the golden-ratio sequence, deterministic), so tile ``t`` (wave ``w``, CTA ``c``) starts
      ``w · k_blocks · (1 + drift · u_c)`` k-blocks after the launch: the CTAs of a wave start together and drift
      apart in proportion to the time run — as ``data/l08/gemm_skew`` measured (two CTAs of the 128 × 256
      cooperative kernel at 8192³: the lag grows linearly, ~0.8 % of a tile per tile in the grouped order);
    * **capacity** — a k-slice a tile read is still in L2 for the next tile sharing its panel (the next start
      among the panel's sharers) with probability ``exp(−X / C)``, ``X`` the distinct bytes the chip touched in
      between — the in-step panel bytes per k-block (the wave's distinct panels, :func:`l2_estimate`) times the
      gap in k-blocks — and ``C = l2_bytes / partitions`` (each of the two L2 halves keeps its own copy of what its
      SMs read; lesson 1's pointer chase slows past 30 MiB of the 60); the exponential (a line survives other
      traffic as under random replacement in a hashed set-associative cache) in place of LRU's step at ``X = C``,
      with which the estimate flips from the in-step bytes to 4× them within a 2× change of ``drift`` at 16384³;
    * a panel's first read is charged to the wave of its first sharer, each later one to the wave of the tile that
      reads it again; sharers in one wave with no drift share a read (the in-step estimate), sharers a wave apart
      share it when the wave's bytes are small against ``C`` (4096³: A and B fit).

    A launch of one tile per CTA (``f.schedule`` not persistent): the in-step waves of ``_layout``. ``drift`` None:
    :func:`calibrated_drift`."""
    import numpy as np

    from . import perf
    from ..specs import H200_SXM

    lay = perf._layout(f, int(M), int(N), int(K), int(sms), int(group), int(raster))
    if f.schedule != "persistent":
        return tuple(float(d) for _, d, _ in lay.waves)
    d = calibrated_drift() if drift is None else float(drift)
    if d < 0:
        raise ValueError(f"drift = {d}: a relative speed spread >= 0")
    cap = (H200_SXM.l2_bytes if l2_bytes is None else l2_bytes) / partitions
    if not cap > 0:
        raise ValueError(f"l2_bytes / partitions = {cap}: a positive capacity")
    order = perf._persistent_order(f, -(-int(M) // f.bm), -(-int(N) // f.bn), int(group), "m" if raster == 0 else "n")
    G, kb, per = lay.grid, lay.k_blocks, lay.per_cta
    t = np.arange(len(order))
    w, c = t // G, t % G
    start = w * kb * (1.0 + d * ((c * _PHI) % 1.0 - 0.5))
    rate = sum(x for _, x, _ in lay.waves) / (per * kb)          # distinct bytes touched per k-block, in step
    out = np.zeros(per)
    for key, pbytes in ((np.array([o[0] for o in order]), f.bm * K * f.elem_bytes),
                        (np.array([o[1] for o in order]), f.bn * K * f.elem_bytes)):
        i = np.lexsort((start, key))
        k, s, wv = key[i], start[i], w[i]
        first = np.r_[True, k[1:] != k[:-1]]
        np.add.at(out, wv[first], float(pbytes))
        gap = np.diff(s)[~first[1:]]
        again = 1.0 - np.exp(-rate * gap / cap)
        np.add.at(out, wv[1:][~first[1:]], pbytes * again)
    return tuple(float(x) for x in out)


def is_cooperative_run(r: dict) -> bool:
    """Whether a run is a persistent launch of a form that is not ping-pong: the runs the drift and each form's own
    drift are fitted on, and the tile reads' rate."""
    return r.get("schedule") == "persistent" and not str(r["variant"]).startswith("pingpong")


def _drift_records(dataset: str = L2_DATASET) -> list[dict]:
    return [r for r in _counter_runs(dataset, "dram__bytes_read.sum") if is_cooperative_run(r)]


def is_drift_calibration(r: dict) -> bool:
    """Whether a DRAM-counter run is in :data:`DRIFT_CALIBRATION`."""
    c = DRIFT_CALIBRATION
    return (r.get("variant") in c["variants"] and r.get("group") == c["group"] and r.get("raster") == c["raster"]
            and r.get("schedule") == "persistent" and r.get("ctas_arg") is None)


def _capacity_bytes(r: dict, drift) -> float:
    from .perf import form
    f = form(r["variant"], schedule=r["schedule"])
    return sum(capacity_reads(f, r["M"], r["N"], r["K"], r["grid"], r["group"], r["raster"], drift=drift))


def fit_drift(records: Sequence[dict], drifts: Sequence = DRIFTS) -> float:
    """The drift (of ``drifts``) whose :func:`capacity_reads` bytes match the records' DRAM counters best: the
    smallest root-mean-square log ratio (ties: the smaller drift)."""
    if not records:
        raise ValueError("no calibration runs: the DRAM-counter run (data/l08/gemm_l2_traffic) is not committed")
    best = None
    for d in drifts:
        e = [math.log(r["metrics"]["dram__bytes_read.sum"] / _capacity_bytes(r, d)) for r in records]
        score = (math.sqrt(sum(x * x for x in e) / len(e)), d)
        best = score if best is None or score < best else best
    return best[1]


def calibrated_drift() -> float:
    """:func:`fit_drift` on the :data:`DRIFT_CALIBRATION` runs (remembered in the process and by
    :mod:`h100lab.fitcache`); 0 without the dataset."""
    if "drift" not in _MEMO:
        recs = [r for r in _drift_records(DRIFT_CALIBRATION["dataset"]) if is_drift_calibration(r)]
        if not recs:
            _MEMO["drift"] = 0.0
        else:
            from .. import fitcache
            parts = [{k: r[k] for k in ("variant", "schedule", "M", "N", "K", "grid", "group", "raster")}
                     | {"bytes": r["metrics"]["dram__bytes_read.sum"]} for r in recs]
            _MEMO["drift"] = fitcache.memo("l08_l2_drift", [parts, list(DRIFTS)], lambda: fit_drift(recs))
    return _MEMO["drift"]



# ------------------------------------------------------------------------------------------------
# each form's own drift (issue 17: the in-flight 128 × 128 form at 16384³, whose launches lose reuse)

#: the per-launch counters (DRAM bytes and duration of each of 30 launches from one pass) the forms' own drifts
#: (:func:`fit_form_drifts`) and the tile reads' DRAM rate (:func:`h100lab.design.perf.fit_tile_read`) are fitted
#: on: the first of the two 128-column runs (``bench_gemm_orders.py --l2 --l2-set n128``); the second
#: (``l08/gemm_l2_n128_b``, another process) is held out
FORM_DRIFT_DATASET = "l08/gemm_l2_n128_a"
#: the drifts :func:`fit_form_drifts` tries: up to 6 % (the in-flight form's launches read up to 5× the in-step bytes)
FORM_DRIFTS = tuple(round(0.001 * i, 3) for i in range(0, 61))


def launch_runs(dataset=FORM_DRIFT_DATASET) -> list[dict]:
    """The Nsight Compute runs of ``dataset`` (a :class:`h100lab.data.Dataset` or the name of a committed one)
    profiled launch by launch (``launch_metrics``, each launch's DRAM bytes and duration from one pass): each record
    with ``launch_bytes`` and ``launch_ms`` (lists, in launch order); [] without the dataset."""
    metric = "dram__bytes_read.sum"
    runs = (_counter_runs(dataset, metric) if isinstance(dataset, str)
            else [r for r in dataset.records if _is_counter_run(r, metric)])
    out = []
    for r in runs:
        ms = r.get("launch_metrics") or []
        if not ms or any("gpu__time_duration.sum" not in m for m in ms):
            continue
        out.append(dict(r, launch_bytes=[float(m["dram__bytes_read.sum"]) for m in ms],
                        launch_ms=[float(m["gpu__time_duration.sum"]) * 1e-6 for m in ms]))
    return out


def fit_form_drifts(dataset: str = FORM_DRIFT_DATASET, drifts: Sequence = FORM_DRIFTS) -> tuple:
    """Each cooperative form's own drift [model, calibrated on DRAM counters — bytes, no time]: per variant of
    ``dataset``'s persistent runs that is not a ping-pong form, :func:`fit_drift` on its runs' median launch bytes
    (every shape it ran). A tuple of (variant, drift), sorted by variant; () without the dataset.

    The reading behind it (``data/l08/gemm_l2_n128_a``): at 16384³ the 128 × 128 form with a wgmma group in flight
    reads 3–5× the in-step bytes, launch by launch by a varying amount, the same form without it 1.6×; with one drift
    for every form (:func:`calibrated_drift`, fitted on the 128 × 256 and plain 128 × 128 forms) the capacity
    estimate has the second, not the first. The in-flight consumer holds two stages (it gives a stage back only after
    the next k-block's group is issued), so its producer runs one stage shorter ahead: its CTAs wait on their loads
    more, and a CTA that misses in L2 falls behind its panel's sharers and misses again — the CTAs spread apart
    faster [hypothesis; the drift is fitted, not derived from it]."""
    recs = launch_runs(dataset)
    by: dict = {}
    for r in filter(is_cooperative_run, recs):
        by.setdefault(r["variant"], []).append(dict(r, metrics={"dram__bytes_read.sum":
                                                                 float(np.median(r["launch_bytes"]))}))
    return tuple((v, fit_drift(rs, drifts)) for v, rs in sorted(by.items()))


def calibrated_form_drifts() -> tuple:
    """:func:`fit_form_drifts` on :data:`FORM_DRIFT_DATASET` (remembered in the process and by :mod:`h100lab.fitcache`)."""
    if "form_drifts" not in _MEMO:
        recs = launch_runs(FORM_DRIFT_DATASET)
        if not recs:
            _MEMO["form_drifts"] = ()
        else:
            from .. import fitcache
            parts = [[r["variant"], r["schedule"], r["M"], r["N"], r["K"], r["grid"], r["group"], r["raster"],
                      r["launch_bytes"]] for r in recs]
            _MEMO["form_drifts"] = fitcache.memo("l08_form_drifts", [parts, list(FORM_DRIFTS)], fit_form_drifts)
    return _MEMO["form_drifts"]

@dataclass(frozen=True)
class CapacityRow:
    """One DRAM-counter run against :func:`capacity_reads`: its label, ``part`` (calibration / held-out), Nsight
    Compute's DRAM bytes read, the in-step estimate's and the capacity estimate's bytes."""

    label: str
    variant: str
    part: str
    ncu_bytes: float
    in_step_bytes: float
    capacity_bytes: float

    @property
    def ratio(self) -> float:
        """Measured / capacity estimate."""
        return self.ncu_bytes / self.capacity_bytes


def capacity_rows(datasets: Iterable[str] = (L2_DATASET, "l08/gemm_l2_traffic_fp8")) -> list[CapacityRow]:
    """The byte check of :func:`capacity_reads`: every persistent cooperative (not ping-pong) DRAM-counter run of
    ``datasets`` with the calibrated drift, next to the in-step estimate."""
    d = calibrated_drift()
    out = []
    for name in datasets:
        for r in _drift_records(name):
            out.append(CapacityRow(_run_label(r), r["variant"],
                                   "calibration" if name == DRIFT_CALIBRATION["dataset"] and is_drift_calibration(r)
                                   else "held-out", r["metrics"]["dram__bytes_read.sum"],
                                   model_dram_bytes(*_run_args(r), None), _capacity_bytes(r, d)))
    return out


# ------------------------------------------------------------------------------------------------
# L2 -> SM delivery: requests merged per GPC before L2 (issue 17; a byte estimate, not in the time model)

#: the DRAM-counter runs the merge rule is fitted on (:func:`fit_lrc`): every run of :data:`L2_DATASET` at
#: 8192 × 8192 × 8192 (23: ping-pong in 8 orders, the pairs schedule, 66 CTAs, in flight; cooperative and 128-column
#: cooperative in 4–5 orders). Held out for the byte check (:func:`lrc_rows`): the other 29 runs (4096³ in six
#: orders, K = 16384, 1280 × 3840 × 8192, 16384³, the tall shapes)
LRC_CALIBRATION = {"dataset": L2_DATASET, "shape": (8192, 8192, 8192)}


def _lrc_placement(dataset: str = L2_DATASET) -> tuple | None:
    """(SM of CTA ``c`` of a 132-CTA launch, GPC of each SM): the ``placement`` record of ``dataset`` (``%smid`` per
    CTA) and lesson 2's ``l02/gpc_map``; None without them."""
    from .. import data
    if "placement" not in _MEMO:
        out = None
        if data.available(dataset) and data.available("l02/gpc_map"):
            pl = [r for r in data.load(dataset).records if r.get("kind") == "placement" and r.get("ok")]
            gm = {int(s): int(g["gpc"]) for g in data.load("l02/gpc_map").records for s in g.get("sms", ())}
            if pl and gm:
                out = (tuple(int(s) for s in pl[0]["smid"]), gm)
        _MEMO["placement"] = out
    return _MEMO["placement"]


def lrc_parts(f, M: int, N: int, K: int, sms: int, group: int = 8, raster: int = 0,
              schedule: str | None = None) -> list[tuple[float, float]]:
    """Per wave of ``f`` (tile ``c`` of a wave on CTA ``c``; the ``pairs`` schedule: each 132-CTA set's first tiles,
    then its second): (bytes every tile's A and B panels request, bytes if the requests of the sharers of a panel on
    one GPC merged into one) — the GPC of CTA ``c`` from the committed placement (``%smid``) and lesson 2's GPC map."""
    from . import perf, schedule as sch
    pl = _lrc_placement()
    if pl is None:
        raise ValueError("no CTA placement: data/l08/gemm_l2_traffic (placement) or data/l02/gpc_map is not committed")
    smid, gpc = pl
    tm, tn = -(-int(M) // f.bm), -(-int(N) // f.bn)
    order = perf._persistent_order(f, tm, tn, int(group), "m" if raster == 0 else "n")
    pa, pb = f.bm * K * f.elem_bytes, f.bn * K * f.elem_bytes
    G = int(sms)
    sched = schedule or f.schedule
    if sched == "pairs":
        half = len(order) // 2
        waves = [[order[2 * b + j] for b in range(b0, min(b0 + G, half))] for b0 in range(0, half, G) for j in (0, 1)]
    else:
        waves = [order[w:w + G] for w in range(0, len(order), G)]
    out = []
    for wave in waves:
        ua: dict = {}
        ub: dict = {}
        for c, (m, n) in enumerate(wave):
            g = gpc.get(smid[c % len(smid)], -1)
            ua.setdefault(m, set()).add(g)
            ub.setdefault(n, set()).add(g)
        out.append((float(len(wave) * (pa + pb)), float(sum(map(len, ua.values())) * pa + sum(map(len, ub.values())) * pb)))
    return out


def lrc_bytes(f, M: int, N: int, K: int, sms: int, group: int = 8, raster: int = 0, schedule: str | None = None,
              constants: tuple | None = None) -> float:
    """The L2 → SM read bytes (``lts__t_sectors_srcunit_tex_op_read`` × 32 B) of a launch [model; three constants
    fitted on DRAM-counter runs, :func:`fit_lrc`]: ``requested − p · (requested − merged per GPC) + β · D`` —
    a sharer's request is merged (the L2 Request Coalescer, Nsight Compute's ``lrc`` unit: "tries to coalesce read
    requests before forwarding them to the L2 cache") with probability ``p`` when another sharer of the panel in the
    wave runs on the same GPC (``p`` one for the ping-pong forms, one for the cooperative ones), never across GPCs;
    ``β · D``: sectors counted again per DRAM byte (``D`` the in-step DRAM estimate, :func:`model_dram_bytes`; the
    miss's fill). ``constants`` (p ping-pong, p cooperative, β) None: :func:`calibrated_lrc`."""
    p_pp, p_co, beta = calibrated_lrc() if constants is None else constants
    sched = schedule or f.schedule
    parts = lrc_parts(f, M, N, K, sms, group, raster, sched)
    pm = p_pp if f.pingpong else p_co
    from . import perf
    lay = perf._layout(f, int(M), int(N), int(K), int(sms), int(group), int(raster), None)
    d = sum(w[1] for w in lay.waves) * (2 if sched == "pairs" else 1)
    return sum(full - pm * (full - gm) for full, gm in parts) + beta * d


def _lrc_records(dataset: str = L2_DATASET) -> list[dict]:
    return _counter_runs(dataset, "lts__t_sectors_srcunit_tex_op_read.sum")


def is_lrc_calibration(r: dict) -> bool:
    """Whether a DRAM-counter run is in :data:`LRC_CALIBRATION`."""
    return (r.get("M"), r.get("N"), r.get("K")) == LRC_CALIBRATION["shape"]


def _lrc_design(r: dict) -> tuple:
    from .perf import form
    f = form(r["variant"], schedule=r["schedule"])
    parts = lrc_parts(f, r["M"], r["N"], r["K"], r["grid"] if r["schedule"] == "persistent" else 132, r["group"],
                      r["raster"], r["schedule"])
    req = sum(a for a, _ in parts)
    merged = sum(a - b for a, b in parts)
    d = model_dram_bytes(*_run_args(r), None)
    tex = r["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] * 32.0
    return bool(f.pingpong), req, merged, d, tex


def fit_lrc(records: Sequence[dict]) -> tuple:
    """(p ping-pong, p cooperative, β) of :func:`lrc_bytes` by least squares on the runs' L2 → SM bytes relative to
    their requested bytes."""
    import numpy as np
    if not records:
        raise ValueError("no calibration runs: the DRAM-counter run (data/l08/gemm_l2_traffic) is not committed")
    X, y = [], []
    for r in records:
        pp, req, merged, d, tex = _lrc_design(r)
        X.append([-merged / req if pp else 0.0, 0.0 if pp else -merged / req, d / req])
        y.append(tex / req - 1.0)
    c, *_ = np.linalg.lstsq(np.array(X), np.array(y), rcond=None)
    return tuple(float(x) for x in c)


def calibrated_lrc() -> tuple:
    """:func:`fit_lrc` on the :data:`LRC_CALIBRATION` runs (remembered in the process); (0, 0, 0) without them."""
    if "lrc" not in _MEMO:
        recs = [r for r in _lrc_records(LRC_CALIBRATION["dataset"]) if is_lrc_calibration(r)]
        _MEMO["lrc"] = fit_lrc(recs) if recs and _lrc_placement() is not None else (0.0, 0.0, 0.0)
    return _MEMO["lrc"]


def lrc_ceiling_tb_s() -> float:
    """The L2 → SM delivery ceiling: the highest L2 → SM read rate (bytes / kernel duration) of the
    :data:`LRC_CALIBRATION` runs, TB/s; nan without them."""
    rates = [r["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] * 32.0 / (r["metrics"]["gpu__time_duration.sum"]
             * 1e-9) * 1e-12 for r in _lrc_records() if is_lrc_calibration(r) and "gpu__time_duration.sum" in r["metrics"]]
    return max(rates) if rates else float("nan")


#: the L2 → SM delivery of a ping-pong run that merged its sharers' requests (under this share of its requested bytes)
#: and of one that did not (over the other), :func:`fit_lonely_share`
MERGED_BELOW, UNMERGED_ABOVE = 0.8, 0.9


def lonely_share_of(variant: str, schedule: str, M: int, N: int, K: int, group: int, raster: int, window: int,
                    sms: int = 132) -> float:
    """The lonely share of a whole launch: :func:`h100lab.design.perf.delivery_waves`'s per wave, weighed by each
    wave's requested bytes."""
    from . import perf
    f = perf.form(variant, schedule=schedule)
    waves = perf.delivery_waves(f, int(M), int(N), int(K), int(sms), int(group), int(raster), int(window))
    return float(sum(x.lonely * x.requested for x in waves) / sum(x.requested for x in waves))


def _launch_median(r: dict, metric: str) -> float:
    """The median of ``metric`` over a counter run's profiled launches (``launch_metrics``; one launch: ``metrics``)."""
    return float(np.median([m[metric] for m in (r.get("launch_metrics") or [r["metrics"]])]))


def lonely_rows(dataset: str = L2_DATASET, window: int | None = None) -> list[dict]:
    """Per ping-pong Nsight Compute run of ``dataset`` with the L2 → SM sectors (several launches: the median):
    ``label``, ``schedule``, ``lonely`` — its lonely share with reuse window ``window`` (None: the model's,
    :func:`calibrated_window`; :func:`lonely_share_of`) — and ``delivered`` — the L2 → SM bytes
    (``lts__t_sectors_srcunit_tex_op_read`` × 32 B) over every tile's requested bytes."""
    from .perf import form
    w = calibrated_window() if window is None else window
    if w is None:
        return []
    key = "lts__t_sectors_srcunit_tex_op_read.sum"
    out = []
    for r in _counter_runs(dataset, key):
        if not r["variant"].startswith("pingpong"):
            continue
        tex = _launch_median(r, key) * 32.0
        sched = r.get("schedule", "persistent")
        out.append({"label": _run_label(r), "schedule": sched,
                    "lonely": lonely_share_of(r["variant"], sched, r["M"], r["N"], r["K"], r["group"], r["raster"], w),
                    "delivered": tex / _requested_bytes(form(r["variant"], schedule=sched), r["M"], r["N"], r["K"])})
    return out


def fit_lonely_share(dataset: str = L2_DATASET, window: int | None = None) -> float | None:
    """The lonely share over which a ping-pong wave runs out of step as a whole (:attr:`h100lab.design.perf.PerfParams.
    lonely_share`) [model, calibrated on the L2 → SM counters of ``dataset``'s ping-pong runs — Nsight Compute's
    bytes, no time]: a run merged its sharers' requests when L2 delivered under :data:`MERGED_BELOW` of its requested
    bytes, not when over :data:`UNMERGED_ABOVE` (none falls between); the share is the threshold that classifies the
    most runs right from their lonely share with reuse window ``window`` (:func:`lonely_rows`; None: the model's,
    :func:`calibrated_window` — :func:`h100lab.design.perf.calibrated` passes the window its constants fit before
    the bound is on), the middle of the widest gap among the best. None without the runs.

    On ``l08/gemm_l2_traffic`` (29 ping-pong runs): every run with a lonely share up to 0.20 merged (0.43–0.72 of its
    bytes) but one — 8192³ in groups of 8 along N, 0.03 lonely, delivered 0.96 — and every run from 0.51 on did not
    (0.98–1.17): 28 of 29 right, the threshold 0.35. Held out, the delivery run (``l08/gemm_l2_delivery``, 12 runs,
    the pairs schedule among them): 12 of 12, the row-major 1280 × 3840 × 8192 at 0.45 unmerged (0.97)."""
    rows = [r for r in lonely_rows(dataset, window) if r["delivered"] < MERGED_BELOW or r["delivered"] > UNMERGED_ABOVE]
    if not rows:
        return None
    xs = sorted({round(r["lonely"], 12) for r in rows})     # shares equal but for rounding are one share
    cands = [(a + b) / 2 for a, b in zip(xs, xs[1:])] or [xs[0]]

    def right(t: float) -> int:
        return sum((r["lonely"] > t) == (r["delivered"] > UNMERGED_ABOVE) for r in rows)

    best = max(map(right, cands))
    gaps = [(b - a, (a + b) / 2) for a, b in zip(xs, xs[1:]) if right((a + b) / 2) == best]
    return max(gaps)[1] if gaps else cands[0]


@dataclass(frozen=True)
class LrcRow:
    """One DRAM-counter run against :func:`lrc_bytes`: label, part (calibration / held-out), measured and estimated
    L2 → SM bytes, requested bytes."""

    label: str
    part: str
    tex_bytes: float
    estimate_bytes: float
    requested_bytes: float

    @property
    def ratio(self) -> float:
        """Measured / estimate."""
        return self.tex_bytes / self.estimate_bytes


def lrc_rows(dataset: str = L2_DATASET) -> list[LrcRow]:
    """The byte check of :func:`lrc_bytes` on every run of ``dataset`` ([] without it)."""
    c = calibrated_lrc()
    out = []
    for r in _lrc_records(dataset):
        pp, req, merged, d, tex = _lrc_design(r)
        est = req - (c[0] if pp else c[1]) * merged + c[2] * d
        out.append(LrcRow(_run_label(r), "calibration" if is_lrc_calibration(r) else "held-out", tex, est, req))
    return out


# ------------------------------------------------------------------------------------------------
# The ping-pong misses under the counters (issue 17; a diagnosis, nothing fitted, nothing in the time model)

def delivery_rows(dataset=DELIVERY_DATASET, params=None) -> list[dict]:
    """Per profiled run of ``dataset`` (its name or a :class:`h100lab.data.Dataset`; each launched several times under
    Nsight Compute: the medians): ``label``, ``schedule``, ``variant``, ``shape``, ``group``, ``raster``; what L2 delivered to the SMs (``tex_gb``: the
    ``srcunit_tex`` read sectors × 32 B), what DRAM read (``dram_gb``) and the link between the L2 halves carried
    (``fabric_gb``), each over the launch's duration (``ncu_ms``) as ``tex_tb_s`` and ``dram_tb_s``; the
    requested bytes (every tile's panels); the timed median (``timed_ms``, the same run without ncu), the time
    model's prediction of it (``model_ms``, ``params`` default the model) and its DRAM bytes with the reuse window
    (``model_dram_gb``). [] without the dataset.

    What the committed run shows (H200, ``data/l08/gemm_l2_delivery``): every run the model timed more than 10 %
    too slow (five, before its delivery bound) reads little from DRAM (well under half of lesson 5's read ceiling)
    and a lot from L2 — near the ~8.6 TB/s the SMs' L2 reads top out at (:func:`l2_delivery_rows`), about every
    byte its tiles request, where the grouped order of the same form delivers half. The model charged those
    launches to its DRAM bound with the window's bytes, several times what DRAM read: their loss is L2 → SM
    delivery of requests no sharer merged, not DRAM traffic. With the delivery bound of a wave out of step
    (:func:`h100lab.design.perf.delivery_waves`) the three at 4096³ are within; the two whose wave's working set is
    over the L2 (8192 × 8192 × 4096 and 1280 × 3840 × 8192, 70–73 MB) are still slow — there the model keeps the
    window's DRAM bytes, and DRAM read about half of them. The pairs schedule in row-major order delivers more than
    :func:`lrc_bytes` counts (2.59 GB against 1.97) and in the grouped orders less (1.32–1.39 against 1.63–1.64);
    counting the merges with the placement the later rounds measured (:func:`placement_round_rows`) instead of the
    first round's does not mend it (1.99; 1.75–1.93 GB, tried 2026-12-03): what merges the sharers' requests is not
    the GPC alone."""
    from .. import data
    from . import perf

    ds = data.committed(dataset)
    if ds is None:
        return []
    p = perf.calibrated() if params is None else params
    recs = ds.records
    key = lambda r: (r["variant"], r["schedule"], r["M"], r["N"], r["K"], r["group"], r["raster"],  # noqa: E731
                     r.get("ctas_arg"))
    timed = {key(r): r for r in recs if r.get("kind") == "l2time" and r.get("ok")}
    out = []
    for r in recs:
        if r.get("kind") != "l2" or not r.get("ok") or "lts__t_sectors_srcunit_tex_op_read.sum" not in r["metrics"]:
            continue
        med = lambda k: _launch_median(r, k)  # noqa: E731
        tex, dram = med("lts__t_sectors_srcunit_tex_op_read.sum") * 32.0, med("dram__bytes_read.sum")
        dur = med("gpu__time_duration.sum") * 1e-6                       # ms
        f = perf.form(r["variant"], schedule=r["schedule"])
        M, N, K, g, ra = r["M"], r["N"], r["K"], int(r["group"]), int(r["raster"])
        sms = int(r.get("ctas_arg") or 132)
        t = timed.get(key(r))
        pr = perf.predict(f, M, N, K, sms=sms, group=g, raster=ra, params=p,
                          launches=(t["warmup"] + t["repeats"]) if t else None)
        out.append({"label": _run_label(r), "schedule": r["schedule"], "variant": r["variant"], "shape": (M, N, K),
                    "group": g, "raster": ra, "tex_gb": tex / 1e9, "dram_gb": dram / 1e9,
                    "fabric_gb": med("lts__t_sectors_srcunit_ltcfabric.sum") * 32.0 / 1e9, "ncu_ms": dur,
                    "tex_tb_s": tex / dur * 1e-9, "dram_tb_s": dram / dur * 1e-9,
                    "requested_gb": _requested_bytes(f, M, N, K) / 1e9,
                    "timed_ms": float(t["median_ms"]) if t else float("nan"), "model_ms": pr.time_ms,
                    "model_dram_gb": model_dram_bytes(r["variant"], r["schedule"], M, N, K, sms, g, ra,
                                                      window_for(f, p, K)) / 1e9})
    return out


def placement_round_rows(dataset=DELIVERY_DATASET) -> list[dict]:
    """Where the CTAs of a launch of several rounds land (``placement_rounds`` records: equal CTAs, one resident per
    SM at a time): per repeat, ``rounds``, ``same_sm`` — the share of the CTAs after the first round that run on the
    SM of CTA ``i mod SMs`` — and ``gpc_run_first`` / ``gpc_run_later`` — the mean length of the runs of
    consecutive CTAs on one GPC (lesson 2's ``l02/gpc_map``) in the first round and after it. What the committed
    run shows: the first round is the plain launch's placement (runs of 8–18 consecutive CTAs per GPC), the later
    rounds land on other SMs (almost none on CTA ``i mod SMs``'s) in shorter runs — each CTA takes an SM as one
    frees, and they free in no fixed order. [] without the dataset or the GPC map."""
    from .. import data

    ds = data.committed(dataset)
    if ds is None or not data.available("l02/gpc_map"):
        return []
    gpc = {int(s): int(g["gpc"]) for g in data.load("l02/gpc_map").records for s in g.get("sms", ())}

    def mean_run(sms: list) -> float:
        runs, n = [], 1
        for a, b in zip(sms, sms[1:]):
            if gpc.get(a) == gpc.get(b):
                n += 1
            else:
                runs.append(n)
                n = 1
        runs.append(n)
        return float(np.mean(runs))

    out = []
    for r in ds.records:
        if r.get("kind") != "placement_rounds" or not r.get("ok"):
            continue
        sm = [int(x) for x in r["smid"]]
        G = len(set(sm))                                   # SMs used: one CTA per SM per round
        later = sm[G:]
        out.append({"repeat": r.get("repeat"), "rounds": len(sm) // G, "sms": G,
                    "same_sm": sum(x == sm[i % G] for i, x in enumerate(later, start=G)) / max(1, len(later)),
                    "gpc_run_first": mean_run(sm[:G]), "gpc_run_later": mean_run(later)})
    return out


def skew_rows(dataset=SKEW_PINGPONG_DATASET) -> list[dict]:
    """Per traced launch of ``dataset`` (records of kind ``skew``, its name or a :class:`h100lab.data.Dataset`):
    ``variant``, ``shape``, ``group``, ``raster``, ``drift_us`` (the largest gap between CTA grid / 2's and CTA 0's
    start of the same tile, µs), ``run_us`` (CTA 0's run) and ``drift_share`` (their ratio). What the committed
    ping-pong run shows (H200): in the row-major order its CTAs drift apart — CTA 66 a quarter of the run ahead of
    CTA 0 at 8192³, a quarter at 8192 × 8192 × 4096, 2–3 % at 4096³ — while in the grouped order they stay within
    0.3 % of it, as the cooperative form stays in both (``data/l08/gemm_skew``). The row-major ping-pong's
    DRAM re-reads at the large shapes (:func:`dram_rows`) go with CTAs that no longer read a panel together; at
    4096³, where they stay close, its loss is L2 → SM delivery (:func:`delivery_rows`). Why the ping-pong drifts and
    the cooperative form does not is not measured. [] without the dataset."""
    from .. import data

    ds = data.committed(dataset)
    if ds is None:
        return []
    out = []
    for r in ds.records:
        if r.get("kind") != "skew" or not r.get("ok") or len(r.get("ctas", ())) != 2:
            continue
        drift = max(abs(x) for x in r["tile_drift_ns"]) / 1e3 if r.get("tile_drift_ns") else 0.0
        run = r["ctas"][0]["end_ns"] / 1e3
        out.append({"variant": r["variant"], "shape": (r["M"], r["N"], r["K"]), "group": r["group"],
                    "raster": r["raster"], "drift_us": drift, "run_us": run, "drift_share": drift / run})
    return out
