"""Write a round's predictions for the FP8 cluster pair's fence, before its run.

    PYTHONPATH=. python3 benchmarks/predict_fence.py [--round 2]

Writes ``benchmarks/predictions/l08_fence.json`` (round 1) or ``l08_fence2.json`` (round 2):
h100lab.validation.l08_fence.fence_predictions(round) — each reading's fence constants and its times of the four
forms of l08_fence.FENCE_VARIANTS at the round's shapes (l08_fence.ROUNDS; none timed before), with the git commit
it was written at and the round's rule that picks the model's reading. Committed before ``bench_gemm.py --fp8
--shapes ... --variants ... --name <the round's dataset>`` ran on the H200; tests/test_l08_fence.py checks the file
holds the code's shapes and forms and was committed before the run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from h100lab.validation import l08_fence as F

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round", type=int, default=1, choices=sorted(F.ROUNDS))
    a = ap.parse_args(argv)
    _, _, file, _, rule = F.ROUNDS[a.round]
    from _register import write_predictions

    pred = F.fence_predictions(a.round)
    out = write_predictions(file, {"round": a.round, "calibration": [F.FENCE_CALIBRATION[0], F.FENCE_CALIBRATION[1],
                                                                    list(F.FENCE_CALIBRATION[2])],
                                   "rule": rule, **pred})
    print(f"{len(pred['rows'])} predictions -> {out.relative_to(ROOT)}; fence (ns, F1 F2): "
          + ", ".join(f"{k} {v[0]:.0f} {v[1]:.0f}" for k, v in pred["fence_ns"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
