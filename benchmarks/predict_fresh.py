"""Write the model's predictions for the fresh-shape test, before the run.

    PYTHONPATH=. python3 benchmarks/predict_fresh.py [--round 2]

Writes ``benchmarks/predictions/l08_gemm_fresh.json`` (round 2: ``l08_gemm_fresh2.json``, l08.FRESH2_SHAPES):
h100lab.validation.l08.fresh_predictions() — every form of
the kernel (bf16 and FP8, l08.FRESH_VARIANTS) at each shape of l08.FRESH_SHAPES, shapes no run had timed, predicted
by the one-clock model (the model then) and by the form clock (then a hypothesis, the model since) — with the git
commit it was written at and the key of the two
models' constants (l08.fresh_params_key). Committed before ``bench_gemm.py --shapes ... --name l08/gemm_fresh``
(and ``--fp8 ... --name l08/gemm_fresh_fp8``) ran on the H200: the figures compared with the run are these, as
written down first (h100lab.validation.l08.fresh_rows); tests/test_l08_fresh.py checks the file is the code's
while the constants are the same.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    import argparse

    from h100lab.validation import l08

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--round", type=int, default=1, choices=range(1, len(l08.FRESH_ROUNDS) + 1))
    args = ap.parse_args(argv)
    shapes, datasets, file = l08.FRESH_ROUNDS[args.round - 1]
    from _register import write_predictions

    rows = l08.fresh_predictions(shapes, datasets)
    out = write_predictions(file, {"shapes": [list(s) for s in shapes], "params_key": l08.fresh_params_key(),
                                   "launches": l08.FRESH_LAUNCHES, "rows": rows})
    print(f"{len(rows)} predictions -> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
