"""Lesson 8: where the capstone GEMM's k-block time goes — on-device timestamps (l08_gemm.cu ``-DTRACE=1``), H200.

    PYTHONPATH=. python3 benchmarks/trace_gemm.py --out data

Writes ``data/l08/gemm_trace.json`` (h100lab.data, with the run's metadata: GPU, driver, CUDA, date, command). For
each form of :data:`RUNS` (the FP8 128 × 192 default and 128 × 128 tile, each with its scales fetched one and two
k-blocks ahead, and the bf16 default) at each shape of :data:`SHAPES` (8192³ and the two-wave 1280 × 3840 × 8192):

* the untraced kernel timed as benchmarks/bench_gemm.py times it (CUDA events, ``--warmup`` untimed launches, the
  median of ``--repeats`` ≥ 20) and the traced kernel timed the same way, so the trace's own cost is known
  (``trace_cost``: traced / untraced median);
* the traced kernel's output compared bit for bit with the untraced one's (``same_output``: a timestamp changes
  no arithmetic);
* one traced launch read back: for CTAs 0 and grid / 2 (slots 0, 1) and thread 0 of each warpgroup, %clock64 at
  each event of each k-block (l08_gemm.cu's header note, "TRACE"), summarised by :func:`summarize` into the
  median, mean, 10th and 90th percentile (SM cycles) of each interval between consecutive events of a k-block,
  of the k-block period (one full-barrier pass to the next inside a tile), of each tile's mainloop and epilogue,
  and the SM clock during the launch (clock64 cycles over %globaltimer ns of each warpgroup's whole run).

The cluster pairs (``-DCLUSTER=2``) are traced too (CTAs 0 and grid / 2, each one CTA of its pair; their grid is
bench_gemm's: twice the clusters the GPU holds). ``--untraced`` names forms to time only: each is timed untraced
only at each shape, right after that shape's traced forms (kind ``trace_time``, no summary; the SM clock is the traced forms' of the same
shape — :func:`time_only`).

The full event arrays go to ``$OUT/gemm_trace_raw.npz`` when ``--raw`` names a folder (not a dataset: megabytes).
Every CUDA call is checked (h100lab.cuda raises on a non-success return code); each form runs in its own
try/except (a failure is recorded, the run goes on); the clocks are never touched. Expected < 2 minutes on an H200
(ten NVRTC compiles, ~100 launches of ≤ 2 ms).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

DATASET = "l08/gemm_trace"
SHAPES = [(8192, 8192, 8192), (1280, 3840, 8192)]
RUNS = ("fp8_cooperative_n192_tmastore", "fp8_cooperative_n192_tmastore_lead2", "fp8_cooperative_tmastore",
        "fp8_cooperative_tmastore_lead2", "cooperative_inflight_tmastore")
SLOTS = 2                     #: traced CTAs: 0 and grid / 2
WARPGROUPS = 3                #: producer, consumer 0, consumer 1
HDR, EV, TEV = 8, 8, 4        #: l08_gemm.cu's TRACE_HDR, TRACE_EV, TRACE_TEV
CONSUMER_EVENTS = ("full", "issued", "waited", "released", "scales", "promoted", "next")
PRODUCER_EVENTS = ("empty", "tma")


def region_size(cap_n: int) -> int:
    """u64 values of one traced warpgroup's region (l08_gemm.cu: header, TRACE_EV per k-block, TRACE_TEV per tile)."""
    return HDR + cap_n * (EV + TEV)


def trace_len(cap_n: int) -> int:
    """u64 values of the whole trace buffer: 2 CTAs × 3 warpgroups."""
    return SLOTS * WARPGROUPS * region_size(cap_n)


