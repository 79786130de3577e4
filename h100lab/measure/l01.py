"""Lesson 1 measurements: device properties, occupancy vs the CUDA API, shared-memory bank latency.

``python -m h100lab.measure.l01 [--out DIR] [--quick]`` writes three datasets (``h100lab.data``):

* ``l01/device_properties``: the ``cudaDeviceProp`` values the book's spec table uses, one record;
* ``l01/occupancy``: one record per (kernel, block size, dynamic shared memory, opt-in, carveout)
  with the kernel's ``num_regs`` and static shared memory (``cuFuncGetAttribute``) and the driver's
  answer (``cuOccupancyMaxActiveBlocksPerMultiprocessor``). Kernels: ``l01_occupancy_regs.cu``
  compiled with ``--maxrregcount`` from 24 to 255 and with static shared memory;
* ``l01/bank_latency``: clock64 cycles per dependent warp-wide shared load (``l01_bank_latency.cu``)
  for strided and pair patterns of 4-, 8- and 16-byte loads, with the model's wavefront count;
* ``l01/bank_wavefronts``: Nsight Compute's shared-memory wavefront and bank-conflict counters for
  one warp-wide ``ld.shared``/``st.shared`` (32/64/128-bit) per launch of ``l01_bank_wavefronts.cu``
  (``--bank-wavefronts`` measures only this one; ncu must be installed);
* ``l01/latency_ladder``: the memory hierarchy's latencies (one thread's dependent chain: FMAs in registers,
  a pointer chase through shared memory and through global memory with ``ld.global.ca``/``.cg`` over working
  sets of 4 KiB to 1 GiB) and bandwidths (a full grid streaming shared memory, an L2-resident buffer and an
  HBM-sized one), from ``l01_latency_ladder.cu`` (:func:`ladder_cases`, :func:`measure_ladder`);
* ``l01/roofline_kernels``: ``l01_roofline.cu``'s ``fma_stream`` — K FMAs per element between a load and a
  store — timed for K = 0 (a copy) up to 1024 (compute-bound), with the SM clock it ran at
  (:func:`roofline_cases`, :func:`measure_roofline`).

``--only STEP[,STEP]`` runs some steps alone (``device``, ``occupancy``, ``banks``, ``wavefronts``,
``ladder``, ``roofline``).

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
           "measure_device", "measure_occupancy", "measure_banks", "main", "PROPERTY_KEYS",
           "BANK_WAVEFRONT_METRICS", "BANK_WAVEFRONT_MODES", "bank_wavefront_cases", "run_bank_wavefronts",
           "ncu_command", "parse_ncu_csv", "bank_wavefront_records", "find_ncu", "measure_bank_wavefronts",
           "CHASE_SIZES", "ladder_cases", "measure_ladder", "ROOFLINE_K", "roofline_cases", "roofline_expected",
           "measure_roofline", "STEPS"]

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


# ------------------------------------------------------------------------------------------------
# Bank wavefronts under Nsight Compute (l01_bank_wavefronts.cu): one warp, one shared access per launch

#: Nsight Compute metrics read per launch (names as ``ncu --query-metrics`` lists them on an H200)
BANK_WAVEFRONT_METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
BANK_WAVEFRONT_KERNEL = "bank_wavefronts"
#: ``mode`` argument of ``bank_wavefronts`` for (op, width); any other mode is the no-access baseline
BANK_WAVEFRONT_MODES = {("ld", 4): 0, ("ld", 8): 1, ("ld", 16): 2, ("st", 4): 3, ("st", 8): 4, ("st", 16): 5}
BASELINE_MODE = -1
FULL_MASK = 0xFFFFFFFF
_SMEM_BYTES = 32768          # SMEM_BYTES of l01_bank_wavefronts.cu


def _case(name: str, width: int, op: str, offsets, active: int = FULL_MASK) -> dict[str, Any]:
    offs = [int(x) for x in offsets]
    if len(offs) != 32:
        raise ValueError(f"case {name!r}: a warp-wide access needs 32 lane offsets, got {len(offs)}")
    bad = [x for x in offs if x % width or not 0 <= x <= _SMEM_BYTES - width]
    if bad:
        raise ValueError(f"case {name!r}: offset {bad[0]} is not a {width}-byte aligned offset inside the "
                         f"kernel's {_SMEM_BYTES}-byte shared array")
    return {"name": name, "width": width, "op": op, "offsets": offs, "active": int(active) & FULL_MASK}


def bank_wavefront_cases(seed: int = 2024) -> list[dict[str, Any]]:
    """The warp-wide accesses measured with Nsight Compute: name, width (bytes), op, 32 offsets, active mask.

    Covers the rules of :mod:`h100lab.memory.banks` (hopper-spec-facts §2): strides, broadcasts,
    pair-uniform 8/16-byte loads (partner ``t^1`` and ``t^2``), half-/quarter-warp phases, padded
    columns, inactive lanes (also inside lane pairs, facts §14.3), swizzled columns
    (``h100lab.memory.swizzle``) and seeded random offsets. Loads and stores of every pattern.
    """
    import numpy as np

    from ..memory.swizzle import swizzle_address

    rng = np.random.default_rng(seed)
    L = range(32)
    pats: list[tuple[str, int, list[int], int]] = []     # (name, width, offsets, active)
    for s in (0, 1, 2, 3, 4, 8, 16, 32):
        pats.append((f"stride {s} words", 4, [4 * s * t for t in L], FULL_MASK))
    pats += [("pairs share a word", 4, [4 * (t // 2) for t in L], FULL_MASK),
             ("two words, one bank", 4, [128 * (t % 2) for t in L], FULL_MASK),
             ("column of a 32x32 tile", 4, [128 * t for t in L], FULL_MASK),
             ("column, padded to 33 words", 4, [132 * t for t in L], FULL_MASK),
             ("stride 32 words, even lanes", 4, [128 * t for t in L], 0x55555555),
             ("stride 32 words, lanes 0-7", 4, [128 * t for t in L], 0x000000FF),
             ("stride 2 words, upper half-warp", 4, [8 * t for t in L], 0xFFFF0000),
             ("stride 5 words", 4, [20 * t for t in L], FULL_MASK),
             ("stride 6 words", 4, [24 * t for t in L], FULL_MASK)]
    for s in (1, 2, 4, 16):
        pats.append((f"stride {s} x 8 B", 8, [8 * s * t for t in L], FULL_MASK))
    pats += [("8 B broadcast", 8, [256 for t in L], FULL_MASK),
             ("8 B pairs (t^1) share", 8, [8 * (t // 2) for t in L], FULL_MASK),
             ("8 B quads share", 8, [8 * (t // 4) for t in L], FULL_MASK),
             ("8 B t^2 partners share", 8, [8 * (2 * (t // 4) + t % 2) for t in L], FULL_MASK),
             ("8 B pairs share, stride 16 x 8 B", 8, [128 * (t // 2) for t in L], FULL_MASK),
             ("8 B pairs share, odd lanes off", 8, [8 * (t // 2) for t in L], 0x55555555),
             ("8 B pairs share, lane 31 off", 8, [8 * (t // 2) for t in L], 0x7FFFFFFF),
             ("8 B half-warps collide", 8, [8 * (t % 16) for t in L], FULL_MASK),
             ("8 B lower half-warp only", 8, [8 * t for t in L], 0x0000FFFF),
             ("8 B column, padded to 17 x 8 B", 8, [136 * t for t in L], FULL_MASK),
             ("stride 3 x 8 B", 8, [24 * t for t in L], FULL_MASK),
             ("8 B pairs share, stride 2 x 8 B", 8, [16 * (t // 2) for t in L], FULL_MASK),
             ("8 B pairs share, upper half-warp", 8, [8 * (t // 2) for t in L], 0xFFFF0000)]
    for s in (1, 2, 4, 8):
        pats.append((f"stride {s} x 16 B", 16, [16 * s * t for t in L], FULL_MASK))
    pats += [("16 B broadcast", 16, [512 for t in L], FULL_MASK),
             ("16 B pairs (t^1) share", 16, [16 * (t // 2) for t in L], FULL_MASK),
             ("16 B t^2 partners share", 16, [16 * (2 * (t // 4) + t % 2) for t in L], FULL_MASK),
             ("16 B quarter-warps collide", 16, [16 * (t % 8) for t in L], FULL_MASK),
             ("16 B pairs share, one quarter-warp", 16, [16 * (t // 2) for t in L], 0x000000FF),
             ("16 B first lane of each quarter", 16, [16 * t for t in L], 0x01010101),
             ("16 B column of 128 B rows", 16, [128 * t for t in L], FULL_MASK),
             ("16 B column of 144 B rows (padded)", 16, [144 * t for t in L], FULL_MASK),
             ("stride 3 x 16 B", 16, [48 * t for t in L], FULL_MASK),
             ("16 B pairs share, stride 2 x 16 B", 16, [32 * (t // 2) for t in L], FULL_MASK),
             ("16 B pairs share, second quarter off", 16, [16 * (t // 2) for t in L], 0xFFFF00FF),
             ("16 B stride 1, second quarter off", 16, [16 * t for t in L], 0xFFFF00FF)]
    # inactive lanes inside lane pairs: does an inactive partner break pair-uniformity?
    pats += [("8 B stride 1, odd lanes off", 8, [8 * t for t in L], 0x55555555),
             ("8 B t^2 partners share, odd lanes off", 8, [8 * (2 * (t // 4) + t % 2) for t in L], 0x55555555),
             ("8 B one active lane", 8, [8 * t for t in L], 0x00000001),
             ("16 B pairs share, odd lanes off", 16, [16 * (t // 2) for t in L], 0x55555555),
             ("16 B pairs share, lane 0 off", 16, [16 * (t // 2) for t in L], 0xFFFFFFFE),
             ("16 B stride 1, odd lanes off", 16, [16 * t for t in L], 0x55555555),
             ("16 B t^2 partners share, lanes 2-3 of each quad off", 16,
              [16 * (2 * (t // 4) + t % 2) for t in L], 0x33333333),
             ("16 B one active lane", 16, [16 * t for t in L], 0x00000001)]
    # swizzled columns: lane t reads 16-byte chunk c of row t of a tile with 128-byte rows
    for mode in ("128B", "64B", "32B"):
        pats.append((f"16 B column, SWIZZLE_{mode}", 16, [int(swizzle_address(128 * t, mode)) for t in L], FULL_MASK))
    pats.append(("4 B column, SWIZZLE_128B", 4, [int(swizzle_address(128 * t + 4 * (t % 4), "128B")) for t in L],
                 FULL_MASK))
    pats.append(("8 B column, SWIZZLE_128B", 8, [int(swizzle_address(128 * t + 8, "128B")) for t in L], FULL_MASK))
    for w in (4, 8, 16):
        for i in range(3):
            offs = (rng.integers(0, 2048 // w, 32) * w).tolist()
            pats.append((f"random {w} B #{i}", w, offs, FULL_MASK))
        offs = (rng.integers(0, 1024 // w, 32) * w).tolist()
        pats.append((f"random {w} B, random lanes", w, offs, int(rng.integers(1, 1 << 32))))
    return [_case(n, w, op, o, a) for n, w, o, a in pats for op in ("ld", "st")]


def run_bank_wavefronts(cases: Sequence[dict[str, Any]] | None = None) -> int:
    """Launch ``bank_wavefronts`` once with no shared access (the baseline), then once per case, in order.

    Meant to run under Nsight Compute (:func:`ncu_command`); returns the number of launches.
    """
    import numpy as np

    from .. import cuda

    cases = bank_wavefront_cases() if cases is None else cases
    f = cuda.compile_kernel("l01_bank_wavefronts").function(BANK_WAVEFRONT_KERNEL)
    sink = cuda.empty(32, np.uint32)
    runs = [(np.zeros(32, np.uint32), FULL_MASK, BASELINE_MODE)]
    runs += [(np.asarray(c["offsets"], np.uint32), c["active"], BANK_WAVEFRONT_MODES[(c["op"], c["width"])])
             for c in cases]
    for offs, active, mode in runs:
        cuda.launch(f, 1, 32, cuda.to_device(offs), np.uint32(active), np.int32(mode), sink)
        cuda.synchronize()
    return len(runs)


def ncu_command(ncu: str = "ncu", python: str | None = None) -> list[str]:
    """The Nsight Compute command line that profiles :func:`run_bank_wavefronts` (clocks left alone)."""
    return [ncu, "--clock-control", "none", "--kernel-name", BANK_WAVEFRONT_KERNEL, "--metrics",
            ",".join(BANK_WAVEFRONT_METRICS), "--csv", python or sys.executable, "-m", "h100lab.measure.l01",
            "--bank-wavefronts-run"]


def _number(text: str) -> float:
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        raise ValueError(f"Nsight Compute metric value {text!r} is not a number") from None


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Nsight Compute's ``--csv`` page (one row per launch and metric) as one dict per launch, in ID order:
    ``{"id", "kernel", "metrics": {name: value}}``. Lines before the ``"ID"`` header (``==PROF==``
    messages, the program's own output) are skipped; ``ValueError`` when no header is found."""
    import csv

    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no Nsight Compute CSV header (a line starting with \"ID\") in the output")
    rows = csv.DictReader([ln for ln in lines[start:] if ln.startswith('"')])
    need = {"ID", "Kernel Name", "Metric Name", "Metric Value"}
    if not need <= set(rows.fieldnames or ()):
        raise ValueError(f"Nsight Compute CSV lacks columns {sorted(need - set(rows.fieldnames or ()))}")
    launches: dict[int, dict[str, Any]] = {}
    for r in rows:
        i = int(r["ID"])
        d = launches.setdefault(i, {"id": i, "kernel": r["Kernel Name"], "metrics": {}})
        d["metrics"][r["Metric Name"]] = _number(r["Metric Value"])
    return [launches[i] for i in sorted(launches)]


