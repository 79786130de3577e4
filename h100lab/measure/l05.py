"""Lesson 5 measurements: TMA copy bandwidth, raw bulk copies, multicast, bulk reductions.

``python -m h100lab.measure.l05 [--out DIR] [--quick]`` writes (``h100lab.data``):

* ``l05/copy_bandwidth``: the TMA copy stream (``l05_tma_copy.cu``: one thread per CTA, tensor loads
  into ``stages`` buffers, tensor stores through bulk groups) for each :func:`copy_configs` entry, a
  vectorised device copy kernel and ``cuMemcpyDtoDAsync``, all on the same 512 MiB FP32 tensor in one
  run; bandwidth counts bytes read plus bytes written; every TMA configuration's output is checked;
* ``l05/bulk``: raw ``cp.async.bulk`` round trips (global → shared with ``complete_tx::bytes`` →
  global through a bulk group) for sizes and offsets of :func:`round_trip_cases`; multicast in
  clusters (:func:`multicast_cases`: which CTAs receive, whose barrier completes, raw and tensor forms);
  ``cp.reduce.async.bulk`` into global memory for every op/type of :func:`bulk_reduce_cases`.

Case lists and the model's expected results are plain Python, tested without a GPU.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from .l04 import pack
from . import begin

__all__ = ["copy_configs", "round_trip_cases", "multicast_cases", "bulk_reduce_cases", "BULK_REDUCE_CODES",
           "COPY_ROWS", "COPY_COLS", "model_round_trip", "model_multicast", "model_bulk_reduce", "reduce_inputs",
           "max_dynamic_smem", "main", "SENTINEL"]

COPY_ROWS, COPY_COLS = 16384, 8192      # FP32: 512 MiB
SENTINEL = 0xA5

#: code → (op, PTX type) of ``bulk_reduce_global`` in l05_bulk.cu
BULK_REDUCE_CODES = [("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "f32"), ("add", "f64"), ("add", "f16"),
                     ("add", "bf16"), ("min", "s32"), ("max", "u32"), ("min", "bf16"), ("inc", "u32"), ("dec", "u32"),
                     ("and", "b32"), ("or", "b64"), ("xor", "b32"), ("max", "s64")]


def copy_configs(quick: bool = False) -> list[dict[str, Any]]:
    """TMA copy configurations: FP32 boxes of 16, 32 and 64 KB, 1–6 stages (as many as fit in 227 KB),
    one or two CTAs per SM."""
    out = []
    for bx, by in ((64, 64), (256, 32), (128, 64), (256, 64)):
        tile = bx * by * 4
        pitch = -(-tile // 1024) * 1024
        for stages in (1, 2, 3, 4, 6):
            for per_sm in (1, 2):
                if per_sm * (stages * pitch + 2048) > 228 * 1024:
                    continue
                if quick and (stages not in (1, 4) or per_sm != 1):
                    continue
                out.append(dict(box_x=bx, box_y=by, tile_bytes=tile, stages=stages, ctas_per_sm=per_sm))
    return out


def round_trip_cases() -> list[dict[str, Any]]:
    """Raw bulk copies: sizes 16 B … 64 KB, shared destinations at 16-byte offsets, sources at 16-byte offsets."""
    cases = []
    for size in (16, 48, 128, 1008, 4096, 65536):
        for dst in (0, 16, 528):
            for src in (0, 80):
                cases.append(dict(id=f"rt_{size}_{dst}_{src}", size=size, dst_offset=dst, src_offset=src, seed=size + dst))
    return cases


def multicast_cases() -> list[dict[str, Any]]:
    """Clusters of 2–8 CTAs (16 with the non-portable size), masks with and without the issuer, raw and tensor."""
    rows = [(2, 0b11, 0, 0), (2, 0b10, 0, 0), (4, 0b1010, 0, 0), (4, 0b1111, 2, 0), (4, 0b0101, 3, 0),
            (8, 0b10110001, 0, 0), (8, 0xFF, 7, 0), (16, 0x8421, 0, 0),
            (2, 0b11, 0, 1), (4, 0b1010, 0, 1), (4, 0b0110, 3, 1), (8, 0b11110000, 1, 1)]
    out = []
    for i, (n, mask, issuer, tensor) in enumerate(rows):
        out.append(dict(id=f"mc{n}_{mask:#x}_i{issuer}_{'tensor' if tensor else 'raw'}", cluster=n, mask=mask,
                        issuer=issuer, use_tensor=tensor, bytes=2048 if not tensor else 64 * 16 * 2,
                        dst_offset=128 * (i % 4), seed=500 + i))
    return out


def bulk_reduce_cases() -> list[dict[str, Any]]:
    """One ``cp.reduce.async.bulk.global`` per op/type pair of :data:`BULK_REDUCE_CODES` (256 bytes each)."""
    return [dict(id=f"bred_{op}_{t}", code=i, op=op, type=t, size=256, seed=900 + i)
            for i, (op, t) in enumerate(BULK_REDUCE_CODES)]


# ------------------------------------------------------------------------------------------------
# model predictions

def _rng_bytes(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def model_round_trip(c: dict[str, Any]) -> np.ndarray:
    """The bytes a round trip leaves in the output buffer, from the model's bulk copies."""
    from .. import tma
    from ..sync.mbarrier import MBarrier
    from ..sync.smem import SharedMemory

    src = _rng_bytes(c["seed"], c["src_offset"] + c["size"])
    g = tma.GlobalMemory.holding(src)
    out = tma.GlobalMemory(c["size"], base=1 << 40)
    s = SharedMemory(c["dst_offset"] + c["size"] + 64)
    bar = MBarrier(s, s.size - 8 - (s.size % 8))
    bar.init(1)
    bar.arrive_expect_tx(c["size"])
    tma.bulk_copy_global_to_shared(s, c["dst_offset"], g, g.base + c["src_offset"], c["size"], bar.addr)
    if not bar.test_wait_parity(0):
        raise AssertionError("the model's barrier did not complete")
    grp = tma.BulkGroups()
    tma.bulk_copy_shared_to_global(out, out.base, s, c["dst_offset"], c["size"], grp)
    grp.commit_group()
    grp.wait_group(0)
    return out.array.copy()