def trace_cap(v, M: int, N: int, K: int, grid: int) -> int:
    """The k-blocks (and tiles) the busiest CTA runs: its tiles × nk — every k-block of the traced CTAs is kept (a
    cluster pair's CTA: one tile of each of its pair's rounds, :func:`h100lab.design.capstone.waves`)."""
    from h100lab.design import capstone as cap

    return cap.waves(v, M, N, grid) * -(-K // v.bk)


def traced_options(v) -> tuple[str, ...]:
    """The variant's compile options plus ``-DTRACE=1``."""
    return tuple(v.options) + ("-DTRACE=1",)


def launch_args(v, maps, c_ptr, M: int, N: int, K: int, *, scales=None, trace=None, cap_n: int = 0,
                alpha: float = 1.0, beta: float = 0.0, group: int = 8, raster: int = 0, bias=None, relu=False):
    """The kernel's arguments in order (h100lab.design.capstone.launch's, for a ``tma_store`` variant ``maps`` holds
    c_map's pair as its third item), plus ``trace`` and ``cap_n`` for the traced form (``trace`` not None)."""
    from h100lab.design import capstone as cap

    cap.check_shape(M, N, K, v.dtype)
    args = [maps[0], maps[1], c_ptr, np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), np.float32(beta),
            np.int32(group), np.int32(raster), bias if bias is not None else np.uint64(0), np.int32(1 if relu else 0)]
    if (scales is None) != (v.dtype != "e4m3"):
        raise ValueError(f"{v.name}: an FP8 variant takes scales=(sa, sb), a bf16 variant none")
    if scales is not None:
        args += list(scales)
    if v.tma_store:
        mc, flag = maps[2]
        args += [mc, np.int32(flag)]
    if trace is not None:
        if cap_n < 1:
            raise ValueError(f"trace capacity {cap_n}: at least one k-block")
        args += [trace, np.int32(cap_n)]
    return args


def _stats(x) -> dict:
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return {"n": 0}
    return {"n": int(x.size), "median": float(np.median(x)), "mean": float(x.mean()),
            "p10": float(np.percentile(x, 10)), "p90": float(np.percentile(x, 90))}


def split(raw: np.ndarray, cap_n: int) -> list[dict]:
    """The buffer as one dict per traced warpgroup: slot, wg, header fields, ``ev`` (k-blocks × TRACE_EV, int64,
    only the k-blocks run) and ``tiles`` (tiles × TRACE_TEV)."""
    raw = np.asarray(raw).view(np.uint64).astype(np.int64)
    rs = region_size(cap_n)
    if raw.size != SLOTS * WARPGROUPS * rs:
        raise ValueError(f"trace buffer of {raw.size} values; {SLOTS * WARPGROUPS * rs} expected for capacity {cap_n}")
    out = []
    for slot in range(SLOTS):
        for wg in range(WARPGROUPS):
            r = raw[(slot * WARPGROUPS + wg) * rs:(slot * WARPGROUPS + wg + 1) * rs]
            h = r[:HDR]
            if h[0] == 0 and h[1] == 0:
                continue                                      # a slot no CTA filled (a grid of one CTA)
            blocks, tiles = int(min(h[5], cap_n)), int(min(h[6], cap_n))
            ev = r[HDR:HDR + cap_n * EV].reshape(cap_n, EV)[:blocks]
            tl = r[HDR + cap_n * EV:].reshape(cap_n, TEV)[:tiles]
            out.append({"slot": slot, "wg": wg, "ns0": int(h[0]), "clk0": int(h[1]), "ns1": int(h[2]),
                        "clk1": int(h[3]), "smid": int(h[4]), "blocks": int(h[5]), "tiles": int(h[6]), "nk": int(h[7]),
                        "ev": ev, "tile_ev": tl})
    return out


