"""The emulator's public calls, the same as :mod:`h100lab.cuda`'s so that one chapter cell runs on either.

    prog = compile_kernel("smoke_vector_add")        # NVRTC → PTX (no GPU), parsed once
    k = prog.function("vector_add")                  # lowered to closures once
    a, b = to_device(x), to_device(y); c = empty(x.shape, x.dtype)
    stats = launch(k, (n + 255) // 256, 256, a, b, c, np.int32(n))
    c.to_host(), stats.summary()

Memory lives in one emulated device per process (:func:`device`); :func:`reset` starts a fresh one.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .. import nvrtc as _nvrtc
from .launch import Launch, LaunchStats
from .lower import layout_of, lower_function
from .memory import DeviceMemory
from .ptx import Module, parse

__all__ = ["Emulator", "device", "reset", "DeviceArray", "to_device", "empty", "zeros", "Program", "Kernel",
           "compile", "compile_kernel", "from_ptx", "launch", "synchronize", "TensorMap", "encode_tiled",
           "available", "unavailable_reason", "limits", "device_properties"]


class Emulator:
    """The emulated GPU of this process: its global memory and the printf output of its launches."""

    def __init__(self):
        self.memory = DeviceMemory()
        self._output: list[str] = []
        self._per_launch: dict = {}
        self.launches = 0

    def print_line(self, launch, text: str) -> None:
        self._output.append(text)
        self._per_launch.setdefault(id(launch), []).append(text)

    def output_since(self, launch) -> list[str]:
        """The printf lines of ``launch`` alone (launches in other threads — the grader checks two
        notebooks at once — never mix into them)."""
        return self._per_launch.pop(id(launch), [])

    def mark(self, launch) -> None:
        self._per_launch[id(launch)] = []

    def flush(self) -> list[str]:
        out, self._output = self._output, []
        return out


_DEVICE: list[Emulator] = []


def device() -> Emulator:
    """The process's emulated device (made on first use)."""
    if not _DEVICE:
        _DEVICE.append(Emulator())
    return _DEVICE[0]


def reset() -> None:
    """Forget every allocation and start a fresh emulated device."""
    _DEVICE.clear()


def available() -> bool:
    """The emulator needs NVRTC (to compile) and nothing else: True when NVRTC loads."""
    return _nvrtc.unavailable_reason() is None


def unavailable_reason() -> str | None:
    return _nvrtc.unavailable_reason()


def device_properties(device: int = 0) -> dict[str, Any]:
    """What ``cudaGetDeviceProperties`` (:func:`h100lab.cuda.device_properties`) answers for the GPU the emulator
    models, an H200 SXM: the same ``cudaDeviceProp`` field names, values from :data:`h100lab.specs.H200_SXM`
    (every one of which the H200 reported itself, ``data/l01/device_properties``). Only device 0 exists."""
    from ..specs import H200_SXM
    from ..specs.fromdevice import PROPERTY_FIELDS

    if int(device) != 0:
        raise ValueError(f"device {device}: the emulator has one device, 0")
    s = H200_SXM
    out: dict[str, Any] = {"name": "h100lab emulator (NVIDIA H200 model)", "major": 9, "minor": 0,
                           "maxThreadsDim": [1024, 1024, 64], "maxGridSize": [2**31 - 1, 65535, 65535],
                           "clusterLaunch": 1}
    for prop, (field, scale) in PROPERTY_FIELDS.items():
        v = getattr(s, field)
        out[prop] = int(round(v / scale)) if scale != 1 else int(v)
    return out


# ------------------------------------------------------------------------------------------------
# Memory

