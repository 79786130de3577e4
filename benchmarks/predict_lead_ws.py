"""Write the working-set hypothesis's calls for the FP8 lead pair, before the run.

    PYTHONPATH=. python3 benchmarks/predict_lead_ws.py

Writes ``benchmarks/predictions/l08_lead_ws.json``: h100lab.validation.l08_lead.ws_predictions() — at each shape of
l08_lead.WS_SHAPES (none timed before) the first wave's in-step working set and the call (lead 1 / lead 2 of the
128 x 128 TMA-store form at most 1.00: "hidden", at least 1.03: "exposed"), with the git commit it was written at
and the bounds. Committed before ``bench_gemm.py --fp8 --shapes ... --variants fp8_cooperative_tmastore,
fp8_cooperative_tmastore_lead2 --name l08/gemm_lead_ws`` ran on the H200; tests/test_l08_lead.py checks the file
is the code's, so the calls judged against the run are the ones written down first.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from h100lab.validation import l08_lead as L

    from _register import write_predictions

    rows = L.ws_predictions()
    out = write_predictions(L.WS_PREDICTIONS, {"hidden_mb": L.HIDDEN_MB, "exposed_mb": L.EXPOSED_MB,
                                               "hidden_ratio": L.HIDDEN_RATIO, "exposed_ratio": L.EXPOSED_RATIO,
                                               "pair": list(L.LEAD_PAIR), "rows": rows})
    print(f"{len(rows)} calls -> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
