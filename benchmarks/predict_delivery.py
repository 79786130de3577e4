"""Write the delivery bound's predictions for the order sweep at fresh shapes, before the sweep runs.

    PYTHONPATH=. python3 benchmarks/predict_delivery.py [--round 2]

Writes ``benchmarks/predictions/l08_gemm_orders_delivery.json``: h100lab.validation.l08.delivery_round_predictions()
— the ping-pong form at each shape of l08.DELIVERY_SHAPES, persistent in every tile order and in the pairs schedule,
predicted by the model (with its delivery bound of a ping-pong wave out of step, h100lab.design.perf.delivery_waves)
and by the same constants without the bound. Committed before
``bench_gemm_orders.py --shapes ... --variants pingpong --pairs --name l08/gemm_orders_delivery`` runs on the H200;
tests/test_l08_delivery_round.py checks the committed file against the code, so the predictions compared with the
run are the ones written down first. ``--round 2`` writes ``l08_gemm_orders_delivery2.json`` instead:
l08.delivery_round_predictions(l08.DELIVERY2_SHAPES, pairs=True) — the model with the two refinements of the pairs
schedule (h100lab.design.perf.PerfParams.delivery_pairs) against the bound as the first round had it, before
``bench_gemm_orders.py ... --name l08/gemm_orders_delivery2`` runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (str(ROOT), str(ROOT / "benchmarks")):
    if p not in sys.path:
        sys.path.insert(0, p)



def main(argv=None) -> int:
    from _register import write_predictions

    from h100lab.validation import l08

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--round", type=int, default=1, choices=(1, 2))
    args = ap.parse_args(argv)
    name = l08.DELIVERY_ROUND_DATASET if args.round == 1 else l08.DELIVERY2_DATASET
    rnd = l08.DELIVERY_ROUNDS[name]
    rows = l08.delivery_round_predictions(rnd.shapes, pairs=rnd.pairs)
    out = write_predictions(rnd.file, {"shapes": [list(s) for s in rnd.shapes], "rows": rows})
    print(f"{len(rows)} predictions -> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
