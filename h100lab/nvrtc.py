"""NVRTC, the runtime CUDA C++ compiler, for both backends: PTX and a cubin, with no GPU and no driver.

Both :mod:`h100lab.cuda` (which loads the cubin on a GPU) and :mod:`h100lab.emu` (which executes the
PTX on the machine model) compile through this module; it imports neither backend, and it talks to
``libnvrtc`` directly through :mod:`ctypes` (NVRTC User Guide, "Basic Usage": ``nvrtcCreateProgram``,
``nvrtcCompileProgram``, ``nvrtcGetProgramLog``, ``nvrtcGetPTX``, ``nvrtcGetCUBIN``,
``nvrtcDestroyProgram``), so compiling needs the ``nvidia-cuda-nvrtc`` library and nothing of the CUDA
driver (no ``cuda.bindings.driver``, no ``libcuda``). The library is found the way cuda-python finds it
(``cuda.pathfinder.load_nvidia_dynamic_lib("nvrtc")``), else on the system's library path.

Compiling for a real architecture (``--gpu-architecture=sm_90a``) gives both the PTX and the cubin
(NVRTC User Guide, "Supported compile options"; the ``a`` suffix enables the architecture-specific
features ``wgmma``, ``setmaxnreg`` etc., PTX ISA §12.2 "Target ISA notes").

The book's kernels live in ``h100lab/cuda/kernels/<name>.cu`` (:func:`kernel_source`, :func:`kernel_info`).
"""
from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

__all__ = ["KERNELS_DIR", "INCLUDE_DIR", "Compiled", "KernelInfo", "SourceLine", "CompileError", "NvrtcUnavailable",
           "compile", "compile_kernel", "kernel_source", "kernel_info", "list_kernels", "version",
           "unavailable_reason", "include_dirs", "entry_points"]

KERNELS_DIR = Path(__file__).resolve().parent / "cuda" / "kernels"
INCLUDE_DIR = Path(__file__).resolve().parent / "cuda" / "include"

_ARCH = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")
_KERNEL_NAME = re.compile(r"^[A-Za-z0-9_]+$")


# --------------------------------------------------------------------------------------------------
# Errors


class NvrtcUnavailable(RuntimeError):
    """``libnvrtc`` cannot be loaded here; the message says what to install."""


@dataclass(frozen=True)
class SourceLine:
    """One diagnostic of a failed compile: the source line it points at and the compiler's message."""

    line: int          # 1-based line in the CUDA source (0 when the compiler named no line)
    text: str          # that line of the source ("" when unknown)
    message: str       # the compiler's message
    ptx_line: int = 0  # for ptxas errors (inline PTX): the line in the generated PTX
    ptx_text: str = ""

    def __str__(self) -> str:
        where = f"line {self.line}: {self.text.strip()}" if self.line else "(no source line)"
        ptx = f"\n      PTX line {self.ptx_line}: {self.ptx_text.strip()}" if self.ptx_line else ""
        return f"  {self.message}\n    {where}{ptx}"


class CompileError(RuntimeError):
    """NVRTC rejected a program. ``log`` is NVRTC's log; ``lines`` the diagnostics mapped to source lines.

    Front-end errors carry NVRTC's ``name(line)`` location; errors that ptxas reports for inline PTX
    name a line of the generated PTX, which is mapped back to the CUDA source through the ``.loc``
    directives that ``-lineinfo`` puts in the PTX (PTX ISA §11.3 "Debugging directives: .loc").
    """

    def __init__(self, name: str, result: str, log: str, lines: list[SourceLine]):
        self.name = name
        self.result = result
        self.log = log
        self.lines = lines
        body = "\n".join(str(s) for s in lines) if lines else log.strip()
        super().__init__(f"NVRTC could not compile {name} ({result}):\n{body}")


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
# libnvrtc through ctypes