def summarize(raw: np.ndarray, cap_n: int, fp8: bool) -> list[dict]:
    """Per traced warpgroup: interval statistics (SM cycles) between a k-block's consecutive events, the k-block
    period (full-barrier pass to the next one in the same tile; producer: empty-barrier pass to the next), the
    wait before each event, per-tile mainloop / epilogue / gap, and the SM clock (MHz) over the warpgroup's run.
    Consumer intervals, k-block i (events of l08_gemm.cu's TRACE note): ``wait_full`` = full[i] − end of block
    i − 1 in the same tile (the last event of the block: next (FP8), released (bf16)), ``issue`` = issued − full,
    ``wgmma`` = waited − issued, ``release`` = released − waited, then FP8: ``scales`` = scales − released,
    ``promote`` = promoted − scales, ``next`` = next − promoted. Producer: ``wait_empty`` = empty[i] − tma[i − 1],
    ``issue`` = tma − empty; ``lead`` (consumer records): full[i] − the producer's tma[i] of the same CTA (TMA
    latency plus any wait of the consumer elsewhere); consumer 1 only: ``offset_full`` / ``offset_issued`` /
    ``offset_waited`` = its event less consumer 0's of the same k-block (≈ 0: the two run in lockstep)."""
    regions = split(raw, cap_n)
    prod = {r["slot"]: r for r in regions if r["wg"] == 0}
    out = []
    for r in regions:
        ev, nk = r["ev"], max(r["nk"], 1)
        n = ev.shape[0]
        rec = {"slot": r["slot"], "wg": r["wg"], "role": "producer" if r["wg"] == 0 else "consumer",
               "smid": r["smid"], "blocks": r["blocks"], "tiles": r["tiles"], "nk": r["nk"],
               "run_cycles": r["clk1"] - r["clk0"], "run_ns": r["ns1"] - r["ns0"]}
        rec["clock_mhz"] = (rec["run_cycles"] / rec["run_ns"] * 1e3) if rec["run_ns"] > 0 else None
        same_tile = (np.arange(1, n) % nk) != 0                 # block i has a block i - 1 in the same tile
        iv = {}
        if r["wg"] == 0:
            if n > 1:
                iv["wait_empty"] = (ev[1:, 0] - ev[:-1, 1])
                iv["period"] = (ev[1:, 0] - ev[:-1, 0])
            iv["issue"] = ev[:, 1] - ev[:, 0]
        else:
            last = 6 if fp8 else 3
            if n > 1:
                iv["wait_full"] = (ev[1:, 0] - ev[:-1, last])[same_tile]
                iv["period"] = (ev[1:, 0] - ev[:-1, 0])[same_tile]
            iv["issue"] = ev[:, 1] - ev[:, 0]
            iv["wgmma"] = ev[:, 2] - ev[:, 1]
            iv["release"] = ev[:, 3] - ev[:, 2]
            if fp8:
                iv["scales"] = ev[:, 4] - ev[:, 3]
                iv["promote"] = ev[:, 5] - ev[:, 4]
                iv["next"] = ev[:, 6] - ev[:, 5]
            other = next((q for q in regions if q["slot"] == r["slot"] and q["wg"] == 1), None)
            if r["wg"] == 2 and other is not None:
                # consumer 1's events less consumer 0's, block by block: lockstep (~0) or taking turns
                m = min(n, other["ev"].shape[0])
                for k, e in (("offset_full", 0), ("offset_issued", 1), ("offset_waited", 2)):
                    iv[k] = ev[:m, e] - other["ev"][:m, e]
            p = prod.get(r["slot"])
            if p is not None:
                m = min(n, p["ev"].shape[0])
                iv["lead"] = ev[:m, 0] - p["ev"][:m, 1]
            tl = r["tile_ev"]
            if tl.shape[0]:
                iv["mainloop"] = tl[:, 1] - tl[:, 0]
                iv["epilogue"] = tl[:, 2] - tl[:, 1]
                if tl.shape[0] > 1:
                    iv["tile_gap"] = tl[1:, 0] - tl[:-1, 2]
        rec["cycles"] = {k: _stats(v) for k, v in iv.items()}
        # the order of a consumer's events inside every k-block (a check of the trace itself)
        if r["wg"] != 0:
            cols = [0, 1, 2, 3] + ([4, 5, 6] if fp8 else [])
            rec["events_in_order"] = bool(np.all(np.diff(ev[:, cols], axis=1) >= 0)) if n else True
        else:
            rec["events_in_order"] = bool(np.all(ev[:, 1] >= ev[:, 0])) if n else True
        out.append(rec)
    return out


