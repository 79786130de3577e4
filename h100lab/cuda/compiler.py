"""Compile CUDA C++ (with inline PTX) for the GPU backend: PTX and a cubin, with no GPU needed.

The compiling itself is :mod:`h100lab.nvrtc`, which both backends share (the emulator executes the PTX,
this backend loads the cubin). The backend always loads the cubin: a driver older than the NVRTC that
produced some PTX cannot JIT it (CUDA Compatibility guide, "Minor version compatibility"), whereas the
cubin of the same major version loads. This module adds :class:`Program.function` (load the cubin on the
GPU) and the backend's error types.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .. import nvrtc as _nvrtc
from ..nvrtc import (INCLUDE_DIR, KERNELS_DIR, KernelInfo, include_dirs, kernel_info, kernel_source,  # noqa: F401
                     list_kernels)
from .errors import CompileError, CudaUnavailable

__all__ = [
    "KERNELS_DIR", "INCLUDE_DIR", "Program", "KernelInfo", "compile", "compile_kernel", "kernel_source",
    "kernel_info", "list_kernels", "nvrtc_version", "compiler_unavailable_reason", "include_dirs",
]


def compiler_unavailable_reason() -> str | None:
    """Why NVRTC cannot be used here (``None`` when it can): ``libnvrtc`` not found or not loadable."""
    return _nvrtc.unavailable_reason()


def nvrtc_version() -> str:
    """The NVRTC version as ``"major.minor"`` (``nvrtcVersion``)."""
    try:
        return _nvrtc.version()
    except _nvrtc.NvrtcUnavailable as exc:
        raise CudaUnavailable(str(exc)) from exc


@dataclass
class Program:
    """A compiled translation unit: ``ptx`` (text), ``cubin`` (bytes, empty for a ``compute_*`` target),
    NVRTC's ``log``; :meth:`function` loads the cubin on the GPU and returns a kernel."""

    name: str
    arch: str
    options: tuple[str, ...]
    ptx: str
    cubin: bytes
    log: str
    _module: Any = field(default=None, repr=False)
    _source: Any = field(default=None, repr=False, compare=False)

    def function(self, kernel_name: str):
        """The ``extern "C" __global__`` function ``kernel_name`` of this program, loaded from the cubin
        (``cuModuleLoadData`` + ``cuModuleGetFunction``, CUDA Driver API §"Module Management"). Needs a GPU."""
        from . import device

        return device.load_function(self, kernel_name)

    def entry_points(self) -> list[str]:
        """Names of the kernels (``.entry`` directives, PTX ISA §11.1 "Kernel and function directives")."""
        return re.findall(r"^\s*\.(?:visible\s+)?\.?entry\s+([A-Za-z_$][\w$]*)", self.ptx, re.M)


def compile(source: str, *, name: str = "kernel.cu", arch: str = "sm_90a",
            options: Sequence[str] = ()) -> Program:
    """Compile CUDA C++ ``source`` with NVRTC for ``arch`` (default ``sm_90a``); no GPU needed
    (:func:`h100lab.nvrtc.compile`: ``-lineinfo``, ``-std=c++17`` and the package's include folders always
    given). Raises :class:`~h100lab.cuda.errors.CompileError` with the failing source lines."""
    return _program(lambda: _nvrtc.compile(source, name=name, arch=arch, options=options))


_PROGRAMS: dict[int, Program] = {}


def compile_kernel(name: str, *, arch: str = "sm_90a", options: Sequence[str] = ()) -> Program:
    """Compile ``h100lab/cuda/kernels/<name>.cu`` (see :func:`compile`); cached per (source, arch, options)
    by :func:`h100lab.nvrtc.compile_kernel`, one loaded :class:`Program` per compiled result."""
    c = _program(lambda: _nvrtc.compile_kernel(name, arch=arch, options=options), wrap=False)
    p = _PROGRAMS.get(id(c))
    if p is None or p._source is not c:
        p = _PROGRAMS[id(c)] = Program(c.name, c.arch, c.options, c.ptx, c.cubin, c.log)
        p._source = c
    return p


def _program(make, wrap: bool = True):
    """NVRTC's result (a :class:`Program` when ``wrap``), its errors as this backend's error types."""
    try:
        c = make()
    except _nvrtc.CompileError as exc:
        raise CompileError(exc.name, exc.result, exc.log, exc.lines) from None
    except _nvrtc.NvrtcUnavailable as exc:
        raise CudaUnavailable(str(exc)) from exc
    return Program(c.name, c.arch, c.options, c.ptx, c.cubin, c.log) if wrap else c
