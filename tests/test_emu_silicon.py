"""The emulator (h100lab.emu) runs the book's kernels with their measurement scripts' launch configurations
and reproduces the functional content of the committed silicon datasets in data/ exactly: outputs, images,
checksums, special registers, verdicts, faults. Timings are not compared (the emulator's clock orders events,
it does not time them); bandwidth/latency kernels run at reduced sizes with their data checked.

The measurement modules' own GPU functions are run with ``h100lab.cuda`` swapped for ``h100lab.emu`` (their
``from .. import cuda`` reads the package attribute), so the case lists, launches and record builders are the
scripts' own."""
from __future__ import annotations

import types

import numpy as np
import pytest

import h100lab
from h100lab import data

emu = pytest.importorskip("h100lab.emu")
if not emu.available():  # pragma: no cover - NVRTC is a dependency
    pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}", allow_module_level=True)

RNG = np.random.default_rng(7)


@pytest.fixture
def on_emu(monkeypatch):
    """Run the measurement scripts' GPU functions on the emulator."""
    emu.reset()
    monkeypatch.setattr(h100lab, "cuda", emu)
    yield emu
    emu.reset()


@pytest.fixture
def on_emu_timed(monkeypatch):
    """The emulator plus a ``time_kernel`` that times nothing (timings are not compared): for scripts that
    check a launch, then time it."""
    emu.reset()
    shim = types.SimpleNamespace(**{n: getattr(emu, n) for n in emu.__all__})
    shim.time_kernel = lambda *a, **k: types.SimpleNamespace(median_ms=float("nan"), min_ms=float("nan"),
                                                             samples_ms=[])
    monkeypatch.setattr(h100lab, "cuda", shim)
    yield shim
    emu.reset()


def records(name):
    assert data.available(name), f"committed dataset data/{name}.json is missing"
    return data.load(name).records


def drop(recs, *keys):
    return [{k: v for k, v in r.items() if k not in keys} for r in recs]


# ---- smoke_* ----------------------------------------------------------------------------------------

