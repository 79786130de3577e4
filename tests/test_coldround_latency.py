"""Step ``coldround`` of the timing sweep (l03/tma_latency_cold): cold rounds on lines never read before in the run."""
import io

import pytest

from h100lab import data
from h100lab.measure import timing_sweep as ts

LINE = 128


def _lines(c, stride):
    """The 128-byte lines sample by sample of a plan entry (its sources), and the touched words' lines."""
    src, touch = [], []
    for i in range(c["iters"]):
        s = c["base"] + i * stride + c["align"]
        e = s + c["count"] * c["bytes"]
        src.append(set(range(s // LINE, (e - 1) // LINE + 1)))
        touch.append((c["base"] + i * stride + stride // 2) // LINE)
    return src, touch


@pytest.mark.parametrize("quick", [False, True])
def test_fresh_entries_never_read_a_line_twice_and_the_reread_pass_reuses_pass_0(quick):
    plan, stride, span = ts.coldround_plan(quick)
    cases = ts.coldround_cases(quick)
    assert len(plan) == (ts.COLD_PASSES + 1) * len(cases)
    seen: set = set()
    first = {}
    for c in plan:
        src, touch = _lines(c, stride)
        assert c["count"] * c["bytes"] + c["align"] <= stride // 2          # the touched word is no copied line
        assert not set(touch) & set().union(*src)
        assert c["base"] % stride == 0 and c["base"] + c["iters"] * stride <= span
        key = (c["bytes"], c["count"], c["align"])
        if c["fresh"]:
            assert not set().union(*src) & seen, f"pass {c['pass']} {key} re-reads a line"
            if c["pass"] == 0:
                first[key] = c["base"]
        else:
            assert c["pass"] == 1 and c["base"] == first[key]
        seen |= set().union(*src)
    assert [c["pass"] for c in plan] == sorted(c["pass"] for c in plan)


def test_the_cases_are_latency2s_rounds_plus_single_anchors():
    rounds = {(c["bytes"], c["count"], c["align"]) for c in ts.latency2_cases() if c["count"] > 1}
    cs = ts.coldround_cases()
    assert {(c["bytes"], c["count"], c["align"]) for c in cs if c["count"] > 1} == rounds
    assert {c["bytes"] for c in cs if c["count"] == 1} == {b for b, *_ in rounds}
    assert all(c["touch"] == 1 and c["iters"] == 64 for c in cs)
    assert ts.coldround_plan()[2] <= 24 << 30        # the buffer it allocates on a 141 GB H200


def test_step_on_the_fake_gpu_keeps_every_sample(tmp_path, monkeypatch):
    import test_timing_sweep as tts            # tests/ is on sys.path (pytest's prepend import mode)

    if tts._compiler_reason() is not None:
        pytest.skip(f"NVRTC: {tts._compiler_reason()}")
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    r = ts.Runner(tts.FakeGpu(), quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    assert ts.run(r, ("coldround",), tts.META) == {"coldround": "written"}
    recs = data.load("l03/tma_latency_cold").records
    plan, stride, _ = ts.coldround_plan(True)
    assert len(recs) == len(plan)
    for rec, c in zip(recs, plan):
        assert (rec["pass"], rec["fresh"], rec["bytes"], rec["count"]) == (c["pass"], c["fresh"], c["bytes"], c["count"])
        assert len(rec["cold_total_samples"]) == c["iters"] == rec["cold_total_cycles"]["n"]
        assert rec["cold_total_ns"] > rec["warm_total_ns"] > 0 and rec["ok"] and rec["block_bytes"] == stride
        assert "base" not in rec
