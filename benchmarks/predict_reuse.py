"""Write the in-flight form's reuse predictions at fresh shapes, before the H200 runs them.

    PYTHONPATH=. python3 benchmarks/predict_reuse.py

Writes ``benchmarks/predictions/l08_gemm_l2_reuse.json``: h100lab.validation.l08_reuse.reuse_predictions() — every
form of l08_reuse.REUSE_VARIANTS at each shape of l08_reuse.REUSE_SHAPES, predicted by the model (each cooperative
form's own drift in the capacity estimate of its DRAM bytes, charged at the tile reads' rate) and by the same
constants without those two readings: the timed median, one profiled launch, the DRAM bytes. Committed before
``bench_gemm_orders.py --l2 --l2-set reuse --l2-launches 30 --repeats 50 --name l08/gemm_l2_reuse`` (and ``_b``, a
second process) runs; tests/test_l08_reuse.py holds the committed file against the code.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (str(ROOT), str(ROOT / "benchmarks")):
    if p not in sys.path:
        sys.path.insert(0, p)


def main(argv=None) -> int:
    from _register import write_predictions

    from h100lab.validation import l08_reuse

    pred = l08_reuse.reuse_predictions()
    out = write_predictions(l08_reuse.REUSE_PREDICTIONS,
                            {"shapes": [list(s) for s in l08_reuse.REUSE_SHAPES], **pred})
    print(f"{len(pred['rows'])} predictions -> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
