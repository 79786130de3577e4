"""l08_gemm.cu -DTRACE=1 (on-device timestamps of each k-block's events) and benchmarks/trace_gemm.py, without a GPU:
the untraced kernel is the PTX it was before the option (every TRACE line compiled out), the traced kernel runs on
the emulator at small size with its output unchanged and its events in order and counted right, and the benchmark
writes its dataset end to end on a fake GPU (the kernel on the emulator, a fake clock)."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from h100lab import data, emu, nvrtc
from h100lab.design import capstone as cap

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")

_spec = importlib.util.spec_from_file_location("trace_gemm", Path(__file__).parent.parent / "benchmarks" / "trace_gemm.py")
tg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tg)

FP8_DEFAULT, BF16_DEFAULT = cap.FP8_DEFAULT, cap.DEFAULT


def _strip_trace(src: str) -> str:
    """The kernel source with every ``#if TRACE`` block (up to its matching ``#endif``; an ``#else`` branch kept)
    and every line that is only a TR_ macro call removed."""
    out, depth, skipping = [], 0, False
    for line in src.splitlines():
        s = line.strip()
        if not skipping and re.match(r"#\s*if\s+TRACE\b", s):
            skipping, depth = True, 1
            continue
        if skipping:
            if re.match(r"#\s*if", s):
                depth += 1
            elif re.match(r"#\s*endif", s):
                depth -= 1
                if depth == 0:
                    skipping = False
                    continue
            elif depth == 1 and re.match(r"#\s*else", s):
                skipping = False                 # the #else branch (the untraced macros) stays; drop its #endif
                depth = -1
                continue
            continue
        if depth == -1 and re.match(r"#\s*endif", s):
            depth = 0
            continue
        if re.match(r"TR_(EV|TILE|AFTER|END)\(.*\);\s*(//.*)?$", s):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _code(ptx: str) -> str:
    """PTX without line info and comments (-lineinfo's .loc lines move with every added source line)."""
    return "\n".join(s for s in (l.strip() for l in ptx.splitlines())
                     if s and not s.startswith((".loc", ".file", "//")))


@pytest.mark.parametrize("variant", [FP8_DEFAULT, "fp8_cooperative_tmastore", BF16_DEFAULT,
                                     "fp8_cooperative_tmastore_cluster2",
                                     "fp8_cooperative_staggered_tmastore_cluster2_ctascope"])
def test_untraced_kernel_is_unchanged(variant):
    """Without -DTRACE the kernel compiles to the PTX of the source with every TRACE line taken out (so the option
    costs the measured forms nothing); with it the PTX reads %clock64 and %globaltimer and has two more
    parameters."""
    v = cap.variant(variant)
    src = nvrtc.kernel_source("l08_gemm")
    stripped = _strip_trace(src)
    assert "trace_clock()" not in stripped and "TR_EV(it" not in stripped
    a = nvrtc.compile(src, name="l08_gemm.cu", options=v.options).ptx
    b = nvrtc.compile(stripped, name="l08_gemm.cu", options=v.options).ptx
    assert _code(a) == _code(b)
    assert "%clock64" not in a and "%globaltimer" not in a
    t = nvrtc.compile(src, name="l08_gemm.cu", options=tg.traced_options(v)).ptx
    assert "%clock64" in t and "%globaltimer" in t
    params = lambda p: len(re.findall(r"\.param\s", p.split(v.entry, 1)[1].split(")", 1)[0]))   # noqa: E731
    assert params(t) == params(a) + 2


def test_pingpong_and_cluster_pairs_are_traced():
    assert "%globaltimer" in nvrtc.compile_kernel("l08_gemm", options=cap.variant("pingpong").options
                                                  + ("-DTRACE=1",)).ptx
    for name in ("pingpong", "cooperative_inflight_cluster2"):       # l08_gemm.cu's TRACE note
        v = cap.variant(name)
        assert tg.launch_args(v, (None, None), 0, 128, 256, 64, trace=np.uint64(1), cap_n=4)[-2:] == [1, 4]


def test_pingpong_trace_on_the_emulator():
    """Two CTAs, four 64 x 256 tiles each (consumers 0 and 1 take every other one), two k-blocks per tile: the
    traced output is the untraced one bit for bit; the producer stamps every k-block in order; each consumer stamps
    the tiles it takes and leaves the other's slots 0."""
    M, N, K = 128, 1024, 128
    plain, traced, raw, cap_n, v, grid = _run_traced("pingpong", M, N, K)
    assert v.pingpong and grid == 2 and np.array_equal(plain, traced)
    nk = -(-K // v.bk)
    regions = {(r["slot"], r["wg"]): r for r in tg.split(raw, cap_n)}
    for slot in (0, 1):
        prod = regions[(slot, 0)]
        assert prod["blocks"] == 4 * nk and np.all(np.diff(prod["ev"][:, 1]) > 0)
        for c in (0, 1):
            tl = regions[(slot, 1 + c)]["tile_ev"]
            assert np.all(tl[c::2, 0] > 0) and np.all(tl[1 - c::2, 0] == 0)


@pytest.mark.parametrize("variant", ["fp8_cooperative_tmastore_cluster2",
                                     "fp8_cooperative_staggered_tmastore_cluster2_ctascope"])
def test_cluster_pair_trace_on_the_emulator(variant):
    """One cluster of two CTAs (tile rows 0 and 1), two tile columns, two k-blocks: the traced output is the
    untraced one bit for bit; both CTAs are traced (CTA 0 and grid / 2 = 1, the pair's two ranks), each header
    counts its two tiles' k-blocks, every k-block's events come in order; a consumer's release (both arrives, the
    remote one included) comes after its wait_group."""
    M, N, K = 256, 256, 256
    plain, traced, raw, cap_n, v, grid = _run_traced(variant, M, N, K)
    assert v.cluster == 2 and grid == 2 and np.array_equal(plain, traced)
    nk = -(-K // v.bk)
    assert cap_n == 2 * nk
    regions = tg.split(raw, cap_n)
    assert [(r["slot"], r["wg"]) for r in regions] == [(s, w) for s in range(2) for w in range(3)]
    for r in regions:
        assert r["blocks"] == 2 * nk and r["tiles"] == 2 and r["nk"] == nk
        if r["wg"]:
            assert np.all(np.diff(r["ev"][:, :7], axis=1) >= 0) and np.all(r["ev"][:, 3] > r["ev"][:, 2])
    s = tg.summarize(raw, cap_n, True)
    assert all(w["events_in_order"] for w in s) and {w["smid"] for w in s if w["wg"] == 0} != set()


class EmuTrace:
    """trace_gemm.TorchTrace's methods on the emulator (inputs as NumPy, a fake clock for the timings)."""

    def __init__(self):
        self.clock = 0.0

    def metadata(self, command):
        return {"gpu": "Fake H200", "compute_capability": "9.0", "driver": "0", "cuda": "0", "date": "2000-01-01",
                "command": command}

    def sm_count(self):
        return 2

    def inputs(self, variant, M, N, K, seed):
        v = cap.variant(variant)
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((M, K)).astype(np.float32)
        w = rng.standard_normal((N, K)).astype(np.float32)
        if v.dtype == "e4m3":
            qa, sa, qb, sb = cap.quantize_fp8(x, w)
            dsa, dsb = (emu.to_device(s) for s in cap.fp8_scales(sa, sb))
            return {"a": emu.to_device(qa), "b": emu.to_device(qb), "scales": (dsa, dsb)}
        return {"a": emu.to_device(cap.bf16_round(x)), "b": emu.to_device(cap.bf16_round(w)), "scales": None}

    def out(self, M, N):
        return emu.to_device(np.full((M, N), 0x7FC0, np.uint16))

    def trace_buffer(self, n):
        return emu.to_device(np.zeros(n, np.uint64))

    def zero(self, buf):
        buf.copy_from_host(np.zeros(buf.shape, np.uint64))

    def fn(self, variant, X, C, M, N, K, sms, trace=None, cap_n=0):
        v = cap.variant(variant)
        opts = tg.traced_options(v) if trace is not None else v.options
        k = emu.compile_kernel("l08_gemm", options=opts).function(v.entry)
        k.set_max_dynamic_shared_memory(v.smem_bytes)
        maps = cap.tensor_maps(emu, v, X["a"], X["b"], M, N, K)
        if v.tma_store:
            maps = (*maps, cap.c_map(emu, v, C, M, N, 0.0))
        args = tg.launch_args(v, maps, C, M, N, K, scales=X["scales"], trace=trace, cap_n=cap_n)
        grid = cap.grid_size(v, M, N, sms)
        opts = {"cluster": (v.cluster, 1, 1)} if v.cluster > 1 else {}
        return lambda: emu.launch(k, grid, cap.THREADS, *args, shared_mem=v.smem_bytes, **opts)

    def time(self, fn, warmup, repeats):
        fn()
        self.clock += 1.0
        return [self.clock + 0.01 * i for i in range(repeats)]

    def sync(self):
        pass

    def bits(self, C):
        return C.to_host()

    def host(self, buf):
        return buf.to_host().view(np.uint64)


@pytest.fixture
def restore_data_env(monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(data.data_dir()))


def _run_traced(variant, M, N, K, sms=2):
    be = EmuTrace()
    v = cap.variant(variant)
    grid = cap.grid_size(v, M, N, sms)
    cap_n = tg.trace_cap(v, M, N, K, grid)
    X = be.inputs(variant, M, N, K, 3)
    C0, C1 = be.out(M, N), be.out(M, N)
    be.fn(variant, X, C0, M, N, K, sms)()
    buf = be.trace_buffer(tg.trace_len(cap_n))
    be.fn(variant, X, C1, M, N, K, sms, trace=buf, cap_n=cap_n)()
    return be.bits(C0), be.bits(C1), be.host(buf), cap_n, v, grid


@pytest.mark.parametrize("variant,shape", [(FP8_DEFAULT, (128, 768, 384)), (BF16_DEFAULT, (128, 1024, 192))])
def test_trace_on_the_emulator(variant, shape):
    """Two CTAs, two tiles each, three k-blocks per tile: the traced output is the untraced one bit for bit; each
    traced warpgroup's header counts its k-blocks and tiles; every k-block's events come in program order; the
    producer's TMA of block i comes before the consumers' full-barrier pass of block i, a consumer's release of
    block i (no INFLIGHT) before the producer's empty-barrier pass of block i + stages; unused slots stay 0."""
    M, N, K = shape
    plain, traced, raw, cap_n, v, grid = _run_traced(variant, M, N, K)
    assert np.array_equal(plain, traced)
    fp8 = v.dtype == "e4m3"
    nk = -(-K // v.bk)
    tiles = int(np.prod(cap.tile_counts(v, M, N)))
    assert grid == 2 and tiles == 4 and nk == 3 and cap_n == 2 * nk
    regions = tg.split(raw, cap_n)
    assert [(r["slot"], r["wg"]) for r in regions] == [(s, w) for s in range(2) for w in range(3)]
    used = [0, 1, 2, 3] + ([4, 5, 6] if fp8 else [])
    for r in regions:
        assert r["nk"] == nk and r["blocks"] == 2 * nk and r["tiles"] == 2
        assert r["ns1"] > r["ns0"] > 0 and r["clk1"] > r["clk0"]
        ev = r["ev"]
        assert ev.shape == (2 * nk, tg.EV)
        if r["wg"] == 0:
            assert np.all(ev[:, :2] > 0) and np.all(ev[:, 2:] == 0)
            assert np.all(ev[:, 1] >= ev[:, 0]) and np.all(ev[1:, 0] >= ev[:-1, 1])
            assert np.all(r["tile_ev"] == 0)            # the producer has no tile events
        else:
            assert np.all(ev[:, used] > 0) and np.all(ev[:, [e for e in range(tg.EV) if e not in used]] == 0)
            assert np.all(np.diff(ev[:, used], axis=1) >= 0)
            assert np.all(ev[1:, 0] >= ev[:-1, used[-1]])
            prod = next(p for p in regions if p["slot"] == r["slot"] and p["wg"] == 0)
            assert np.all(ev[:, 0] > prod["ev"][:, 0])  # the bytes land after the producer's expect_tx
            tl = r["tile_ev"]
            assert tl.shape == (2, tg.TEV) and np.all(tl[:, 3] == 0)
            assert np.all(np.diff(tl[:, :3], axis=1) >= 0) and tl[1, 0] >= tl[0, 2]
            assert tl[0, 0] <= ev[0, 0] and tl[0, 1] >= ev[nk - 1, used[-1]]
    s = tg.summarize(raw, cap_n, fp8)
    assert len(s) == 6 and all(w["events_in_order"] for w in s)
    cons = [w for w in s if w["role"] == "consumer"]
    assert all(w["cycles"]["period"]["n"] == 2 * (nk - 1) for w in cons)        # within a tile only
    assert all(("promote" in w["cycles"]) == fp8 for w in cons)
    assert [("offset_full" in w["cycles"]) for w in cons] == [False, True, False, True]


def test_one_cta_fills_slot_zero_only():
    """A grid of one CTA: CTA 0 is slot 0 (grid / 2 = 0 too); slot 1 stays empty and split() leaves it out."""
    plain, traced, raw, cap_n, v, grid = _run_traced(FP8_DEFAULT, 128, 192, 256, sms=1)
    assert grid == 1 and np.array_equal(plain, traced)
    regions = tg.split(raw, cap_n)
    assert [(r["slot"], r["wg"]) for r in regions] == [(0, 0), (0, 1), (0, 2)]
    assert not raw[tg.WARPGROUPS * tg.region_size(cap_n):].any()


def test_split_rejects_a_wrong_length():
    with pytest.raises(ValueError, match="expected"):
        tg.split(np.zeros(10, np.uint64), 4)


def test_benchmark_on_a_fake_gpu(tmp_path, restore_data_env):
    """main() on the emulator: one record per (shape, variant), timings and trace cost from the fake clock, the
    outputs equal, summaries of six warpgroups, the dataset written with its metadata and the raw arrays saved."""
    from h100lab.design import perf
    from h100lab.validation import l08

    params = perf.calibrated()                        # from the committed data, before --out points elsewhere
    out = tg.main(["--out", str(tmp_path), "--raw", str(tmp_path / "raw"), "--repeats", "3", "--warmup", "0"],
                  backend=EmuTrace(), shapes=[(128, 768, 384)], variants=(FP8_DEFAULT, "fp8_cooperative_tmastore_lead2"))
    assert out["failed"] == 0
    ds = data.load("l08/gemm_trace")
    assert ds.meta["gpu"] == "Fake H200" and "trace_gemm.py" in ds.meta["command"]
    assert [r["variant"] for r in ds.records] == [FP8_DEFAULT, "fp8_cooperative_tmastore_lead2"]
    for r in ds.records:
        assert r["ok"] and r["same_output"] and len(r["warpgroups"]) == 6
        assert r["trace_cost"] == pytest.approx(r["traced_median_ms"] / r["median_ms"])
    rows = l08.trace_rows(ds, params)                 # the chapter's table: trace and model side by side
    assert [r["variant"] for r in rows] == [r["variant"] for r in ds.records]
    for row in rows:
        assert row["sm_mhz"] > 0 and row["model_ms"] > 0 and row["trace_period"] > 0
        assert row["trace_promote"] > 0 and row["trace_wgmma"] > 0
        assert row["trace_after"] >= row["trace_promote"] + row["trace_scales"] + row["trace_next"]
        assert row["model_period"] > 0 and row["model_wgmma"] > 0
    z = np.load(tmp_path / "raw" / "gemm_trace_raw.npz")
    out2 = tg.main(["--out", str(tmp_path), "--name", "l08/gemm_trace_b", "--shapes", "128x192x256", "--repeats", "3",
                    "--warmup", "0", "--variants", BF16_DEFAULT.replace("inflight_tmastore", "inflight")],
                   backend=EmuTrace())
    assert out2["failed"] == 0 and out2["path"].endswith("gemm_trace_b.json")
    assert [(r["M"], r["N"], r["K"]) for r in data.load("l08/gemm_trace_b").records] == [(128, 192, 256)]
    assert sorted(z.files) == sorted(f"{v}_128x768x384" for v in (FP8_DEFAULT, "fp8_cooperative_tmastore_lead2"))


def test_untraced_forms_are_timed_only(tmp_path, restore_data_env):
    """--untraced: a cluster pair (not traceable) is timed untraced after the shape's traced forms, as a
    ``trace_time`` record without warpgroups, which trace_rows leaves out; an unknown name is refused."""
    from h100lab.design import perf
    from h100lab.validation import l08

    params = perf.calibrated()
    out = tg.main(["--out", str(tmp_path), "--name", "l08/gemm_trace_t", "--repeats", "3", "--warmup", "0",
                   "--untraced", "fp8_cooperative_tmastore_cluster2"],
                  backend=EmuTrace(), shapes=[(256, 256, 256)], variants=("fp8_cooperative_tmastore",))
    assert out["failed"] == 0
    ds = data.load("l08/gemm_trace_t")
    assert [(r["kind"], r["variant"]) for r in ds.records] == [("trace", "fp8_cooperative_tmastore"),
                                                                ("trace_time", "fp8_cooperative_tmastore_cluster2")]
    t = ds.records[1]
    assert t["ok"] and t["median_ms"] > 0 and t["cluster"] == 2 and "warpgroups" not in t
    assert ds.meta["untraced"] == ["fp8_cooperative_tmastore_cluster2"]
    assert [r["variant"] for r in l08.trace_rows(ds, params)] == ["fp8_cooperative_tmastore"]
    with pytest.raises(KeyError):
        tg.main(["--out", str(tmp_path), "--name", "l08/gemm_trace_u", "--repeats", "3", "--untraced", "nope"],
                backend=EmuTrace(), shapes=[(256, 256, 256)], variants=("fp8_cooperative_tmastore",))
