"""The timing sweep (h100lab.measure.timing_sweep) on the PTX emulator: the sweep's own Runner drives the real
kernels through :class:`h100lab.measure.emu_backend.EmuBackend` with the sweep's launch configurations, and every
data check the steps record passes, as it did on the H200 (the committed datasets data/l03/stream_sweep,
tma_latency, sync_cost, data/l05/ceilings, copy_tune, data/l01/cvt_bits).

Bandwidth and latency runs are reduced so the file stays fast with no GPU: a pretend device of 2 SMs, 256 KiB
buffers, one timed repeat, and subsets of the case lists (each a subset of the sweep's own quick lists, the same
case with fewer iterations, or the book's tensor copy with 2-row boxes instead of 64-row ones). Their data are
checked, their times are not: the emulator's clock counts instructions and ``EmuBackend.timed`` returns made-up
durations (documented there), so no timing field is compared with silicon.

Not runnable on the emulator, recorded as such: the cuBLAS GEMMs of step ceilings (PyTorch on a GPU) — the step
writes one ``gemm`` record with ``correct = False`` and the reason; the ``encode`` step's C driver call is
replaced by the lesson-4 model's verdict (compared with the silicon verdicts below).
"""
from __future__ import annotations

import io
import time

import numpy as np
import pytest

from h100lab import data
from h100lab.measure import timing_sweep as ts

emu = pytest.importorskip("h100lab.emu")
if not emu.available():  # pragma: no cover - NVRTC is a dependency
    pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}", allow_module_level=True)

from h100lab.measure.emu_backend import EmuBackend  # noqa: E402

META = {"gpu": "PTX emulator", "compute_capability": "9.0", "driver": "none", "cuda": "none", "date": "n/a",
        "command": "tests/test_timing_sweep_emu.py"}
SMS = 2
BUF_BYTES = 256 << 10        # source and destination buffers (the sweep's: 2 GiB; --quick: 256 MiB)