class DeviceArray:
    """A C-contiguous array in the emulated device's global memory (mirrors :class:`h100lab.cuda.DeviceArray`):
    ``ptr`` (device address, 256-byte aligned), ``shape``, ``dtype``, ``nbytes``, :meth:`to_host`."""

    def __init__(self, shape, dtype):
        self.shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"shape {self.shape}: array extents are non-negative")
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._dev = device()
        self._alloc = self._dev.memory.alloc(self.nbytes)
        self.ptr = self._alloc.base
        weakref.finalize(self, self._dev.memory.free, self._alloc)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def to_host(self) -> np.ndarray:
        """A new NumPy array with the contents."""
        return self._alloc.data[:self.nbytes].copy().view(self.dtype).reshape(self.shape)

    def copy_from_host(self, arr: np.ndarray) -> None:
        a = np.ascontiguousarray(arr)
        if a.nbytes != self.nbytes:
            raise ValueError(f"host array is {a.nbytes} B, device array {self.nbytes} B: sizes must match")
        self._alloc.data[:self.nbytes] = a.reshape(-1).view(np.uint8)

    def free(self) -> None:
        self._dev.memory.free(self._alloc)

    def __repr__(self) -> str:
        return f"emu.DeviceArray(shape={self.shape}, dtype={self.dtype})"


def to_device(arr: np.ndarray) -> DeviceArray:
    """An emulated-device copy of a NumPy array."""
    a = np.ascontiguousarray(arr)
    out = DeviceArray(a.shape, a.dtype)
    out.copy_from_host(a)
    return out


def empty(shape, dtype) -> DeviceArray:
    """Device memory of ``shape`` and ``dtype``. The emulator fills it with the byte 0xFF (not zeros), so a
    kernel that reads memory it never wrote gets visibly wrong values rather than a lucky 0."""
    out = DeviceArray(shape, dtype)
    out._alloc.data[:] = 0xFF
    return out


def zeros(shape, dtype) -> DeviceArray:
    """Zero-filled device memory."""
    return DeviceArray(shape, dtype)


# ------------------------------------------------------------------------------------------------
# Tensor maps

_TMAP_IDS = itertools.count(1)


@dataclass(frozen=True)
class TensorMap:
    """An emulator tensor map: 128 bytes to pass by value (``data``: a marker and an id), the model's
    :class:`h100lab.tma.descriptor.TensorMap` (``model``) and the arguments (``args``)."""

    data: bytes
    args: dict
    model: Any = field(repr=False)