def test_smoke_vector_add():
    n = 10_003
    a, b = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    k = emu.compile_kernel("smoke_vector_add").function("vector_add")
    dc = emu.empty(n, np.float32)
    emu.launch(k, (n + 255) // 256, 256, emu.to_device(a), emu.to_device(b), dc, np.int32(n))
    np.testing.assert_array_equal(dc.to_host(), a + b)


@pytest.mark.parametrize("grid,cluster", [((8, 1, 1), None), ((16, 1, 1), (4, 1, 1)), ((4, 4, 2), (2, 2, 2))])
def test_smoke_ids(grid, cluster):
    k = emu.compile_kernel("smoke_ids").function("read_ids")
    nb = int(np.prod(grid))
    out = emu.zeros(12 * nb, np.uint32)
    emu.launch(k, grid, 32, out, cluster=cluster)
    r = out.to_host().reshape(nb, 12)
    gx, gy, _ = grid
    b = np.arange(nb)
    ctaid = np.stack([b % gx, (b // gx) % gy, b // (gx * gy)], axis=1)
    assert (r[:, 0] < r[:, 1]).all()
    np.testing.assert_array_equal(r[:, 2:5], ctaid)
    c = np.array(cluster or (1, 1, 1))
    cl = ctaid % c
    np.testing.assert_array_equal(r[:, 6:9], cl)
    np.testing.assert_array_equal(r[:, 5], ctaid[:, 0] // c[0])
    np.testing.assert_array_equal(r[:, 9], cl[:, 0] + c[0] * (cl[:, 1] + c[1] * cl[:, 2]))
    assert (r[:, 10] == c.prod()).all() and (r[:, 11] == (cluster is not None)).all()


@pytest.mark.parametrize("size", [4, 16])
def test_smoke_cluster_ring(size):
    k = emu.compile(emu.compile_kernel("smoke_cluster_ring").source, name=f"ring{size}.cu").function("cluster_ring")
    k.allow_non_portable_cluster_size(True)
    out = emu.zeros(32, np.uint32)
    emu.launch(k, 32, 32 if size == 16 else 128, out, cluster=size)
    b = np.arange(32)
    rank = b % size
    np.testing.assert_array_equal(out.to_host(), 1000 * (b - rank + (rank + 1) % size) + (rank + 1) % size)


def test_smoke_dynamic_smem_at_the_opt_in_limit():
    k = emu.compile_kernel("smoke_dynamic_smem").function("reverse_through_smem")
    nbytes = 232448 - k.layout.static_shared
    n = nbytes // 4
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    din, dout = emu.to_device(x), emu.zeros(n, np.uint32)
    k.set_max_dynamic_shared_memory(nbytes)
    emu.launch(k, 1, 256, din, dout, np.int32(n), shared_mem=nbytes)
    np.testing.assert_array_equal(dout.to_host(), x[::-1])


@pytest.mark.parametrize("swizzle,x0,y0", [("CU_TENSOR_MAP_SWIZZLE_NONE", 32, 16), ("CU_TENSOR_MAP_SWIZZLE_128B", 0, 8)])
def test_smoke_tma_load(swizzle, x0, y0):
    x = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128)
    g = emu.to_device(x)
    box = (64, 8)
    tmap = emu.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2, g, [128, 64], [256], list(box), [1, 1],
                            "CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle, "CU_TENSOR_MAP_L2_PROMOTION_NONE",
                            "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    nbytes = box[0] * box[1] * 2
    out = emu.zeros(nbytes, np.uint8)
    emu.launch(emu.compile_kernel("smoke_tma_load").function("tma_load_2d"), 1, 128, tmap, np.int32(x0),
               np.int32(y0), out, np.int32(nbytes))
    tile = out.to_host().view(np.uint16).reshape(8, 64)
    want = x[y0:y0 + 8, x0:x0 + 64]
    if swizzle.endswith("NONE"):
        np.testing.assert_array_equal(tile, want)
    else:
        got, w = tile.reshape(8, 8, 8), want.reshape(8, 8, 8)
        for r in range(8):
            for c in range(8):
                np.testing.assert_array_equal(got[r, c ^ r], w[r, c])


# ---- lesson 2 -------------------------------------------------------------------------------------------

def test_l02_spaces(on_emu):
    from h100lab.measure import l02

    got = l02.measure_spaces()
    want = records("l02/spaces")
    addr = ("shared_generic", "peer_generic", "local_generic")
    assert drop(got, *addr) == drop(want, *addr)
    for g, w in zip(got, want):      # generic addresses: the window bases are the process's; offsets are not
        assert g["peer_generic"] - g["shared_generic"] == w["peer_generic"] - w["shared_generic"]
        assert g["shared_generic"] & 0xFFFFFF == w["shared_generic"] & 0xFFFFFF


def test_l02_cluster_sregs(on_emu):
    from h100lab.measure import l02

    got = l02.measure_sregs()
    assert drop(got, "smid") == drop(records("l02/cluster_sregs"), "smid")


def test_l02_dsmem_ring(on_emu):
    from h100lab.measure import l02

    got = l02.measure_ring()
    assert got == records("l02/dsmem_ring")


def test_l02_pack(on_emu):
    from h100lab.measure import l02

    assert l02.measure_pack() == records("l02/pack")


def test_l02_axpy():
    n = 5000
    a = np.float32(1.75)
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    dy = emu.to_device(y)
    emu.launch(emu.compile_kernel("l02_axpy").function("axpy"), (n + 255) // 256, 256, a, emu.to_device(x), dy,
               np.int32(n))
    assert "fma.rn.f32" in emu.compile_kernel("l02_axpy").ptx
    want = (np.float64(a) * x.astype(np.float64) + y).astype(np.float32)     # one rounding, as fma
    np.testing.assert_array_equal(dy.to_host(), want)


# ---- lesson 3 -------------------------------------------------------------------------------------------

def test_l03_bulk_pipeline_checksums(on_emu_timed, monkeypatch):
    """Every case of data/l03/bulk_pipeline through ``l03.measure`` (its checksum against ``expected_sums``),
    at reduced iterations, a 1 MiB source and, for the full-GPU group, 2 tiles per CTA."""
    from h100lab.measure import l03

    monkeypatch.setattr(l03, "SRC_BYTES", 1 << 20)
    want = records("l03/bulk_pipeline")
    assert len(want) == len(l03.cases())
    keys = ("group", "stages", "tile_bytes", "work", "ctas", "consumers", "smem_bytes", "ok")
    for c, w in zip(l03.cases(), want):
        small = dict(c, iters=min(c["iters"], 16) if c["ctas"] == 1 else 2)
        got = l03.measure([small])[0]
        assert got["ok"], f"checksum mismatch: {small}"
        assert {k: got[k] for k in keys} == {k: w[k] for k in keys}


# ---- lesson 5 -------------------------------------------------------------------------------------------

def test_l05_bulk_every_record(on_emu):
    """All 64 records of data/l05/bulk (round trips, multicast images and barrier status, bulk reductions)
    byte for byte, from the script's own ``measure_bulk``."""
    from h100lab.measure import l05

    got, want = l05.measure_bulk(), records("l05/bulk")
    assert len(got) == len(want) == 64
    bad = [g["id"] for g, w in zip(got, want) if g != w]
    assert not bad, f"records differing from silicon: {bad}"


def test_l05_tma_copy_data(on_emu_timed, monkeypatch):
    """Every TMA copy configuration of data/l05/copy_bandwidth through ``measure_copy`` on a 512 x 2048 FP32
    tensor (4 MiB, up to 2 tiles per CTA) instead of 512 MiB: the copy must be exact, as on silicon."""
    from h100lab.measure import l05

    on_emu_timed.device_properties = lambda *a: {"multiProcessorCount": 132, "sharedMemPerBlockOptin": 232448}
    monkeypatch.setattr(l05, "COPY_ROWS", 512)
    monkeypatch.setattr(l05, "COPY_COLS", 2048)
    monkeypatch.setattr(l05, "_time_memcpy", lambda *a, **k: [float("nan")])
    want = [r for r in records("l05/copy_bandwidth") if r["kind"] == "tma_copy"]
    got = [r for r in l05.measure_copy(l05.copy_configs()) if r["kind"] == "tma_copy"]
    keys = ("box_x", "box_y", "tile_bytes", "stages", "ctas_per_sm", "grid", "correct")
    assert len(got) == len(want) and all(w["correct"] for w in want)
    assert [{k: g[k] for k in keys} for g in got] == [{k: w[k] for k in keys} for w in want]


@pytest.mark.parametrize("blocks_per_sm,threads", [(4, 256), (8, 256), (4, 512), (16, 128)])
def test_l05_device_copy_data(blocks_per_sm, threads):
    """The device copy kernel of data/l05/copy_bandwidth with its launch shapes, on 1 MiB."""
    want = [r for r in records("l05/copy_bandwidth") if r["kind"] == "device_copy"
            and (r["blocks_per_sm"], r["threads"]) == (blocks_per_sm, threads)]
    assert len(want) == 1 and want[0]["grid"] == 132 * blocks_per_sm
    host = RNG.integers(0, 2**32, 1 << 18, dtype=np.uint32)
    src, dst = emu.to_device(host), emu.empty(host.shape, np.uint32)
    k = emu.compile_kernel("l05_tma_copy").function("device_copy")
    emu.launch(k, want[0]["grid"], threads, src, dst, np.int64(host.nbytes // 16))
    np.testing.assert_array_equal(dst.to_host(), host)


# ---- lesson 4 -------------------------------------------------------------------------------------------

def _l04_on_emu(monkeypatch):
    """``l04.run_case`` with the driver's encoders replaced by the emulator's (the model's verdicts)."""
    import itertools

    from h100lab.cuda.errors import DriverError
    from h100lab.emu.lower_async import TENSORMAP_MAGIC, tensormap_registry
    from h100lab.measure import l04
    from h100lab.tma.descriptor import TensorMapError

    emu.reset()
    shim = types.SimpleNamespace(**{n: getattr(emu, n) for n in emu.__all__})
    shim.DriverError = DriverError
    monkeypatch.setattr(h100lab, "cuda", shim)
    ids = itertools.count(1 << 40)

    def tiled(c, address):
        try:
            return emu.encode_tiled(**l04.model_args(c, base_address=address))
        except TensorMapError as exc:
            raise DriverError("cuTensorMapEncodeTiled", exc.result, 1) from None

    def im2col(c, address):
        tm = l04._map_for(c, address)
        tid = next(ids)
        tensormap_registry[tid] = tm
        return emu.TensorMap(TENSORMAP_MAGIC + tid.to_bytes(8, "little") + bytes(128 - 24), dict(c), tm)

    monkeypatch.setattr(l04, "_tiled_on_device", tiled)
    monkeypatch.setattr(l04, "_encode_im2col_on_device", im2col)
    return l04


def _l04_cases():
    from h100lab.measure import l04

    cases = l04.image_cases() + l04.store_cases() + l04.im2col_cases()
    want = records("l04/tma_images")
    assert [c["id"] for c in cases] == [w["id"] for w in want]
    return list(zip(cases, want))


def _l04_check(l04, c, w, kernels):
    if w.get("fault"):
        with pytest.raises(emu.EmuError) as ei:
            l04.run_case(c, kernels)
        assert ei.value.cuda_error == w["fault"], str(ei.value)
        return
    got = l04.run_case(c, kernels)
    bad = [k for k in w if got.get(k) != w[k]]
    assert not bad, f"{c['id']}: fields differing from silicon: {bad}"


@pytest.mark.parametrize("kind", ["store", "reduce"])
def test_l04_tma_store_and_reduce_images(monkeypatch, kind):
    """Every store / reduce record of data/l04/tma_images: the global bytes after the copy, or the fault."""
    l04 = _l04_on_emu(monkeypatch)
    kernels = l04._Kernels()
    sel = [(c, w) for c, w in _l04_cases() if c["kind"] == kind]
    assert len(sel) == {"store": 15, "reduce": 29}[kind]
    for c, w in sel:
        _l04_check(l04, c, w, kernels)


def test_l04_tma_load_images(monkeypatch):
    """Every load record of data/l04/tma_images, the recorded load faults included."""
    l04 = _l04_on_emu(monkeypatch)
    kernels = l04._Kernels()
    sel = [(c, w) for c, w in _l04_cases() if c["kind"] == "load"]
    assert len(sel) >= 140
    for c, w in sel:
        _l04_check(l04, c, w, kernels)


def test_l04_tma_im2col_images(monkeypatch):
    l04 = _l04_on_emu(monkeypatch)
    kernels = l04._Kernels()
    for c, w in [(c, w) for c, w in _l04_cases() if c["kind"] == "im2col"]:
        _l04_check(l04, c, w, kernels)


# ---- lesson 1 -------------------------------------------------------------------------------------------

def test_l01_bank_wavefronts_match_nsight_compute():
    """Every case of data/l01/bank_wavefronts launched as ``run_bank_wavefronts`` does (baseline first): the
    emulator's shared-memory wavefronts (less the baseline's) equal Nsight Compute's counts on the H200."""
    from h100lab.measure import l01

    cases, want = l01.bank_wavefront_cases(), records("l01/bank_wavefronts")
    assert [c["name"] for c in cases] == [w["name"] for w in want]
    f = emu.compile_kernel("l01_bank_wavefronts").function(l01.BANK_WAVEFRONT_KERNEL)
    sink = emu.empty(32, np.uint32)

    def run(offs, active, mode):
        st = emu.launch(f, 1, 32, emu.to_device(np.asarray(offs, np.uint32)), np.uint32(active), np.int32(mode), sink)
        return st.shared_wavefronts

    base = run(np.zeros(32, np.uint32), l01.FULL_MASK, l01.BASELINE_MODE)
    bad = []
    for c, w in zip(cases, want):
        got = run(c["offsets"], c["active"], l01.BANK_WAVEFRONT_MODES[(c["op"], c["width"])]) - base
        if got != w["wavefronts"]:
            bad.append((c["name"], got, w["wavefronts"]))
    assert not bad, f"{len(bad)} of {len(cases)} cases differ (name, emulator, ncu): {bad[:10]}"


def test_l01_occupancy_probe_variants():
    """Every compiled variant of l01_occupancy_regs.cu the measurement asks the driver about (data/l01/occupancy):
    the emulator's static shared memory equals the driver's ``static_smem`` of the record, and the kernel,
    launched with inputs that keep its float arithmetic exact (small integers, multiplier 1), writes what
    exact integer arithmetic gives. (``num_regs`` is ptxas's register allocation, below PTX: not emulated.)"""
    from h100lab.measure import l01

    recs = records("l01/occupancy")
    static_of = {(r["maxrregcount"], r["static_request"]): r["static_smem"] for r in recs}
    rng = np.random.default_rng(11)
    inp = rng.integers(0, 4, 1024).astype(np.float32)
    inp[0] = 1.0                                   # the loop's multiplier x = in[blockIdx.x + i] = 1
    nacc, threads = 256, 32
    acc = np.array([[inp[(t + 7 * j) & 1023] for j in range(nacc)] for t in range(threads)], np.int64)
    for j in range(nacc):                          # one iteration: acc[j] = acc[j] * 1 + acc[(j + 1) % 256]
        acc[:, j] = acc[:, j] + acc[:, (j + 1) % nacc]
    base = (acc * np.arange(1, nacc + 1)).sum(axis=1)
    assert base.max() < 2 ** 24                    # exact in binary32, whatever the compiler contracts
    seen = set()
    for reg, static in l01.KERNEL_VARIANTS:
        if (reg, static) not in static_of or static in seen:
            continue                               # the register cap changes SASS only: one PTX per static size
        seen.add(static)
        k = emu.compile_kernel("l01_occupancy_regs", options=l01.variant_options(reg, static)).function("occupancy_probe")
        assert k.attributes()["shared_size_bytes"] == static_of[(reg, static)]
        out = emu.zeros(threads, np.float32)
        emu.launch(k, 1, threads, emu.to_device(inp), out, np.int32(1))
        want = base.copy()
        if static:                                 # stage[t] = in[t]; thread t adds stage[t + 1]
            want[:-1] += inp[1:threads].astype(np.int64)
        got = out.to_host()
        n = threads - 1 if static else threads     # the last thread reads a word no thread wrote
        assert (got[:n] == want[:n].astype(np.float32)).all()
    assert seen == {s for (_, s) in static_of}


def test_l01_bank_latency_data_and_wavefronts():
    """Every pattern of data/l01/bank_latency, launched as the measurement does (one warp, 64 KiB of zeroed
    dynamic shared memory) at a reduced chain length: every load reads 0 (the dataset's data check), the
    clock advances, and each timed ``ld.volatile.shared`` costs the wavefronts the record lists."""
    recs = records("l01/bank_latency")
    kernels = {}
    iters = 4
    for r in recs:
        w = r["width"]
        if w not in kernels:
            k = emu.compile_kernel("l01_bank_latency", options=(f"-DWIDTH={w}",)).function("bank_latency")
            k.set_max_dynamic_shared_memory(65536)
            lines = {ins.line for ins in k.fn.body if ins.opcode == "ld" and "volatile" in ins.mods}
            kernels[w] = (k, lines)
        k, lines = kernels[w]
        cyc, sink = emu.zeros(1, np.int64), emu.empty(32, np.uint32)
        st = emu.launch(k, 1, 32, emu.to_device(np.asarray(r["offsets"], np.uint32)), np.int32(iters), cyc, sink,
                        shared_mem=65536)
        assert (sink.to_host() == 0).all() and int(cyc.to_host()[0]) > 0
        reqs = sum(q for line, _, q, _ in st.shared_by_pc if line in lines)
        wave = sum(f for line, _, _, f in st.shared_by_pc if line in lines)
        assert reqs == 2 * iters and wave == reqs * r["model_wavefronts"], (r["name"], reqs, wave)


def test_l01_cvt_bits_every_conversion():
    """data/l01/cvt_bits: every conversion the H200 made with l01_cvt_probe.cu (FP8 with and without .relu and
    .satfinite, f32 → f16/bf16 in every rounding mode with NaN payloads, f16/bf16 → f32, f32 → tf32), re-run on
    the emulator from the recorded inputs: the same result bits, every one."""
    from h100lab.measure.l04 import unpack

    k = emu.compile_kernel("l01_cvt_probe").function("cvt_probe")
    bad = []
    total = 0
    for r in records("l01/cvt_bits"):
        a = unpack(r["a"]).view(np.uint32)
        b = unpack(r["b"]).view(np.uint32) if r["b"] is not None else np.zeros_like(a)
        want = unpack(r["out"]).view(np.uint32)
        n = r["n"]
        out = emu.zeros(n, np.uint32)
        emu.launch(k, -(-n // 256), 256, emu.to_device(a), emu.to_device(b), out, np.int32(n), np.int32(r["code"]))
        got = out.to_host()
        total += n
        if not np.array_equal(got, want):
            i = int(np.flatnonzero(got != want)[0])
            bad.append((r["op"], int(np.count_nonzero(got != want)), hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])))
    assert not bad, f"{len(bad)} ops differ from the H200 (op, count, a, b, emulator, silicon): {bad}"
    assert total > 300_000
