"""Lesson 6 silicon datasets (data/l06, from ``python -m h100lab.measure.l06`` on an H200): the model and the
emulator must reproduce every recorded output bit for bit (PTX ISA §9.7.15.5.2, §9.7.14.5.15-16). Skipped while
the datasets do not exist."""
import numpy as np
import pytest

from h100lab import data, emu
from h100lab.measure import l06
from h100lab.validation import l06 as v


def _records(name):
    if not data.available(name):
        pytest.skip(f"{name} not measured yet (python -m h100lab.measure.l06 --out data on an H100/H200)")
    return data.load(name).records


@pytest.mark.parametrize("name", v.DATASETS)
def test_model_matches_silicon(name):
    recs = _records(name)
    res = v.check(recs, per_value=name == "l06/numerics")
    assert res.cases > 0 and res.mismatches == 0, res.examples


@pytest.mark.parametrize("name", v.DATASETS)
def test_emulator_replays_silicon(name):
    from h100lab.measure.l04 import unpack

    recs = [r for r in _records(name) if r.get("ok")]
    step = max(1, len(recs) // 12)
    for r in recs[::step]:
        got = l06.run_case(emu, r)
        for k, g in got.items():
            assert (np.ascontiguousarray(g).view(np.uint8) == unpack(r[k])).all(), (r["id"], k)
