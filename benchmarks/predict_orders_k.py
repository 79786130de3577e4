"""Write the drift law's predictions for the order sweep at fresh depths, before the sweep runs.

    PYTHONPATH=. python3 benchmarks/predict_orders_k.py

Writes ``benchmarks/predictions/l08_gemm_orders_k.json``: h100lab.validation.l08.drift_law_predictions() — the
persistent ping-pong form at each shape of l08.DRIFT_SHAPES in every tile order, predicted by the form clock
(then a hypothesis, the model since) with the drift law, with one window at every K, and by the one-clock model
(the model then). Committed before
``bench_gemm_orders.py --shapes ... --name l08/gemm_orders_k`` runs on the H200; tests/test_l08_drift_law.py checks
the committed file against the code, so the predictions compared with the run are the ones written down first.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "predictions" / "l08_gemm_orders_k.json"


def main() -> int:
    from h100lab.validation import l08

    rows = l08.drift_law_predictions()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"shapes": [list(s) for s in l08.DRIFT_SHAPES], "rows": rows}, indent=1) + "\n")
    print(f"{len(rows)} predictions -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