_LOCK = threading.Lock()  # NVRTC is thread-safe per program; the lock only guards loading the library


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    path = None
    errors = []
    try:
        import cuda.pathfinder as pf

        path = pf.load_nvidia_dynamic_lib("nvrtc").abs_path
    except Exception as exc:  # pathfinder missing, or it cannot find the library
        errors.append(f"cuda.pathfinder: {type(exc).__name__}: {exc}")
    if path is None:
        from ctypes.util import find_library

        path = find_library("nvrtc")
    if path is None:
        raise NvrtcUnavailable("libnvrtc is not loadable (" + "; ".join(errors or ["not on the library path"]) +
                               "); install the nvidia-cuda-nvrtc wheel (the project's dependencies do)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise NvrtcUnavailable(f"libnvrtc at {path} does not load: {exc}") from exc
    P, S, C, I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int
    sig = {"nvrtcVersion": [ctypes.POINTER(I), ctypes.POINTER(I)],
           "nvrtcCreateProgram": [ctypes.POINTER(P), C, C, I, ctypes.POINTER(C), ctypes.POINTER(C)],
           "nvrtcCompileProgram": [P, I, ctypes.POINTER(C)],
           "nvrtcGetProgramLogSize": [P, ctypes.POINTER(S)], "nvrtcGetProgramLog": [P, C],
           "nvrtcGetPTXSize": [P, ctypes.POINTER(S)], "nvrtcGetPTX": [P, C],
           "nvrtcGetCUBINSize": [P, ctypes.POINTER(S)], "nvrtcGetCUBIN": [P, C],
           "nvrtcDestroyProgram": [ctypes.POINTER(P)]}
    for fn, args in sig.items():
        f = getattr(lib, fn)
        f.argtypes, f.restype = args, I
    lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [I], C
    return lib


def _result_name(lib, code: int) -> str:
    s = lib.nvrtcGetErrorString(code)
    return s.decode() if s else f"nvrtcResult {code}"


def _check(lib, code: int, call: str) -> None:
    """Check an ``nvrtcResult`` (NVRTC User Guide §"Error Handling")."""
    if code != 0:
        raise RuntimeError(f"{call} returned {_result_name(lib, code)} ({code})")


def _load() -> ctypes.CDLL:
    with _LOCK:
        return _lib()


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why NVRTC cannot be used here (``None`` when it can)."""
    try:
        version()
    except NvrtcUnavailable as exc:
        return str(exc)
    except Exception as exc:
        return f"NVRTC is not usable ({type(exc).__name__}: {exc})"
    return None


def version() -> str:
    """The NVRTC version as ``"major.minor"`` (``nvrtcVersion``)."""
    lib = _load()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


@lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """Header folders given to NVRTC with ``-I``: the package's own ``include/`` (``h100lab/tensormap.cuh``:
    the ``CUtensorMap`` type, which NVRTC does not declare) and, when installed, CCCL's (``<cuda/std/...>``).

    NVRTC has no built-in headers of its own (NVRTC User Guide, "Headers"); CCCL is found the way
    cuda-python finds it (``cuda.pathfinder.locate_nvidia_header_directory("cccl")``).
    """
    import os

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
        for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if root and Path(root, "include", "cccl", "cuda", "std", "version").is_file():
                cccl = str(Path(root, "include", "cccl"))
                break
    if cccl is not None:
        dirs.append(cccl)
    return tuple(dirs)


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


@dataclass(frozen=True)
class Compiled:
    """What NVRTC produced: ``ptx`` (text), ``cubin`` (bytes, empty for a ``compute_*`` target), its ``log``
    and the ``options`` it was given."""

    name: str
    arch: str
    options: tuple[str, ...]
    ptx: str
    cubin: bytes
    log: str


def entry_points(ptx: str) -> list[str]:
    """Names of the kernels (``.entry`` directives, PTX ISA §11.1 "Kernel and function directives")."""
    return re.findall(r"^\s*\.(?:visible\s+)?\.?entry\s+([A-Za-z_$][\w$]*)", ptx, re.M)


def _text(lib, prog, size_fn, get_fn, call: str) -> bytes:
    size = ctypes.c_size_t()
    _check(lib, size_fn(prog, ctypes.byref(size)), call + "Size")
    if size.value <= 1:
        return b""
    buf = ctypes.create_string_buffer(size.value)
    _check(lib, get_fn(prog, buf), call)
    return buf.raw


def compile(source: str, *, name: str = "kernel.cu", arch: str = "sm_90a", options: Sequence[str] = ()) -> Compiled:
    """Compile CUDA C++ ``source`` with NVRTC for ``arch`` (default ``sm_90a``); no GPU needed.

    Options always given: ``--gpu-architecture=<arch>``, ``-std=c++17``, ``-lineinfo`` (line tables only,
    no code change: ptxas errors in inline PTX and the emulator's reports map back to source lines), and
    ``-I`` for :func:`include_dirs`; ``options`` are appended. Raises :class:`CompileError` with the
    failing source lines (NVRTC User Guide §"Basic Usage", ``nvrtcGetProgramLog``) and
    :class:`NvrtcUnavailable` when ``libnvrtc`` is missing.
    """
    if not isinstance(source, str):
        raise TypeError("source must be str (CUDA C++ text)")
    _arch_ok(arch)
    opts = [f"--gpu-architecture={arch}", "-std=c++17"]
    if "-G" not in options and "--device-debug" not in options:
        opts.append("-lineinfo")
    opts += [f"-I{d}" for d in include_dirs()]
    opts += list(options)
    lib = _load()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        err = lib.nvrtcCompileProgram(prog, len(opts), arr)
        log = _text(lib, prog, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog,
                    "nvrtcGetProgramLog").rstrip(b"\x00").decode(errors="replace")
        ptx = _text(lib, prog, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX, "nvrtcGetPTX").rstrip(b"\x00").decode()
        if err != 0:
            raise CompileError(name, _result_name(lib, err), log, _diagnostics(log, source, name, ptx))
        cubin = _text(lib, prog, lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN, "nvrtcGetCUBIN") \
            if arch.startswith("sm_") else b""
    finally:
        _check(lib, lib.nvrtcDestroyProgram(ctypes.byref(prog)), "nvrtcDestroyProgram")
    return Compiled(name, arch, tuple(opts), ptx, cubin, log)


_CACHE: dict[tuple[str, str, tuple[str, ...]], Compiled] = {}


def cache_base(default_sub: str) -> Path | None:
    """The package's disk-cache folder: ``$H100LAB_CACHE`` when set (``off``, ``0``, ``no`` or empty: no disk cache,
    None), else ``$XDG_CACHE_HOME/h100lab/<default_sub>`` or ``~/.cache/h100lab/<default_sub>`` — the one rule for
    the NVRTC cache here and the fits' cache (:func:`h100lab.fitcache.cache_dir`)."""
    import os

    env = os.environ.get("H100LAB_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "0", "off", "no") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "h100lab" / default_sub


def cache_dir() -> Path | None:
    """Where :func:`compile_kernel` keeps what NVRTC produced across processes: ``$H100LAB_CACHE`` (``off``: no disk
    cache), else ``$XDG_CACHE_HOME/h100lab/nvrtc`` or ``~/.cache/h100lab/nvrtc`` (:func:`cache_base`)."""
    return cache_base("nvrtc")


def _disk_key(source: str, arch: str, options: Sequence[str]) -> str:
    """Everything the output depends on: the source, the arch, the options, NVRTC's version, the include folders
    and the text of every header of the package's own include folder (a changed header is a new key)."""
    import hashlib

    h = hashlib.sha256()
    for part in (source, arch, "\0".join(options), version(), "\0".join(include_dirs())):
        h.update(part.encode())
        h.update(b"\1")
    for hdr in sorted(INCLUDE_DIR.rglob("*")):
        if hdr.is_file():
            h.update(str(hdr.relative_to(INCLUDE_DIR)).encode())
            h.update(hdr.read_bytes())
    return h.hexdigest()


def _disk_load(path: Path, name: str) -> Compiled | None:
    import json

    try:
        obj = json.loads(path.read_text())
        return Compiled(name, obj["arch"], tuple(obj["options"]), obj["ptx"], bytes.fromhex(obj["cubin"]), obj["log"])
    except (OSError, ValueError, KeyError, TypeError):
        return None          # absent or unreadable: compile again


def _disk_store(path: Path, c: Compiled) -> None:
    import json
    import os
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"arch": c.arch, "options": list(c.options), "ptx": c.ptx, "cubin": c.cubin.hex(),
                       "log": c.log}, f)
        os.replace(tmp, path)     # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        pass                      # a read-only home: the cache is an optimisation only


def compile_kernel(name: str, *, arch: str = "sm_90a", options: Sequence[str] = ()) -> Compiled:
    """Compile ``h100lab/cuda/kernels/<name>.cu`` (see :func:`compile`); cached per (source, arch, options) in the
    process, and on disk (:func:`cache_dir`) under a key of everything the output depends on (:func:`_disk_key`),
    so notebooks and test workers do not compile the same kernel again. Compile errors are never cached."""
    source = kernel_source(name)
    key = (source, arch, tuple(options))
    if key not in _CACHE:
        folder = cache_dir()
        path = folder / f"{name}-{_disk_key(source, arch, tuple(options))[:40]}.json" if folder else None
        hit = _disk_load(path, f"{name}.cu") if path is not None and path.is_file() else None
        if hit is None:
            hit = compile(source, name=f"{name}.cu", arch=arch, options=options)
            if path is not None:
                _disk_store(path, hit)
        _CACHE[key] = hit
    return _CACHE[key]
