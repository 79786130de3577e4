"""Lesson 8, issue 17's last campaign miss: the in-flight 128 × 128 form at 16384³, whose launches lose L2 reuse.

The cooperative 128 × 128 form with a wgmma group in flight (``cooperative_n128_inflight``) ran 18.1 ms at 16384³
where the model said 14.6 (−19 %). Nsight Compute, launch by launch (``data/l08/gemm_l2_n128_a``/``_b``, 30 launches
of each run, DRAM bytes and duration from one pass): its launches read 35–67 GB against 13.5 GB in step and take
13.4–18.6 ms, time and bytes correlated at r = 0.97; the same form without the group in flight reads 21–24 GB, the
128 × 256 form 16 GB. Two readings, each one step of the time model, both fitted on the first of those two runs
(:data:`h100lab.design.traffic.FORM_DRIFT_DATASET`) and nothing else:

* **bytes** — each cooperative form's own drift in :func:`h100lab.design.traffic.capacity_reads` (the CTAs of a
  persistent launch drifting apart, a panel's k-slices evicted before its next sharer reads them), fitted on that
  form's DRAM counters (:func:`h100lab.design.traffic.fit_form_drifts`: 0.029 in flight, 0.008 in flight with the
  TMA-store epilogue, 0.004 without, 0.003 for the 128 × 256 form; any form not measured keeps the common drift);
* **time** — the DRAM bound of those forms charges the bytes at the rate of a GEMM's tile reads
  (:func:`h100lab.design.perf.fit_tile_read`: the rate that gives every profiled launch its duration from its own
  bytes, 3.47 TB/s), not lesson 5's read-stream ceiling of 4.7.

With both the model puts the 16384³ record at −3.5 % and every held-out campaign record within ±10 %. That is a
reading of counters taken at the missed shape, so it is registered (:data:`REUSE_PREDICTIONS`, written by
``benchmarks/predict_reuse.py``) at shapes no run had timed (:data:`REUSE_SHAPES`) before the H200 runs them: each
form under Nsight Compute launch by launch and timed (``bench_gemm_orders.py --l2 --l2-set reuse``, two processes),
the model against the same constants without the two readings. The rule written down with them: the readings stay
in the model if they put more timed runs within ±10 % than the constants without them, and their bytes are within
25 % of the counters' median in most runs.
"""
from __future__ import annotations

from typing import Sequence

from ..data import Dataset

__all__ = ["REUSE_SHAPES", "REUSE_VARIANTS", "REUSE_DATASETS", "REUSE_PREDICTIONS", "REUSE_WARMUP", "REUSE_REPEATS",
           "reuse_runs", "reuse_predictions", "reuse_registered"]

#: shapes no run had timed, chosen where the in-flight form's predicted loss is large (the deeper K, the longer a
#: CTA drifts within a tile: +20…+37 % over the in-step time) and one where it is small (12288³: +4 %)
REUSE_SHAPES = ((16384, 16384, 24576), (20480, 20480, 16384), (24576, 16384, 16384), (12288, 12288, 24576),
                (32768, 16384, 8192), (16384, 16384, 12288), (12288, 12288, 12288))
#: the four forms of the 16384³ counter runs, and an in-flight cluster pair no counter run had (the common drift)
REUSE_VARIANTS = ("cooperative", "cooperative_n128", "cooperative_n128_inflight", "cooperative_n128_inflight_tmastore",
                  "cooperative_n128_inflight_cluster2")
#: the two processes of the round (``bench_gemm_orders.py --l2 --l2-set reuse --name ...``)
REUSE_DATASETS = ("l08/gemm_l2_reuse", "l08/gemm_l2_reuse_b")
#: the predictions file, written before the run (``benchmarks/predict_reuse.py``)
REUSE_PREDICTIONS = "l08_gemm_l2_reuse.json"
#: the timed launches of each run (``--warmup``, ``--repeats``): the clock regime of the prediction
REUSE_WARMUP, REUSE_REPEATS = 3, 50


def reuse_runs(shapes: Sequence = REUSE_SHAPES, variants: Sequence = REUSE_VARIANTS) -> tuple:
    """The round's runs: (shape, variant, schedule, group, raster, CTAs or None) as ``bench_gemm_orders.py``'s
    ``L2_RUN_SETS`` take them — every variant at every shape, persistent, grouped by 8 along M, the device's CTAs."""
    return tuple((tuple(s), v, "persistent", 8, 0, None) for s in shapes for v in variants)


def reuse_predictions(params=None, shapes: Sequence = REUSE_SHAPES, variants: Sequence = REUSE_VARIANTS) -> dict:
    """The round's predictions [model]: per run, the timed median of ``REUSE_WARMUP + REUSE_REPEATS`` launches
    (``model_ms``: ``params``, default the model; ``plain_ms``: the same constants without the two readings,
    ``tile_read_tb_s`` 0), one launch at the sustained clock (``model_one_ms``, ``plain_one_ms``: what a profiled
    launch is), the DRAM bytes (``model_gb``: :func:`h100lab.design.traffic.capacity_reads` with the form's drift;
    ``in_step_gb``) and the drift; with the constants they came from."""
    from dataclasses import replace

    from ..design import perf, traffic

    p = params if params is not None else perf.calibrated()
    plain = replace(p, tile_read_tb_s=0.0)
    drifts = dict(p.form_drifts)
    rows = []
    for (M, N, K), v, sched, g, r, _ in reuse_runs(shapes, variants):
        f = perf.form(v, schedule=sched)
        n = REUSE_WARMUP + REUSE_REPEATS
        d = drifts.get(v, p.capacity_drift)
        rows.append({"variant": v, "M": M, "N": N, "K": K, "group": g, "raster": r, "drift": d,
                     "model_ms": perf.predict(f, M, N, K, group=g, raster=r, params=p, launches=n).time_ms,
                     "plain_ms": perf.predict(f, M, N, K, group=g, raster=r, params=plain, launches=n).time_ms,
                     "model_one_ms": perf.predict(f, M, N, K, group=g, raster=r, params=p, launches=1).time_ms,
                     "plain_one_ms": perf.predict(f, M, N, K, group=g, raster=r, params=plain, launches=1).time_ms,
                     "model_gb": sum(traffic.capacity_reads(f, M, N, K, 132, g, r, drift=d)) * 1e-9,
                     "in_step_gb": traffic.model_dram_bytes(v, sched, M, N, K, 132, g, r, None) * 1e-9})
    return {"constants": {"tile_read_tb_s": p.tile_read_tb_s, "form_drifts": [list(x) for x in p.form_drifts],
                          "capacity_drift": p.capacity_drift},
            "warmup": REUSE_WARMUP, "repeats": REUSE_REPEATS, "rows": rows}


def reuse_registered() -> dict | None:
    """The committed predictions file (``benchmarks/predictions/`` :data:`REUSE_PREDICTIONS`, the repository's); None
    without it."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "predictions" / REUSE_PREDICTIONS
    return json.loads(path.read_text()) if path.is_file() else None
