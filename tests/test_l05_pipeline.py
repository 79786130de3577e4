"""h100lab.tma.pipeline: TMA operations in the simulator, the copy stream, multicast."""
import pytest

from h100lab import tma
from h100lab.sim.machine import GPU
from h100lab.tma import pipeline as P


def tmap(rows=256, box_rows=64):
    return tma.encode_tiled("BFLOAT16", 2, 1 << 20, [64, rows], [128], [64, box_rows], [1, 1], swizzle="128B")


def test_tensor_load_completes_the_barrier_with_tx_bytes():
    gpu = GPU(num_sms=1)
    tm = tmap()
    seen = {}

    def prog(w):
        yield w.init(0, 1, "full")
        yield w.arrive_expect_tx(0, tm.tx_bytes)
        yield P.tensor_load(w, tm, [0, 0], 1024, 0)
        seen["phase"] = yield w.wait(0, 0)
        seen["t"] = w.now

    gpu.sms[0].spawn("producer", prog)
    gpu.run()
    t = gpu.timing
    assert seen["phase"] == 0
    assert seen["t"] >= t.tma_issue_ns + tm.tx_bytes / t.tma_bytes_per_ns + t.tma_latency_ns
    ops = [r.op for r in gpu.trace]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile" in ops


def test_tensor_ops_check_alignment():
    gpu = GPU(num_sms=1)
    tm = tmap()

    def prog(w):
        yield w.init(0, 1)
        yield P.tensor_load(w, tm, [0, 0], 1024 + 16, 0)

    gpu.sms[0].spawn("p", prog)
    with pytest.raises(Exception, match="128-byte"):
        gpu.run()


@pytest.mark.parametrize("x,ok", [(0, True), (8, True), (4, False), (1, False), (-8, True), (-4, False)])
def test_simulated_tensor_load_applies_the_16_byte_granule_rule(x, ok):
    # one rule, one place: the simulator's load faults exactly where h100lab.tma.load (and the H200) fault
    tm = tmap()
    g = __import__("numpy").zeros((256, 64), dtype=__import__("numpy").uint16)
    try:
        tma.load(tm, g, [x, 0])
        ref = None
    except tma.TmaFault as exc:
        ref = exc.error
    assert (ref is None) == ok
    gpu = GPU(num_sms=1)

    def prog(w):
        yield w.init(0, 1)
        yield w.arrive_expect_tx(0, tm.tx_bytes)
        yield P.tensor_load(w, tm, [x, 0], 1024, 0)
        yield w.wait(0, 0)

    gpu.sms[0].spawn("p", prog)
    if ok:
        gpu.run()
    else:
        with pytest.raises(Exception, match="16-byte granule") as e:
            gpu.run()
        assert isinstance(e.value.__cause__, tma.TmaFault)
        assert e.value.__cause__.error == ref == "CUDA_ERROR_ILLEGAL_INSTRUCTION"


def test_simulated_tensor_store_and_async_forms_check_at_issue():
    from h100lab.sync.smem import SharedMemory
    tm = tmap()
    gpu = GPU(num_sms=1)

    def prog(w):
        yield P.tensor_store(w, tm, [4, 0], 1024)

    gpu.sms[0].spawn("p", prog)
    with pytest.raises(Exception, match="granule") as e:
        gpu.run()
    assert isinstance(e.value.__cause__, tma.TmaFault)
    gpu = GPU(num_sms=1)

    def neg(w):
        yield P.tensor_store(w, tm, [0, -64], 1024)

    gpu.sms[0].spawn("p", neg)
    with pytest.raises(Exception, match="negative"):
        gpu.run()
    # the asynchronous form of h100lab.tma faults when it is issued, not when its deferred copy runs
    s = SharedMemory(64 * 1024)
    from h100lab.sync.mbarrier import MBarrier
    MBarrier(s, 0).init(1)
    g = tma.GlobalMemory.holding(__import__("numpy").zeros(256 * 128, __import__("numpy").uint8))
    tm2 = tma.encode_tiled("BFLOAT16", 2, g.base, [64, 256], [128], [64, 64], [1, 1], swizzle="128B")
    with pytest.raises(tma.TmaFault, match="granule"):
        tma.tensor_load(tm2, g, [2, 0], s, 1024, 0, deferred=True)


