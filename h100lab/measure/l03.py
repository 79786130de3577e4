"""Lesson 3 measurements: a bulk-copy producer/consumer pipeline for several stage counts.

``python -m h100lab.measure.l03 [--out DIR] [--quick]`` writes ``l03/bulk_pipeline`` (``h100lab.data``):
one record per case of ``l03_bulk_pipeline.cu`` — a producer thread filling ``stages`` shared-memory
buffers with ``cp.async.bulk`` (completion through ``mbarrier::complete_tx::bytes``) while two consumer
warps wait with ``mbarrier.try_wait.parity``, read the tile and apply ``work`` rounds of an integer
LCG to every word. Each record holds the case, whether every CTA's checksum matched the host's
(``ok``), the kernel time (CUDA events, median of 5) and, from the kernel's own clocks (median over
CTAs), the time per tile, consumer warp 0's busy time per tile and its busy fraction.

Cases: the latency/bandwidth calibration (1 CTA, 1 stage, no work, tiles of 4–32 KiB), a stage sweep
1 … 8 at three amounts of work (1 CTA, 16 KiB tiles), and a full-GPU sweep (132 CTAs). The single-CTA
sources are L2-resident after the warm-up launches; the full-GPU runs stream 138 MB, beyond the 60 MiB
L2, from HBM. This script needs no simulator; the chapter and ``h100lab/validation/l03.py`` compare
the simulator with the dataset. The case list, the checksum and the statistics are plain Python,
tested without a GPU. Runs in well under a minute on an H200.

``python -m h100lab.measure.l03 --litmus [--out DIR]`` writes only ``l03/litmus`` (:func:`measure_litmus`): the
message-passing kernels of ``l03_litmus.cu`` run in many CTAs at once, many times — for each kernel the count of
every ``(flag, data)`` outcome it observed (``mp_once``) or every data value read after the flag (the ``mp_*``
spin kernels) — and ``l03_tile_pipeline.cu``'s sums against the host's. It runs on either backend (the
emulator with ``backend=h100lab.emu``, which the tests use).
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np
from . import begin

__all__ = ["CONSUMERS", "SRC_BYTES", "LCG_A", "LCG_C", "cases", "lcg", "expected_sums", "summarize_stats",
           "shared_bytes", "measure", "measure_litmus", "LITMUS_KERNELS", "main"]

CONSUMERS = 2                 # consumer warps per CTA (block = 32 · (1 + CONSUMERS) threads)
SRC_BYTES = 192 << 20         # source buffer: 3 × the H200's 60 MiB L2
LCG_A, LCG_C = 1664525, 1013904223
MAX_STAGES = 16               # barriers reserved in the kernel's first 256 bytes
HEADER = 1024                 # tiles start 1 KiB into dynamic shared memory


def cases(quick: bool = False, num_sms: int = 132) -> list[dict[str, Any]]:
    """Every case the script runs: dicts with stages, tile_bytes, work, ctas, iters, consumers, group."""
    out: list[dict[str, Any]] = []

    def add(group, stages, tile, work, ctas, iters):
        out.append(dict(group=group, stages=stages, tile_bytes=tile, work=work, ctas=ctas, iters=iters,
                        consumers=CONSUMERS))

    for tile in ((4096, 16384) if quick else (4096, 8192, 16384, 32768)):
        add("calibration", 1, tile, 0, 1, 64 if quick else 256)
    for work in ((0, 32) if quick else (0, 16, 64)):
        for stages in ((1, 2, 4) if quick else (1, 2, 3, 4, 6, 8)):
            add("stages", stages, 16384, work, 1, 64 if quick else 256)
    for stages in ((1, 4) if quick else (1, 2, 4, 8)):
        add("full GPU", stages, 16384, 0, num_sms, 64)
    return out


def shared_bytes(stages: int, tile_bytes: int) -> int:
    """Dynamic shared memory of one CTA: 1 KiB of barriers/padding and the buffers."""
    if not 1 <= stages <= MAX_STAGES:
        raise ValueError(f"stages = {stages}: the kernel has room for 1 … {MAX_STAGES} barrier pairs")
    if tile_bytes % 16 or tile_bytes <= 0:
        raise ValueError(f"tile of {tile_bytes} B: cp.async.bulk moves a positive multiple of 16 B "
                         f"(PTX §9.7.9.25.4.1)")
    n = HEADER + stages * tile_bytes
    if n > 232_448:
        raise ValueError(f"{n} B of shared memory: over the 227 KB per-block limit (CPG §20.8.3)")
    return n


def lcg(words: np.ndarray, work: int) -> np.ndarray:
    """``work`` rounds of ``v = v · 1664525 + 1013904223 (mod 2^32)`` on every word (what a consumer does)."""
    v = np.asarray(words, dtype=np.uint32).copy()
    a, c = np.uint32(LCG_A), np.uint32(LCG_C)
    with np.errstate(over="ignore"):
        for _ in range(work):
            v = v * a + c
    return v


def expected_sums(src: np.ndarray, tile_bytes: int, iters: int, ctas: int, work: int) -> np.ndarray:
    """The checksum each CTA must produce: the sum (uint64) over its ``iters`` tiles
    ``t = (cta · iters + k) mod src_tiles`` of ``lcg(word, work)`` for every 32-bit word."""
    words = tile_bytes // 4
    n_tiles = src.size // tile_bytes
    tiles = src[: n_tiles * tile_bytes].view(np.uint32).reshape(n_tiles, words)
    idx = (np.arange(ctas, dtype=np.int64)[:, None] * iters + np.arange(iters, dtype=np.int64)[None, :]) % n_tiles
    need = np.unique(idx)
    per_tile = np.zeros(n_tiles, dtype=np.uint64)
    for chunk in np.array_split(need, max(1, need.size // 512)):
        per_tile[chunk] = lcg(tiles[chunk], work).sum(axis=1, dtype=np.uint64)
    return per_tile[idx].sum(axis=1, dtype=np.uint64)


def summarize_stats(stats: np.ndarray, iters: int) -> dict[str, float]:
    """Per-CTA clocks → medians: ``ns_per_iter`` (%globaltimer span / iters), ``busy_ns_per_iter`` and
    ``wait_ns_per_iter`` of consumer warp 0 (its clock64 cycles converted with the clock rate measured
    over the same span), ``utilization`` (busy / total cycles) and ``clock_ghz``."""
    s = np.asarray(stats, dtype=np.float64).reshape(-1, 5)
    span = s[:, 1] - s[:, 0]
    if np.any(span <= 0) or np.any(s[:, 4] <= 0):
        raise ValueError("kernel statistics are empty: the kernel did not record its clocks")
    ghz = s[:, 4] / span
    return {"ns_per_iter": float(np.median(span / iters)),
            "busy_ns_per_iter": float(np.median(s[:, 2] / ghz / iters)),
            "wait_ns_per_iter": float(np.median(s[:, 3] / ghz / iters)),
            "utilization": float(np.median(s[:, 2] / s[:, 4])),
            "clock_ghz": float(np.median(ghz))}


def measure(case_list: Sequence[dict[str, Any]], seed: int = 3) -> list[dict[str, Any]]:
    """Run every case on the GPU: one checked launch, then timed launches; returns the records."""
    from .. import cuda

    rng = np.random.default_rng(seed)
    src_host = rng.integers(0, 256, size=SRC_BYTES, dtype=np.uint8)
    src = cuda.to_device(src_host)
    kern = cuda.compile_kernel("l03_bulk_pipeline").function("bulk_pipeline")
    kern.set_max_dynamic_shared_memory(max(shared_bytes(c["stages"], c["tile_bytes"]) for c in case_list))
    out = []
    for c in case_list:
        smem = shared_bytes(c["stages"], c["tile_bytes"])
        block = 32 * (1 + c["consumers"])
        src_tiles = SRC_BYTES // c["tile_bytes"]
        sums = cuda.zeros(c["ctas"], np.uint64)
        stats = cuda.zeros(5 * c["ctas"], np.uint64)
        args = (src, np.int64(src_tiles), np.int32(c["tile_bytes"]), np.int32(c["stages"]), np.int32(c["iters"]),
                np.int32(c["work"]), sums, stats)
        cuda.launch(kern, c["ctas"], block, *args, shared_mem=smem)
        cuda.synchronize()
        got = sums.to_host()
        want = expected_sums(src_host, c["tile_bytes"], c["iters"], c["ctas"], c["work"])
        ok = bool(np.array_equal(got, want))
        t = cuda.time_kernel(kern, c["ctas"], block, *args, shared_mem=smem, warmup=2, repeats=5)
        rec = dict(c, ok=ok, kernel_ms=t.median_ms, smem_bytes=smem, **summarize_stats(stats.to_host(), c["iters"]))
        out.append(rec)
    return out


LITMUS_KERNELS = ("mp_relaxed", "mp_release_acquire", "mp_fences", "mp_once")


def measure_litmus(be=None, ctas: int = 1056, launches: int = 64) -> list[dict[str, Any]]:
    """The litmus kernels of ``l03_litmus.cu`` (``ctas`` CTAs of 64 threads per launch, ``launches`` launches
    each) and one run of ``l03_tile_pipeline.cu``, on backend ``be`` (default :mod:`h100lab.cuda`). Records:
    ``{"kernel", "ctas", "launches", "outcomes": [[flag, data, count], ...]}`` (the spin kernels' flag is 1) and
    ``{"kernel": "tile_sums", "tiles", "tile_bytes", "ok"}``."""
    if be is None:
        from .. import cuda as be
    prog = be.compile_kernel("l03_litmus")
    out_records = []
    for name in LITMUS_KERNELS:
        k = prog.function(name)
        counts: dict[tuple[int, int], int] = {}
        for _ in range(launches):
            out = be.zeros(2 * ctas, np.uint32)
            be.launch(k, ctas, 64, out)
            if hasattr(be, "synchronize"):
                be.synchronize()
            o = out.to_host().reshape(ctas, 2)
            pairs = o if name == "mp_once" else np.stack([np.ones(ctas, np.uint32), o[:, 0]], axis=1)
            for (f, d), n in zip(*np.unique(pairs, axis=0, return_counts=True)):
                counts[(int(f), int(d))] = counts.get((int(f), int(d)), 0) + int(n)
        out_records.append({"kernel": name, "ctas": ctas, "launches": launches,
                            "outcomes": [[f, d, n] for (f, d), n in sorted(counts.items())]})
    tiles, tile_bytes = 6, 1024
    x = np.random.default_rng(5).integers(0, 2**32, tiles * tile_bytes // 4, dtype=np.uint32)
    sums = be.zeros(tiles, np.uint32)
    be.launch(be.compile_kernel("l03_tile_pipeline").function("tile_sums"), 1, 64, be.to_device(x), np.int32(tiles),
              np.int32(tile_bytes), sums)
    if hasattr(be, "synchronize"):
        be.synchronize()
    ok = bool(np.array_equal(sums.to_host(), x.reshape(tiles, -1).sum(axis=1, dtype=np.uint32)))
    out_records.append({"kernel": "tile_sums", "tiles": tiles, "tile_bytes": tile_bytes, "ok": ok})
    return out_records


def _litmus_flag(ap) -> None:
    ap.add_argument("--litmus", action="store_true", help="only the litmus kernels and l03_tile_pipeline (l03/litmus)")


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l03", argv, __doc__.splitlines()[0], "fewer cases and iterations", _litmus_flag)
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import cuda, data

    if args.litmus:
        recs = measure_litmus(cuda, launches=8 if args.quick else 64)
        data.write("l03/litmus", recs, meta)
        for r in recs:
            print(r)
        return 0 if recs[-1]["ok"] else 1

    num_sms = int(cuda.device_properties(0)["multiProcessorCount"])
    records = measure(cases(args.quick, num_sms))
    data.write("l03/bulk_pipeline", records, meta)
    bad = [r for r in records if not r["ok"]]
    for r in records:
        print(f"{r['group']:>11}  ctas {r['ctas']:>3}  stages {r['stages']}  tile {r['tile_bytes']:>6} B  "
              f"work {r['work']:>2}: {r['ns_per_iter']:8.1f} ns/tile, busy {r['utilization']:.0%}, "
              f"{'ok' if r['ok'] else 'CHECKSUM MISMATCH'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
