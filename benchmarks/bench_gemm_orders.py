"""Lesson 8 benchmark: the capstone GEMM in every tile order — what the order does to L2 reuse, measured on the H200.

    PYTHONPATH=. python3 benchmarks/bench_gemm_orders.py --out data

Writes ``data/l08/gemm_orders.json`` (h100lab.data, with the run's metadata). For each shape of :data:`SHAPES`
cuBLAS (``torch.matmul(A, B.T)``, bf16 in and out, f32 accumulation) is timed once, then each capstone variant of
:data:`VARIANTS` (the 64 × 256 ping-pong tile — the most bytes per FLOP, the one whose row-major order runs twice as
long as the grouped one — the 128 × 256 and the 128 × 128 cooperative tiles) persistent (``min(SMs, tiles)`` CTAs)
in every tile order of :data:`ORDERS` (fewer at the shapes of :data:`SUBSETS`): the grouped order of
:func:`h100lab.design.schedule.tile_at` with ``group`` 1, 2, 4, 8, 16 walked along M (``raster`` 0; group 1 is the
plain row-major order) and along N (``raster`` 1; group 1 is the column-major order); the ping-pong form with one
CTA per two tiles (``pairs``, the ping-pong step's schedule) in :data:`PAIR_ORDERS`; and at 8192³ on fewer
persistent CTAs than SMs (:data:`GRID_RUNS`). Each: the median and minimum of ``--repeats`` (≥ 20) launches after
``--warmup`` untimed ones, each between two CUDA events on the default stream behind a GPU spin
(bench_gemm.TorchCuda.time), TFLOP/s, the ratio to cuBLAS in throughput and the largest |difference| from cuBLAS's
output (pass rule bench_gemm._close_to_cublas).

Records are of kind ``orders`` (not ``time``: the time model's held-out report, h100lab.validation.l08, reads the
timing kinds; these records test the L2 model, h100lab.design.schedule.l2_reuse, in tests/test_schedule_l2.py)
with variant, schedule, group, raster, tile, tiles, grid and waves.

``--skew`` instead writes ``data/l08/gemm_skew.json``: one traced launch (l08_gemm.cu ``-DTRACE=1``, the
cooperative kernel; after one warm-up) per run of :data:`SKEW_RUNS`, recording when CTA 0 and CTA grid / 2 started
(%globaltimer), their SMs and their tile starts (%clock64 mapped to ns): the launch skew and the drift between two
CTAs of one persistent grid (records of kind ``skew``).

``--l2`` instead writes ``data/l08/gemm_l2_traffic.json``: the runs of :data:`L2_RUNS` (``--l2-set bistable``, ``n128``: of
:data:`L2_RUN_SETS`, each launched ``--l2-launches`` times, one ncu record per launch) (variant, schedule, tile order,
shape), each launched once in a child process under Nsight Compute (``ncu --clock-control none``, the metrics of
:data:`L2_METRICS` — DRAM bytes read and written, the L2 hit rate of the SMs' reads, the traffic over the link
between the two L2 halves, the kernel's duration; one launch per run, ncu's default cache control: L2 flushed
before each profiled pass) — records of kind ``l2`` — then, in a second child without ncu, timed like the sweep
(median of ``--repeats`` after ``--warmup``: records of kind ``l2time``); and the SM of every CTA of a plain
132-CTA launch with one CTA per SM (records of kind ``placement``). Where ncu is missing or cannot read the counters
(a sandbox without performance counters) the ``l2`` records say so (ok False, the error) and the timed ones stand.

Each run is in its own try/except (a failure is recorded, the run goes on); h100lab.cuda raises on any non-success
CUDA return code and every timed group ends with a synchronize that raises a fault. The dataset is rewritten after
every shape (meta ``complete`` says whether the run finished). Nothing touches the clocks. About a minute on an
H200 (compiles included).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import bench_gemm  # noqa: E402  (TorchCuda: inputs, cuBLAS, CUDA-event timing, errors; _close_to_cublas)

DATASET = "l08/gemm_orders"
SKEW_DATASET = "l08/gemm_skew"
#: square shapes below the power limit, a deeper K (each tile's k-loop twice as long) and the two-wave shape of the
#: 128-column tiles' misses
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 16384), (1280, 3840, 8192), (8192, 8192, 4096),
          (8192, 8192, 8256)]
VARIANTS = ("pingpong", "cooperative", "cooperative_n128")
#: (group, raster): the grouped order along M (raster 0) and along N (raster 1)
ORDERS = tuple((g, r) for r in (0, 1) for g in (1, 2, 4, 8, 16))
#: shapes timed with fewer variants or orders: (variants, orders) — K = 8256 makes the rows of A and B 16,512 B
#: apart instead of a power of two (16,384 B at K = 8192): the same problem without address aliasing
SUBSETS = {(8192, 8192, 4096): (("pingpong", "cooperative"), ORDERS),
           (8192, 8192, 8256): (("pingpong", "cooperative"), ((1, 0), (8, 0), (1, 1)))}
#: the ping-pong form with one CTA per two tiles (the ping-pong step's schedule), at the square shapes only
PAIR_ORDERS = ((1, 0), (8, 0), (1, 1))
PAIR_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))
#: fewer persistent CTAs than SMs (each a different wave width): (shape, variant, (group, raster) orders, grids)
GRID_RUNS = (((8192, 8192, 8192), "pingpong", ((1, 0), (8, 0)), (66, 128)),)


class SkewCuda(bench_gemm.TorchCuda):
    """bench_gemm's backend plus the traced capstone (l08_gemm.cu -DTRACE=1) in any grid and tile order."""

    def traced(self, variant: str, M: int, N: int, K: int, grid: int, group: int, raster: int, cap_n: int,
               n: int, seed: int):
        """(a callable that launches the traced kernel once, its int64 trace buffer of ``n`` values)."""
        import numpy as np

        tg = _trace_module()
        v = self.cap.variant(variant)
        key = ("traced", variant)
        if key not in self._kernels:
            k = self.cuda.compile_kernel("l08_gemm", options=tg.traced_options(v)).function(v.entry)
            k.set_max_dynamic_shared_memory(v.smem_bytes)
            self._kernels[key] = k
        k = self._kernels[key]
        A, B, C = self.inputs(M, N, K, seed)
        buf = self.torch.zeros(n, dtype=self.torch.int64, device="cuda")
        maps = self.cap.tensor_maps(self.cuda, v, A.data_ptr(), B.data_ptr(), M, N, K)
        args = tg.launch_args(v, maps, np.uint64(C.data_ptr()), M, N, K, trace=np.uint64(buf.data_ptr()),
                              cap_n=cap_n, group=group, raster=raster)
        self._keep = (A, B, C, buf)
        return (lambda: self.cuda.launch(k, grid, self.cap.THREADS, *args, shared_mem=v.smem_bytes)), buf

    def zero(self, buf) -> None:
        buf.zero_()

    def host(self, buf):
        import numpy as np
        self.sync()
        return buf.cpu().numpy().view(np.uint64)