def test_copy_stream_more_stages_never_slower_on_one_sm():
    bws = [P.simulate_copy_stream(16384, s, ctas=1, tiles_per_cta=16).bandwidth_gbps for s in (1, 2, 4)]
    assert bws[0] < bws[1] <= bws[2] * 1.0001
    many = P.simulate_copy_stream(32768, 4, ctas=132, tiles_per_cta=6)
    from h100lab.sim.timing import default_timing
    assert many.bandwidth_gbps <= default_timing().hbm_bytes_per_ns * 1.0001
    assert many.copied_bytes == 132 * 6 * 32768 and 0 < many.hbm_utilization <= 1
    r = P.simulate_copy_stream(16384, 2, ctas=1, tiles_per_cta=4, trace=True)
    assert any(rec.op.startswith("cp.async.bulk.global") for rec in r.trace)
    with pytest.raises(ValueError):
        P.simulate_copy_stream(16384, 0)
    with pytest.raises(ValueError, match="227 KB"):
        P.simulate_copy_stream(65536, 4)
    assert P.copy_stream_layout(2, 3000)["buffers"] == [1024, 1024 + 3072]


def test_multicast_reads_once_and_delivers_to_each_receiver():
    tm = tmap()
    mc = P.simulate_multicast(4, 0b1111, tm, iters=6, l2=tma.L2Cache(1 << 24))
    uc = P.simulate_multicast(4, 0b1111, tm, iters=6, multicast=False, l2=tma.L2Cache(1 << 24))
    assert mc.delivered_bytes == uc.delivered_bytes == 4 * 6 * tm.tx_bytes
    assert mc.l2_request_bytes == 6 * tm.tx_bytes and uc.l2_request_bytes == 4 * 6 * tm.tx_bytes
    assert mc.saving == pytest.approx(0.75) and uc.saving == 0
    assert mc.hbm_bytes == uc.hbm_bytes          # with L2, repeated requests hit: HBM sees each tile once
    lanes = {r.lane for r in mc.trace}
    assert any("consumer" in ln for ln in lanes)
    odd = P.simulate_multicast(4, 0b1010, tm, iters=3, issuer=0)
    assert odd.receivers == (1, 3) and odd.hbm_bytes == 3 * tm.tx_bytes
    with pytest.raises(ValueError):
        P.simulate_multicast(4, 0b1, tm, issuer=5)
    with pytest.raises(tma.BulkCopyError):
        P.simulate_multicast(2, 0b100, tm)


# ---- the memory model and its calibration on l05/copy_bandwidth ------------------------------------------
def _table():
    from h100lab.sim.timing import H200_ESTIMATES
    return H200_ESTIMATES.with_values(hbm_bytes_per_ns=4000.0, dram_latency_ns=150.0, tma_latency_ns=220.0,
                                      tma_bytes_per_ns=170.0)


@pytest.mark.parametrize("tile,ctas,per_sm", [(16384, 132, 1), (32768, 264, 2), (65536, 132, 1)])
def test_single_buffer_copy_stream_matches_its_closed_form(tile, ctas, per_sm):
    from h100lab.sim.timing import copy_stream_period
    t = _table()
    a = P.simulate_copy_stream(tile, 1, ctas=ctas, ctas_per_sm=per_sm, tiles_per_cta=20, timing=t)
    b = P.simulate_copy_stream(tile, 1, ctas=ctas, ctas_per_sm=per_sm, tiles_per_cta=40, timing=t)
    assert (b.total_ns - a.total_ns) / 20 == pytest.approx(copy_stream_period(tile, ctas, t), rel=1e-6)
    with pytest.raises(ValueError, match="not the bottleneck"):
        copy_stream_period(tile, 1, t)


def test_symmetric_shortcut_is_exact_and_memory_is_shared():
    t = _table()
    for per_sm in (1, 2):
        fast = P.simulate_copy_stream(16384, 2, ctas=8 * per_sm, ctas_per_sm=per_sm, tiles_per_cta=6, timing=t)
        full = P.simulate_copy_stream(16384, 2, ctas=8 * per_sm, ctas_per_sm=per_sm, tiles_per_cta=6, timing=t,
                                      symmetric=False)
        assert fast.total_ns == pytest.approx(full.total_ns) and fast.copied_bytes == full.copied_bytes
    # many stages: the memory is the limit, read + written bytes at the table's bandwidth
    r = P.simulate_copy_stream(32768, 4, ctas=132, tiles=132 * 40, timing=t)
    assert r.bandwidth_gbps == pytest.approx(4000, rel=0.03) and r.bandwidth_gbps <= 4000 * 1.0001
    # the grid-stride remainder: the busiest CTA sets the time
    odd = P.simulate_copy_stream(32768, 4, ctas=132, tiles=132 * 40 + 1, timing=t)
    assert odd.tiles_per_cta == 41 and odd.total_ns > r.total_ns
    with pytest.raises(ValueError, match="per SM"):
        P.simulate_copy_stream(16384, 2, ctas=3, ctas_per_sm=2)
    with pytest.raises(ValueError, match="227 KB"):
        P.simulate_copy_stream(65536, 2, ctas=264, ctas_per_sm=2)


