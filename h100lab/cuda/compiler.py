"""Compile CUDA C++ (with inline PTX) through NVRTC: PTX and a cubin, with no GPU needed.

NVRTC is the runtime compilation library (NVRTC User Guide, "Basic Usage": ``nvrtcCreateProgram``,
``nvrtcCompileProgram``, ``nvrtcGetPTX``, ``nvrtcGetCUBIN``). Compiling for a real architecture
(``--gpu-architecture=sm_90a``) gives both the PTX and the cubin (NVRTC User Guide, "Supported compile
options"; the ``a`` suffix enables the architecture-specific features ``wgmma``, ``setmaxnreg`` etc.,
PTX ISA §12.2 "Target ISA notes"). The backend always loads the cubin: a driver older than the NVRTC
that produced some PTX cannot JIT it (CUDA Compatibility guide, "Minor version compatibility"),
whereas the cubin of the same major version loads.

cuda-python is imported inside the functions, never at import time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from .errors import CompileError, CudaUnavailable, DriverError, SourceLine

__all__ = [
    "KERNELS_DIR", "INCLUDE_DIR", "Program", "KernelInfo", "compile", "compile_kernel", "kernel_source",
    "kernel_info", "list_kernels", "nvrtc_version", "compiler_unavailable_reason", "include_dirs",
]

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
INCLUDE_DIR = Path(__file__).resolve().parent / "include"

_ARCH = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")
_KERNEL_NAME = re.compile(r"^[A-Za-z0-9_]+$")


# --------------------------------------------------------------------------------------------------
# The book's kernels


def list_kernels() -> list[str]:
    """Names of the kernels shipped in ``h100lab/cuda/kernels/`` (one ``<name>.cu`` each), sorted."""
    return sorted(p.stem for p in KERNELS_DIR.glob("*.cu"))


def _kernel_path(name: str) -> Path:
    if not _KERNEL_NAME.match(name):
        raise ValueError(f"kernel name {name!r}: a kernel file name is letters, digits and '_' only")
    p = KERNELS_DIR / f"{name}.cu"
    if not p.is_file():
        raise ValueError(f"no kernel {name!r}: h100lab/cuda/kernels/ holds {list_kernels()}")
    return p


def kernel_source(name: str) -> str:
    """The CUDA source text of ``h100lab/cuda/kernels/<name>.cu``."""
    return _kernel_path(name).read_text()


@dataclass(frozen=True)
class KernelInfo:
    """What a kernel file's header comment says: the lesson that uses it (from ``lNN_``) and its purpose."""

    name: str
    lesson: int | None
    header: str


def kernel_info(name: str) -> KernelInfo:
    """Parse the leading comment of ``kernels/<name>.cu`` (DEVELOPERS.md: "each starting with a comment
    saying which lesson uses it and what it proves"). Raises ValueError when the file has no such comment."""
    text = kernel_source(name)
    lines: list[str] = []
    stripped = text.lstrip()
    if stripped.startswith("/*"):
        end = stripped.find("*/")
        block = stripped[2:end if end >= 0 else None]
        lines = [ln.strip().lstrip("*").strip() for ln in block.splitlines()]
    else:
        for ln in stripped.splitlines():
            s = ln.strip()
            if not s.startswith("//"):
                break
            lines.append(s[2:].strip())
    header = "\n".join(ln for ln in lines).strip()
    if not header:
        raise ValueError(f"kernel {name}.cu does not start with a comment saying which lesson uses it "
                         "and what it proves")
    m = re.match(r"^l(\d{2})_", name)
    return KernelInfo(name, int(m.group(1)) if m else None, header)


# --------------------------------------------------------------------------------------------------
# NVRTC


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # cuda-python missing or broken
        raise CudaUnavailable(f"cuda-python (cuda.bindings) is not importable: {exc}; "
                              "install the project's 'gpu' extra") from exc
    return nvrtc


def _nvrtc_check(nvrtc, ret, call: str):
    """Check an ``nvrtcResult`` (NVRTC User Guide §"Error Handling"); return the remaining values."""
    err, *rest = ret if isinstance(ret, tuple) else (ret,)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise DriverError(call, err.name, int(err))
    return rest[0] if len(rest) == 1 else (tuple(rest) if rest else None)


@lru_cache(maxsize=1)
def compiler_unavailable_reason() -> str | None:
    """Why NVRTC cannot be used here (``None`` when it can): cuda-python missing, or libnvrtc not found."""
    try:
        nvrtc = _nvrtc()
        _nvrtc_check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    except CudaUnavailable as exc:
        return str(exc)
    except Exception as exc:  # libnvrtc not loadable: pathfinder raises its own error types
        return f"NVRTC is not loadable ({type(exc).__name__}: {exc}); install nvidia-cuda-nvrtc"
    return None


def nvrtc_version() -> str:
    """The NVRTC version as ``"major.minor"`` (``nvrtcVersion``)."""
    nvrtc = _nvrtc()
    major, minor = _nvrtc_check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    return f"{major}.{minor}"


@lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """Header folders given to NVRTC with ``-I``: the package's own ``include/`` (``h100lab/tensormap.cuh``:
    the ``CUtensorMap`` type, which NVRTC does not declare) and, when installed, CCCL's (``<cuda/std/...>``).

    NVRTC has no built-in headers of its own (NVRTC User Guide, "Headers"); CCCL is found the way
    cuda-python finds it (``cuda.pathfinder.locate_nvidia_header_directory("cccl")``).
    """
    dirs = [str(INCLUDE_DIR)]
    cccl = None
    try:
        import cuda.pathfinder as pf

        if hasattr(pf, "locate_nvidia_header_directory"):
            loc = pf.locate_nvidia_header_directory("cccl")
            cccl = str(loc.abs_path) if loc is not None else None
        else:  # older cuda-pathfinder
            cccl = pf.find_nvidia_header_directory("cccl")
    except Exception:  # no pathfinder, or CCCL absent: <cuda/std/...> includes then fail with a clear log
        cccl = None
    if cccl is None:
        import os

        for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if root and Path(root, "include", "cccl", "cuda", "std", "version").is_file():
                cccl = str(Path(root, "include", "cccl"))
                break
    if cccl is not None:
        dirs.append(cccl)
    return tuple(dirs)


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

    def function(self, kernel_name: str):
        """The ``extern "C" __global__`` function ``kernel_name`` of this program, loaded from the cubin
        (``cuModuleLoadData`` + ``cuModuleGetFunction``, CUDA Driver API §"Module Management"). Needs a GPU."""
        from . import device

        return device.load_function(self, kernel_name)

    def entry_points(self) -> list[str]:
        """Names of the kernels (``.entry`` directives, PTX ISA §11.1 "Kernel and function directives")."""
        return re.findall(r"^\s*\.(?:visible\s+)?\.?entry\s+([A-Za-z_$][\w$]*)", self.ptx, re.M)


def _arch_ok(arch: str) -> None:
    if not _ARCH.match(arch):
        raise ValueError(f"arch {arch!r}: NVRTC's --gpu-architecture takes sm_XY[a|f] or compute_XY[a|f] "
                         "(e.g. sm_90a for Hopper's architecture-specific features)")


def _diagnostics(log: str, source: str, name: str, ptx: str) -> list[SourceLine]:
    """Map NVRTC/ptxas messages to source lines (front end: ``name(line): error``; ptxas: PTX line → the
    preceding ``.loc file line col`` directive of the same file)."""
    src_lines = source.splitlines()
    ptx_lines = ptx.splitlines()
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', ptx, re.M))
    out: list[SourceLine] = []
    base = Path(name).name

    def src(n: int) -> str:
        return src_lines[n - 1] if 1 <= n <= len(src_lines) else ""

    for ln in log.splitlines():
        m = re.match(r"^(.*?)\((\d+)\): (error|warning|catastrophic error)\s*:?\s*(.*)$", ln)
        if m and "error" in m.group(3):
            n = int(m.group(2)) if Path(m.group(1)).name == base else 0
            out.append(SourceLine(n, src(n), f"{m.group(3)}: {m.group(4)}" +
                                  ("" if n or not m.group(1) else f" (in {m.group(1)}, line {m.group(2)})")))
            continue
        m = re.match(r"^ptxas.*?line (\d+); error\s*:\s*(.*)$", ln)
        if m:
            p = int(m.group(1))
            n = 0
            for k in range(min(p, len(ptx_lines)) - 1, -1, -1):
                loc = re.match(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+", ptx_lines[k])
                if loc:
                    if Path(files.get(loc.group(1), "")).name == base:
                        n = int(loc.group(2))
                    break
            out.append(SourceLine(n, src(n), f"ptxas error: {m.group(2)}", p,
                                  ptx_lines[p - 1] if 1 <= p <= len(ptx_lines) else ""))
    return out


def compile(source: str, *, name: str = "kernel.cu", arch: str = "sm_90a",
            options: Sequence[str] = ()) -> Program:
    """Compile CUDA C++ ``source`` with NVRTC for ``arch`` (default ``sm_90a``); no GPU needed.

    Options always given: ``--gpu-architecture=<arch>``, ``-std=c++17``, ``-lineinfo`` (so that ptxas
    errors in inline PTX map back to source lines; it adds line tables only, no code change), and ``-I``
    for :func:`include_dirs`. ``options`` are appended. Raises :class:`CompileError` with the failing
    source lines (NVRTC User Guide §"Basic Usage", ``nvrtcGetProgramLog``).
    """
    if not isinstance(source, str):
        raise TypeError("source must be str (CUDA C++ text)")
    _arch_ok(arch)
    opts = [f"--gpu-architecture={arch}", "-std=c++17"]
    if "-G" not in options and "--device-debug" not in options:
        opts.append("-lineinfo")
    opts += [f"-I{d}" for d in include_dirs()]
    opts += list(options)
    nvrtc = _nvrtc()
    prog = _nvrtc_check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                        "nvrtcCreateProgram")
    try:
        bopts = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(bopts), bopts)
        size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * size
        _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = buf.rstrip(b"\x00").decode(errors="replace")
        ptx = ""
        size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        if size > 1:
            buf = b" " * size
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
            ptx = buf.rstrip(b"\x00").decode()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(name, err.name, log, _diagnostics(log, source, name, ptx))
        cubin = b""
        if arch.startswith("sm_"):
            size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            buf = b" " * size
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
            cubin = bytes(buf)
    finally:
        _nvrtc_check(nvrtc, nvrtc.nvrtcDestroyProgram(prog), "nvrtcDestroyProgram")
    return Program(name, arch, tuple(opts), ptx, cubin, log)


_CACHE: dict[tuple[str, str, tuple[str, ...]], Program] = {}


def compile_kernel(name: str, *, arch: str = "sm_90a", options: Sequence[str] = ()) -> Program:
    """Compile ``h100lab/cuda/kernels/<name>.cu`` (see :func:`compile`); cached per (source, arch, options)."""
    source = kernel_source(name)
    key = (source, arch, tuple(options))
    if key not in _CACHE:
        _CACHE[key] = compile(source, name=f"{name}.cu", arch=arch, options=options)
    return _CACHE[key]
