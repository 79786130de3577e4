"""Lesson 5 measurement and validation: case lists, model predictions, checks; GPU parts marked."""
import numpy as np
import pytest

from h100lab.measure import l05 as m
from h100lab.measure.l04 import pack, unpack
from h100lab.validation import all_checks
from h100lab.validation import l05 as v


def test_case_lists():
    cfg = m.copy_configs()
    assert {c["stages"] for c in cfg} == {1, 2, 3, 4, 6} and {c["ctas_per_sm"] for c in cfg} == {1, 2}
    assert all(c["ctas_per_sm"] * (c["stages"] * -(-c["tile_bytes"] // 1024) * 1024 + 2048) <= 228 * 1024 for c in cfg)
    assert len(m.copy_configs(quick=True)) < len(cfg)
    rt = m.round_trip_cases()
    assert all(c["size"] % 16 == 0 and c["dst_offset"] % 16 == 0 and c["src_offset"] % 16 == 0 for c in rt)
    mc = m.multicast_cases()
    assert {c["cluster"] for c in mc} == {2, 4, 8, 16} and any(not c["mask"] >> c["issuer"] & 1 for c in mc)
    assert {c["use_tensor"] for c in mc} == {0, 1}
    assert [c["code"] for c in m.bulk_reduce_cases()] == list(range(16))


def test_model_predictions():
    c = m.round_trip_cases()[7]
    out = m.model_round_trip(c)
    src = np.random.default_rng(c["seed"]).integers(0, 256, c["src_offset"] + c["size"], dtype=np.uint8)
    assert np.array_equal(out, src[c["src_offset"]:])
    imgs, status = m.model_multicast(next(x for x in m.multicast_cases() if x["id"] == "mc4_0xa_i0_raw"))
    assert status == [2, 1, 2, 1]
    assert (imgs[0] == m.SENTINEL).all() and not (imgs[1] == m.SENTINEL).all()
    assert np.array_equal(imgs[1], imgs[3])
    red = next(x for x in m.bulk_reduce_cases() if x["id"] == "bred_add_f32")
    before, src = m.reduce_inputs(red)
    after = m.model_bulk_reduce(red).view(np.float32)
    assert np.allclose(after, before.view(np.float32) + src.view(np.float32))


def fake(records_kind):
    recs = []
    if records_kind == "bulk":
        for c in m.round_trip_cases()[:4]:
            recs.append(dict(kind="round_trip", **c, completed=True, out=pack(m.model_round_trip(c))))
        for c in m.multicast_cases()[:3] + m.multicast_cases()[-2:]:
            imgs, st = m.model_multicast(c)
            recs.append(dict(kind="multicast", **c, status=st, images=[pack(x) for x in imgs]))
        for c in m.bulk_reduce_cases()[:4]:
            recs.append(dict(kind="bulk_reduce", **c, after=pack(m.model_bulk_reduce(c))))
    return recs


def test_checks_agree_and_catch_differences():
    recs = fake("bulk")
    res = v.run_on("l05/bulk", recs)
    assert res.ok and res.cases == len(recs)
    bad_status = dict(recs[5], status=[1] * recs[5]["cluster"])       # mask 0b10: rank 0 must not complete
    assert v.check_multicast([bad_status]).mismatches == 1
    img = unpack(recs[6]["images"][1])
    img[-1] ^= 1
    assert v.check_multicast([dict(recs[6], images=[recs[6]["images"][0], pack(img)] + recs[6]["images"][2:])]
                             ).mismatches == 1
    assert v.check_round_trips([dict(recs[0], completed=False)]).mismatches == 1
    a = unpack(recs[-1]["after"])
    a[0] ^= 1
    assert v.check_bulk_reduce([dict(recs[-1], after=pack(a))]).mismatches == 1
    bw = [dict(kind="tma_copy", box_x=64, box_y=64, stages=2, ctas_per_sm=1, correct=True),
          dict(kind="device_copy", gbps=1.0)]
    assert v.run_on("l05/copy_bandwidth", bw).ok
    assert v.check_copy_output([dict(bw[0], correct=False)]).mismatches == 1
    # + the timing model's checks on l05/ceilings (validation.timing, .micro) and the copy goal (validation.micro)
    assert len([c for c in all_checks() if c.lesson == 5
                and c.dataset not in ("l05/ceilings", "l05/copy_race2_b", "l05/copy_race2_d")]) == 5


def test_simulated_bandwidth_is_bounded_by_hbm():
    from h100lab.sim.timing import default_timing
    from h100lab.validation.l05 import predict_bandwidth
    cfg = m.copy_configs()[0]
    rec = dict(cfg, kind="tma_copy", grid=8 * cfg["ctas_per_sm"], bytes=32 * cfg["tile_bytes"])
    bw = predict_bandwidth(rec, default_timing())
    assert 0 < bw <= default_timing().hbm_bytes_per_ns + 1e-6


def test_kernels_compile_for_sm90a():
    from h100lab import cuda
    reason = cuda.compiler_unavailable_reason()
    if reason:
        pytest.skip(reason)
    p = cuda.compile_kernel("l05_tma_copy")
    assert "cp.async.bulk.wait_group.read" in p.ptx and "tma_copy" in p.ptx and "device_copy" in p.ptx
    q = cuda.compile_kernel("l05_bulk")
    assert "multicast::cluster" in q.ptx and "cp.reduce.async.bulk.global" in q.ptx


@pytest.mark.gpu
def test_gpu_bulk_matches_the_model():
    recs = m.measure_bulk()
    res = v.run_on("l05/bulk", recs)
    assert res.ok, res.examples


@pytest.mark.gpu
def test_gpu_tma_copy_is_correct():
    recs = m.measure_copy(m.copy_configs(quick=True)[:2], repeats=2)
    assert v.check_copy_output(recs).ok


def test_hardware_report_and_benchmark_read_datasets(tmp_path, monkeypatch):
    import importlib.util
    from pathlib import Path

    from h100lab import data
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    assert v.hardware_report(live=False)["source"] is None
    meta = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580", "cuda": "13.0", "date": "2026-01-01",
            "command": "python -m h100lab.measure.l05"}
    data.write("l05/bulk", fake("bulk"), meta)
    bw = [dict(kind="tma_copy", **c, correct=True, gbps=3000.0 + 100 * c["stages"], bytes=m.COPY_ROWS * m.COPY_COLS * 4,
               median_ms=1.0,
               min_ms=1.0) for c in m.copy_configs(quick=True)]
    bw += [dict(kind="device_copy", gbps=3300.0), dict(kind="memcpy", gbps=3100.0)]
    data.write("l05/copy_bandwidth", bw, meta)
    hw = v.hardware_report(live=False)
    assert hw["source"] == "dataset" and all(hw[k].ok for k in ("round_trips", "multicast", "reduce", "copy"))
    spec = importlib.util.spec_from_file_location("bench_l04", Path(__file__).parent.parent / "benchmarks" / "bench_l04.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.bench_bandwidth()
    assert out["device_copy"] == 3300.0 and out["memcpy"] == 3100.0 and len(out["rows"]) == len(bw) - 2
    assert max(r["fraction"] for r in out["rows"]) > 1
    ld = bench.bench_load(1)
    assert ld["tile_ms"] > 0 and ld["reference_ms"] > 0 and "INVALID_VALUE" in ld["one 256-wide box"]


def test_max_dynamic_smem_leaves_room_for_static_shared_memory():
    # measured on an H200: asking cuFuncSetAttribute for 232448 B of dynamic shared memory for a kernel with 64 B
    # of static mbarriers returned CUDA_ERROR_INVALID_VALUE; static + dynamic must fit sharedMemPerBlockOptin
    props = {"sharedMemPerBlockOptin": 232448}
    assert m.max_dynamic_smem(props, 64) == 232448 - 64 and m.max_dynamic_smem(props, 0) == 232448
    assert m.max_dynamic_smem({}, 0) == 227 * 1024
    with pytest.raises(ValueError, match="sharedMemPerBlockOptin"):
        m.max_dynamic_smem(props, 232449)
    pitch = lambda c: -(-c["tile_bytes"] // 1024) * 1024
    assert all(c["stages"] * pitch(c) + 1024 <= m.max_dynamic_smem(props, 64) for c in m.copy_configs())