def test_ctas_of_one_sm_share_its_tma_unit():
    gpu = GPU(_table(), num_sms=4, ctas_per_sm=2, hbm_sharers=8)
    assert gpu.sms[0].tma is gpu.sms[1].tma and gpu.sms[1].tma is not gpu.sms[2].tma
    assert gpu.sms[0].hbm is not gpu.sms[1].hbm and gpu.sms[0].hbm.bandwidth == pytest.approx(500)
    with pytest.raises(ValueError):
        GPU(_table(), num_sms=3, ctas_per_sm=2)
    with pytest.raises(ValueError, match="at least"):
        GPU(_table(), num_sms=4, hbm_sharers=2)


def _synthetic_copy_records(truth):
    """What l05/copy_bandwidth would hold if the silicon were the simulator with table ``truth``."""
    from h100lab.measure.l05 import COPY_COLS, COPY_ROWS, copy_configs
    from h100lab.validation.l05 import predict_bandwidth

    nbytes = COPY_ROWS * COPY_COLS * 4
    recs = []
    for c in copy_configs():
        r = dict(kind="tma_copy", **c, grid=132 * c["ctas_per_sm"], bytes=nbytes, correct=True)
        g = predict_bandwidth(r, truth)
        recs.append(dict(r, gbps=g, median_ms=2 * nbytes / g / 1e6))
    recs.append(dict(kind="device_copy", blocks_per_sm=4, threads=256, grid=528, bytes=nbytes, gbps=3900.0,
                     median_ms=2 * nbytes / 3900 / 1e6))
    return recs


def test_calibrate_hbm_recovers_the_memory_and_dram_latency():
    from h100lab.sim.timing import H200_ESTIMATES, calibrate_hbm
    from h100lab.validation.l05 import check_copy_bandwidth, is_copy_calibration

    truth = _table()
    recs = _synthetic_copy_records(truth)
    base = H200_ESTIMATES.with_values(tma_latency_ns=220.0, tma_bytes_per_ns=170.0)
    cal = calibrate_hbm(recs, base)
    assert cal.hbm_bytes_per_ns == pytest.approx(4000, rel=0.01)
    assert cal.dram_latency_ns == pytest.approx(150, abs=15)
    assert cal.params["hbm_bytes_per_ns"].status == "calibrated" and "l05/copy_bandwidth" in \
        cal.params["dram_latency_ns"].source
    res = check_copy_bandwidth(recs, timing=cal)
    held = [r for r in recs if not is_copy_calibration(r)]
    assert res.ok and res.cases == len(held) > 0 and "largest error" in res.note and "held out" in res.note
    # only held-out records are checked: the single-buffer copies calibrate, every other one is compared
    assert {r["stages"] for r in recs if is_copy_calibration(r)} == {1} and all(r["kind"] != "tma_copy" or
                                                                              r["stages"] > 1 for r in held)
    slow = [dict(r, gbps=r["gbps"] * (0.5 if r["kind"] == "tma_copy" and r["stages"] == 2 else 1)) for r in recs]
    assert not check_copy_bandwidth(slow, timing=cal).ok
    # calibrated on its own subset, a record slowed outside it is a miss; inside it, it moves the calibration
    assert not check_copy_bandwidth(slow).ok
    with pytest.raises(ValueError, match="needs"):
        calibrate_hbm([dict(kind="memcpy", gbps=1.0)], base)


def test_predict_bandwidth_rules():
    from h100lab.validation.l05 import predict_bandwidth
    t = _table()
    assert predict_bandwidth(dict(kind="device_copy"), t) == 4000.0 == predict_bandwidth(dict(kind="memcpy"), t)
    with pytest.raises(ValueError, match="not a copy"):
        predict_bandwidth(dict(kind="round_trip"), t)
    with pytest.raises(ValueError, match="less than one"):
        predict_bandwidth(dict(kind="tma_copy", tile_bytes=16384, stages=2, ctas_per_sm=1, bytes=16), t)
    r = dict(kind="tma_copy", tile_bytes=65536, stages=1, ctas_per_sm=1)      # grid and bytes as measured
    assert 0 < predict_bandwidth(r, t) < 4000
