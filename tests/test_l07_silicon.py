"""Lesson 7 silicon datasets (data/l07, from ``python -m h100lab.measure.l07`` on an H200): the model reproduces every
recorded output bit for bit (sparse wgmma, FP8 GEMM tiles, epilogues, FP8 chains), the emulator replays them, and
the timing model meets its tolerance on the held-out timing records. Skipped while the datasets do not exist."""
import numpy as np
import pytest

from h100lab import data, emu
from h100lab.measure import l07
from h100lab.validation import l07 as v


def _records(name):
    if not data.available(name):
        pytest.skip(f"{name} not measured yet (python -m h100lab.measure.l07 --out data on an H100/H200)")
    return data.load(name).records


@pytest.mark.parametrize("name", v.BIT_EXACT)
def test_model_matches_silicon(name):
    recs = _records(name)
    res = v.check(recs, per_value=True)
    assert res.cases > 0 and res.mismatches == 0, res.examples


def test_timing_model_on_held_out_records():
    """Every held-out type and N (latency and throughput) within the tolerance; the documented misses are the
    group-depth patterns (wait_group 1/2 after groups of 1-4 wgmmas on one accumulator: h100lab.tensorcore.timing)."""
    from h100lab.tensorcore import timing
    recs = _records("l07/wgmma_timing")
    p = timing.calibrate(recs)
    for r in recs:
        if timing.is_calibration(r) or (r["depth"] > 0 and r["per_group"] < 16):
            continue
        got = float(np.median(r["cycles"]))
        assert abs(timing.predict_case(r, p) - got) <= v.TIMING_TOLERANCE * got, r["id"]


@pytest.mark.parametrize("name", v.BIT_EXACT)
def test_emulator_replays_silicon(name):
    from h100lab.measure.l04 import unpack

    recs = [r for r in _records(name) if r.get("ok") and r.get("input") != "invalid"]
    step = max(1, len(recs) // 8)
    for r in recs[::step]:
        got = l07.run_case(emu, r)
        for k, g in got.items():
            assert (np.ascontiguousarray(g).view(np.uint8) == unpack(r[k])).all(), (r["id"], k)
