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