def _mc_region(c: dict[str, Any]) -> int:
    return c["dst_offset"] + c["bytes"] + 256


def _mc_tensor():
    from .. import tma

    return tma.encode_tiled("BFLOAT16", 2, 0, [64, 64], [128], [64, 16], [1, 1], swizzle="128B")


def multicast_source(c: dict[str, Any]) -> np.ndarray:
    """The global bytes a multicast case reads (the tensor for the tensor form)."""
    return _rng_bytes(c["seed"], 64 * 64 * 2 if c["use_tensor"] else c["bytes"])


def model_multicast(c: dict[str, Any]) -> tuple[list[np.ndarray], list[int]]:
    """Each CTA's dumped region and status (1 completed, 2 not selected) after the multicast, from the model."""
    from .. import tma
    from ..sync.mbarrier import MBarrier
    from ..sync.smem import SharedMemory

    region = _mc_region(c)
    bar_at = -(-region // 8) * 8
    cluster = [SharedMemory(bar_at + 8, cta_rank=r) for r in range(c["cluster"])]
    for s in cluster:
        s.array[:region] = SENTINEL
        b = MBarrier(s, bar_at)
        b.init(1)
        if c["mask"] >> s.cta_rank & 1:
            b.arrive_expect_tx(c["bytes"])
    src = multicast_source(c)
    g = tma.GlobalMemory.holding(src)
    if c["use_tensor"]:
        tm = _mc_tensor()
        tm = tma.encode_tiled(tm.dtype, 2, g.base, [64, 64], [128], [64, 16], [1, 1], swizzle="128B")
        tma.tensor_load_multicast(tm, g, [0, 16], cluster, c["dst_offset"], bar_at, c["mask"], issuer=c["issuer"])
    else:
        tma.bulk_copy_multicast(cluster, c["dst_offset"], g, g.base, c["bytes"], bar_at, c["mask"], issuer=c["issuer"])
    status = [(1 if MBarrier(s, bar_at).test_wait_parity(0) else 0) if c["mask"] >> s.cta_rank & 1 else 2
              for s in cluster]
    return [s.array[:region].copy() for s in cluster], status


def reduce_inputs(c: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(global before, shared source) bytes of a bulk-reduce case: finite values for floating types."""
    t, n = c["type"], c["size"]
    rng = np.random.default_rng(c["seed"])
    if t in ("f16", "bf16", "f32", "f64"):
        from ..tma.bulk import _np_type

        dt = _np_type(t)
        a = rng.uniform(-8, 8, n // dt.itemsize).astype(dt)
        b = rng.uniform(-8, 8, n // dt.itemsize).astype(dt)
        return a.view(np.uint8).copy(), b.view(np.uint8).copy()
    return rng.integers(0, 256, n, dtype=np.uint8), rng.integers(0, 256, n, dtype=np.uint8)


def model_bulk_reduce(c: dict[str, Any]) -> np.ndarray:
    """The global bytes after ``cp.reduce.async.bulk.global....<op>.<type>`` from the model."""
    from .. import tma
    from ..sync.smem import SharedMemory

    before, src = reduce_inputs(c)
    g = tma.GlobalMemory.holding(before)
    s = SharedMemory(c["size"] + 128)
    s.write(0, src)
    grp = tma.BulkGroups()
    tma.bulk_reduce("global", c["op"], c["type"], s, 0, c["size"], gmem=g, dst=g.base, groups=grp,
                    noftz=c["type"] in ("f16", "bf16"))
    grp.commit_group()
    grp.wait_group(0)
    return g.array.copy()


def max_dynamic_smem(props: dict[str, Any], static_bytes: int) -> int:
    """The largest ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` a kernel with ``static_bytes`` of
    static shared memory may ask for: ``sharedMemPerBlockOptin - static_bytes`` (the driver refuses a
    larger value with ``CUDA_ERROR_INVALID_VALUE``; measured on an H200: 232448 for a kernel with 64 B
    of static mbarriers was refused) [CUDA Programming Guide §"Shared Memory", cuFuncSetAttribute]."""
    optin = int(props.get("sharedMemPerBlockOptin", 227 * 1024))
    if not 0 <= static_bytes <= optin:
        raise ValueError(f"static shared memory {static_bytes} B is outside 0 .. sharedMemPerBlockOptin ({optin} B)")
    return optin - int(static_bytes)


# ------------------------------------------------------------------------------------------------
# GPU parts

def _time_memcpy(dst, src, nbytes: int, repeats: int = 10) -> list[float]:
    """``cuMemcpyDtoDAsync`` timed with CUDA events (ms per copy)."""
    from ..cuda import device

    d = device._ready()
    ev = [device.check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate") for _ in range(2)]
    out = []
    try:
        for i in range(repeats + 2):
            device.check(d.cuEventRecord(ev[0], 0), "cuEventRecord")
            device.check(d.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, 0), "cuMemcpyDtoDAsync")
            device.check(d.cuEventRecord(ev[1], 0), "cuEventRecord")
            device.check(d.cuEventSynchronize(ev[1]), "cuEventSynchronize")
            if i >= 2:
                out.append(float(device.check(d.cuEventElapsedTime(ev[0], ev[1]), "cuEventElapsedTime")))
    finally:
        for e in ev:
            d.cuEventDestroy(e)
    return out


def measure_copy(configs: Sequence[dict[str, Any]], repeats: int = 10) -> list[dict[str, Any]]:
    from .. import cuda

    props = cuda.device_properties()
    sms = props["multiProcessorCount"]
    nbytes = COPY_ROWS * COPY_COLS * 4
    host = np.arange(COPY_ROWS * COPY_COLS, dtype=np.uint32).view(np.float32)
    src = cuda.to_device(host)
    zeros = np.zeros_like(host)
    dst = cuda.zeros(host.shape, np.float32)
    prog = cuda.compile_kernel("l05_tma_copy")
    k = prog.function("tma_copy")
    # static + dynamic shared memory of a block may not exceed sharedMemPerBlockOptin (232448 B on an
    # H100/H200, CUDA Programming Guide §"Shared Memory" / cuFuncSetAttribute): the kernel's mbarriers
    # are static shared memory, so the dynamic maximum is the opt-in limit less those bytes
    k.set_max_dynamic_shared_memory(max_dynamic_smem(props, k.attributes()["shared_size_bytes"]))
    recs = []
    for c in configs:
        pitch = -(-c["tile_bytes"] // 1024) * 1024
        smem = c["stages"] * pitch + 1024
        tin = cuda.encode_tiled("FLOAT32", 2, src, [COPY_COLS, COPY_ROWS], [COPY_COLS * 4], [c["box_x"], c["box_y"]],
                                [1, 1], "NONE", "NONE", "L2_256B", "NONE")
        tout = cuda.encode_tiled("FLOAT32", 2, dst, [COPY_COLS, COPY_ROWS], [COPY_COLS * 4], [c["box_x"], c["box_y"]],
                                 [1, 1], "NONE", "NONE", "L2_256B", "NONE")
        tiles_x = COPY_COLS // c["box_x"]
        n_tiles = tiles_x * (COPY_ROWS // c["box_y"])
        grid = sms * c["ctas_per_sm"]
        args = (tin, tout, np.int32(c["box_x"]), np.int32(c["box_y"]), np.int32(tiles_x), np.int32(n_tiles),
                np.int32(c["stages"]), np.int32(c["tile_bytes"]))
        dst.copy_from_host(zeros)
        cuda.launch(k, grid, 32, *args, shared_mem=smem)
        cuda.synchronize()
        correct = bool(np.array_equal(dst.to_host().view(np.uint32), host.view(np.uint32)))
        t = cuda.time_kernel(k, grid, 32, *args, shared_mem=smem, warmup=2, repeats=repeats)
        recs.append(dict(kind="tma_copy", **c, grid=grid, bytes=nbytes, correct=correct, median_ms=t.median_ms,
                         min_ms=t.min_ms, gbps=2 * nbytes / (t.median_ms * 1e6)))
    kc = prog.function("device_copy")
    for blocks_per_sm, threads in ((4, 256), (8, 256), (4, 512), (16, 128)):
        grid = sms * blocks_per_sm
        t = cuda.time_kernel(kc, grid, threads, src, dst, np.int64(nbytes // 16), warmup=2, repeats=repeats)
        recs.append(dict(kind="device_copy", blocks_per_sm=blocks_per_sm, threads=threads, grid=grid, bytes=nbytes,
                         median_ms=t.median_ms, min_ms=t.min_ms, gbps=2 * nbytes / (t.median_ms * 1e6)))
    try:
        ms = _time_memcpy(dst, src, nbytes, repeats)
        med = float(np.median(ms))
        recs.append(dict(kind="memcpy", bytes=nbytes, median_ms=med, min_ms=min(ms), gbps=2 * nbytes / (med * 1e6)))
    except Exception as exc:  # the driver call is optional: the device copy kernel is the reference
        print(f"   cuMemcpyDtoDAsync not timed: {exc}", file=sys.stderr)
    return recs


def measure_bulk() -> list[dict[str, Any]]:
    from .. import cuda

    prog = cuda.compile_kernel("l05_bulk")
    k_rt, k_mc, k_red = (prog.function(n) for n in ("bulk_round_trip", "multicast_image", "bulk_reduce_global"))
    for k in (k_rt, k_mc, k_red):
        k.set_max_dynamic_shared_memory(100 * 1024)
    k_mc.allow_non_portable_cluster_size(True)
    i32 = np.int32
    recs = []
    for c in round_trip_cases():
        src = cuda.to_device(_rng_bytes(c["seed"], c["src_offset"] + c["size"]))
        out = cuda.zeros(c["size"], np.uint8)
        st = cuda.zeros(1, np.int32)
        sub = np.uint64(src.ptr + c["src_offset"])      # a pointer parameter: src + src_offset
        cuda.launch(k_rt, 1, 32, sub, i32(c["size"]), i32(c["dst_offset"]), out, st,
                    shared_mem=c["dst_offset"] + c["size"] + 1024)
        cuda.synchronize()
        recs.append(dict(kind="round_trip", **c, completed=bool(st.to_host()[0] == 1), out=pack(out.to_host())))
    for c in multicast_cases():
        src_h = multicast_source(c)
        src = cuda.to_device(src_h)
        tm = cuda.encode_tiled("BFLOAT16", 2, src, [64, 64], [128], [64, 16], [1, 1], "NONE", "128B", "NONE", "NONE")
        region = _mc_region(c)
        out = cuda.zeros(c["cluster"] * region, np.uint8)
        st = cuda.zeros(16, np.int32)
        cuda.launch(k_mc, c["cluster"], 128, tm, src, i32(c["use_tensor"]), i32(0), i32(16), i32(c["bytes"]),
                    i32(c["mask"]), i32(c["issuer"]), i32(c["dst_offset"]), i32(region), np.uint8(SENTINEL), out, st,
                    shared_mem=region + 1024, cluster=c["cluster"])
        cuda.synchronize()
        recs.append(dict(kind="multicast", **c, region=region, status=[int(x) for x in st.to_host()[:c["cluster"]]],
                         images=[pack(x) for x in out.to_host().reshape(c["cluster"], region)]))
    for c in bulk_reduce_cases():
        before, src_b = reduce_inputs(c)
        g = cuda.to_device(before)
        s = cuda.to_device(src_b)
        cuda.launch(k_red, 1, 64, s, g, i32(c["size"]), i32(c["code"]), shared_mem=c["size"] + 256)
        cuda.synchronize()
        recs.append(dict(kind="bulk_reduce", **c, after=pack(g.to_host())))
    return recs


def _report(name: str, recs) -> None:
    from ..validation import l05 as v

    res = v.run_on(name, recs)
    print(f"   {name}: {res.cases} cases, {res.mismatches} mismatches {res.examples[:2] if res.mismatches else ''}")


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l05", argv, __doc__.splitlines()[0], "fewer copy configurations")
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import data

    bulk = measure_bulk()
    data.write("l05/bulk", bulk, meta)
    _report("l05/bulk", bulk)
    bw = measure_copy(copy_configs(args.quick))
    data.write("l05/copy_bandwidth", bw, meta)
    _report("l05/copy_bandwidth", bw)
    best = max((r for r in bw if r["kind"] == "tma_copy"), key=lambda r: r["gbps"])
    ref = max((r for r in bw if r["kind"] == "device_copy"), key=lambda r: r["gbps"])
    print(f"   best TMA copy {best['gbps']:.0f} GB/s = {100 * best['gbps'] / ref['gbps']:.0f} % of the device copy "
          f"({ref['gbps']:.0f} GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
