"""Lesson 1's kernels: the roofline kernel and the latency/bandwidth ladder — the model's side
(h100lab.memory.ladder), the case lists and checks of the measurement, the kernels on the emulator, and, on a
Hopper GPU, the same launches on the GPU bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab.measure import l01 as m
from h100lab.memory import ladder
from h100lab.specs import H100_SXM, H200_SXM
from h100lab.validation import l01 as v


def _emu():
    from h100lab import emu

    if not emu.available():
        pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}")
    return emu


# ---------------------------------------------------------------------------------------------------------
# model side


def test_levels_follow_the_spec():
    lv = {x.name: x for x in ladder.levels(H200_SXM)}
    assert list(lv) == ["registers", "shared memory", "L1", "L2", "HBM"]
    assert lv["shared memory"].bandwidth == pytest.approx(132 * 128 * 1.98e9)
    assert lv["registers"].bandwidth == pytest.approx(132 * 128 * 12 * 1.98e9)
    assert lv["HBM"].bandwidth == H200_SXM.hbm_bandwidth and lv["L2"].capacity_gpu == 60 * 2**20
    assert lv["L1"].bandwidth is None and lv["L2"].bandwidth is None
    assert ladder.levels(H100_SXM, clock_mhz=1000)[1].bandwidth == pytest.approx(132 * 128 * 1e9)
    assert ladder.LEVELS == ladder.levels()


@pytest.mark.parametrize("slots,stride", [(1, 16), (2, 1), (97, 16), (1000, 4)])
def test_chase_chain_is_one_cycle_through_every_slot(slots, stride):
    chain = ladder.chase_chain(slots, stride, seed=3)
    assert chain.size == slots * stride
    order = ladder.chase_order(chain)
    assert len(order) == slots and sorted(order.tolist()) == [s * stride for s in range(slots)]
    assert int(chain[order[-1]]) == 0
    assert np.count_nonzero(chain) == max(0, slots - 1)   # slot 0's predecessor points back to 0
    assert ladder.chase_order(chain, 0, 3 * slots)[slots] == 0


def test_chase_chain_rejects_what_cannot_be_built():
    with pytest.raises(ValueError, match="at least one slot"):
        ladder.chase_chain(0)
    with pytest.raises(ValueError, match="do not fit"):
        ladder.chase_chain(1 << 20, 1 << 13, dtype=np.uint32)


def test_littles_law():
    assert ladder.littles_law(4.5e12, 600e-9) == pytest.approx(2.7e6)
    f = ladder.bytes_in_flight(4.5e12, 600e-9, sms=132)
    assert f["per_sm"] == pytest.approx(2.7e6 / 132) and f["float4_loads_per_sm"] == pytest.approx(f["per_sm"] / 16)
    bw = ladder.bandwidth_from_inflight([0, 1e6, 1e8], 1e-6, 4e12)
    assert bw.tolist() == [0.0, 1e12, 4e12]
    assert ladder.bandwidth_from_inflight(1e6, 1e-6, 4e12) == 1e12
    with pytest.raises(ValueError):
        ladder.littles_law(-1, 1)
    with pytest.raises(ValueError):
        ladder.bandwidth_from_inflight(1, 0, 1)


# ---------------------------------------------------------------------------------------------------------
# measurement case lists and checks


def test_ladder_and_roofline_cases():
    cases = m.ladder_cases()
    kinds = {(c["kind"], c["kernel"]) for c in cases}
    assert ("latency", "chase_ca") in kinds and ("bandwidth", "stream_read") in kinds
    sizes = [c["bytes"] for c in cases if c["kernel"] == "chase_cg"]
    assert min(sizes) == 4096 and max(sizes) == 1 << 30 and 4 << 20 in sizes
    assert all(r[2] is None or r[2] in sizes for r in v.LADDER_RUNGS)
    assert len(m.ladder_cases(quick=True)) < len(cases)
    rc = m.roofline_cases()
    assert [c["k"] for c in rc] == list(m.ROOFLINE_K)
    assert all(c["intensity"] == c["k"] / 4 and c["flops"] == 2 * c["k"] * c["floats"] for c in rc)
    assert m.roofline_expected([1.0], 0) == pytest.approx([1.0])
    assert {"ladder", "roofline"} <= set(m.STEPS)


def _ladder_records(**change):
    lat = {"registers": 4.1, "shared memory": 30.0, "L1": 38.0, "L2": 270.0, "HBM": 700.0}
    lat.update(change)
    recs = []
    for level, kernel, size in v.LADDER_RUNGS:
        recs.append({"kind": "latency", "level": level, "kernel": kernel, "bytes": size or 0, "correct": True,
                     "cycles_per_step": lat[level], "ns_per_step": lat[level] / 1.98})
    recs += [{"kind": "bandwidth", "level": "shared memory", "gbps": 30000.0},
             {"kind": "bandwidth", "level": "L2", "gbps": 9000.0}, {"kind": "bandwidth", "level": "HBM", "gbps": 4400.0}]
    return recs


def test_check_ladder():
    assert v.check_ladder(_ladder_records()).ok
    bad = v.check_ladder(_ladder_records(L2=20.0))
    assert not bad.ok and "L1" in bad.examples[0]["why"]
    recs = _ladder_records()
    recs[-1]["gbps"] = 10000.0                # HBM above L2 and above the datasheet
    assert v.check_ladder(recs).mismatches == 2
    recs = _ladder_records()
    recs[0]["correct"] = False
    assert not v.check_ladder(recs).ok
    rows = v.ladder_rows(_ladder_records(), roofline=[{"k": 1024, "tflops": 60.0, "correct": True}])
    assert [r["level"] for r in rows] == ["registers", "shared memory", "L1", "L2", "HBM"]
    assert rows[0]["bandwidth, H200 (B/s)"] == pytest.approx(60e12 / 2 * 12)
    assert rows[4]["latency (cycles)"] == 700.0


def test_check_roofline_kernels():
    def rec(k, ms, clock=1.98):
        n = m.ROOFLINE_FLOATS
        return {"k": k, "floats": n, "bytes": 8 * n, "flops": 2 * k * n, "intensity": k / 4, "median_ms": ms,
                "gbps": 8 * n / ms / 1e6, "tflops": 2 * k * n / ms / 1e9, "clock_ghz": clock, "correct": True}
    copy_floor = 8 * m.ROOFLINE_FLOATS / 4.8e12 * 1e3
    math_floor = 2 * 1024 * m.ROOFLINE_FLOATS / (132 * 256 * 1.98e9) * 1e3
    good = [rec(0, copy_floor * 1.1), rec(1024, math_floor * 1.05)]
    assert v.check_roofline_kernels(good).ok
    rows = v.roofline_rows(good)
    assert rows[0]["bound"] == "memory" and rows[1]["bound"] == "compute"
    assert rows[1]["H200 / model"] == pytest.approx(1.05)
    assert not v.check_roofline_kernels([rec(0, copy_floor * 0.5), rec(1024, math_floor)]).ok   # beats the roof
    assert not v.check_roofline_kernels([rec(0, copy_floor * 3), rec(1024, math_floor)]).ok     # far below it


def test_committed_ladder_datasets_pass_their_checks():
    from h100lab import data

    for name, check in (("l01/latency_ladder", v.check_ladder), ("l01/roofline_kernels", v.check_roofline_kernels)):
        if not data.available(name):
            pytest.skip(f"{name} not measured yet")
        res = check(data.load(name).records)
        assert res.ok, res
    rep = v.ladder_report()
    assert rep["source"] == "dataset" and len(rep["rows"]) == 5


# ---------------------------------------------------------------------------------------------------------
# the kernels on the emulator


def test_roofline_kernel_on_the_emulator_moves_and_computes_what_it_says():
    emu = _emu()
    k = emu.compile_kernel("l01_roofline").function("fma_stream")
    n4, kk = 512, 8
    x = np.random.default_rng(1).uniform(-1, 1, 4 * n4).astype(np.float32)
    dx, dy, clk = emu.to_device(x), emu.zeros(4 * n4, np.float32), emu.zeros(2, np.uint64)
    st = emu.launch(k, 4, 128, dx, dy, np.int64(n4), np.int32(kk), np.float32(m.ROOFLINE_A), np.float32(m.ROOFLINE_B), clk)
    assert np.allclose(dy.to_host(), m.roofline_expected(x, kk), rtol=1e-5, atol=1e-6)
    assert st.by_opcode["fma.rn.f32"] * 32 == 4 * n4 * kk          # one FMA per element per round
    moved = 32 * (st.global_sectors - 2)                             # minus the two clock stores
    assert moved == 8 * 4 * n4                                       # 8 bytes per element, perfectly coalesced


def test_ladder_kernels_on_the_emulator_follow_their_chains():
    emu = _emu()
    p = emu.compile_kernel("l01_latency_ladder")
    chain = ladder.chase_chain(64, 16, seed=5)
    buf = emu.to_device(chain)
    emu.launch(p.function("chase_relocate"), 2, 64, buf, np.int64(chain.size))
    cyc, sink = emu.zeros(2, np.int64), emu.zeros(1, np.uint64)
    st = emu.launch(p.function("chase_cg"), 1, 1, buf, np.int32(10), np.int32(50), cyc, sink)
    assert int(sink.to_host()[0]) // 8 == ladder.chase_order(chain, 0, 61)[60]
    assert st.by_opcode["ld.global.cg.u64"] == 60
    words = ladder.chase_chain(128, 1, seed=2, dtype=np.uint32)
    su = emu.zeros(1, np.uint32)
    emu.launch(p.function("chase_shared"), 1, 64, emu.to_device(words), np.int32(128), np.int32(128), np.int32(7),
               cyc, su, shared_mem=512)
    assert int(su.to_host()[0]) == 4 * ladder.chase_order(words, 0, 8)[7]
    st = emu.launch(p.function("stream_shared"), 1, 128, np.int32(1), emu.zeros(128, np.float32))
    _, _, reqs, waves = next(x for x in st.shared_by_pc if "ld.shared.v4" in x[1])
    assert waves == 4 * reqs                                         # 512 B per warp: four wavefronts, no conflict


# ---------------------------------------------------------------------------------------------------------
# the same launches on a Hopper GPU


@pytest.mark.gpu
def test_roofline_kernel_is_bit_identical_on_the_gpu():
    from h100lab import cuda, emu

    x = np.random.default_rng(4).uniform(-1, 1, 4096).astype(np.float32)
    outs = []
    for be in (emu, cuda):
        k = be.compile_kernel("l01_roofline").function("fma_stream")
        dy = be.zeros(4096, np.float32)
        be.launch(k, 4, 128, be.to_device(x), dy, np.int64(1024), np.int32(37), np.float32(0.999), np.float32(0.001),
                  be.zeros(2, np.uint64))
        be.synchronize()
        outs.append(dy.to_host())
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.gpu
def test_chase_ends_where_the_emulator_says_on_the_gpu():
    from h100lab import cuda, emu

    chain = ladder.chase_chain(300, 16, seed=9)
    ends = []
    for be in (emu, cuda):
        p = be.compile_kernel("l01_latency_ladder")
        buf = be.to_device(chain)
        be.launch(p.function("chase_relocate"), 4, 256, buf, np.int64(chain.size))
        sink = be.zeros(1, np.uint64)
        be.launch(p.function("chase_ca"), 1, 1, buf, np.int32(300), np.int32(77), be.zeros(2, np.int64), sink)
        be.synchronize()
        ends.append(int(sink.to_host()[0]))
    assert ends[0] == ends[1]
