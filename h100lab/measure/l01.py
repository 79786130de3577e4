"""Lesson 1 measurements: device properties, occupancy vs the CUDA API, shared-memory bank latency.

``python -m h100lab.measure.l01 [--out DIR] [--quick]`` writes three datasets (``h100lab.data``):

* ``l01/device_properties``: the ``cudaDeviceProp`` values the book's spec table uses, one record;
* ``l01/occupancy``: one record per (kernel, block size, dynamic shared memory, opt-in, carveout)
  with the kernel's ``num_regs`` and static shared memory (``cuFuncGetAttribute``) and the driver's
  answer (``cuOccupancyMaxActiveBlocksPerMultiprocessor``). Kernels: ``l01_occupancy_regs.cu``
  compiled with ``--maxrregcount`` from 24 to 255 and with static shared memory;
* ``l01/bank_latency``: clock64 cycles per dependent warp-wide shared load (``l01_bank_latency.cu``)
  for strided and pair patterns of 4-, 8- and 16-byte loads, with the model's wavefront count.

The case lists, the cubin register-count reader and the record checks are plain Python, tested
without a GPU. Runs in well under two minutes on an H200.
"""
from __future__ import annotations

import itertools
import struct
import sys
from typing import Any, Iterable, Sequence
from . import begin

__all__ = ["KERNEL_VARIANTS", "BLOCK_SIZES", "DYNAMIC_SMEM", "CARVEOUTS", "OPTIN_MODES", "BANK_PATTERNS",
           "occupancy_cases", "bank_patterns", "cubin_register_count", "variant_options", "device_record",
           "measure_device", "measure_occupancy", "measure_banks", "main", "PROPERTY_KEYS"]

#: (maxrregcount, static shared bytes) of each compiled variant of l01_occupancy_regs.cu
KERNEL_VARIANTS: tuple[tuple[int, int], ...] = tuple((r, 0) for r in (
    24, 32, 40, 48, 56, 63, 64, 65, 72, 80, 96, 128, 168, 200, 232, 255)) + ((40, 12000), (64, 40000), (128, 49152))
BLOCK_SIZES = (32, 64, 96, 128, 160, 192, 224, 256, 320, 384, 512, 640, 768, 1024)
DYNAMIC_SMEM = (0, 1, 1024, 8192, 20000, 30000, 48128, 49152, 60000, 100000, 116736, 150000, 200000, 232448)
CARVEOUTS = (-1, 0, 25, 50, 100)
#: "default": the kernel's max dynamic shared memory left at its default (48 KB - static);
#: "max": opted in to the whole per-block limit (sharedMemPerBlockOptin - static).
OPTIN_MODES = ("default", "max")
QUICK = {"variants": ((32, 0), (64, 0), (65, 0), (128, 0), (255, 0), (40, 12000)),
         "blocks": (64, 128, 256, 512, 1024), "dynamic": (0, 30000, 60000, 116736, 232448),
         "carveouts": (-1, 50)}

#: cudaDeviceProp fields kept in l01/device_properties
PROPERTY_KEYS = ("name", "major", "minor", "multiProcessorCount", "clockRate", "memoryClockRate", "memoryBusWidth",
                 "l2CacheSize", "persistingL2CacheMaxSize", "totalGlobalMem", "totalConstMem",
                 "sharedMemPerMultiprocessor", "sharedMemPerBlock", "sharedMemPerBlockOptin",
                 "reservedSharedMemPerBlock", "regsPerMultiprocessor", "regsPerBlock",
                 "maxThreadsPerMultiProcessor", "maxThreadsPerBlock", "maxBlocksPerMultiProcessor",
                 "maxThreadsDim", "maxGridSize", "warpSize", "clusterLaunch", "accessPolicyMaxWindowSize")

SMEM_OPTIN = 232448   # sharedMemPerBlockOptin on CC 9.0 [CPG §20.8.3]; the device's own value is used when known
SMEM_DEFAULT = 49152


def variant_options(maxrreg: int, static: int) -> tuple[str, ...]:
    """NVRTC options compiling ``l01_occupancy_regs.cu`` for one variant."""
    opts = [f"--maxrregcount={maxrreg}"]
    if static:
        opts.append(f"-DSTATIC_SMEM={static}")
    return tuple(opts)


