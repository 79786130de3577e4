"""h100lab.measure.timing_sweep: case lists, sizes, checksums, summaries, and every step run on a fake GPU.

The fake backend (:class:`FakeGpu`) has the methods of :class:`~h100lab.measure.timing_sweep.CudaBackend`. It
compiles the real kernels with NVRTC (no GPU needed) and checks every launch's arguments against the kernel's
parameters in the PTX (count and size: a swapped int32/int64 or a missing pointer fails), then plays the kernel:
the data movement for real (fill_index, the stream's checksums and copies, verify_copy, the copy kernels), the
clocks from a toy latency/bandwidth model. So a step's bookkeeping (offsets, launch slots, expected sums,
summaries, dataset writing) is exercised end to end without a GPU.
"""
from __future__ import annotations

import io
import re
import sys

import numpy as np
import pytest

from h100lab import data
from h100lab.measure import timing_sweep as ts

GHZ = 1.98


def _compiler_reason():
    from h100lab import cuda
    return cuda.compiler_unavailable_reason()


needs_nvrtc = pytest.mark.skipif(_compiler_reason() is not None, reason=f"NVRTC: {_compiler_reason()}")


# ------------------------------------------------------------------------------------------------
# pure logic

def test_stream_cases_cover_the_issue_grid_and_fit():
    cases = ts.stream_cases()
    gpu = [c for c in cases if c["scope"] == "gpu"]
    assert {c["mode"] for c in cases} == {"load", "consume", "copy"}
    assert {c["stages"] for c in gpu} == {1, 2, 3, 4, 6, 8}
    assert {c["tile_bytes"] // 1024 for c in gpu} == {1, 2, 4, 8, 16, 32, 64}
    assert {c["ctas_per_sm"] for c in gpu} == {1, 2, 4}
    assert {c["scope"] for c in cases} == {"gpu", "cta", "cta_warm"}
    # every (stages, tile, CTAs/SM) that fits the H200's shared memory is there, for every mode
    fits = {(s, t, c) for s in ts.STAGES for t in ts.TILE_KIB for c in ts.CTAS_PER_SM if ts.stream_fits(s, t * 1024, c)}
    assert {(c["stages"], c["tile_bytes"] // 1024, c["ctas_per_sm"]) for c in gpu if c["mode"] == "copy"} == fits
    assert len(fits) == 98 and len(cases) == 3 * (98 + 2 * 38)
    assert not ts.stream_fits(8, 32 * 1024, 1) and ts.stream_fits(6, 32 * 1024, 1) and not ts.stream_fits(4, 16384, 4)
    assert ts.stream_smem(3, 4096) == 1024 + 3 * 4096
    with pytest.raises(ValueError):
        ts.stream_smem(9, 4096)
    with pytest.raises(ValueError):
        ts.stream_smem(2, 1000)
    assert len(ts.stream_cases(quick=True)) < len(cases) / 5


def test_plan_tiles_bounds():
    for c in ts.stream_cases():
        n = ts.plan_tiles(c, 132)
        grid = ts.stream_grid(c, 132)
        assert 1 <= n <= 8192 and grid * n * c["tile_bytes"] <= ts.BUF_BYTES // 2
        if c["scope"] == "cta_warm":
            assert n * c["tile_bytes"] <= 8 << 20
        elif c["tile_bytes"] <= 16384:
            assert n >= 4 * c["stages"] + 32
    small = dict(mode="copy", scope="gpu", stages=1, tile_bytes=65536, ctas_per_sm=4)
    assert ts.plan_tiles(small, 132, buf_bytes=64 << 20) == (32 << 20) // (528 * 65536) or \
        ts.plan_tiles(small, 132, buf_bytes=64 << 20) == 1


def test_tile_ids_and_expected_sums_match_a_direct_sum():
    tile, grid, tiles, buf_tiles, base = 1024, 3, 5, 17, 12
    ids = ts.stream_tile_ids(base, grid, tiles, buf_tiles)
    assert ids.shape == (3, 5) and ids[0, 0] == 12 and ids[1, 0] == 13 and ids[0, 1] == 15 and ids[2, 1] == 0
    words = np.arange(buf_tiles * tile // 4, dtype=np.uint64).reshape(buf_tiles, -1)
    want = np.array([words[ids[b]].sum() for b in range(grid)], np.uint64)
    assert np.array_equal(ts.expected_stream_sums(base, grid, tiles, tile, buf_tiles), want)


def _stats(launches, grid, tiles, period=1000.0):
    st = np.zeros((launches, grid, ts.NSTATS), np.uint64)
    for l in range(launches):
        for b in range(grid):
            t0 = 10_000 + 7 * b
            span = period * tiles * (1 + 0.01 * b)
            st[l, b, 0], st[l, b, 1] = t0, t0 + span
            st[l, b, 2], st[l, b, 3] = 5_000, 5_000 + span * GHZ
            st[l, b, 4], st[l, b, 5] = 300 * GHZ * tiles, 200 * GHZ * tiles
            st[l, b, 8], st[l, b, 9] = 7_000, 7_000 + 1500 * GHZ
    return st


def test_summarize_stream():
    s = ts.summarize_stream(_stats(3, 4, 100), 100)
    assert s["ns_per_tile"] == pytest.approx(1000 * 1.015, rel=1e-3)
    assert s["ns_per_tile_max"] == pytest.approx(1030, rel=1e-3)
    assert s["clock_ghz"] == pytest.approx(GHZ, rel=1e-3) and s["consumer_busy_ns"] == pytest.approx(300, rel=1e-3)
    assert s["first_tile_ns"] == pytest.approx(1500, rel=1e-3) and s["start_spread_ns"] == 21
    with pytest.raises(ValueError, match="empty"):
        ts.summarize_stream(np.zeros((1, 2, ts.NSTATS), np.uint64), 10)


def test_cvt_op_table_matches_the_kernel_source():
    from h100lab.cuda import kernel_source
    src = kernel_source("l01_cvt_probe")
    cases = dict((int(a), b) for a, b in re.findall(r'case (\d+): H100LAB_\w+\("([^"]+)"\)', src))
    assert cases == {code: op for code, op, _ in ts.CVT_OPS}
    core_only = src.split("#ifndef H100LAB_CVT_CORE_ONLY")[1]
    assert all(f"case {c}:" in core_only for c, _, _ in ts.CVT_OPS if c >= ts.CVT_CORE)
    kinds = dict(re.findall(r'case \d+: (H100LAB_\w+)\("([^"]+)"\)', src)[i][::-1] for i in range(len(cases)))
    for code, op, kind in ts.CVT_OPS:
        assert kinds[op] == "H100LAB_" + kind.upper()
    ins = ts.cvt_inputs()
    assert ins["b16"][0].size == 65536 and np.unique(ins["b32"][0] >> 16).size == 65536
    f32 = ins["f32"][0]
    assert {0x7FC00000, 0x7F800001, 0xFFC00000, 0x477FF000} <= set(f32.tolist())
    assert np.array_equal(np.roll(ins["f32"][1], 1), f32)


def test_enum_cases_and_the_model():
    from h100lab import tma
    cases = ts.enum_cases()
    assert cases[0]["id"] == "control"
    ids = {c["id"] for c in cases}
    assert {"dtype_16", "swizzle_7", "l2_promotion_4", "oob_fill_2", "interleave_3"} <= ids
    names = {"dtype": "tensorDataType"}
    for c in cases:
        v = tma.verdict(c["dtype"], c["rank"], 1 << 20, c["global_dim"], c["global_strides"], c["box_dim"],
                        c["element_strides"], c["interleave"], c["swizzle"], c["l2_promotion"], c["oob_fill"])
        # the boundary values with an enumerator are valid maps; those without one are refused
        no_name = c["id"] in {"dtype_16", "dtype_17", "dtype_255", "dtype_-1", "interleave_3", "interleave_7",
                              "swizzle_7", "swizzle_8", "swizzle_255", "l2_promotion_4", "l2_promotion_5",
                              "oob_fill_2", "oob_fill_3", "oob_fill_-1"}
        if no_name:
            assert not v.ok and "no enumerator" in v.rule, c["id"]
        elif c["id"] in ("control", "dtype_12", "interleave_1", "interleave_2", "swizzle_0", "swizzle_3",
                         "l2_promotion_0", "l2_promotion_3", "oob_fill_1"):
            assert v.ok, (c["id"], v.rule)
    assert names


def test_latency_and_sync_cases():
    lat = ts.latency_cases()
    assert {c["kind"] for c in lat} == {"bulk", "tensor", "issue", "mbarrier"}
    assert all(c["bytes"] * c["count"] <= 128 * 1024 for c in lat if c["kind"] == "issue")
    for b in ts.LAT_TENSOR_BYTES:
        bx, by = ts.tensor_box(b)
        assert bx * by * 4 == b and bx <= 256 and by <= 256 and (bx * 4) % 16 == 0
    with pytest.raises(ValueError):
        ts.tensor_box(24)
    sy = ts.sync_cases()
    cb = [c for c in sy if c["kind"] == "cluster_barrier"]
    assert {c["cluster"] for c in cb} == {1, 2, 4, 8, 16} and {c["sem"] for c in cb} == {"release", "relaxed"}
    assert {c["threads"] for c in sy if c["kind"] == "bar_sync"} == {32, 64, 128, 256, 512, 1024}
    assert {(c["remote"], c["target"]) for c in sy if c["kind"] == "dsmem_chase" and c["cluster"] == 8} == \
        {(0, 0), (1, 0), (1, 1), (1, 7)}
    assert all(c["vecs"] % (4 * c["threads"]) == 0 for c in sy if c["kind"] == "dsmem_stream")
    assert len(ts.read_configs()) == 72


def test_copytune_cases_fit_and_respect_the_lag_rule():
    cases = ts.copytune_cases()
    assert cases and all(ts.copytune_fits(c["tile_bytes"] // 1024, c["stages"], c["ctas_per_sm"]) for c in cases)
    assert all(0 <= c["lag"] < c["stages"] and c["lag"] <= 7 for c in cases)
    assert {c["flags"] for c in cases} == {0, 4} and {c["ctas_per_sm"] for c in cases} >= {1, 2, 3, 4}
    # bytes in flight per SM: 48 KiB … 192 KiB
    flight = {c["tile_bytes"] * c["stages"] * c["ctas_per_sm"] for c in cases}
    assert min(flight) >= 48 << 10 and max(flight) <= 192 << 10
    assert not ts.copytune_fits(64, 4, 1) and not ts.copytune_fits(16, 4, 4) and ts.copytune_fits(16, 3, 4)
    assert len(ts.copytune_cases(quick=True)) < len(cases) / 4


@needs_nvrtc
@pytest.mark.parametrize("tile,stages,lag,flags,grid", [(2048, 2, 0, 0, 3), (1024, 4, 2, 5, 2), (4096, 3, 1, 8, 4),
                                                         (1024, 3, 2, 15, 5), (8192, 1, 0, 4, 2), (4096, 2, 1, 3, 40)])
def test_copy_tune_kernel_copies_every_byte_on_the_emulator(tile, stages, lag, flags, grid):
    """l05_copy_tune.cu on the PTX emulator: every variant (lag, hints, contiguous chunks, prefetch, more CTAs than
    tiles) copies the source exactly, moves each byte through the TMA twice and raises no error bit."""
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_tune").function("copy_tune")
    n = 64 * 1024
    src = emu.to_device(np.arange(n // 4, dtype=np.uint32))
    dst = emu.to_device(np.full(n // 4, 0xFFFFFFFF, np.uint32))
    err = emu.zeros(1, np.uint32)
    st = emu.launch(k, grid, 32, src, dst, np.int64(n), np.int32(tile), np.int32(stages), np.int32(lag),
                    np.int32(flags), np.int64(2_000_000_000), err, shared_mem=1024 + stages * tile)
    assert np.array_equal(dst.to_host(), np.arange(n // 4, dtype=np.uint32))
    assert int(err.to_host()[0]) == 0 and st.tma_bytes == 2 * n


@needs_nvrtc
def test_copy_tune_kernel_refuses_a_lag_without_a_free_buffer():
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_tune").function("copy_tune")
    src = emu.to_device(np.arange(1024, dtype=np.uint32))
    dst = emu.zeros(1024, np.uint32)
    err = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 32, src, dst, np.int64(4096), np.int32(1024), np.int32(2), np.int32(2), np.int32(0),
               np.int64(2_000_000_000), err, shared_mem=1024 + 2048)
    assert int(err.to_host()[0]) == 2 and not dst.to_host().any()


def test_budget():
    t = [0.0]
    b = ts.Budget(10.0, clock=lambda: t[0])
    assert not b.over() and b.left() == 10.0
    t[0] = 11.0
    assert b.over() and b.elapsed() == 11.0


# ------------------------------------------------------------------------------------------------
# the fake GPU

_SIZES = {".u64": 8, ".s64": 8, ".b64": 8, ".f64": 8, ".u32": 4, ".s32": 4, ".b32": 4, ".f32": 4, ".u16": 2,
          ".u8": 1}


def ptx_params(ptx: str, name: str) -> list[int]:
    m = re.search(r"\.entry " + re.escape(name) + r"\((.*?)\)", ptx, re.S)
    assert m, f"no .entry {name}"
    out = []
    for line in m.group(1).split(","):
        line = line.strip()
        if not line:
            continue
        arr = re.search(r"\[(\d+)\]", line)
        if arr:
            out.append(int(arr.group(1)))
        else:
            out.append(_SIZES[re.search(r"(\.[usbf]\d+)\s", line + " ").group(1)])
    return out


class FakeArray:
    def __init__(self, gpu, nbytes):
        self.nbytes = int(nbytes)
        self.buf = np.zeros(max(self.nbytes, 8), np.uint8)
        self.ptr = gpu._next
        gpu._next += (self.nbytes + 4095) // 4096 * 4096 + 4096
        gpu._arrays.append(self)
        self.dtype = np.uint8
        self.shape = (self.nbytes,)


class FakeMap:
    def __init__(self, args):
        self.args = args
        self.data = bytes(128)


class FakeKernel:
    def __init__(self, gpu, kernel, name, ptx):
        self.gpu, self.kernel, self.name = gpu, kernel, name
        self.params = ptx_params(ptx, name)
        self.max_dyn = 48 * 1024
        self.nonportable = False

    def set_max_dynamic_shared_memory(self, n):
        assert n <= 232448
        self.max_dyn = n

    def allow_non_portable_cluster_size(self, allow=True):
        self.nonportable = allow


class FakeGpu:
    """The CudaBackend interface on NumPy buffers, with a toy clock."""

    def __init__(self, sms=4, torch_ok=True):
        self.sms = sms
        self._next = 1 << 32
        self._arrays: list[FakeArray] = []
        self.launches: list[tuple] = []
        self._time = []
        self.compiled = {}
        self.fail_compile_full_cvt = False

    # device
    def properties(self):
        return {"multiProcessorCount": self.sms, "sharedMemPerMultiprocessor": 233472,
                "sharedMemPerBlockOptin": 232448, "name": "Fake H200"}

    def function(self, kernel, name, options=()):
        from h100lab.cuda import compile_kernel
        from h100lab.cuda.errors import CompileError
        if kernel == "l01_cvt_probe" and not options and self.fail_compile_full_cvt:
            raise CompileError(kernel, "NVRTC_ERROR_COMPILATION", "ptxas fatal: unknown modifier", [])
        p = compile_kernel(kernel, options=options)
        assert name in p.entry_points()
        return FakeKernel(self, kernel, name, p.ptx)

    # memory
    def alloc(self, nbytes):
        return FakeArray(self, nbytes)

    def zeros(self, n, dtype):
        a = FakeArray(self, int(n) * np.dtype(dtype).itemsize)
        a.dtype, a.shape = np.dtype(dtype), (int(n),)
        return a

    def to_device(self, arr):
        arr = np.ascontiguousarray(arr)
        a = FakeArray(self, arr.nbytes)
        a.buf[:arr.nbytes] = arr.view(np.uint8).reshape(-1)
        a.dtype, a.shape = arr.dtype, arr.shape
        return a

    def to_host(self, a):
        return a.buf[:a.nbytes].view(a.dtype).reshape(a.shape).copy()

    def memset32(self, a, value, words=None):
        n = a.nbytes // 4 if words is None else words
        a.buf[:4 * n].view(np.uint32)[:] = value & 0xFFFFFFFF

    @staticmethod
    def ptr(a, offset=0):
        return np.uint64(a.ptr + offset)

    def _resolve(self, p):
        p = int(p)
        for a in self._arrays:
            if a.ptr <= p < a.ptr + max(a.nbytes, 8):
                return a, p - a.ptr
        raise AssertionError(f"pointer {p:#x} is in no allocation")

    def _u32(self, p, n=None):
        a, off = (p, 0) if isinstance(p, FakeArray) else self._resolve(p)
        assert off % 4 == 0
        v = a.buf[off:].view(np.uint32) if (a.buf.size - off) % 4 == 0 else a.buf[off:off + (a.buf.size - off) // 4 * 4].view(np.uint32)
        return v if n is None else v[:n]

    def _u64(self, p):
        a, off = (p, 0) if isinstance(p, FakeArray) else self._resolve(p)
        return a.buf[off:off + (a.buf.size - off) // 8 * 8].view(np.uint64)

    # kernels
    def launch(self, k, grid, block, *args, shared_mem=0, cluster=None):
        sizes = []
        for a in args:
            if isinstance(a, FakeArray):
                sizes.append(8)
            elif isinstance(a, FakeMap):
                sizes.append(128)
            elif isinstance(a, np.generic):
                sizes.append(a.dtype.itemsize)
            else:
                raise AssertionError(f"{k.name}: argument {a!r} has no C type")
        assert sizes == k.params, f"{k.name}: arguments {sizes} but the kernel takes {k.params}"
        assert shared_mem <= max(k.max_dyn, 48 * 1024), f"{k.name}: {shared_mem} B of dynamic shared memory not opted in"
        if cluster is not None and cluster > 8:
            assert k.nonportable, "a cluster of more than 8 needs the non-portable attribute"
        self.launches.append((k.name, grid, block, shared_mem, cluster))
        body = "_k_read_v4" if k.name.startswith("read_v4") else "_k_" + k.name
        getattr(self, body)(grid, block, *args)

    def sync(self):
        pass

    def timed(self, calls):
        out = []
        for fn in calls:
            n = len(self.launches)
            fn()
            out.append(0.25 + 0.01 * (len(self.launches) - n))
        return out

    def _bytes(self, p):
        """A uint8 view from an allocation, a pointer (np.uint64 / int) or an object with ``.ptr``."""
        if isinstance(p, FakeArray):
            return p.buf
        a, off = self._resolve(getattr(p, "ptr", p))
        return a.buf[off:]

    def memcpy_dtod(self, dst, src, n):
        self._bytes(dst)[:n] = self._bytes(src)[:n]

    def encode_tiled(self, *args):
        return FakeMap(args)

    def encode_raw(self, c, address):
        from h100lab import tma
        v = tma.verdict(c["dtype"], c["rank"], address, c["global_dim"], c["global_strides"], c["box_dim"],
                        c["element_strides"], c["interleave"], c["swizzle"], c["l2_promotion"], c["oob_fill"])
        return v.result

    def gemms(self, jobs, repeats=10, timeout_s=240.0):
        out = {"jobs": [], "error": None, "torch": "fake", "torch_cuda": "13.0", "env": {}}
        for dtype, n in jobs:
            if dtype == "fp8":
                out["jobs"].append({"dtype": dtype, "n": n, "error": "RuntimeError: no fp8 GEMM in this fake"})
            else:
                out["jobs"].append({"dtype": dtype, "n": n, "samples_ms": [2.0 * n ** 3 / 700e12 * 1e3] * repeats,
                                    "rel_error": 1e-3})
        return out

    # kernel bodies --------------------------------------------------------------------------------
    def _k_fill_index(self, grid, block, p, n):
        self._u32(p)[:int(n)] = np.arange(int(n), dtype=np.uint32)

    def _k_stream(self, grid, block, src, dst, buf_tiles, base, tile, stages, tiles, mode, flags, timeout, sums, stats,
                  err):
        tile, tiles, mode, stages = int(tile), int(tiles), int(mode), int(stages)
        ids = ts.stream_tile_ids(int(base), grid, tiles, int(buf_tiles))
        w = tile // 4
        s = self._u32(src).reshape(-1, w)
        if mode == 1:
            self._u64(sums)[:grid] += s[ids].astype(np.uint64).sum(axis=(1, 2), dtype=np.uint64)
        if mode == 2:
            self._u32(dst).reshape(-1, w)[ids.reshape(-1)] = s[ids.reshape(-1)]
        period = max(1500.0 / stages, tile / 100.0 * (2 if mode == 2 else 1), 60.0)
        st = self._u64(stats)[:grid * ts.NSTATS].reshape(grid, ts.NSTATS)
        for b in range(grid):
            t0 = 1_000_000 + 5 * b
            span = period * tiles
            st[b, 0], st[b, 1] = t0, t0 + int(span)
            st[b, 2], st[b, 3] = 10_000, 10_000 + int(span * GHZ)
            st[b, 4], st[b, 5] = int(100 * GHZ * tiles), int(50 * GHZ * tiles)
            st[b, 8], st[b, 9] = 20_000, 20_000 + int(1400 * GHZ)

    def _k_verify_copy(self, grid, block, p, first, n, buf_words, bad):
        v = self._u32(p)
        idx = (int(first) + np.arange(int(n), dtype=np.int64)) % int(buf_words)
        self._u64(bad)[0] += np.count_nonzero(v[idx] != idx.astype(np.uint32))

    def _k_bar_sync_cost(self, grid, block, iters, out):
        o = self._u64(out)
        for b in range(grid):
            o[2 * b] = int(iters) * (20 + block // 32)
            o[2 * b + 1] = int(int(iters) * (20 + block // 32) / GHZ)

    def _k_tma_latency(self, grid, block, src, span, first, stride, nbytes, iters, timeout, out, err):
        o = self._u64(out)[:3 * int(iters)].reshape(-1, 3)
        o[:, 0] = int((1200 + int(nbytes) / 64) * GHZ)
        o[:, 1] = int((700 + int(nbytes) / 64) * GHZ)
        o[:, 2] = int(60 * GHZ)

    def _k_tma_latency_tensor(self, grid, block, tmap, rows, first_row, row_stride, nbytes, iters, timeout, out, err):
        self._k_tma_latency(grid, block, None, 0, 0, 0, nbytes, iters, timeout, out, err)

    def _k_tma_issue(self, grid, block, src, span, first, stride, nbytes, count, iters, timeout, out, err):
        o = self._u64(out)[:2 * int(iters)].reshape(-1, 2)
        o[:, 0] = int(count) * 30
        o[:, 1] = int((1200 + int(count) * int(nbytes) / 64) * GHZ)

    def _k_mbar_costs(self, grid, block, iters, timeout, out, err):
        o = self._u64(out)
        o[:6] = np.array([20, 18, 8, 400, 150, 2]) * int(iters)

    def _k_cluster_barrier_cost(self, grid, block, iters, relaxed, store, scratch, out):
        o = self._u64(out)
        for b in range(grid):
            o[2 * b] = int(iters) * (300 + 20 * grid + (0 if int(relaxed) else 30 * int(store)))
            o[2 * b + 1] = int(o[2 * b] / GHZ)

    def _k_dsmem_chase(self, grid, block, words, step, iters, target, remote, out):
        o = self._u64(out)
        o[0] = int(iters) * (200 if int(remote) else 30)
        o[1] = (int(iters) * int(step)) % int(words)
        o[2] = grid

    def _k_dsmem_stream(self, grid, block, vecs, iters, remote, out):
        o = self._u64(out)
        for b in range(grid):
            o[3 * b] = int(iters) * 1000
            o[3 * b + 1] = int(int(iters) * 1000 * GHZ)

    def _k_cvt_probe(self, grid, block, a, b, out, n, op):
        x = self._u32(a, int(n))
        self._u32(out, int(n))[:] = (x ^ np.uint32(int(op))) & np.uint32(0xFFFF)

    def _k_read_v4(self, grid, block, src, n16, sink):
        assert int(n16) * 16 <= src.nbytes

    def _k_device_copy(self, grid, block, src, dst, n16):
        n = int(n16) * 16
        dst.buf[:n] = src.buf[:n]

    def _k_copy_tune(self, grid, block, src, dst, total, tile, stages, lag, flags, timeout, err):
        assert block == 32 and 0 <= int(lag) < int(stages) <= 16 and int(total) % int(tile) == 0
        self._bytes(dst)[:int(total)] = self._bytes(src)[:int(total)]

    def _k_copy_latency(self, grid, block, src, offs, nbytes, count, iters, warm, flags, timeout, out, err):
        it, reps, n = int(iters), int(warm) + 1, int(count) * int(nbytes)
        o = self._u64(out)[:3 * reps * it].reshape(it, reps, 3)
        o[:, :, 0] = 40
        o[:, :, 1] = 40 + 56 * (int(count) - 1)
        o[:, 0, 2] = o[:, 0, 1] + int((400 + n / 200) * GHZ)
        o[:, 1:, 2] = o[:, 1:, 1] + int((150 + n / 200) * GHZ)

    def _k_copy_ws(self, grid, block, src, dst, total, tile, stages, lag, flags, timeout, err):
        assert block == 64 and 0 <= int(lag) < int(stages) <= 16 and int(lag) <= 3 and int(total) % int(tile) == 0
        self._bytes(dst)[:int(total)] = self._bytes(src)[:int(total)]

    def _k_tensor_copy_ws(self, grid, block, tin, tout, bx, by, tiles_x, n_tiles, tile, stages, lag, flags, timeout,
                          err):
        assert block == 64 and 0 <= int(lag) < int(stages) <= 16
        n = int(n_tiles) * int(tile)
        out = self._bytes(tout.args[2])
        n = min(n, out.size)
        out[:n] = self._bytes(tin.args[2])[:n]

    def _k_tma_copy(self, grid, block, tin, tout, bx, by, tiles_x, n_tiles, stages, tile):
        out = self._bytes(tout.args[2])
        n = min(int(n_tiles) * int(tile), out.size)
        out[:n] = self._bytes(tin.args[2])[:n]


@pytest.fixture()
def datadir(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    return tmp_path


META = {"gpu": "Fake H200", "compute_capability": "9.0", "driver": "580", "cuda": "13.0", "date": "2026-01-01",
        "command": "python -m h100lab.measure.timing_sweep --out data"}


@needs_nvrtc
def test_every_step_on_the_fake_gpu(datadir):
    gpu = FakeGpu()
    log = io.StringIO()
    r = ts.Runner(gpu, quick=True, log=log, buf_bytes=8 << 20)
    out = ts.run(r, ts.STEPS, META)
    assert out == {s: "written" for s in ts.STEPS}, log.getvalue()
    text = log.getvalue()
    assert "== step stream" in text and "ceilings: cuBLAS bf16" in text
    for step, name in ts.DATASETS.items():
        ds = data.load(name)
        assert ds.meta["step"] == step and ds.meta["complete"] and ds.meta["buffer_bytes"] == 8 << 20
        assert ds.records
    # stream: every case ran, its data checked (the fake moves real bytes), summaries present
    st = data.load("l03/stream_sweep").records
    assert len(st) == len([c for c in ts.stream_cases(True)])
    assert all(x["ok"] for x in st), [x for x in st if not x["ok"]][:2]
    assert all(x["bad_words"] == 0 for x in st if x["mode"] == "copy")
    assert all(x["ns_per_tile"] > 0 and x["clock_ghz"] == pytest.approx(GHZ, rel=1e-2) for x in st)
    cop = next(x for x in st if x["mode"] == "copy" and x["scope"] == "gpu")
    assert cop["moved_gbps"] == pytest.approx(2 * cop["load_gbps"])
    assert cop["grid"] == 4 * cop["ctas_per_sm"] and len(cop["samples_ms"]) == r.repeats
    # latency / sync / cvt / encode / ceilings
    lat = data.load("l03/tma_latency").records
    b = next(x for x in lat if x["kind"] == "bulk")
    assert b["cold_ns"] > b["warm_ns"] > 0 and b["ok"]
    mb = next(x for x in lat if x["kind"] == "mbarrier")
    assert mb["try_wait_hit_cycles"] == 20 and mb["wake_ns"] == pytest.approx(150 / r.clock_ghz())
    sy = data.load("l03/sync_cost").records
    assert all(x["ok"] for x in sy)
    cv = data.load("l01/cvt_bits").records
    assert len(cv) == len(ts.CVT_OPS)
    from h100lab.measure.l04 import unpack
    rec = next(x for x in cv if x["code"] == 5)
    a = unpack(rec["a"]).view(np.uint32)
    assert a.size == rec["n"] == 65536 and np.array_equal(unpack(rec["out"]).view(np.uint32), (a ^ 5) & 0xFFFF)
    en = data.load("l04/encode_enum_values").records
    assert en[0]["result"] == "CUDA_SUCCESS" and {x["result"] for x in en} == {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"}
    ce = data.load("l05/ceilings").records
    kinds = {x["kind"] for x in ce}
    assert {"memcpy", "read_stream", "device_copy", "tma_read", "tma_copy_stream", "tma_copy", "gemm"} <= kinds
    assert all(x["correct"] for x in ce if x["kind"] != "gemm" or x["dtype"] != "fp8")
    fp8 = [x for x in ce if x["kind"] == "gemm" and x["dtype"] == "fp8"]
    assert fp8 and all(not x["correct"] and "fp8" in x["error"] for x in fp8)
    assert all(x["torch"] == "fake" for x in ce if x["kind"] == "gemm")
    from h100lab.roofline import measured_ceilings
    c = measured_ceilings()
    assert c.gemm_flops["bf16"] == pytest.approx(700e12) and c.copy_bandwidth > 0 and c.read_bandwidth > 0
    # the launches the steps made used the kernels' real parameter lists (FakeGpu.launch asserts it)
    names = {n for n, *_ in gpu.launches}
    assert {"stream", "verify_copy", "tma_latency", "tma_latency_tensor", "tma_issue", "mbar_costs", "bar_sync_cost",
            "cluster_barrier_cost", "dsmem_chase", "dsmem_stream", "cvt_probe", "fill_index", "device_copy",
            "tma_copy", "copy_tune"} <= names
    # copytune: every variant checked, memcpy in the same run, ratios recorded
    ct = data.load("l05/copy_tune").records
    assert {x["kind"] for x in ct} == {"memcpy", "copy_tune", "tma_copy", "device_copy"}
    assert all(x["correct"] and x["ratio_memcpy"] > 0 for x in ct)
    assert {x["phase"] for x in ct} == {"A", "B", "C"}
    assert all("ratio_round" in x for x in ct if x["phase"] == "C")
    assert len([x for x in ct if x["kind"] == "memcpy" and x["phase"] == "C"]) == 3
    # latency2: issue window, landing and total per part; copyrace: every variant checked, 3 rounds, ratios
    l2 = data.load("l03/tma_latency_clean").records
    one = next(x for x in l2 if x["count"] == 1)
    assert one["cold_total_ns"] > one["warm_total_ns"] > one["warm_land_ns"] > 0 and one["ok"]
    eight = next(x for x in l2 if x["count"] == 8)
    assert eight["warm_issue_ns"] > eight["warm_first_ns"] > 0
    cr = data.load("l05/copy_race").records
    assert {x["round"] for x in cr} == {0, 1, 2}
    assert all(x["correct"] for x in cr), [x for x in cr if not x["correct"]][:2]
    assert {x["kind"] for x in cr} == {"memcpy", "copy_tune", "tma_copy", "ws", "tensor_ws", "device_copy",
                                       "read_stream", "tma_read"}
    assert all(x["ratio_round"] > 0 for x in cr)
    assert {"copy_latency", "copy_ws", "tensor_copy_ws"} <= {n for n, *_ in gpu.launches}
    co = data.load("l05/copy_offset").records
    assert {x["dst_offset"] for x in co} == {o for o in ts.OFFSET_CASES if o + (8 << 20) // 4 <= 8 << 20}
    assert all(x["correct"] and x["ratio_round"] > 0 and x["ratio_zero"] > 0 for x in co), co[:2]
    assert {x["round"] for x in co} == {0, 1, 2}


@needs_nvrtc
def test_a_wrong_copy_or_checksum_is_recorded(datadir):
    class Broken(FakeGpu):
        def _k_stream(self, grid, block, *args):
            super()._k_stream(grid, block, *args)
            if int(args[7]) == 2:
                self._u32(args[1])[int(args[3]) * int(args[4]) // 4] ^= 1     # one wrong word of the copy
            if int(args[7]) == 1:
                self._u64(args[10])[0] += 1

    r = ts.Runner(Broken(), quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    recs = r.step_stream()
    assert all(not x["ok"] for x in recs if x["mode"] in ("copy", "consume"))
    assert all(x["bad_words"] >= 1 for x in recs if x["mode"] == "copy")
    assert all(x["ok"] for x in recs if x["mode"] == "load")


@needs_nvrtc
def test_budget_stops_early_and_marks_datasets_incomplete(datadir):
    t = [0.0]
    b = ts.Budget(100.0, clock=lambda: t[0])

    class Slow(FakeGpu):
        def timed(self, calls):
            t[0] += 5.0
            return super().timed(calls)

    r = ts.Runner(Slow(), quick=True, log=io.StringIO(), buf_bytes=8 << 20, budget=b)
    out = ts.run(r, ("stream", "ceilings"), META)
    st = data.load("l03/stream_sweep")
    assert not st.meta["complete"] and 0 < len(st.records) < len(ts.stream_cases(True))
    assert out["stream"] == "written" and out["ceilings"] in ("written", "skipped: the wall-clock budget is spent")


@needs_nvrtc
def test_cvt_falls_back_to_the_core_ops(datadir):
    gpu = FakeGpu()
    gpu.fail_compile_full_cvt = True
    r = ts.Runner(gpu, quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    recs = r.step_cvt()
    assert {x["code"] for x in recs} == {c for c, _, _ in ts.CVT_OPS if c < ts.CVT_CORE}


def test_main_without_a_gpu_says_why(monkeypatch, capsys):
    monkeypatch.setenv("H100LAB_NO_GPU", "1")
    from h100lab.cuda import device
    device._probe.cache_clear()
    try:
        assert ts.main(["--steps", "cvt"]) == 2
    finally:
        device._probe.cache_clear()
    assert "no usable GPU" in capsys.readouterr().err


@needs_nvrtc
@pytest.mark.parametrize("name", ["l03_stream", "l03_tma_latency", "l03_sync_cost", "l05_read_stream", "l01_cvt_probe",
                                  "l05_copy_tune"])
def test_new_kernels_compile_and_say_what_they_prove(name):
    from h100lab.cuda import compile_kernel, kernel_info
    info = kernel_info(name)
    assert info.header.startswith("Used by:") and "Proves:" in info.header
    p = compile_kernel(name)
    assert p.cubin and p.entry_points()
    if name == "l01_cvt_probe":
        assert compile_kernel(name, options=["-DH100LAB_CVT_CORE_ONLY"]).cubin


@pytest.mark.gpu
def test_gpu_quick_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    r = ts.Runner(ts.CudaBackend(), quick=True, log=io.StringIO())
    out = ts.run(r, ("encode", "latency", "sync"), META)
    assert out == {"encode": "written", "latency": "written", "sync": "written"}
    en = data.load("l04/encode_enum_values").records
    assert en[0]["result"] == "CUDA_SUCCESS"


FAKE_TORCH = """
import numpy as np
__version__ = "0.0-fake"
class version:
    cuda = "13.0"
bfloat16, float16, float8_e4m3fn = "bf16", "fp16", "fp8"
def device(name):
    return name
class Generator:
    def __init__(self, device=None):
        self.rng = np.random.default_rng(0)
    def manual_seed(self, s):
        self.rng = np.random.default_rng(s)
        return self
class T:
    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)
    def to(self, dtype):
        return T(np.round(self.a * 8) / 8 if dtype == "fp8" else self.a)
    def t(self):
        return T(self.a.T)
    def float(self):
        return self
    def __matmul__(self, o):
        return T(self.a @ o.a)
    def __sub__(self, o):
        return T(self.a - o.a)
    def __truediv__(self, o):
        return T(self.a / o.a)
    def norm(self):
        return T(np.linalg.norm(self.a))
    def item(self):
        return float(self.a)
def randn(*shape, device=None, dtype=None, generator=None):
    return T(generator.rng.standard_normal(shape))
def tensor(x, device=None):
    return T(x)
def matmul(a, b):
    return a @ b
def _scaled_mm(a, b, scale_a=None, scale_b=None, out_dtype=None):
    return a @ b
class cuda:
    @staticmethod
    def synchronize():
        pass
    @staticmethod
    def empty_cache():
        pass
    class Event:
        n = 0
        def __init__(self, enable_timing=False):
            pass
        def record(self):
            cuda.Event.n += 1
            self.t = cuda.Event.n
        def elapsed_time(self, other):
            return 0.5 * (other.t - self.t)
"""


def test_gemm_child_process_with_a_fake_torch(tmp_path, monkeypatch):
    # the child script (what failed on the H200 in-process) runs against a NumPy stand-in for torch
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    out = ts.CudaBackend.gemms(None, [("bf16", 8), ("fp8", 8), ("bf16", 16), ("int4", 8)], repeats=3)
    assert out["error"] is None and out["torch"] == "0.0-fake" and out["env"] == {}
    jobs = out["jobs"]
    assert [j["n"] for j in jobs] == [8, 8, 16, 8]
    assert jobs[0]["samples_ms"] == [0.5, 0.5, 0.5] and jobs[0]["rel_error"] == pytest.approx(0, abs=1e-12)
    assert jobs[1]["rel_error"] is not None and jobs[2]["rel_error"] is None   # the smallest size of each dtype is checked
    assert "ValueError" in jobs[3]["error"]


def test_gemm_child_process_reports_an_import_failure(tmp_path, monkeypatch):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "import os\nif os.environ.get('PYTORCH_JIT') != '0':\n    raise RuntimeError('TorchScript: could not get source')\n"
        + FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    out = ts.CudaBackend.gemms(None, [("fp16", 8)], repeats=2)
    assert out["error"] is None and out["env"] == {"PYTORCH_JIT": "0"} and out["jobs"][0]["samples_ms"]
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    out = ts.CudaBackend.gemms(None, [("fp16", 8)], repeats=2)
    assert "no torch here" in out["error"] and out["jobs"] == []
