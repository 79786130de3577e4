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


def test_every_type_combination_has_ten_thousand_exact_outputs():
    """Issue 15's bar: at least 10,000 random wgmma outputs per type combination (operand location, D type,
    A/B types and immediates as the probe's form names them), every one equal to the model's."""
    import collections

    recs = _records("l06/numerics")
    counts, bad = collections.Counter(), collections.Counter()
    for r in recs:
        parts = r["form"].split("_")                       # e.g. ss_n64_f32_bf16 → ss_f32_bf16
        combo = "_".join([parts[0]] + parts[2:])
        n, b, _ = v.compare_record(r) if hasattr(v, "compare_record") else (None, None, None)
        if n is None:
            res = v.check([r], per_value=True)
            n, b = res.cases, res.mismatches
        counts[combo] += n
        bad[combo] += b
    assert len(counts) >= 20
    assert min(counts.values()) >= 10_000, sorted(counts.items(), key=lambda kv: kv[1])[:3]
    assert not +bad, dict(+bad)