def runs_of(shape, variants=VARIANTS, orders=ORDERS, pair_orders=PAIR_ORDERS, pair_shapes=PAIR_SHAPES,
            grid_runs=GRID_RUNS):
    """The (variant, schedule, group, raster, CTAs) runs of one shape, in the order they are timed (CTAs None: the
    schedule's own grid — the SMs when persistent)."""
    if tuple(shape) in SUBSETS:
        keep, orders = SUBSETS[tuple(shape)]
        variants = tuple(v for v in variants if v in keep)
    out = [(v, "persistent", g, r, None) for v in variants for g, r in orders]
    if tuple(shape) in {tuple(s) for s in pair_shapes}:
        out += [(v, "pairs", g, r, None) for v in variants if v.startswith("pingpong") for g, r in pair_orders]
    for s, v, ords, grids in grid_runs:
        if tuple(s) == tuple(shape) and v in variants:
            out += [(v, "persistent", g, r, n) for g, r in ords for n in grids]
    return out


def run_shape(be, M: int, N: int, K: int, seed: int, sms: int, args, runs, log=print) -> list[dict]:
    """cuBLAS once, then every run of ``runs`` at one shape (records of kind ``orders``)."""
    from h100lab.design import capstone as cap

    flop = cap.flops(M, N, K)
    A, B, C0 = be.inputs(M, N, K, seed=seed)
    ref_c = be.empty_like(C0)
    cub = be.time(be.cublas(A, B, ref_c), args.warmup, args.repeats)
    cub_ms = statistics.median(cub)
    recs = [{"kind": "orders", "variant": "cublas", "M": M, "N": N, "K": K, "ok": True, "median_ms": cub_ms,
             "min_ms": min(cub), "tflops": flop / cub_ms / 1e9, "repeats": args.repeats, "warmup": args.warmup}]
    log(f"{'cuBLAS':18s} {M}x{N}x{K}: {cub_ms:.3f} ms  {flop / cub_ms / 1e9:.0f} TFLOP/s")
    for variant, schedule, group, raster, ctas in runs:
        v = cap.variant(variant)
        tm, tn = cap.tile_counts(v, M, N)
        arg = ctas or {"persistent": sms, "pairs": -(-tm * tn // 2)}[schedule]
        grid = cap.grid_size(v, M, N, arg)
        rec = {"kind": "orders", "variant": variant, "schedule": schedule, "group": group, "raster": raster,
               "M": M, "N": N, "K": K, "bm": v.bm, "bn": v.bn, "bk": v.bk, "stages": v.stages, "tiles": tm * tn,
               "grid": grid, "waves": -(-tm * tn // grid), "cublas_ms": cub_ms, "repeats": args.repeats,
               "warmup": args.warmup}
        label = f"{variant:16s} {schedule:10s} group {group:2d} raster {'MN'[raster]} grid {grid:4d} {M}x{N}x{K}"

        def body(rec=rec, variant=variant, group=group, raster=raster, arg=arg, label=label):
            C = be.empty_like(C0)
            ms = be.time(be.ours(variant, A, B, C, M, N, K, group=group, raster=raster, sms=arg), args.warmup,
                         args.repeats)
            med = statistics.median(ms)
            err = be.errors(C, ref_c, ref_c)
            rec.update(ok=bench_gemm._close_to_cublas(err), median_ms=med, min_ms=min(ms),
                       samples_ms=[round(x, 5) for x in ms], tflops=flop / med / 1e9, ratio_cublas=cub_ms / med,
                       max_abs_vs_cublas=err["ours_vs_cublas_max_abs"], ref_max_abs=err["ref_max_abs"])
            log(f"{label}: {med:.3f} ms  {flop / med / 1e9:.0f} TFLOP/s  {100 * cub_ms / med:.1f} % of cuBLAS"
                f"{'' if rec['ok'] else '  WRONG OUTPUT'}")
        recs.append(bench_gemm.attempt(rec, body, label, log))
    return recs


#: --skew: the traced cooperative kernel (l08_gemm.cu -DTRACE=1 stamps CTAs 0 and grid / 2): (shape, grid, group,
#: raster) — grids 2 … 132 put CTA grid / 2 at 1 … 66 places behind CTA 0 in the launch; at 132 CTAs the two CTAs'
#: tile starts over the whole run in the row-major and grouped orders
SKEW_VARIANT = "cooperative"
SKEW_RUNS = tuple(((8192, 8192, 8192), g, 8, 0) for g in (2, 4, 8, 16, 24, 32, 48, 64, 96, 132)) + (
    ((8192, 8192, 8192), 132, 1, 0), ((8192, 8192, 4096), 132, 1, 0), ((8192, 8192, 4096), 132, 8, 0))
#: --skew --skew-variant pingpong (issue 17: does the ping-pong, which loses L2 reuse in row-major order where the
#: cooperative form does not, drift apart?): the row-major and grouped orders at the order sweep's shapes on 132 CTAs
SKEW_RUNS_PINGPONG = tuple((s, 132, g, 0) for s in ((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 4096))
                           for g in (1, 8))
#: --skew --skew-variant cooperative_n128[_inflight] (issue 17, h100lab.validation.l08_reuse: does the in-flight
#: form, whose launches lose L2 reuse at 16384³, drift apart faster than the same tile without a group in flight?):
#: the grouped order on 132 CTAs at 16384³ and 8192³
SKEW_RUNS_N128 = (((16384, 16384, 16384), 132, 8, 0), ((8192, 8192, 8192), 132, 8, 0))


def _trace_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("trace_gemm", HERE / "trace_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def clock_to_ns(w: dict, clk) -> list:
    """%clock64 stamps of one traced warpgroup as %globaltimer ns: the line through its (start, end) pairs."""
    span = (w["clk1"] - w["clk0"]) or 1
    return [w["ns0"] + (int(c) - w["clk0"]) * (w["ns1"] - w["ns0"]) / span for c in clk]


def skew_record(groups: list, grid: int) -> dict:
    """From trace_gemm.split's warpgroups of one traced launch: per traced CTA (0 and grid / 2) its SM, each
    warpgroup's start (%globaltimer), the consumer warpgroup 1's tile starts and the producer's (its TMA issue of
    each tile's first k-block: every tile, whichever consumer takes it — the ping-pong's consumer 1 runs every
    other tile), in ns after CTA 0's producer started; ``start_skew_ns``: CTA grid / 2's producer start minus
    CTA 0's."""
    by = {(w["slot"], w["wg"]): w for w in groups}
    if (0, 0) not in by:
        raise ValueError("CTA 0's producer wrote no trace header")
    t0 = by[(0, 0)]["ns0"]
    ctas = []
    for slot in (0, 1):
        if (slot, 0) not in by:
            continue
        cons = by.get((slot, 1))
        ctas.append({"cta": 0 if slot == 0 else grid // 2, "smid": by[(slot, 0)]["smid"],
                     "start_ns": [by[(slot, wg)]["ns0"] - t0 for wg in range(3) if (slot, wg) in by],
                     "end_ns": by[(slot, 0)]["ns1"] - t0,
                     "tile_start_ns": [] if cons is None else
                     [round(x - t0, 1) for x in clock_to_ns(cons, cons["tile_ev"][:, 0])],
                     "producer_tile_ns": _producer_tiles(by[(slot, 0)], t0)})
    rec = {"ctas": ctas}
    if len(ctas) == 2:
        rec["start_skew_ns"] = ctas[1]["start_ns"][0] - ctas[0]["start_ns"][0]
    return rec


def _producer_tiles(prod: dict, t0: int) -> list:
    """The producer's TMA issue of each tile's first k-block (event 1 of ring slot tile · nk), ns after ``t0``."""
    nk = max(1, int(prod["nk"]))
    ev = prod["ev"]
    return [round(x - t0, 1) for x in clock_to_ns(prod, [ev[j * nk, 1] for j in range(len(ev) // nk)])]


def run_skew(be, runs, log=print, variant: str = SKEW_VARIANT) -> list[dict]:
    """One traced launch (after a warm-up) per run of :data:`SKEW_RUNS`: the launch skew and drift of CTA
    grid / 2 against CTA 0 (records of kind ``skew``)."""
    import numpy as np

    from h100lab.design import capstone as cap

    tg = _trace_module()
    v = cap.variant(variant)
    recs = []
    for i, ((M, N, K), grid, group, raster) in enumerate(runs):
        rec = {"kind": "skew", "variant": variant, "M": M, "N": N, "K": K, "grid": grid, "group": group,
               "raster": raster, "traced_ctas": [0, grid // 2]}
        label = f"skew {variant} {M}x{N}x{K} grid {grid:3d} group {group} raster {'MN'[raster]}"

        def body(rec=rec, M=M, N=N, K=K, grid=grid, group=group, raster=raster, label=label):
            tm, tn = cap.tile_counts(v, M, N)
            cap_n = -(-tm * tn // grid) * -(-K // v.bk)
            fn, buf = be.traced(variant, M, N, K, grid, group, raster, cap_n, tg.trace_len(cap_n), seed=900)
            fn()                                              # warm-up launch
            be.zero(buf)
            fn()
            groups = tg.split(be.host(buf), cap_n)
            rec.update(skew_record(groups, grid), trace_cap=cap_n, ok=True)
            key = "producer_tile_ns" if v.pingpong else "tile_start_ns"     # ping-pong: a consumer runs every other
            drift = [b - a for a, b in zip(rec["ctas"][0][key], rec["ctas"][-1][key])]
            rec["tile_drift_ns"] = [round(x, 1) for x in drift]
            log(f"{label}: start skew {rec.get('start_skew_ns', float('nan')):.0f} ns; tile-start drift "
                f"{[round(x) for x in drift[:4]]} ... {[round(x) for x in drift[-2:]]} ns; SMs "
                f"{[c['smid'] for c in rec['ctas']]}")
        recs.append(bench_gemm.attempt(rec, body, label, log))
    return recs


L2_DATASET = "l08/gemm_l2_traffic"
#: Nsight Compute metrics of the --l2 runs: DRAM bytes read, the L2 hit rate of all lookups, sectors that came over
#: the link between the two L2 halves, the kernel's duration (few metrics: one or two replay passes per launch)
L2_METRICS = ("dram__bytes_read.sum", "lts__t_sector_hit_rate.pct", "lts__t_sectors_srcunit_ltcfabric.sum",
              "gpu__time_duration.sum")
#: runs per ncu process (a process cut at the time limit loses at most its own)
L2_CHUNK = 18
#: --l2-set bistable: two metrics ncu collects in one pass, so a launch's bytes and duration come from the same replay
#: (a run that falls into one of two states could land in different ones on different passes)
L2_METRICS_ONE_PASS = ("dram__bytes_read.sum", "gpu__time_duration.sum")
#: the metrics every Hopper ncu knows: the second try when the full list is refused
L2_METRICS_BASIC = ("dram__bytes_read.sum", "lts__t_sector_hit_rate.pct", "gpu__time_duration.sum")
_SQ4, _SQ8 = (4096, 4096, 4096), (8192, 8192, 8192)
#: (shape, variant, schedule, group, raster, CTAs or None), most telling first (a run cut short keeps the first):
#: the ping-pong tile in most orders at 8192³, the cooperative tiles in a few, the same M·N as 8192² with 16, 8 and 4
#: tile-columns of 256 (row-major: the CTAs sharing a B panel 16, 8, 4 apart), 4096³, a deeper K, pairs, the
#: in-flight form, fewer CTAs, and the 128-column tile's two missed shapes
L2_RUNS = tuple(
    [(_SQ8, "pingpong", "persistent", g, r, None) for g, r in ((1, 0), (2, 0), (8, 0), (16, 0), (1, 1), (4, 1), (8, 1),
                                                                 (16, 1))]
    + [(_SQ8, "cooperative", "persistent", g, r, None) for g, r in ((1, 0), (8, 0), (1, 1), (16, 1))]
    + [(_SQ8, "cooperative_n128", "persistent", g, r, None) for g, r in ((1, 0), (8, 0), (16, 0), (1, 1), (16, 1))]
    + [(s, v, "persistent", g, 0, None) for s in ((16384, 4096, 8192), (32768, 2048, 8192), (65536, 1024, 8192))
       for v in ("pingpong", "cooperative") for g in (1, 8)]
    + [(_SQ4, "pingpong", "persistent", g, r, None) for g, r in ((1, 0), (2, 0), (8, 0), (1, 1), (8, 1), (16, 1))]
    + [(_SQ4, v, "persistent", g, r, None) for v in ("cooperative", "cooperative_n128") for g, r in ((1, 0), (8, 0))]
    + [((8192, 8192, 16384), "pingpong", "persistent", g, r, None) for g, r in ((1, 0), (8, 0))]
    + [(_SQ8, "pingpong", "pairs", g, r, None) for g, r in ((1, 0), (8, 0))]
    + [(_SQ8, "pingpong_inflight", "persistent", g, r, None) for g, r in ((1, 0), (8, 0))]
    + [(_SQ8, "pingpong", "persistent", g, r, 66) for g, r in ((1, 0), (8, 0))]
    + [((1280, 3840, 8192), v, "persistent", 8, 0, None) for v in ("pingpong", "cooperative", "cooperative_n128")]
    + [((16384, 16384, 16384), v, "persistent", 8, 0, None) for v in ("cooperative", "cooperative_n128")])
def _reuse_runs() -> tuple:
    from h100lab.validation.l08_reuse import reuse_runs
    return reuse_runs()


#: --l2-set bistable: runs whose timed launches split into a fast and a slow group (32768×2048×8192 row-major:
#: 1.8 or 2.3 ms within one run of 20, l08/gemm_l2_traffic) with the ping-pong and cooperative controls — each
#: launched --l2-launches times under ncu, so each launch's DRAM bytes sit next to its duration
L2_RUN_SETS = {
    "default": None,
    "bistable": (((32768, 2048, 8192), "pingpong", "persistent", 1, 0, None),
                 ((8192, 8192, 8192), "pingpong", "persistent", 8, 1, None),
                 ((8192, 8192, 8192), "pingpong", "persistent", 1, 0, None),
                 ((8192, 8192, 8192), "pingpong", "persistent", 8, 0, None),
                 ((8192, 8192, 8192), "cooperative", "persistent", 1, 0, None)),
    # the FP8 form's DRAM reads (issue 17: the lead-1 scale loads' latency is modelled as loaded by the wave's DRAM
    # reads, estimated in step; 8192³ FP8 has the byte geometry of bf16 128 × 128 at 4096³, where the counters read
    # 0.76x the in-step bytes): the 128 × 128 TMA-store form at its three square shapes and 1280 × 3840 × 8192, the
    # direct-store form at 4096³, the cluster pair with and without the release.cluster fence at 8192³ and 16384³
    "fp8": tuple([(s, "fp8_cooperative_tmastore", "persistent", 8, 0, None)
                  for s in (_SQ8, (16384, 16384, 16384), _SQ4, (1280, 3840, 8192))]
                 + [(_SQ4, "fp8_cooperative", "persistent", 8, 0, None)]
                 + [(s, v, "persistent", 8, 0, None) for s in (_SQ8, (16384, 16384, 16384))
                    for v in ("fp8_cooperative_tmastore_cluster2",
                              "fp8_cooperative_staggered_tmastore_cluster2_ctascope")]),
    # the 128-column tile's two states (issue 17): at 16384³ one kernel build's cooperative_n128 took 18.7 ms and
    # today's 13.7, today's cooperative_n128_inflight 18.1 in one five-process table and cooperative_n128 14.0 — a
    # state each launch falls into (as bistable above) or a property of the process? Launch by launch, bytes and
    # duration from the same pass, with the 256-column form as the control
    "n128": tuple([((16384, 16384, 16384), v, "persistent", 8, 0, None)
                   for v in ("cooperative_n128", "cooperative_n128_inflight", "cooperative_n128_inflight_tmastore",
                             "cooperative")]
                  + [(_SQ8, v, "persistent", 8, 0, None) for v in ("cooperative_n128", "cooperative_n128_inflight")]),
    # the L2 -> SM delivery of the ping-pong records the time model misses (issue 17): at 4096³ in row-major order the
    # persistent ping-pong reads 2.6 GB from L2 at ~8.6 TB/s (l08/gemm_l2_traffic) where the grouped order reads half;
    # the step kernel's and the ablation's pairs schedule there (no counters yet), with the grouped orders as
    # controls, and the order sweep's row-major misses at 8192 × 8192 × 4096 and 1280 × 3840 × 8192 — L2 -> SM
    # sectors, DRAM bytes, the traffic between the L2 halves, the duration (SET_METRICS), with where the CTAs of a
    # launch of several rounds land (placement_rounds)
    "delivery": tuple([(_SQ4, v, "pairs", g, r, None) for v in ("pingpong", "pingpong_inflight")
                       for g, r in ((1, 0), (8, 0), (1, 1))]
                      + [(s, "pingpong", "persistent", g, 0, None) for s in ((8192, 8192, 4096), (1280, 3840, 8192))
                         for g in (1, 8)]
                      + [(_SQ4, "pingpong", "persistent", g, 0, None) for g in (1, 8)]),
    # the delivery bound's fresh shapes (l08.DELIVERY_SHAPES less the wide control): the ping-pong form in the
    # row-major order and its transpose (group 16 along N), the grouped order and the column-major one — whether a
    # launch's lonely share over the threshold delivers every requested byte, on runs the threshold never saw
    "delivery_round": tuple((s, "pingpong", "persistent", g, r, None)
                            for s in ((6144, 6144, 4096), (5120, 5120, 5120), (8192, 4096, 4096), (4096, 4096, 6144),
                                      (3072, 3072, 3072))
                            for g, r in ((1, 0), (8, 0), (16, 1), (1, 1))),
    # the in-flight 128 × 128 form's reuse, registered (h100lab.validation.l08_reuse): every cooperative form of the
    # n128 set and an in-flight cluster pair at seven shapes (six never timed), launch by launch as n128
    "reuse": _reuse_runs(),
}
#: the run sets whose launches ncu reads in one pass (:data:`L2_METRICS_ONE_PASS`): a launch's state is one state
ONE_PASS_SETS = ("bistable", "n128", "reuse")
#: run sets with metrics of their own: delivery — the L2 -> SM read sectors (``srcunit_tex``: what the SMs' requests,
#: after the L2 Request Coalescer, read from L2) beside DRAM, the link between the L2 halves and the duration
SET_METRICS = {"delivery": ("dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
                            "lts__t_sectors_srcunit_ltcfabric.sum", "gpu__time_duration.sum")}
SET_METRICS["delivery_round"] = SET_METRICS["delivery"]


def set_metrics(l2_set: str) -> tuple:
    """The ncu metrics of one --l2-set."""
    return SET_METRICS.get(l2_set) or (L2_METRICS_ONE_PASS if l2_set in ONE_PASS_SETS else L2_METRICS)
#: the %smid probe: one CTA per SM (a shared-memory request only one fits), CTA i writes its SM
PLACEMENT_SRC = r"""
extern "C" __global__ void smid_probe(unsigned* out) {
    extern __shared__ unsigned char pad[];
    if (threadIdx.x == 0) { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); out[blockIdx.x] = s; pad[0] = 1; }
}
"""


#: the placement in rounds: a launch of several CTAs per SM, one resident at a time (a shared-memory request only one
#: fits), every CTA the same work (it spins ``spin_ns`` on %globaltimer): CTA i writes its SM and when it started
#: and ended — where the CTAs after the first round land, as a non-persistent launch (the pairs schedule) places them
PLACEMENT_ROUNDS_SRC = r"""
extern "C" __global__ void smid_rounds(unsigned* sm, unsigned long long* t, unsigned long long spin_ns) {
    extern __shared__ unsigned char pad[];
    if (threadIdx.x == 0) {
        unsigned s; unsigned long long t0, t1;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); } while (t1 - t0 < spin_ns);
        sm[blockIdx.x] = s; t[2 * blockIdx.x] = t0; t[2 * blockIdx.x + 1] = t1; pad[0] = 1;
    }
}
"""
#: rounds of CTAs per SM and the spin of each (about a 4096³ pairs launch: 512 CTAs on 132 SMs, ~0.3 ms)
PLACEMENT_ROUNDS = 4
PLACEMENT_SPIN_NS = 60_000


def _placement_rounds(be, repeats: int = 3) -> list[dict]:
    """The SM and start of each CTA of a launch of ``PLACEMENT_ROUNDS × SMs`` equal CTAs, one per SM at a time
    (records of kind ``placement_rounds``; start and end in ns after the first CTA's start)."""
    import numpy as np

    cuda = be.cuda
    k = cuda.compile(PLACEMENT_ROUNDS_SRC, name="smid_rounds.cu").function("smid_rounds")
    props = cuda.device_properties(0)
    smem = int(props.get("sharedMemPerBlockOptin", 227 * 1024)) - 1024
    k.set_max_dynamic_shared_memory(smem)
    grid = PLACEMENT_ROUNDS * be.sm_count()
    out = []
    for rep in range(repeats):
        sm = cuda.zeros(grid, np.uint32)
        t = cuda.zeros(2 * grid, np.uint64)
        cuda.launch(k, grid, 128, sm, t, np.uint64(PLACEMENT_SPIN_NS), shared_mem=smem)
        cuda.synchronize()
        tt = t.to_host().astype(np.int64)
        t0 = int(tt[0::2].min())
        out.append({"kind": "placement_rounds", "grid": grid, "shared_mem": smem, "spin_ns": PLACEMENT_SPIN_NS,
                    "repeat": rep, "ok": True, "smid": [int(x) for x in sm.to_host()],
                    "start_ns": [int(x - t0) for x in tt[0::2]], "end_ns": [int(x - t0) for x in tt[1::2]]})
    return out


def l2_grid(run, sms: int) -> int:
    """The grid of one :data:`L2_RUNS` run (bench_gemm_orders.run_shape's rule)."""
    from h100lab.design import capstone as cap

    (M, N, K), variant, schedule, group, raster, ctas = run
    v = cap.variant(variant)
    tm, tn = cap.tile_counts(v, M, N)
    arg = ctas or {"persistent": sms, "pairs": -(-tm * tn // 2)}[schedule]
    return cap.grid_size(v, M, N, arg), arg


def l2_child(plan_path: str, timed: bool, warmup: int, repeats: int, out_path: str, log=print) -> None:
    """Run the plan's runs in order, each launched once (``timed`` False: the process ncu profiles) or timed
    (median of ``repeats``); results (ok, error, times) to ``out_path`` as JSON, rewritten after every run."""
    import json

    from h100lab.design import capstone as cap

    plan = json.loads(Path(plan_path).read_text())
    runs, n_launch = plan["runs"], int(plan.get("launches", 1))
    be = bench_gemm.TorchCuda()
    sms = be.sm_count()
    res, inputs = [], {}
    for i, run in enumerate(runs):
        (M, N, K), variant, schedule, group, raster, ctas = run
        rec = {"index": i}

        def body(rec=rec, M=M, N=N, K=K, variant=variant, group=group, raster=raster, run=run):
            fp8 = getattr(cap.variant(variant), "dtype", "bf16") != "bf16"
            if (M, N, K, fp8) not in inputs:
                inputs.clear()
                be.sync()
                be.torch.cuda.empty_cache()                # fewer bytes for ncu to save and restore per pass
                inputs[(M, N, K, fp8)] = ((be.fp8_inputs(M, N, K, seed=800), be.fp8_out(M, N)) if fp8
                                          else be.inputs(M, N, K, seed=800))
            grid, arg = l2_grid(run, sms)
            if fp8:                                        # e4m3 with block scales (bench_gemm --fp8's inputs)
                Q, C8 = inputs[(M, N, K, fp8)]
                fn = be.ours(variant, Q["qa"], Q["qb"], C8, M, N, K, group=group, raster=raster, sms=arg,
                             scales=(Q["dsa"], Q["sb"]))
            else:
                A, B, C0 = inputs[(M, N, K, fp8)]
                fn = be.ours(variant, A, B, C0, M, N, K, group=group, raster=raster, sms=arg)
            if timed:
                ms = be.time(fn, warmup, repeats)
                rec.update(median_ms=statistics.median(ms), min_ms=min(ms), samples_ms=[round(x, 5) for x in ms])
            else:
                for _ in range(n_launch):                  # each launch profiled on its own
                    fn()
                    be.sync()
            rec.update(ok=True, grid=grid, launches=n_launch)
            log(f"l2 run {i} {variant} {M}x{N}x{K} group {group} raster {raster} grid {grid}"
                + (f": {rec['median_ms']:.3f} ms" if timed else ": launched"))
        res.append(bench_gemm.attempt(rec, body, f"l2 run {i}", log))
        Path(out_path).write_text(json.dumps(res))


def _placement(be, repeats: int = 3) -> list[dict]:
    """The SM of each CTA of a plain launch of ``sms`` CTAs with one CTA per SM (records of kind ``placement``)."""
    import numpy as np

    cuda = be.cuda
    k = cuda.compile(PLACEMENT_SRC, name="smid_probe.cu").function("smid_probe")
    props = cuda.device_properties(0)
    smem = int(props.get("sharedMemPerBlockOptin", 227 * 1024)) - 1024
    k.set_max_dynamic_shared_memory(smem)
    sms = be.sm_count()
    out = []
    for rep in range(repeats):
        buf = cuda.zeros(sms, np.uint32)
        cuda.launch(k, sms, 128, buf, shared_mem=smem)
        cuda.synchronize()
        out.append({"kind": "placement", "grid": sms, "shared_mem": smem, "repeat": rep, "ok": True,
                    "smid": [int(x) for x in buf.to_host()]})
    return out


def _run_group(cmd: list, timeout: float) -> tuple[str, int, str, bool]:
    """Run ``cmd`` in its own process group: (stdout, return code, stderr, timed out); past ``timeout`` seconds the
    whole group (ncu and the profiled child) is killed and what it printed so far is returned."""
    import os
    import signal
    import subprocess

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, proc.returncode, err, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return out or "", -9, err or "", True


def run_l2(args, log=print) -> tuple[list[dict], dict]:
    """--l2: the runs of :data:`L2_RUNS` under ncu (records ``l2``), then timed without it (``l2time``), then
    the CTA placement probe; returns (records, extra metadata)."""
    import json
    import subprocess
    import tempfile

    from h100lab.design import capstone as cap
    from h100lab.measure.l01 import find_ncu, parse_ncu_csv

    tmp = Path(tempfile.mkdtemp(prefix="l2traffic_"))
    chosen = L2_RUN_SETS.get(args.l2_set) or L2_RUNS
    runs = [[list(s), v, sch, g, r, n] for s, v, sch, g, r, n in chosen]
    n_launch = max(1, int(args.l2_launches))
    plan = tmp / "plan.json"
    plan.write_text(json.dumps({"runs": runs}))
    me = [sys.executable, str(Path(__file__).resolve())]
    extra: dict = {"metrics": list(set_metrics(args.l2_set)),
                   "l2_set": args.l2_set, "launches_per_run": n_launch}
    ncu = find_ncu()
    entries = sorted({cap.variant(v).entry for _, v, *_ in runs})
    got: list = [None] * len(runs)               # per run: (ncu launch, child record) or the error string
    metrics = set_metrics(args.l2_set)
    deadline = time.time() + args.l2_timeout

    def chunk(lo: int, part: list):
        """One ncu process over ``part`` (runs lo …): fills ``got``; returns ncu's error or None."""
        pp = tmp / f"plan_{lo}.json"
        pp.write_text(json.dumps({"runs": part, "launches": n_launch}))
        res_path = tmp / f"ncu_child_{lo}.json"
        cmd = [ncu, "--clock-control", "none", "--kernel-name", "regex:^(" + "|".join(entries) + ")$", "--metrics",
               ",".join(metrics), "--csv", "--print-units", "base", *me, "--l2-child", str(pp), "--l2-result",
               str(res_path)]
        log("ncu: " + " ".join(cmd))
        text, rc, err, late = _run_group(cmd, max(1.0, deadline - time.time()))
        (tmp / f"ncu_{lo}.csv").write_text(text + "\n" + err)
        if rc != 0 and not late:
            return f"ncu exited {rc}: {err[-1500:]} {text[-1500:]}"
        try:
            launches = parse_ncu_csv(text)
        except ValueError as exc:
            return f"{'ncu timed out; ' if late else ''}{exc}: {err[-800:]} {text[-800:]}"
        child = json.loads(res_path.read_text()) if res_path.exists() else []
        if len(launches) > len(part) * n_launch:
            return f"ncu reported {len(launches)} launches for {len(part)} runs x {n_launch}"
        for j in range(len(launches) // n_launch):
            xs = launches[j * n_launch:(j + 1) * n_launch]
            got[lo + j] = (xs, child[j] if j < len(child) else {"ok": False, "error": "no child result"})
        return f"ncu timed out after {args.l2_timeout} s" if late else None

    if ncu is None:
        got = ["Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute"] * len(runs)
    else:
        for lo in range(0, len(runs), L2_CHUNK):
            part = runs[lo:lo + L2_CHUNK]
            if deadline - time.time() < 15:
                err = f"no time left of --l2-timeout {args.l2_timeout} s"
            else:
                try:
                    err = chunk(lo, part)
                    if err and lo == 0 and metrics is L2_METRICS and got[0] is None:
                        log(f"ncu with {len(metrics)} metrics failed: {err[:600]}; the basic metrics next")
                        extra["ncu_error_full_metrics"] = err[:2000]
                        metrics = L2_METRICS_BASIC
                        err = chunk(lo, part)
                except Exception as exc:                           # noqa: BLE001 - recorded, the run goes on
                    err = f"{type(exc).__name__}: {exc}"
            if err:
                log(f"ncu, runs {lo}-{lo + len(part) - 1}: {err[:600]}")
                extra.setdefault("ncu_errors", []).append(err[:2000])
            for j in range(lo, lo + len(part)):
                if got[j] is None:
                    got[j] = err or "not profiled"
        extra.update(metrics=list(metrics), ncu_command=" ".join(
            ["ncu", "--clock-control", "none", "--kernel-name", "regex:^(" + "|".join(entries) + ")$", "--metrics",
             ",".join(metrics), "--csv", "--print-units", "base", "python3 benchmarks/bench_gemm_orders.py",
             "--l2-child PLAN --l2-result RESULT"]))
        try:
            extra["ncu_version"] = subprocess.run([ncu, "--version"], capture_output=True,
                                                  text=True).stdout.strip().splitlines()[-1]
        except Exception:                                          # noqa: BLE001 - a missing version is no failure
            pass
    recs = []
    for i, ((M, N, K), v, sch, g, r, n) in enumerate(runs):
        var = cap.variant(v)
        tm, tn = cap.tile_counts(var, M, N)
        base = {"variant": v, "schedule": sch, "group": g, "raster": r, "M": M, "N": N, "K": K, "bm": var.bm,
                "bn": var.bn, "bk": var.bk, "stages": var.stages, "tiles": tm * tn, "ctas_arg": n}
        rec = dict(base, kind="l2")
        if isinstance(got[i], str):
            rec.update(ok=False, error=got[i])
        else:
            xs, c = got[i]
            rec.update(ok=bool(c.get("ok")), grid=c.get("grid"), kernel=xs[0]["kernel"], metrics=xs[0]["metrics"])
            if n_launch > 1:
                rec["launch_metrics"] = [x["metrics"] for x in xs]
            if "error" in c:
                rec["error"] = c["error"]
        recs.append(rec)
    # the same runs timed, without ncu
    try:
        out, rc, err, late = _run_group([*me, "--l2-child", str(plan), "--l2-timed", "--l2-result",
                                         str(tmp / "timed.json"), "--warmup", str(args.warmup), "--repeats",
                                         str(args.repeats)], args.l2_time_timeout)
        log(out[-3000:] + err[-1500:] + (f"timed run cut at {args.l2_time_timeout} s" if late else ""))
        timed = json.loads((tmp / "timed.json").read_text())     # rewritten after every run: a cut run keeps them
    except Exception as exc:                                       # noqa: BLE001 - recorded, the run goes on
        timed = []
        log(f"timed child failed: {type(exc).__name__}: {exc}")
    for i, ((M, N, K), v, sch, g, r, n) in enumerate(runs):
        t = timed[i] if i < len(timed) else {"ok": False, "error": "no timed result"}
        recs.append({"kind": "l2time", "variant": v, "schedule": sch, "group": g, "raster": r, "M": M, "N": N,
                     "K": K, "ctas_arg": n, "repeats": args.repeats, "warmup": args.warmup,
                     **{k: t[k] for k in ("ok", "error", "grid", "median_ms", "min_ms", "samples_ms") if k in t}})
    if any(isinstance(x, str) for x in got):
        extra["ncu_error"] = next(x for x in got if isinstance(x, str))[:2000]
    return recs, extra


def main(argv=None, backend=None, shapes=None, log=print, variants=None, orders=None, pair_orders=None,
         pair_shapes=None, grid_runs=None, skew_runs=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder to write l08/gemm_orders.json into (default: the repo's)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", default=None, help="comma-separated capstone variants (default: %s)"
                    % ",".join(VARIANTS))
    ap.add_argument("--name", default=DATASET, help="dataset name under the data folder (default: %(default)s)")
    ap.add_argument("--shapes", default=None, help="comma-separated MxNxK shapes to sweep instead of SHAPES (e.g. "
                    "8192x8192x2048,4096x4096x16384: the drift law's fresh depths, --name l08/gemm_orders_k)")
    ap.add_argument("--pairs", action="store_true", help="also the pairs schedule (PAIR_ORDERS) at every shape swept, "
                    "not only at PAIR_SHAPES (the delivery bound's fresh shapes, --name l08/gemm_orders_delivery)")
    ap.add_argument("--skew-variant", default=SKEW_VARIANT, help="--skew: the traced variant (pingpong: its runs "
                    "are SKEW_RUNS_PINGPONG; drift from the producer's tile starts)")
    ap.add_argument("--skew", action="store_true", help="only the traced launches of SKEW_RUNS (records of kind "
                    "'skew': when CTA grid / 2 starts and runs its tiles against CTA 0), into l08/gemm_skew")
    ap.add_argument("--l2", action="store_true", help="only the runs of L2_RUNS under Nsight Compute (DRAM bytes, L2 "
                    "hits; records 'l2'), the same runs timed ('l2time') and the CTA placement probe, into "
                    "l08/gemm_l2_traffic")
    ap.add_argument("--l2-timeout", type=float, default=150.0, help="seconds for the --l2 run under ncu (the launches "
                    "profiled by then are kept)")
    ap.add_argument("--l2-time-timeout", type=float, default=80.0, help="seconds for the --l2 timed run")
    ap.add_argument("--l2-set", default="default", choices=sorted(L2_RUN_SETS), help="--l2: which runs (default: "
                    "L2_RUNS; bistable: L2_RUN_SETS['bistable'])")
    ap.add_argument("--l2-launches", type=int, default=1, help="--l2: launches of each run profiled (each its own "
                    "ncu record)")
    ap.add_argument("--l2-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--l2-result", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--l2-timed", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.l2_child:
        l2_child(args.l2_child, args.l2_timed, args.warmup, args.repeats, args.l2_result, log)
        return {"path": args.l2_result, "records": [], "failed": 0}
    if args.repeats < 20 and backend is None:
        ap.error("--repeats: the median of at least 20 launches")
    from h100lab.design import capstone as cap

    variants = tuple(args.variants.split(",")) if args.variants else (variants or VARIANTS)
    unknown = [v for v in variants if v not in cap.VARIANTS or cap.VARIANTS[v].cluster != 1
               or cap.VARIANTS[v].dtype != "bf16"]
    if unknown:
        ap.error(f"--variants: {unknown} are not bf16 capstone variants of one CTA per cluster")
    t0 = time.time()
    be = backend if backend is not None else (SkewCuda() if args.skew else bench_gemm.TorchCuda())
    if args.skew and args.name == DATASET:
        args.name = SKEW_DATASET
    if args.l2 and args.name == DATASET:
        args.name = L2_DATASET
    sms = be.sm_count()
    if args.shapes:
        shapes = bench_gemm.parse_shapes(ap, args.shapes)
    shapes = SHAPES if shapes is None else shapes
    orders = ORDERS if orders is None else orders
    pair_orders = PAIR_ORDERS if pair_orders is None else pair_orders
    pair_shapes = PAIR_SHAPES if pair_shapes is None else pair_shapes
    if args.pairs:
        pair_shapes = tuple(tuple(s) for s in shapes)
    grid_runs = GRID_RUNS if grid_runs is None else grid_runs
    cmd = "PYTHONPATH=. python3 benchmarks/bench_gemm_orders.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = be.metadata(cmd.strip())
    meta.update(kernel="h100lab/cuda/kernels/l08_gemm.cu", sm_count=sms, variants=list(variants),
                orders=[list(o) for o in orders], pair_orders=[list(o) for o in pair_orders],
                note="C = A*B^T, A MxK and B NxK bf16 K-major, f32 accumulate, bf16 out; tile order: "
                     "h100lab.design.schedule.tile_at(t, tiles_m, tiles_n, group, raster 'm'/'n'); CTA b takes "
                     "tiles b, b + grid, ...; cuBLAS: torch.matmul(A, B.T) in the same run; CUDA events, median "
                     "of repeats")
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    recs: list[dict] = []
    save = bench_gemm.dataset_saver(args.name, recs, meta, t0)

    if args.skew:
        pp = args.skew_variant != SKEW_VARIANT
        default = (SKEW_RUNS_N128 if "n128" in args.skew_variant else SKEW_RUNS_PINGPONG if pp else SKEW_RUNS)
        recs += run_skew(be, skew_runs if skew_runs is not None else default, log, args.skew_variant)
        shapes = []
    if args.l2:
        got, extra = run_l2(args, log)
        recs += got
        meta.update(extra)
        recs += bench_gemm.attempt_all(lambda: _placement(be), {"kind": "placement"}, "placement", log)
        if args.l2_set == "delivery":
            recs += bench_gemm.attempt_all(lambda: _placement_rounds(be), {"kind": "placement_rounds"},
                                           "placement in rounds", log)
        shapes = []
    for i, shape in enumerate(shapes):
        runs = runs_of(shape, variants, orders, pair_orders, pair_shapes, grid_runs)
        recs += bench_gemm.attempt_all(lambda: run_shape(be, *shape, 700 + i, sms, args, runs, log),
                                       {"kind": "orders", "variant": "cublas", "M": shape[0], "N": shape[1],
                                        "K": shape[2]}, f"shape {shape}", log)
        save(False)
    return bench_gemm.finish(save(True), recs, t0, log)


if __name__ == "__main__":
    sys.exit(1 if main()["failed"] else 0)