class CheckedEmu(EmuBackend):
    """EmuBackend that also checks the data of the launches whose step records no check (``correct = True``
    unconditionally on the GPU too): the vectorised copy copies exactly, the ld.global.v4 read streams read every
    16-byte vector of their range once (sectors × 32 B = bytes)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.checked: dict[str, int] = {}

    def launch(self, kernel, grid, block, *args, shared_mem=0, cluster=None):
        super().launch(kernel, grid, block, *args, shared_mem=shared_mem, cluster=cluster)
        st = self.launches[-1][3]
        if kernel.name == "device_copy":
            src, dst, n16 = args
            n = int(n16) * 16
            mem = self.emu.device().memory
            assert np.array_equal(mem.view(src.ptr, n), mem.view(dst.ptr, n)), "device_copy copied wrong bytes"
        elif kernel.name.startswith("read_v4"):
            assert st.global_sectors * 32 == int(args[1]) * 16, (kernel.name, st.global_sectors, int(args[1]))
        else:
            return
        self.checked[kernel.name] = self.checked.get(kernel.name, 0) + 1


def _every(a: np.ndarray, head: int, step: int) -> np.ndarray:
    return np.concatenate([np.arange(min(head, a.size)), np.arange(head, a.size, step)])


def _cvt_subset(full=ts.cvt_inputs):
    """The sweep's conversion inputs, thinned out: the f32 specials (NaN payloads, limits, ties) and every 41st of
    the rest; every 257th 16-bit pattern. (a, b) pairs stay the pairs of the full lists (silicon's inputs)."""
    def sub(seed: int = 11):
        out = {}
        for kind, (a, b) in full(seed).items():
            idx = _every(a, len(ts._F32_SPECIAL) if kind == "f32" else 0, 41 if kind == "f32" else 257)
            out[kind] = (a[idx], b[idx])
        return out
    return sub


#: the stream cases run here: (mode, scope, stages, tile KiB, CTAs per SM) for every mode — the whole pretend GPU
#: with 1 and 4 stages and 1 and 2 CTAs per SM, one CTA reading "DRAM" and one reading "L2"
STREAM_PICK = [("gpu", 4, 4, 2), ("gpu", 1, 16, 1), ("cta", 4, 4, 1), ("cta_warm", 1, 16, 1)]


def _stream_subset(full=ts.stream_cases):
    def sub(quick: bool = False):
        cases = full(True)
        out = [c for c in cases if (c["scope"], c["stages"], c["tile_bytes"] // 1024, c["ctas_per_sm"]) in STREAM_PICK]
        assert len(out) == 3 * len(STREAM_PICK)
        return out
    return sub


def _sync_subset(full=ts.sync_cases):
    """The quick sync cases (every launch shape: threads, cluster sizes, targets, remote/local, all SMs) with
    fewer iterations: 8 barriers, 100 chase links, one pass over the vectors."""
    def sub(quick: bool = False):
        its = {"bar_sync": 8, "cluster_barrier": 4, "dsmem_chase": 100, "dsmem_stream": 1}
        return [dict(c, iters=its[c["kind"]]) for c in full(True)]
    return sub


def _latency_subset(full=ts.latency_cases):
    def sub(quick: bool = False):
        return [dict(c, iters=min(c["iters"], 4 if c["kind"] != "mbarrier" else 64)) for c in full(True)]
    return sub


def _read_subset(full=ts.read_configs):
    def sub(quick: bool = False):
        return [c for c in full(True) if c["blocks_per_sm"] * c["threads"] <= 1024][:4] + \
            [c for c in full(True) if c["variant"] == "pf"][:1]
    return sub


def _emulated_clock(runner) -> None:
    """Runner.clock_ghz's calibration launch (bar_sync_cost on one warp) with 2 000 instead of 200 000 iterations:
    cycles / ns of the emulator's clock is the same at any length."""
    k = runner.gpu.function("l03_sync_cost", "bar_sync_cost")
    out = runner.gpu.zeros(2, np.uint64)
    runner.gpu.launch(k, 1, 32, np.int32(2000), out)
    o = runner.gpu.to_host(out).astype(np.float64)
    runner._clock = float(o[0] / o[1])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Every step on the emulator, once: outcomes, datasets (read back), the backends and the wall time."""
    mp = pytest.MonkeyPatch()
    out = {"seconds": {}}
    try:
        mp.setenv("H100LAB_DATA", str(tmp_path_factory.mktemp("emu_sweep")))
        mp.setattr(ts, "cvt_inputs", _cvt_subset())
        mp.setattr(ts, "stream_cases", _stream_subset())
        mp.setattr(ts, "sync_cases", _sync_subset())
        mp.setattr(ts, "latency_cases", _latency_subset())
        mp.setattr(ts, "read_configs", _read_subset())
        mp.setattr(ts, "COPY_FLAGS", (0, 7))
        mp.setattr(ts, "COPY_SHAPES", ((4, 256), (2, 1024)))
        mp.setattr(ts, "DEFAULT_TMA_CONFIGS", ((16, 4, 2), (8, 2, 1)))
        small_tensor_copies = ((256, 2, 2, 1), (64, 2, 3, 2))     # 2-row boxes: 128 KiB of 16384-float rows
        mp.setattr(ts, "TENSOR_COPY_CONFIGS", small_tensor_copies)
        # copytune's tensor copy takes its configuration as a default argument, bound when the module loads
        mp.setattr(ts.Runner._tensor_copy_record, "__defaults__", (small_tensor_copies[0],))
        mp.setattr(ts, "COPYTUNE_QUICK_SHAPES", ((32, 3, 1), (16, 4, 2)))
        mp.setattr(ts, "COPYTUNE_FLAGS", (1, 8))
        # latency2 and copyrace: a few small cases of each kind (the copies: 64 KiB, boxes of a 64-column tensor)
        mp.setattr(ts, "latency2_cases", lambda quick=False: [
            dict(bytes=256, count=1, align=0, touch=1, warm=1, iters=3),
            dict(bytes=1024, count=1, align=16, touch=0, warm=1, iters=3),
            dict(bytes=256, count=4, align=0, touch=1, warm=1, iters=2)])
        mp.setattr(ts, "RACE_VARIANTS", (
            ("copy_tune 4K×2 lag1 hints", "copy_tune", (4, 2, 1, 1, 3)),
            ("tma_copy 32×16×2 L2_256B", "tma_copy", (32, 16, 2, 1, "L2_256B")),
            ("ws 4K×3 lag1", "ws", (4, 3, 1, 1, 0)),
            ("tensor_ws 32×16×3 lag2 L2_128B", "tensor_ws", (32, 16, 3, 1, 2, 0, "L2_128B")),
            ("device_copy 2×256", "device_copy", (2, 256))))
        mp.setattr(ts, "RACE_READS", (("plain", 4, 2, 256),))
        mp.setattr(ts, "OFFSET_VARIANTS", (("tensor_ws 32×16×3 lag2", "tensor_ws", (32, 16, 3, 1, 2, 0, "L2_256B")),
                                           ("copy_tune 4K×2 lag1", "copy_tune", (4, 2, 1, 1, 3))))
        mp.setattr(ts, "RACE_TMA_READS", ((4, 2, 1, 1),))

        log = io.StringIO()
        gpu = CheckedEmu(SMS, launch_options={"resident": 8})
        r = ts.Runner(gpu, quick=True, log=log, buf_bytes=BUF_BYTES, repeats=1)
        _emulated_clock(r)
        outcome = {}
        for step in ts.STEPS:
            t0 = time.perf_counter()
            outcome.update(ts.run(r, (step,), META))
            out["seconds"][step] = round(time.perf_counter() - t0, 2)
        out.update(outcome=outcome, log=log.getvalue(), gpu=gpu, runner=r,
                   ds={s: data.load(ts.DATASETS[s]) for s, v in outcome.items() if v == "written"})
        yield out
    finally:
        mp.undo()
        emu.reset()


def test_every_step_runs_and_writes_its_dataset(sweep):
    print(sweep["seconds"])
    assert sweep["outcome"] == {s: "written" for s in ts.STEPS}, sweep["log"]
    for step, ds in sweep["ds"].items():
        assert ds.meta["step"] == step and ds.meta["complete"] and ds.records, step


def test_stream_data_checked_in_every_mode(sweep):
    recs = sweep["ds"]["stream"].records
    assert {(r["mode"], r["scope"]) for r in recs} == {(m, s) for m in ts.MODES for s in ("gpu", "cta", "cta_warm")}
    for r in recs:
        assert r["ok"] and r["error_bits"] == 0, r            # mode 1: checksums == expected_stream_sums
        assert (r["bad_words"] == 0) if r["mode"] == "copy" else r["bad_words"] is None
        assert r["ns_per_tile"] > 0                             # the kernel wrote its stamps
    # the same cases passed the same checks on the H200
    sil = {(r["mode"], r["scope"], r["stages"], r["tile_bytes"], r["ctas_per_sm"]): r
           for r in data.load("l03/stream_sweep").records}
    for r in recs:
        s = sil[(r["mode"], r["scope"], r["stages"], r["tile_bytes"], r["ctas_per_sm"])]
        assert s["ok"] and set(s) == set(r), (set(s) ^ set(r))


def test_latency_and_sync_error_free(sweep):
    lat = sweep["ds"]["latency"].records
    assert {r["kind"] for r in lat} == {"bulk", "tensor", "issue", "mbarrier"}
    assert all(r["ok"] for r in lat)
    assert all(r["cold_cycles"]["min"] > 0 and r["warm_cycles"]["min"] > 0 for r in lat if r["kind"] == "bulk")
    sy = sweep["ds"]["sync"].records
    assert {r["kind"] for r in sy} == {"bar_sync", "cluster_barrier", "dsmem_chase", "dsmem_stream"}
    assert all(r["ok"] for r in sy), [r for r in sy if not r["ok"]]   # dsmem_chase: the chain's last link and size
    assert {r["cluster"] for r in sy if r["kind"] == "cluster_barrier"} == {1, 2, 8}
    assert all(r["ok"] for r in data.load("l03/sync_cost").records + data.load("l03/tma_latency").records)


def test_cvt_bits_equal_silicon(sweep):
    from h100lab.measure.l04 import unpack

    mine = sweep["ds"]["cvt"].records
    sil = {r["code"]: r for r in data.load("l01/cvt_bits").records}
    assert {r["code"] for r in mine} == {c for c, _, _ in ts.CVT_OPS} == set(sil)
    compared = 0
    for r in mine:
        s = sil[r["code"]]
        key = lambda a, b: a.astype(np.uint64) << np.uint64(32) | b.astype(np.uint64)   # noqa: E731
        sa, so = unpack(s["a"]).view(np.uint32), unpack(s["out"]).view(np.uint32)
        sb = unpack(s["b"]).view(np.uint32) if s["b"] is not None else np.zeros_like(sa)
        a, out = unpack(r["a"]).view(np.uint32), unpack(r["out"]).view(np.uint32)
        b = unpack(r["b"]).view(np.uint32) if r["b"] is not None else np.zeros_like(a)
        skey, order = np.unique(key(sa, sb), return_index=True)
        pos = np.searchsorted(skey, key(a, b))
        hit = (pos < skey.size) & (skey[np.minimum(pos, skey.size - 1)] == key(a, b))
        assert hit.all(), r["op"]                                # every input here is one of silicon's inputs
        want = so[order[pos[hit]]]
        assert np.array_equal(out[hit], want), (r["op"], np.flatnonzero(out[hit] != want)[:4])
        assert r["untouched"] == 0
        compared += int(hit.sum())
    assert compared > 10_000


def test_encode_verdicts_equal_silicon(sweep):
    mine = {r["id"]: r["result"] for r in sweep["ds"]["encode"].records}
    sil = {r["id"]: r["result"] for r in data.load("l04/encode_enum_values").records}
    assert mine == sil


def test_ceilings_kernels_copy_and_read_exactly(sweep):
    ce = sweep["ds"]["ceilings"].records
    kinds = {r["kind"] for r in ce}
    assert {"memcpy", "read_stream", "device_copy", "tma_read", "tma_copy_stream", "tma_copy", "gemm"} == kinds
    for r in ce:
        if r["kind"] == "gemm":     # not runnable here: recorded as such
            assert not r["correct"] and "not runnable on the emulator" in r["error"]
        else:
            assert r["correct"], r
            assert r.get("bad_words") in (None, 0)
    assert {r["flags"] for r in ce if r["kind"] == "tma_copy_stream"} == {0, 7}
    assert sum(r["kind"] == "tma_copy" for r in ce) == 2
    # device_copy and every read stream were checked launch by launch (CheckedEmu)
    assert sweep["gpu"].checked.get("device_copy", 0) >= 2 + 3       # ceilings and copytune
    assert sum(v for k, v in sweep["gpu"].checked.items() if k.startswith("read_v4")) >= 5


def test_copytune_every_copy_verified(sweep):
    ct = sweep["ds"]["copytune"].records
    assert {r["kind"] for r in ct} == {"memcpy", "copy_tune", "tma_copy", "device_copy"}
    assert {r["phase"] for r in ct} == {"A", "B", "C"}
    for r in ct:
        assert r["correct"], r
        if r["kind"] in ("copy_tune", "tma_copy"):
            assert r["bad_words"] == 0 and r.get("error_bits", 0) == 0
    assert {r["lag"] for r in ct if r["kind"] == "copy_tune"} >= {0, 1, 2, 3}
    assert {r["flags"] for r in ct if r["kind"] == "copy_tune"} >= {0, 1, 8}
    assert sum(r["kind"] == "device_copy" for r in ct) == 3


def test_latency2_and_copyrace_on_the_emulator(sweep):
    """The clean single-copy kernel raises no error bit and stamps issue ≤ total; every raced copy (bulk, tensor,
    warp-specialised) copies every word, in each of the 3 rounds, with its ratio to the round's memcpy."""
    l2 = sweep["ds"]["latency2"].records
    assert len(l2) == 3 and all(r["ok"] for r in l2)
    assert all(r["warm_first_ns"] <= r["warm_issue_ns"] <= r["warm_total_ns"] for r in l2)
    cr = sweep["ds"]["copyrace"].records
    assert {r["round"] for r in cr} == {0, 1, 2}
    assert all(r["correct"] for r in cr), [r for r in cr if not r["correct"]][:2]
    assert {r["kind"] for r in cr} == {"memcpy", "copy_tune", "tma_copy", "ws", "tensor_ws", "device_copy",
                                       "read_stream", "tma_read"}
    assert all(r["bad_words"] == 0 and r["error_bits"] == 0 for r in cr if r["kind"] in ("ws", "tensor_ws"))
    co = sweep["ds"]["copyoffset"].records                  # copies into dst + offset, checked there
    assert {r["dst_offset"] for r in co} == {0, 4096, 64 * 1024 + 4096} and all(r["correct"] for r in co), co[:2]


def test_every_kernel_of_the_sweep_ran(sweep):
    names = {n for n, *_ in sweep["gpu"].launches}
    assert {"stream", "verify_copy", "fill_index", "tma_latency", "tma_latency_tensor", "tma_issue", "mbar_costs",
            "bar_sync_cost", "cluster_barrier_cost", "dsmem_chase", "dsmem_stream", "cvt_probe", "device_copy",
            "tma_copy", "copy_tune", "copy_latency", "copy_ws", "tensor_copy_ws"} <= names
    assert any(n.startswith("read_v4_pf") for n in names) and any(n.startswith("read_v4_plain") for n in names)


def test_timed_is_an_emulated_duration_not_a_time():
    gpu = EmuBackend(2)
    k = gpu.function("l03_stream", "fill_index")
    a = gpu.alloc(4096)
    ms = gpu.timed([lambda: gpu.launch(k, 2, 32, a, np.int64(1024)), lambda: gpu.memcpy_dtod(a, a, 4096)])
    st = gpu.launches[-1][3]
    assert ms[0] == pytest.approx(gpu.emulated_ms(st.instructions, 0)) and ms[1] == gpu.emulated_ms(0, 8192)
    assert np.array_equal(gpu.to_host(a).view(np.uint32), np.arange(1024, dtype=np.uint32))
    gpu.memset32(a, 7, 3)
    assert gpu.to_host(a).view(np.uint32)[:4].tolist() == [7, 7, 7, 3]
    assert "not runnable" in gpu.gemms([("bf16", 64)])["error"]


def test_bar_sync_waits_for_lanes_spinning_in_try_wait():
    """Emulator fix for l03_stream.cu: lane 0 of warp 0 ping-pongs with lane 0 of warp 1 through two mbarriers
    (spinning in try_wait) while lanes 1-31 of both warps already wait in __syncthreads. bar.sync is .aligned: the
    warp arrives once, reconverged. Before the fix lanes 1-31 arrived for the whole warp and the spinning lane stayed
    parked until that barrier completed — which needed the lane itself: a false deadlock."""
    src = r"""
    __device__ bool try_wait(unsigned b, unsigned parity) {
        unsigned done;
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(b), "r"(parity) : "memory");
        return done != 0;
    }
    extern "C" __global__ void k(unsigned* out) {
        __shared__ alignas(8) unsigned long long bars[2];
        const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(&bars[0])), b = a + 8;
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(a) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        }
        __syncthreads();
        if (threadIdx.x == 0 || threadIdx.x == 32) {
            for (unsigned i = 0; i < 4; ++i) {
                if (threadIdx.x == 32) {
                    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(a) : "memory");
                    while (!try_wait(b, i & 1)) {}
                } else {
                    while (!try_wait(a, i & 1)) {}
                    out[0] += 1;
                    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
                }
            }
        }
        __syncthreads();
        if (threadIdx.x == 5) out[1] = out[0] + 1;
    }"""
    kern = emu.compile(src).function("k")
    out = emu.zeros(2, np.uint32)
    emu.launch(kern, 1, 64, out)
    assert out.to_host().tolist() == [4, 5]


def test_ptx_decimal_float_literal():
    """Emulator fix: NVRTC writes createpolicy.fractional's fraction as a decimal literal (``1.0``)."""
    from h100lab.emu.ptx import parse
    m = parse(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n.reg .b64 %rd<2>;\n"
              "createpolicy.fractional.L2::evict_first.b64 %rd1, 1.0;\nret;\n}\n")
    ins = next(i for i in m.functions["k"].body if i.opcode == "createpolicy")
    assert ins.ops[1].value == ("f", 0x3FF0000000000000, 64)


def test_a_corrupted_source_fails_the_checks(monkeypatch):
    """The checks are live on the emulator: with one word of every 4 KiB tile of the source wrong, mode 1's
    checksums and mode 2's copies (verify_copy) fail, mode 0 (no check) passes."""
    monkeypatch.setattr(ts, "stream_cases", lambda quick=False: [c for c in _stream_subset()(True)
                                                                 if c["scope"] == "cta"])
    gpu = EmuBackend(SMS, launch_options={"resident": 8})
    r = ts.Runner(gpu, quick=True, log=io.StringIO(), buf_bytes=BUF_BYTES, repeats=1)
    r._clock = 1.98
    src, _ = r.buffers()
    words = emu.device().memory.view(src.ptr, BUF_BYTES).view(np.uint32)
    words[7::1024] ^= 1
    recs = {x["mode"]: x for x in r.step_stream()}
    assert recs["load"]["ok"] and not recs["consume"]["ok"] and not recs["copy"]["ok"]
    assert recs["copy"]["bad_words"] == recs["copy"]["bytes"] // 4096 > 0