def bank_wavefront_records(cases: Sequence[dict[str, Any]], launches: Sequence[dict[str, Any]]
                           ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Records ``l01/bank_wavefronts`` from the parsed launches: the first launch is the baseline (no shared
    access), subtracted from every later one; launch ``i + 1`` is case ``i``. Returns (records, baseline)."""
    mine = [x for x in launches if BANK_WAVEFRONT_KERNEL in x["kernel"]]
    if len(mine) != len(cases) + 1:
        raise ValueError(f"expected {len(cases) + 1} launches of {BANK_WAVEFRONT_KERNEL} (baseline + cases), "
                         f"Nsight Compute reported {len(mine)}")
    for x in mine:
        missing = [k for k in BANK_WAVEFRONT_METRICS if k not in x["metrics"]]
        if missing:
            raise ValueError(f"launch {x['id']} lacks metrics {missing}")
    base = dict(mine[0]["metrics"])
    out = []
    for c, x in zip(cases, mine[1:]):
        m = {k: x["metrics"][k] - base.get(k, 0.0) for k in BANK_WAVEFRONT_METRICS}
        ld_wf, st_wf, ld_bc, st_bc = (m[k] for k in BANK_WAVEFRONT_METRICS)
        wf, bc = (ld_wf, ld_bc) if c["op"] == "ld" else (st_wf, st_bc)
        other = st_wf if c["op"] == "ld" else ld_wf
        out.append({"name": c["name"], "width": c["width"], "op": c["op"], "offsets": list(c["offsets"]),
                    "active": c["active"], "wavefronts": int(round(wf)), "bank_conflicts": int(round(bc)),
                    "other_op_wavefronts": int(round(other))})
    return out, base


def find_ncu() -> str | None:
    """Path of Nsight Compute's ``ncu``: on PATH, else the newest ``/opt/nvidia/nsight-compute/*/ncu``."""
    import glob
    import shutil

    found = shutil.which("ncu")
    if found:
        return found
    cands = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return cands[-1] if cands else None


def measure_bank_wavefronts(meta: dict[str, Any], ncu: str | None = None, csv_path: str | None = None
                            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run :func:`run_bank_wavefronts` under Nsight Compute and parse its CSV.

    Returns (records, metadata): ``meta`` plus the exact ``ncu_command``, its version, the metric
    names and the subtracted baseline. ``csv_path`` keeps ncu's raw output.
    """
    import subprocess

    ncu = ncu or find_ncu()
    if ncu is None:
        raise FileNotFoundError("Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute")
    cmd = ncu_command(ncu)
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if csv_path:
        with open(csv_path, "w") as fh:
            fh.write(res.stdout)
    if res.returncode != 0:
        raise RuntimeError(f"ncu failed ({res.returncode}): {res.stderr[-2000:]}{res.stdout[-2000:]}")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    recs, base = bank_wavefront_records(bank_wavefront_cases(), parse_ncu_csv(res.stdout))
    shown = ["ncu", *cmd[1:cmd.index("--csv") + 1], "python3", *cmd[cmd.index("--csv") + 2:]]
    return recs, dict(meta, ncu_command=" ".join(shown), ncu_version=version[-1] if version else "",
                      metrics=list(BANK_WAVEFRONT_METRICS), baseline=base)


# ------------------------------------------------------------------------------------------------
# The latency/bandwidth ladder (l01_latency_ladder.cu) and the roofline kernel (l01_roofline.cu)

#: working sets (bytes) of the global-memory pointer chase: 4 KiB … 1 GiB
CHASE_SIZES = tuple(1 << p for p in range(12, 31)) + (48 << 20, 96 << 20)
CHASE_STEPS = 16384          # timed steps of a chase (each at most ~1 µs: < 20 ms per case)
CHASE_WARM_FULL = 64 << 20   # up to this working set the untimed walk covers the whole chain first
SHARED_CHASE_WORDS = 8192    # 32 KiB of shared memory
LADDER_REPEATS = 3
L2_STREAM_BYTES = 16 << 20   # stays in the 60 MiB L2
HBM_STREAM_BYTES = 4 << 30   # 4 GiB: 70 x the L2
STREAM_BLOCK = 512


def ladder_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The ladder's cases: ``{"kind": "latency"|"bandwidth", "level", "kernel", ...}``. Latency: the FMA chain,
    the shared-memory chase, and the global chase over :data:`CHASE_SIZES` with ``.ca`` (L1 + L2) and ``.cg``
    (L2 only). Bandwidth: shared memory, an L2-resident buffer, an HBM-sized one."""
    sizes = CHASE_SIZES if not quick else tuple(1 << p for p in (12, 14, 18, 22, 26, 30))
    out: list[dict[str, Any]] = [
        {"kind": "latency", "level": "registers", "kernel": "fma_chain", "steps": 1 << 16, "bytes": 0},
        {"kind": "latency", "level": "shared memory", "kernel": "chase_shared", "steps": 1 << 16,
         "bytes": 4 * SHARED_CHASE_WORDS}]
    for kernel in ("chase_ca", "chase_cg"):
        for size in sizes:
            out.append({"kind": "latency", "level": "global", "kernel": kernel, "bytes": int(size),
                        "steps": CHASE_STEPS})
    out += [{"kind": "bandwidth", "level": "shared memory", "kernel": "stream_shared", "reps": 2048,
             "bytes": 32768},
            {"kind": "bandwidth", "level": "L2", "kernel": "stream_read", "reps": 256, "bytes": L2_STREAM_BYTES},
            {"kind": "bandwidth", "level": "HBM", "kernel": "stream_read", "reps": 1, "bytes": HBM_STREAM_BYTES}]
    return out


def _chase_case(prog, case: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    import numpy as np

    from .. import cuda
    from ..memory.ladder import LINE_BYTES, chase_chain, chase_order

    size = case["bytes"]
    slots = max(1, size // LINE_BYTES)
    stride = LINE_BYTES // 8
    chain = chase_chain(slots, stride, seed)
    buf = cuda.to_device(chain)
    n = chain.size
    cuda.launch(prog.function("chase_relocate"), min(4096, (n + 255) // 256), 256, buf, np.int64(n))
    warm = slots if size <= CHASE_WARM_FULL else 1024
    steps = case["steps"]
    k = prog.function(case["kernel"])
    cyc, sink = cuda.zeros(2, np.int64), cuda.zeros(1, np.uint64)
    samples, ok = [], True
    walk = chase_order(chain, 0, warm + LADDER_REPEATS * steps + 1) if slots > 1 else None
    for rep in range(LADDER_REPEATS):
        # each repeat first walks past the steps the previous ones timed, so a working set larger than L2
        # is timed on lines no earlier repeat brought into the cache
        w = warm + rep * steps
        cuda.launch(k, 1, 1, buf, np.int32(w), np.int32(steps), cyc, sink)
        cuda.synchronize()
        samples.append(cyc.to_host().tolist())
        end = int(sink.to_host()[0]) // 8
        ok &= end == (int(walk[w + steps]) if walk is not None else 0)
    buf.free()
    cycles = sorted(s[0] for s in samples)[len(samples) // 2]
    ns = sorted(s[1] for s in samples)[len(samples) // 2]
    return dict(case, warm=warm, slots=slots, cycles=cycles, ns=ns, cycles_per_step=cycles / steps,
                ns_per_step=ns / steps, clock_ghz=cycles / ns if ns else None, correct=bool(ok))


def measure_ladder(cases: Sequence[dict[str, Any]] | None = None, progress: bool = True) -> list[dict[str, Any]]:
    """Run :func:`ladder_cases` on the GPU: latency records get ``cycles``/``ns`` (medians of
    :data:`LADDER_REPEATS`), ``cycles_per_step``, ``ns_per_step``, ``clock_ghz`` and ``correct`` (the chase
    ended where the host's walk of the chain does); bandwidth records ``moved_bytes``, ``median_ms``,
    ``gbps``."""
    import numpy as np

    from .. import cuda
    from ..memory.ladder import chase_chain

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(x, **_):
            return x
    cases = list(cases) if cases is not None else ladder_cases()
    prog = cuda.compile_kernel("l01_latency_ladder")
    props = cuda.device_properties(0)
    sms = int(props["multiProcessorCount"])
    out = []
    for c in tqdm(cases, desc="ladder", disable=not progress):
        if c["kind"] == "latency" and c["kernel"] == "fma_chain":
            cyc, sink = cuda.zeros(2, np.int64), cuda.zeros(1, np.float32)
            k = prog.function("fma_chain")
            samples = []
            for _ in range(LADDER_REPEATS):
                cuda.launch(k, 1, 1, np.float32(0.5), np.float32(0.25), np.int32(c["steps"]), cyc, sink)
                cuda.synchronize()
                samples.append(cyc.to_host().tolist())
            cycles, ns = sorted(samples)[len(samples) // 2]
            out.append(dict(c, cycles=cycles, ns=ns, cycles_per_step=cycles / c["steps"], ns_per_step=ns / c["steps"],
                            clock_ghz=cycles / ns if ns else None, correct=float(sink.to_host()[0]) == 0.5))
        elif c["kind"] == "latency" and c["kernel"] == "chase_shared":
            words = c["bytes"] // 4
            chain = chase_chain(words, 1, seed=2, dtype=np.uint32)
            d = cuda.to_device(chain)
            cyc, sink = cuda.zeros(2, np.int64), cuda.zeros(1, np.uint32)
            k = prog.function("chase_shared")
            samples = []
            for _ in range(LADDER_REPEATS):
                cuda.launch(k, 1, 256, d, np.int32(words), np.int32(words), np.int32(c["steps"]), cyc, sink,
                            shared_mem=4 * words)
                cuda.synchronize()
                samples.append(cyc.to_host().tolist())
            j = 0
            for _ in range((words + c["steps"]) % words):
                j = int(chain[j])
            cycles, ns = sorted(samples)[len(samples) // 2]
            out.append(dict(c, cycles=cycles, ns=ns, cycles_per_step=cycles / c["steps"], ns_per_step=ns / c["steps"],
                            clock_ghz=cycles / ns if ns else None, correct=int(sink.to_host()[0]) == 4 * j))
        elif c["kind"] == "latency":
            out.append(_chase_case(prog, c))
        elif c["kernel"] == "stream_shared":
            k = prog.function("stream_shared")
            block, per_sm = 256, 4
            grid = sms * per_sm
            sink = cuda.zeros(grid * block, np.float32)
            t = cuda.time_kernel(k, grid, block, np.int32(c["reps"]), sink, warmup=2, repeats=10)
            moved = grid * c["reps"] * c["bytes"]
            out.append(dict(c, grid=grid, block=block, moved_bytes=moved, median_ms=t.median_ms, min_ms=t.min_ms,
                            gbps=moved / (t.median_ms * 1e6)))
        else:
            n4 = c["bytes"] // 16
            block_floats = min(n4 * 4, 1 << 24)      # random data (never time on zeros), 64 MiB tiled
            tile = np.random.default_rng(3).uniform(-1, 1, block_floats).astype(np.float32)
            src = cuda.to_device(np.tile(tile, n4 * 4 // block_floats))
            k = prog.function("stream_read")
            grid, block = sms * (2048 // STREAM_BLOCK), STREAM_BLOCK
            sink = cuda.zeros(grid * block, np.float32)
            t = cuda.time_kernel(k, grid, block, src, np.int64(n4), np.int32(c["reps"]), sink, warmup=2, repeats=10)
            moved = c["reps"] * c["bytes"]
            src.free()
            out.append(dict(c, grid=grid, block=block, moved_bytes=moved, median_ms=t.median_ms, min_ms=t.min_ms,
                            gbps=moved / (t.median_ms * 1e6)))
    return out


#: FMAs per element of the roofline kernel: 0 (a copy) … 1024 (compute-bound)
ROOFLINE_K = (0, 1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 256, 512, 1024)
ROOFLINE_FLOATS = 1 << 27    # 512 MiB read + 512 MiB written
ROOFLINE_A, ROOFLINE_B = 0.999, 0.001


def roofline_cases(quick: bool = False) -> list[dict[str, Any]]:
    """One case per K of :data:`ROOFLINE_K`: ``{"k", "floats", "bytes", "flops", "intensity"}`` — 8 bytes
    moved and 2·K FLOPs per float, intensity K / 4 FLOP per byte."""
    ks = ROOFLINE_K if not quick else (0, 4, 64, 1024)
    n = ROOFLINE_FLOATS
    return [{"k": k, "floats": n, "bytes": 8 * n, "flops": 2 * k * n, "intensity": k / 4} for k in ks]


def roofline_expected(x, k: int, a: float = ROOFLINE_A, b: float = ROOFLINE_B):
    """What ``fma_stream`` computes for inputs ``x`` (float64 reference of K rounds of x·a + b, for a
    tolerance check: the kernel's fused float32 FMAs differ from it by a few ulp per round)."""
    import numpy as np

    v = np.asarray(x, dtype=np.float64)
    a32, b32 = float(np.float32(a)), float(np.float32(b))
    for _ in range(k):
        v = v * a32 + b32
    return v


def measure_roofline(cases: Sequence[dict[str, Any]] | None = None, progress: bool = True) -> list[dict[str, Any]]:
    """Time ``fma_stream`` (one full wave: 8 blocks of 256 threads per SM, grid-stride) for every case; records
    add ``median_ms``, ``min_ms``, ``gbps`` (bytes moved / time), ``tflops``, ``clock_ghz`` (block 0's clock64 /
    globaltimer) and ``correct`` (a sample of outputs against :func:`roofline_expected`)."""
    import numpy as np

    from .. import cuda

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(x, **_):
            return x
    cases = list(cases) if cases is not None else roofline_cases()
    k = cuda.compile_kernel("l01_roofline").function("fma_stream")
    sms = int(cuda.device_properties(0)["multiProcessorCount"])
    grid, block = sms * 8, 256
    out = []
    n = max(c["floats"] for c in cases)
    x = np.random.default_rng(11).uniform(-1, 1, n).astype(np.float32)
    dx, dy, clk = cuda.to_device(x), cuda.zeros(n, np.float32), cuda.zeros(2, np.uint64)
    sample = np.random.default_rng(12).integers(0, n, 4096)
    for c in tqdm(cases, desc="roofline", disable=not progress):
        n4 = c["floats"] // 4
        args = (dx, dy, np.int64(n4), np.int32(c["k"]), np.float32(ROOFLINE_A), np.float32(ROOFLINE_B))
        t = cuda.time_kernel(k, grid, block, *args, clk, warmup=2, repeats=10)
        cycles, ns = (int(v) for v in clk.to_host())
        y = dy.to_host()
        ok = bool(np.allclose(y[sample], roofline_expected(x[sample], c["k"]), rtol=1e-4, atol=1e-4))
        s = t.median_ms * 1e-3
        out.append(dict(c, grid=grid, block=block, median_ms=t.median_ms, min_ms=t.min_ms, gbps=c["bytes"] / s / 1e9,
                        tflops=c["flops"] / s / 1e12, clock_ghz=cycles / ns if ns else None, correct=ok))
    return out


#: the steps ``--only`` can name, in the order a full run takes them
STEPS = ("device", "occupancy", "banks", "ladder", "roofline", "wavefronts")


def _arguments(ap) -> None:
    ap.add_argument("--bank-wavefronts", action="store_true",
                    help="only measure l01/bank_wavefronts (runs itself under Nsight Compute)")
    ap.add_argument("--bank-wavefronts-run", action="store_true",
                    help="launch the bank_wavefronts cases and exit (what ncu profiles)")
    ap.add_argument("--ncu", help="path of Nsight Compute's ncu (default: PATH, then /opt/nvidia/nsight-compute)")
    ap.add_argument("--ncu-csv", help="also save ncu's raw CSV output here")
    ap.add_argument("--only", help=f"comma-separated steps to run alone: {', '.join(STEPS)}")


def _bank_wavefronts(args, meta) -> None:
    from .. import data
    from ..validation import l01 as checks

    recs, wmeta = measure_bank_wavefronts(meta, ncu=args.ncu, csv_path=args.ncu_csv)
    data.write("l01/bank_wavefronts", recs, wmeta)
    res = checks.check_bank_wavefronts(recs)
    print(f"bank wavefronts: {res.cases} cases, {res.mismatches} mismatches — {res.note}")
    for b in res.examples:
        print("  mismatch:", b)


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l01", argv, __doc__.splitlines()[0], "a small subset of the occupancy cases", _arguments)
    if s is None:
        return 2
    args, meta = s.args, s.meta
    if args.bank_wavefronts_run:
        run_bank_wavefronts()
        return 0
    if args.bank_wavefronts:
        _bank_wavefronts(args, meta)
        return 0
    only = set(STEPS) if not args.only else {x.strip() for x in args.only.split(",") if x.strip()}
    if only - set(STEPS):
        print(f"--only: unknown steps {sorted(only - set(STEPS))}; choose from {', '.join(STEPS)}", file=sys.stderr)
        return 2
    from .. import data
    from ..validation import l01 as checks

    if "device" in only or "occupancy" in only:
        dev = measure_device()
        data.write("l01/device_properties", dev, meta)
    if "occupancy" in only:
        optin = int(dev[0].get("sharedMemPerBlockOptin", SMEM_OPTIN))
        if args.quick:
            cases = occupancy_cases(QUICK["variants"], QUICK["blocks"], QUICK["dynamic"], QUICK["carveouts"],
                                    optin_limit=optin)
        else:
            cases = occupancy_cases(optin_limit=optin)
        occ = measure_occupancy(cases)
        data.write("l01/occupancy", occ, meta)
    if "banks" in only:
        banks = measure_banks()
        data.write("l01/bank_latency", banks, meta)
    if {"device", "occupancy", "banks"} <= only:
        for title, res in checks.run_on(dev, occ, banks):
            print(f"{title}: {res.cases} cases, {res.mismatches} mismatches{' — ' + res.note if res.note else ''}")
    if "ladder" in only:
        ladder = measure_ladder(ladder_cases(args.quick))
        data.write("l01/latency_ladder", ladder, meta)
        res = checks.check_ladder(ladder)
        print(f"latency ladder: {res.cases} cases, {res.mismatches} mismatches — {res.note}")
    if "roofline" in only:
        roof = measure_roofline(roofline_cases(args.quick))
        data.write("l01/roofline_kernels", roof, meta)
        res = checks.check_roofline_kernels(roof)
        print(f"roofline kernels: {res.cases} cases, {res.mismatches} mismatches — {res.note}")
    if "wavefronts" in only:
        if args.ncu or find_ncu():
            _bank_wavefronts(args, meta)
        else:
            print("bank wavefronts: skipped (Nsight Compute's ncu not found)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
