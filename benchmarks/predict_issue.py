"""Write the issue-window round's predictions (h100lab.validation.l08_issue), before its run.

    PYTHONPATH=. python3 benchmarks/predict_issue.py

Writes ``benchmarks/predictions/l08_gemm_fresh4_fp8.json``: l08_issue.issue_predictions() — the model (the FP8
group's issue window refitted on Nsight Compute's cycles) and the model before it (the trace's window) on every FP8
form at the seven shapes of l08_issue.ISSUE_SHAPES (none timed before), with the git commit it was written at and
the rule. Committed before ``bench_gemm.py --fp8 --shapes ... --name l08/gemm_fresh4_fp8`` ran on the H200.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from h100lab.validation import l08_issue as I

    from _register import write_predictions

    pred = I.issue_predictions()
    out = write_predictions(I.ISSUE_PREDICTIONS, {"shapes": [list(s) for s in I.ISSUE_SHAPES], "rule": I.RULE, **pred})
    print(f"{len(pred['rows'])} predictions -> {out.relative_to(ROOT)}; issue window (cycles): "
          + ", ".join(f"{k} {v:.0f}" for k, v in pred["issue_cycles"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