class TorchTrace:
    """benchmarks/bench_gemm.py's TorchCuda (inputs, cuBLAS-free timing, metadata) plus the traced kernel."""

    def __init__(self):
        spec = importlib.util.spec_from_file_location("bench_gemm", Path(__file__).parent / "bench_gemm.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        self.base = mod.TorchCuda()
        self.torch, self.cuda, self.cap = self.base.torch, self.base.cuda, self.base.cap
        self._k: dict = {}

    def metadata(self, command: str) -> dict:
        return self.base.metadata(command)

    def sm_count(self) -> int:
        return self.base.sm_count()

    def slots(self, variant: str, sms: int) -> int:
        """CTAs resident at once (bench_gemm's: for a cluster pair, twice the clusters the GPU holds)."""
        return self.base.slots(variant, sms)

    def kernel(self, variant: str, traced: bool):
        key = (variant, traced)
        if key not in self._k:
            v = self.cap.variant(variant)
            opts = traced_options(v) if traced else v.options
            k = self.cuda.compile_kernel("l08_gemm", options=opts).function(v.entry)
            k.set_max_dynamic_shared_memory(v.smem_bytes)
            self._k[key] = k
        return self._k[key]

    def inputs(self, variant: str, M: int, N: int, K: int, seed: int) -> dict:
        v = self.cap.variant(variant)
        if v.dtype == "e4m3":
            Q = self.base.fp8_inputs(M, N, K, seed)
            return {"a": Q["qa"], "b": Q["qb"], "scales": (Q["dsa"], Q["sb"])}
        A, B, _ = self.base.inputs(M, N, K, seed)
        return {"a": A, "b": B, "scales": None}

    def out(self, M: int, N: int):
        return self.base.fp8_out(M, N)

    def trace_buffer(self, n: int):
        return self.torch.zeros(n, dtype=self.torch.int64, device="cuda")

    def zero(self, buf) -> None:
        buf.zero_()

    def fn(self, variant: str, X: dict, C, M: int, N: int, K: int, sms: int, trace=None, cap_n: int = 0):
        v = self.cap.variant(variant)
        k = self.kernel(variant, trace is not None)
        maps = self.cap.tensor_maps(self.cuda, v, X["a"].data_ptr(), X["b"].data_ptr(), M, N, K)
        if v.tma_store:
            maps = (*maps, self.cap.c_map(self.cuda, v, C.data_ptr(), M, N, 0.0))
        sc = None if X["scales"] is None else tuple(np.uint64(s.data_ptr()) for s in X["scales"])
        tr = None if trace is None else np.uint64(trace.data_ptr())
        args = launch_args(v, maps, np.uint64(C.data_ptr()), M, N, K, scales=sc, trace=tr, cap_n=cap_n)
        grid = self.cap.grid_size(v, M, N, sms)
        opts = {"cluster": (v.cluster, 1, 1)} if v.cluster > 1 else {}
        return lambda: self.cuda.launch(k, grid, self.cap.THREADS, *args, shared_mem=v.smem_bytes, **opts)

    def time(self, fn, warmup: int, repeats: int) -> list[float]:
        return self.base.time(fn, warmup, repeats)

    def sync(self) -> None:
        self.base.sync()

    def bits(self, C) -> np.ndarray:
        return self.base.bits(C)

    def host(self, buf) -> np.ndarray:
        self.sync()
        return buf.cpu().numpy().view(np.uint64)


def time_only(be, variant: str, M: int, N: int, K: int, sms: int, warmup: int, repeats: int, seed: int) -> dict:
    """A form the trace cannot time (a cluster pair, ping-pong): its untraced kernel timed as :func:`run` times the
    traced forms (CUDA events, ``warmup`` untimed launches, ``repeats`` timed), in the same session and right after
    the traced forms of the same shape, so the SM clock those read stands for its own (an assumption, said in the
    record: ``clock_from``). Kind ``trace_time``: no ``warpgroups``, so :func:`h100lab.validation.l08.trace_rows`
    leaves it out."""
    from h100lab.design import capstone as cap

    v = cap.variant(variant)
    sms = be.slots(variant, sms) if hasattr(be, "slots") else sms
    grid = cap.grid_size(v, M, N, sms)
    tm, tn = cap.tile_counts(v, M, N)
    rec = {"kind": "trace_time", "variant": variant, "M": M, "N": N, "K": K, "dtype": v.dtype, "bm": v.bm,
           "bn": v.bn, "bk": v.bk, "stages": v.stages, "scale_lead": v.scale_lead, "tma_store": v.tma_store,
           "inflight": v.inflight, "cluster": v.cluster, "tiles": tm * tn, "grid": grid,
           "waves": cap.waves(v, M, N, grid), "warmup": warmup, "repeats": repeats,
           "clock_from": "the traced forms of the same shape in this run (no trace of this form)"}
    X = be.inputs(variant, M, N, K, seed=seed)
    C = be.out(M, N)
    t = be.time(be.fn(variant, X, C, M, N, K, sms), warmup, repeats)
    rec.update(median_ms=statistics.median(t), min_ms=min(t), samples_ms=[round(x, 5) for x in t],
               tflops=cap.flops(M, N, K) / statistics.median(t) / 1e9, ok=True)
    return rec


def run(be, shapes, variants, sms: int, warmup: int, repeats: int, log=print, raw: dict | None = None,
        untraced: Sequence[str] = ()) -> list[dict]:
    """Each variant at each shape: untraced and traced timings, the output compared, one traced launch summarised;
    then each of ``untraced`` (forms the trace cannot run) timed only (:func:`time_only`)."""
    from h100lab.design import capstone as cap

    recs = []
    for i, (M, N, K) in enumerate(shapes):
        for variant in variants:
            v = cap.variant(variant)
            grid = cap.grid_size(v, M, N, be.slots(variant, sms) if hasattr(be, "slots") else sms)
            tm, tn = cap.tile_counts(v, M, N)
            rec = {"kind": "trace", "variant": variant, "M": M, "N": N, "K": K, "dtype": v.dtype, "bm": v.bm,
                   "bn": v.bn, "bk": v.bk, "stages": v.stages, "scale_lead": v.scale_lead, "tma_store": v.tma_store,
                   "inflight": v.inflight, "cluster": v.cluster, "remote_cta_scope": v.remote_cta_scope,
                   "tiles": tm * tn, "grid": grid, "waves": cap.waves(v, M, N, grid),
                   "traced_ctas": [0, grid // 2] if grid > 1 else [0], "warmup": warmup, "repeats": repeats}
            try:
                cap_n = trace_cap(v, M, N, K, grid)
                rec["trace_cap"] = cap_n
                X = be.inputs(variant, M, N, K, seed=700 + i)
                C0, C1 = be.out(M, N), be.out(M, N)
                slots = be.slots(variant, sms) if hasattr(be, "slots") else sms
                plain = be.fn(variant, X, C0, M, N, K, slots)
                buf = be.trace_buffer(trace_len(cap_n))
                traced = be.fn(variant, X, C1, M, N, K, slots, trace=buf, cap_n=cap_n)
                t_plain = be.time(plain, warmup, repeats)
                t_traced = be.time(traced, warmup, repeats)
                be.zero(buf)
                traced()
                host = be.host(buf)
                rec.update(median_ms=statistics.median(t_plain), min_ms=min(t_plain),
                           traced_median_ms=statistics.median(t_traced), traced_min_ms=min(t_traced),
                           samples_ms=[round(x, 5) for x in t_plain], traced_samples_ms=[round(x, 5) for x in t_traced])
                rec["trace_cost"] = rec["traced_median_ms"] / rec["median_ms"]
                rec["tflops"] = cap.flops(M, N, K) / rec["median_ms"] / 1e9
                rec["same_output"] = bool(np.array_equal(be.bits(C0), be.bits(C1)))
                rec["warpgroups"] = summarize(host, cap_n, v.dtype == "e4m3")
                rec["ok"] = rec["same_output"] and all(w["events_in_order"] for w in rec["warpgroups"]) and \
                    len(rec["warpgroups"]) == WARPGROUPS * (2 if grid > 1 else 1)
                if raw is not None:
                    raw[f"{variant}_{M}x{N}x{K}"] = host
                cons = [w for w in rec["warpgroups"] if w["role"] == "consumer"]
                per = [w["cycles"].get("period", {}).get("median") for w in cons]
                log(f"trace {variant:38s} {M}x{N}x{K}: {rec['median_ms']:.3f} ms untraced, {rec['traced_median_ms']:.3f}"
                    f" traced (x{rec['trace_cost']:.3f}); k-block period {per} cycles; clock "
                    f"{[round(w['clock_mhz'] or 0) for w in rec['warpgroups']]} MHz"
                    + ("" if rec["ok"] else "  CHECK FAILED"))
            except Exception as exc:                                   # noqa: BLE001 - recorded, the run goes on
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                log(f"trace {variant} {M}x{N}x{K}: FAILED {rec['error']}")
            recs.append(rec)
        for variant in untraced:
            try:
                rec = time_only(be, variant, M, N, K, sms, warmup, repeats, seed=700 + i)
                log(f"time  {variant:38s} {M}x{N}x{K}: {rec['median_ms']:.3f} ms untraced (not traceable)")
            except Exception as exc:                                   # noqa: BLE001 - recorded, the run goes on
                traceback.print_exc()
                rec = {"kind": "trace_time", "variant": variant, "M": M, "N": N, "K": K, "ok": False,
                       "error": f"{type(exc).__name__}: {exc}"}
                log(f"time  {variant} {M}x{N}x{K}: FAILED {rec['error']}")
            recs.append(rec)
    return recs


def main(argv=None, backend=None, shapes=None, variants=None, log=print) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder to write l08/gemm_trace.json into (default: the repo's)")
    ap.add_argument("--raw", default=None, help="folder for gemm_trace_raw.npz (every event of every traced "
                    "warpgroup; not a dataset)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", default=None, help="comma-separated variants (default: RUNS)")
    ap.add_argument("--name", default=DATASET, help=f"dataset name under the data folder (default {DATASET})")
    ap.add_argument("--shapes", default=None, help="comma-separated MxNxK shapes (default: SHAPES)")
    ap.add_argument("--untraced", default="", help="comma-separated forms the trace cannot run (cluster pairs), "
                    "timed untraced only at each shape (kind trace_time)")
    args = ap.parse_args(argv)
    if args.repeats < 20 and backend is None:
        ap.error("--repeats: the median of at least 20 launches")
    from h100lab import data
    from h100lab.design import capstone as cap

    variants = variants if variants is not None else (tuple(args.variants.split(",")) if args.variants else RUNS)
    for name in variants:
        v = cap.variant(name)                                          # raises on an unknown name
        if v.pingpong:
            ap.error(f"--variants: {name} is not traceable (cooperative forms only)")
    untraced = tuple(x for x in args.untraced.split(",") if x)
    for name in untraced:
        cap.variant(name)                                              # raises on an unknown name
    t0 = time.time()
    be = backend if backend is not None else TorchTrace()
    sms = be.sm_count()
    cmd = "PYTHONPATH=. python3 benchmarks/trace_gemm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = be.metadata(cmd.strip())
    meta.update(kernel="h100lab/cuda/kernels/l08_gemm.cu -DTRACE=1", variants=list(variants),
                untraced=list(untraced),
                note="%clock64 at each k-block event of thread 0 of each warpgroup of CTAs 0 and grid/2 (l08_gemm.cu "
                     "TRACE note), summarised per warpgroup (benchmarks/trace_gemm.summarize); untraced and traced "
                     "medians of CUDA-event timings; clocks untouched")
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    raw: dict | None = {} if args.raw else None
    if shapes is None:
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in args.shapes.split(",")] if args.shapes else SHAPES
    recs = run(be, shapes, variants, sms, args.warmup, args.repeats, log, raw, untraced)
    path = data.write(args.name, recs, dict(meta, wall_s=round(time.time() - t0, 1), complete=True))
    if raw is not None:
        Path(args.raw).mkdir(parents=True, exist_ok=True)
        np.savez_compressed(Path(args.raw) / "gemm_trace_raw.npz", **raw)
    bad = [r for r in recs if not r.get("ok")]
    log(f"wrote {path} ({len(recs)} records, {len(bad)} failed) in {time.time() - t0:.0f} s")
    return {"path": str(path), "records": recs, "failed": len(bad)}


if __name__ == "__main__":
    out = main()
    sys.exit(1 if out["failed"] else 0)
