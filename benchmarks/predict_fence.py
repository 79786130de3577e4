"""Write both readings' predictions for the FP8 cluster pair's fence, before the run.

    PYTHONPATH=. python3 benchmarks/predict_fence.py

Writes ``benchmarks/predictions/l08_fence.json``: h100lab.validation.l08_fence.fence_predictions() — each reading's
fence constant (fitted on the one record of l08_fence.FENCE_CALIBRATION) and its times of the four forms of
l08_fence.FENCE_VARIANTS at the shapes of l08_fence.FENCE_SHAPES (none timed before), with the git commit it was
written at and the rule that picks the model's reading. Committed before ``bench_gemm.py --fp8 --shapes ...
--variants ... --name l08/gemm_fence`` ran on the H200; tests/test_l08_fence.py checks the file is the code's.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RULE = ("the reading with the smaller root-mean-square log error on the two pairs' records of l08/gemm_fence and "
        "l08/gemm_fence_b becomes the model's")


def main(argv=None) -> int:
    from h100lab.validation import l08_fence as F

    out = ROOT / "benchmarks" / "predictions" / F.FENCE_PREDICTIONS
    pred = F.fence_predictions()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"written_at_commit": head.stdout.strip() if head.returncode == 0 else None,
                               "calibration": [F.FENCE_CALIBRATION[0], F.FENCE_CALIBRATION[1],
                                               list(F.FENCE_CALIBRATION[2])],
                               "rule": RULE, **pred}, indent=1) + "\n")
    print(f"{len(pred['rows'])} predictions -> {out.relative_to(ROOT)}; fence (ns): "
          + ", ".join(f"{k} {v:.0f}" for k, v in pred["fence_ns"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