def occupancy_cases(variants=KERNEL_VARIANTS, blocks=BLOCK_SIZES, dynamic=DYNAMIC_SMEM, carveouts=CARVEOUTS,
                    optin_modes=OPTIN_MODES, optin_limit: int = SMEM_OPTIN) -> list[dict[str, Any]]:
    """Every (variant, opt-in mode, carveout, block, dynamic) case the measurement asks the driver about.

    In "max" mode only dynamic sizes that fit the opt-in limit next to the static memory are asked
    (the attribute cannot exceed it); in "default" mode all sizes are asked, so the cases where the
    request exceeds the kernel's attribute (the API answers 0) are covered too.
    """
    out = []
    for (reg, static), mode, c in itertools.product(variants, optin_modes, carveouts):
        max_dyn = (optin_limit - static) if mode == "max" else max(SMEM_DEFAULT - static, 0)
        for b, d in itertools.product(blocks, dynamic):
            if mode == "max" and d > max_dyn:
                continue
            out.append({"maxrregcount": reg, "static_request": static, "optin": mode, "max_dynamic_smem": max_dyn,
                        "carveout": c, "block_size": b, "dynamic_smem": d})
    return out


def _lanes(f) -> list[int]:
    return [int(f(t)) for t in range(32)]


def bank_patterns() -> list[dict[str, Any]]:
    """The shared-memory access patterns timed by ``l01_bank_latency.cu``: name, width, 32 byte offsets."""
    pats = []
    for s in (0, 1, 2, 4, 8, 16, 32):
        pats.append({"name": f"stride {s} words", "width": 4, "offsets": _lanes(lambda t, s=s: 4 * s * t)})
    for s in (0, 1, 2, 4, 8, 16, 32):
        pats.append({"name": f"stride {s} x 8 B", "width": 8, "offsets": _lanes(lambda t, s=s: 8 * s * t)})
    pats.append({"name": "pairs share 8 B", "width": 8, "offsets": _lanes(lambda t: 8 * (t // 2))})
    for s in (0, 1, 2, 4, 8, 16):
        pats.append({"name": f"stride {s} x 16 B", "width": 16, "offsets": _lanes(lambda t, s=s: 16 * s * t)})
    pats.append({"name": "pairs share 16 B", "width": 16, "offsets": _lanes(lambda t: 16 * (t // 2))})
    pats.append({"name": "padded column (pitch 33 words)", "width": 4, "offsets": _lanes(lambda t: 132 * t)})
    return pats


BANK_PATTERNS = bank_patterns()


def cubin_register_count(cubin: bytes, kernel: str | None = None) -> int:
    """Registers per thread recorded in a cubin (the ``EIATTR_REGCOUNT`` attribute of ``.nv.info``).

    The value ``cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS)`` reports after loading; reading it from
    the ELF lets the book show a variant's register count without a GPU. ``kernel`` selects the
    function's symbol when the cubin has several (default: the only one).
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def name(off: int, strtab: int) -> str:
        start = secs[strtab][4] + off
        return cubin[start:cubin.index(b"\0", start)].decode()

    by_name = {name(s[0], shstrndx): s for s in secs}
    symidx = None
    if kernel is not None:
        symtab = by_name.get(".symtab")
        if symtab is None:
            raise ValueError("cubin has no symbol table")
        strtab = symtab[6]
        for i in range(symtab[5] // 24):
            st_name = struct.unpack_from("<I", cubin, symtab[4] + 24 * i)[0]
            if name(st_name, strtab) == kernel:
                symidx = i
        if symidx is None:
            raise ValueError(f"cubin has no function {kernel!r}")
    info = by_name.get(".nv.info")
    if info is None:
        raise ValueError("cubin has no .nv.info section")
    off, size, i = info[4], info[5], 0
    found = []
    while i < size:
        fmt, attr = cubin[off + i], cubin[off + i + 1]
        length = struct.unpack_from("<H", cubin, off + i + 2)[0] if fmt == 4 else 0
        if attr == 0x2F and fmt == 4:                       # EIATTR_REGCOUNT: (symbol index, count)
            found.append(struct.unpack_from("<II", cubin, off + i + 4))
        i += 4 + length
    if symidx is not None:
        found = [f for f in found if f[0] == symidx]
    if len(found) != 1:
        raise ValueError(f"expected one register count, found {len(found)}")
    return int(found[0][1])


def device_record(props: dict[str, Any]) -> dict[str, Any]:
    """The ``cudaDeviceProp`` fields the lesson compares with its spec table."""
    return {k: props[k] for k in PROPERTY_KEYS if k in props}


# ------------------------------------------------------------------------------------------------
# GPU parts


def measure_device() -> list[dict[str, Any]]:
    from .. import cuda

    return [device_record(cuda.device_properties(0))]


def measure_occupancy(cases: Sequence[dict[str, Any]], progress: bool = True) -> list[dict[str, Any]]:
    """Ask the driver about every case; returns the cases with ``num_regs``, ``static_smem`` and ``api_blocks``.

    A driver error (if any) is recorded as ``api_error`` (its result name) with ``api_blocks`` None.
    """
    from .. import cuda
    from ..cuda.errors import DriverError

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(x, **_):
            return x
    out: list[dict[str, Any]] = []
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for c in cases:
        groups.setdefault((c["maxrregcount"], c["static_request"], c["optin"], c["carveout"]), []).append(c)
    kernels: dict[tuple[int, int], Any] = {}
    for (reg, static, mode, carve), group in tqdm(groups.items(), desc="occupancy", disable=not progress):
        if (reg, static) not in kernels:
            prog = cuda.compile_kernel("l01_occupancy_regs", options=variant_options(reg, static))
            kernels[(reg, static)] = prog.function("occupancy_probe")
        k = kernels[(reg, static)]
        k.set_max_dynamic_shared_memory(group[0]["max_dynamic_smem"])
        k.set_preferred_carveout(carve)
        a = k.attributes()
        for c in group:
            r = dict(c, num_regs=a["num_regs"], static_smem=a["shared_size_bytes"],
                     attr_max_dynamic_smem=a["max_dynamic_shared_size_bytes"],
                     local_bytes=a["local_size_bytes"])
            try:
                r["api_blocks"] = cuda.occupancy_max_active_blocks(k, c["block_size"], c["dynamic_smem"])
            except DriverError as exc:
                r["api_blocks"], r["api_error"] = None, exc.result
            out.append(r)
    return out


def measure_banks(patterns: Iterable[dict[str, Any]] = BANK_PATTERNS, iters: int = 512,
                  repeats: int = 5) -> list[dict[str, Any]]:
    """clock64 cycles per dependent load for each pattern (median of ``repeats`` single-warp launches)."""
    import numpy as np

    from .. import cuda
    from ..memory.banks import wavefronts

    out = []
    funcs = {}
    for p in patterns:
        w = p["width"]
        if w not in funcs:
            f = cuda.compile_kernel("l01_bank_latency", options=(f"-DWIDTH={w}",)).function("bank_latency")
            f.set_max_dynamic_shared_memory(65536)
            funcs[w] = f
        f = funcs[w]
        offs = cuda.to_device(np.asarray(p["offsets"], np.uint32))
        cyc = cuda.zeros(1, np.int64)
        sink = cuda.zeros(32, np.uint32)
        samples = []
        for _ in range(repeats):
            cuda.launch(f, 1, 32, offs, np.int32(iters), cyc, sink, shared_mem=65536)
            cuda.synchronize()
            samples.append(int(cyc.to_host()[0]))
        if int(sink.to_host().max()) != 0:
            raise RuntimeError("bank_latency read a non-zero word: shared memory was not zero-filled")
        out.append({"name": p["name"], "width": w, "offsets": p["offsets"], "iters": iters,
                    "cycles_per_load": float(np.median(samples)) / iters,
                    "model_wavefronts": int(wavefronts(p["offsets"], w, "ld"))})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l01", argv, __doc__.splitlines()[0], "a small subset of the occupancy cases")
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import data

    dev = measure_device()
    data.write("l01/device_properties", dev, meta)
    optin = int(dev[0].get("sharedMemPerBlockOptin", SMEM_OPTIN))
    if args.quick:
        cases = occupancy_cases(QUICK["variants"], QUICK["blocks"], QUICK["dynamic"], QUICK["carveouts"],
                                optin_limit=optin)
    else:
        cases = occupancy_cases(optin_limit=optin)
    occ = measure_occupancy(cases)
    data.write("l01/occupancy", occ, meta)
    banks = measure_banks()
    data.write("l01/bank_latency", banks, meta)
    from ..validation import l01 as checks

    for title, res in checks.run_on(dev, occ, banks):
        print(f"{title}: {res.cases} cases, {res.mismatches} mismatches{' — ' + res.note if res.note else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