def encode_tiled(dtype, rank: int, global_address, global_dim: Sequence[int], global_strides: Sequence[int],
                 box_dim: Sequence[int], element_strides: Sequence[int], interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
                 swizzle="CU_TENSOR_MAP_SWIZZLE_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE",
                 oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") -> TensorMap:
    """``cuTensorMapEncodeTiled`` on the emulator: the lesson-4 model gives the driver's verdict
    (:func:`h100lab.tma.encode_tiled` raises :class:`~h100lab.tma.descriptor.TensorMapError` where the driver
    refuses); the 128 bytes identify the map to the emulated TMA unit."""
    from ..tma.descriptor import encode_tiled as model_encode
    from .lower_async import TENSORMAP_MAGIC, tensormap_registry

    addr = global_address.ptr if isinstance(global_address, DeviceArray) else int(global_address)
    tm = model_encode(dtype, rank, addr, tuple(global_dim), tuple(global_strides) if global_strides is not None else None,
                      tuple(box_dim), tuple(element_strides), interleave, swizzle, l2_promotion, oob_fill)
    tid = next(_TMAP_IDS)
    tensormap_registry[tid] = tm
    data = TENSORMAP_MAGIC + tid.to_bytes(8, "little") + bytes(128 - 24)
    args = {"dtype": tm.dtype, "rank": tm.rank, "global_address": addr, "global_dim": list(tm.global_dim),
            "global_strides": list(tm.global_strides), "box_dim": list(tm.box_dim),
            "element_strides": list(tm.element_strides), "interleave": tm.interleave, "swizzle": tm.swizzle,
            "l2_promotion": tm.l2_promotion, "oob_fill": tm.oob_fill}
    return TensorMap(data, args, tm)


# ------------------------------------------------------------------------------------------------
# Programs and kernels

#: PTX texts at least this long (characters) are parsed once and kept on disk (:func:`_parse`): the book's large
#: kernels (the capstone's variants: ~0.6 MB, a quarter of a second to parse); a short text — a student's kernel, a
#: probe — parses in milliseconds and is never written to the cache
PARSE_CACHE_MIN = 100_000


def _parse(ptx: str) -> Module:
    """:func:`h100lab.emu.ptx.parse` of ``ptx``; a text of :data:`PARSE_CACHE_MIN` characters or more kept on disk
    under its SHA-256 (and the package's code: :func:`h100lab.fitcache.on_disk`) — the parse is the costliest part
    of loading a large kernel, and a book or a test run loads the same few in many processes. A fresh
    :class:`Module` every call (the caller sets its ``source_lines``)."""
    if len(ptx) < PARSE_CACHE_MIN:
        return parse(ptx)
    import hashlib

    from ..fitcache import on_disk

    return on_disk("ptx-module", {"sha256": hashlib.sha256(ptx.encode()).hexdigest(), "bytes": len(ptx)},
                   lambda: parse(ptx))


class Program:
    """Parsed PTX (``module``), NVRTC's output (``ptx``, ``log``), the CUDA ``source`` (for error messages)."""

    def __init__(self, name: str, ptx: str, source: str = "", log: str = "", arch: str = "sm_90a"):
        self.name = name
        self.ptx = ptx
        self.source = source
        self.log = log
        self.arch = arch
        self.module: Module = _parse(ptx)
        self.module.source_lines = source.splitlines() if source else None
        self._kernels: dict = {}
        self._globals: dict = {}
        self.const_bank = self._const_bank()

    def entry_points(self) -> list[str]:
        return self.module.entries()

    def function(self, kernel_name: str) -> "Kernel":
        """The kernel ``kernel_name``, lowered once."""
        if kernel_name not in self.module.functions or not self.module.functions[kernel_name].entry:
            raise ValueError(f"{self.name} has no kernel {kernel_name!r} (its extern \"C\" __global__ functions "
                             f"are {self.entry_points()})")
        k = self._kernels.get(kernel_name)
        if k is None:
            k = self._kernels[kernel_name] = Kernel(self, kernel_name)
        return k

    def _const_bank(self):
        vs = [v for v in self.module.variables if v.space == "const"]
        if not vs:
            return None
        off = 0
        chunks = []
        for v in vs:
            off = -(-off // v.align) * v.align
            chunks.append((off, v))
            off += v.size
        buf = np.zeros(max(off, 16), np.uint8)
        for o, v in chunks:
            if v.init:
                es = max(1, v.size // (v.count or 1))
                vals = np.array([int(x) & ((1 << (8 * es)) - 1) for x in v.init],
                                {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[es])
                buf[o:o + vals.nbytes] = vals.view(np.uint8)
        return buf

    def global_address(self, name: str) -> int:
        """Device address of module variable ``name`` (``.global``), allocated and initialised on first use."""
        dev = device()
        key = (id(dev), name)
        a = self._globals.get(key)
        if a is None:
            v = next((v for v in self.module.variables if v.name == name and v.space == "global"), None)
            if v is None:
                raise KeyError(name)
            alloc = dev.memory.alloc(v.size, name)
            if v.init:
                es = max(1, v.size // (v.count or 1))
                vals = np.array([int(x) & ((1 << (8 * es)) - 1) for x in v.init],
                                {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[es])
                alloc.data[:vals.nbytes] = vals.view(np.uint8)
            a = self._globals[key] = alloc
        return a.base


class Kernel:
    """A kernel of a :class:`Program`, lowered: ``code`` (one closure per PTX instruction), ``layout``."""

    def __init__(self, program: Program, name: str):
        self.program = program
        self.name = name
        self.fn = program.module.functions[name]
        from .inline import inline_function
        inline_function(program.module, self.fn)     # .func calls: the callee's body in place of each call
        self.layout = layout_of(program.module, self.fn)
        self.code = lower_function(program.module, self.fn, self.layout, program)
        self.max_dynamic_shared = 48 * 1024
        self.non_portable = False

    def __repr__(self) -> str:
        return f"emu.Kernel({self.name!r} from {self.program.name})"

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Opt in to ``nbytes`` of dynamic shared memory (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``);
        static + dynamic must fit the 227 KB a block may use (CPG §20.8.3)."""
        from ..cuda.errors import DriverError

        if int(nbytes) < 0:
            raise ValueError(f"dynamic shared memory {nbytes} B: a size is non-negative")
        if int(nbytes) + self.layout.static_shared > 232448:
            raise DriverError("cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                              "CUDA_ERROR_INVALID_VALUE", 1,
                              f"{nbytes} B dynamic + {self.layout.static_shared} B static exceeds 232448 B")
        self.max_dynamic_shared = int(nbytes)

    def allow_non_portable_cluster_size(self, allow: bool = True) -> None:
        """Allow clusters of up to 16 CTAs (``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``)."""
        self.non_portable = bool(allow)

    def set_preferred_carveout(self, percent: int) -> None:
        """A hint with no functional effect."""
        if not (-1 <= int(percent) <= 100):
            raise ValueError(f"carveout {percent}: a percentage from 0 to 100, or -1 for the default")

    def attributes(self) -> dict:
        """What the emulator knows of ``cudaFuncAttributes``: static shared memory, local memory, parameters."""
        return {"shared_size_bytes": self.layout.static_shared, "local_size_bytes": self.layout.local_bytes,
                "max_dynamic_shared_size_bytes": self.max_dynamic_shared,
                "max_threads_per_block": 1024, "param_bytes": self.fn.param_bytes,
                "ptx_instructions": len(self.fn.body)}


def compile(source: str, *, name: str = "kernel.cu", arch: str = "sm_90a", options: Sequence[str] = ()) -> Program:
    """Compile CUDA C++ with NVRTC (:func:`h100lab.nvrtc.compile`, ``-lineinfo`` always on) and parse its PTX.
    Raises :class:`h100lab.nvrtc.CompileError` with the failing source lines; needs no CUDA driver."""
    p = _nvrtc.compile(source, name=name, arch=arch, options=options)
    return Program(name, p.ptx, source, p.log, arch)


_CACHE: dict = {}


def compile_kernel(name: str, *, arch: str = "sm_90a", options: Sequence[str] = ()) -> Program:
    """Compile ``h100lab/cuda/kernels/<name>.cu`` for the emulator (cached)."""
    src = _nvrtc.kernel_source(name)
    key = (src, arch, tuple(options))
    if key not in _CACHE:
        p = _nvrtc.compile_kernel(name, arch=arch, options=options)
        _CACHE[key] = Program(f"{name}.cu", p.ptx, src, p.log, arch)
    return _CACHE[key]


def from_ptx(ptx: str, name: str = "module.ptx") -> Program:
    """A program from PTX text (hand-written PTX, or NVRTC output saved earlier)."""
    return Program(name, ptx)


_LIMITS = threading.local()


@contextlib.contextmanager
def limits(*, max_instructions: int):
    """Within the block, every launch of this thread stops after ``max_instructions`` warp-instructions
    (:class:`~h100lab.emu.errors.BudgetExceeded`, naming where each warp was) unless it asks for fewer —
    how the grader bounds a student's kernel that never ends, whatever the exercise's own launch asks."""
    old = getattr(_LIMITS, "max_instructions", None)
    _LIMITS.max_instructions = int(max_instructions)
    try:
        yield
    finally:
        _LIMITS.max_instructions = old


def launch(kernel: Kernel, grid, block, *args: Any, shared_mem: int = 0, cluster=None, **options) -> LaunchStats:
    """Run ``kernel`` to completion on the emulator and return its :class:`LaunchStats` (the GPU backend's
    ``launch`` has the same positional form). ``options``: ``seed`` (shuffle warps and copies), ``racecheck``,
    ``quantum``, ``max_instructions``, ``max_idle_rounds``, ``resident``, ``counters``, ``fuse`` — see
    :class:`h100lab.emu.launch.Launch`."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"emu.launch needs a kernel from emu.compile(...).function(name), got {type(kernel).__name__}")
    cap = getattr(_LIMITS, "max_instructions", None)
    if cap is not None:
        options["max_instructions"] = min(int(options.get("max_instructions", cap)), cap)
    dev = device()
    run = Launch(dev, kernel, grid, block, args, shared_mem, cluster, **options)
    dev.mark(run)
    dev.launches += 1
    return run.run()


def synchronize() -> list[str]:
    """Every launch has finished when ``launch`` returns; returns (and clears) the printf output so far."""
    return device().flush()
