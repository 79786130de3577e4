"""Lesson 1's figures and small models behind them: the SM diagram, the overlap schedule and its timelines, the
roofline-kernel, ladder, chase and Little's-law plots — and the emulator's answer to cudaGetDeviceProperties."""
from __future__ import annotations

import pytest

from h100lab.sim import overlap
from h100lab.specs import H100_SXM, H200_SXM


def test_overlap_schedule_serial_and_pipelined():
    tr = overlap.schedule(400, 700, tiles=5, buffers=1)
    assert len(tr) == 10 and overlap.makespan(tr) == pytest.approx(5 * 1100)
    copies = [r for r in tr if r.lane == "copy engine"]
    computes = [r for r in tr if r.lane == "SM"]
    assert all(c.t0 >= p.t1 for p, c in zip(computes, copies[1:]))          # one buffer: copy waits for compute
    tr2 = overlap.schedule(400, 700, tiles=5, buffers=2)
    assert overlap.makespan(tr2) == pytest.approx(400 + 5 * 700)            # the copies hide behind compute
    assert overlap.period(400, 700, 1) == 1100 and overlap.period(400, 700, 2) == 700
    assert overlap.period(2000, 700, 2) == pytest.approx(1350)               # latency-bound with two buffers
    assert overlap.period(2000, 700, 4) == 700
    assert overlap.makespan([]) == 0.0
    with pytest.raises(ValueError):
        overlap.schedule(0, 0, 3)
    with pytest.raises(ValueError):
        overlap.schedule(1, 1, 0)


def test_every_compute_starts_after_its_copy_arrived():
    for b in (1, 2, 3):
        tr = overlap.schedule(900, 300, tiles=7, buffers=b)
        cp = [r for r in tr if r.lane == "copy engine"]
        cm = [r for r in tr if r.lane == "SM"]
        assert all(m.t0 >= c.t1 for c, m in zip(cp, cm))
        assert all(b2.t0 >= a.t1 for a, b2 in zip(cm, cm[1:]))
        # buffer reuse: copy i starts only after compute i - b finished
        assert all(cp[i].t0 >= cm[i - b].t1 for i in range(b, len(cp)))


def _texts(fig):
    return " ".join(t.get_text() for ax in fig.get_axes() for t in ax.texts + [ax.title])


def test_draw_sm_shows_the_spec():
    from h100lab.viz.sm import draw_sm

    fig = draw_sm(H100_SXM)
    text = _texts(fig)
    assert "16,384 × 32 bit" in text and "TMA" in text and "sub-partition 3" in text and "H100 SXM5" in text


def test_kernel_figures_draw():
    from h100lab.viz import ladder as vl

    rows = [{"K": k, "intensity (FLOP/B)": k / 4, "H200 TFLOP/s": min(60, k), "H200 TB/s": 3.5} for k in (0, 4, 64)]
    fig = vl.draw_roofline_kernel(rows, H200_SXM, emulator=[(2.0, "emulator")])
    assert len(fig.get_axes()[0].lines) >= 2
    fig = vl.draw_overlap(400, 700, tiles=3, buffers=(1, 2))
    assert len(fig.get_axes()) == 2 and "model 700 ns per tile" in fig.get_axes()[1].get_title()
    lrows = [{"level": n, "latency (cycles)": c, "latency (ns)": c / 2, "bandwidth, model (B/s)": m,
              "bandwidth, H200 (B/s)": h} for n, c, m, h in
             (("registers", 4, 4e14, 3.5e14), ("shared memory", 23, 3.3e13, 3.2e13), ("L1", 32, None, None),
              ("L2", 281, None, 7e12), ("HBM", 654, 4.8e12, 4.4e12))]
    assert len(vl.draw_ladder(lrows).get_axes()) == 2
    recs = [{"kind": "latency", "kernel": k, "bytes": 1 << p, "cycles_per_step": 30 + p} for k in ("chase_ca", "chase_cg")
            for p in range(12, 20)]
    assert len(vl.draw_chase(recs, 256 << 10, 60 << 20).get_axes()[0].lines) == 4   # two curves, two capacities
    fig = vl.draw_littles_law([(1e6, 1e12), (1e7, 4e12)], [(3e-7, "idle"), (1e-6, "loaded")], 4.5e12)
    assert len(fig.get_axes()[0].lines) == 3


def test_emulator_answers_device_properties_like_the_h200():
    from h100lab import data, emu

    p = emu.device_properties()
    assert (p["major"], p["minor"], p["multiProcessorCount"]) == (9, 0, 132)
    assert p["sharedMemPerBlockOptin"] == 232448 and p["clockRate"] == 1980000
    if data.available("l01/device_properties"):
        measured = data.load("l01/device_properties").records[0]
        assert {k: v for k, v in measured.items() if k != "name" and p.get(k) != v} == {}
    with pytest.raises(ValueError):
        emu.device_properties(1)
