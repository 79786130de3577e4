"""One chapter cell, either machine: the real GPU (:mod:`h100lab.cuda`) when a Hopper GPU is usable, else the
emulator (:mod:`h100lab.emu`). Both offer ``compile``, ``compile_kernel``, ``Program.function``,
``to_device``, ``empty``, ``zeros``, ``launch``, ``encode_tiled`` and ``synchronize`` with the same arguments.

    be = h100lab.backend()                 # the GPU if there is one, else the emulator
    k = be.compile_kernel("smoke_vector_add").function("vector_add")
    be.launch(k, grid, block, be.to_device(x), ...)

:func:`run_both` runs one launch on each and returns both outputs, so a chapter can show the emulator and the
silicon side by side (and a test can demand that they agree bit for bit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["backend", "name", "run_both", "BothResult"]


def backend(prefer: str | None = None):
    """The module to run kernels with: ``h100lab.cuda`` when ``h100lab.cuda.available()`` (a compute-capability
    9.x GPU), else ``h100lab.emu``. ``prefer="emu"`` or ``"cuda"`` forces one (``"cuda"`` raises when no GPU is
    usable, with the reason)."""
    from . import cuda, emu

    if prefer == "emu":
        return emu
    if prefer == "cuda":
        if not cuda.available():
            raise cuda.CudaUnavailable(f"no usable Hopper GPU: {cuda.unavailable_reason()}")
        return cuda
    if prefer is not None:
        raise ValueError(f"prefer={prefer!r}: choose 'emu', 'cuda' or None")
    return cuda if cuda.available() else emu


def name(mod=None) -> str:
    """``"H200 (silicon)"``-style label of a backend module, for tables and plots."""
    from . import cuda, emu

    mod = mod or backend()
    if mod is emu:
        return "emulator"
    try:
        return f"{cuda.device_properties()['name']} (silicon)"
    except Exception:  # pragma: no cover - only with a GPU
        return "GPU"


@dataclass
class BothResult:
    """Outputs of one launch on the emulator (``emu``) and on the GPU (``gpu``, ``None`` without one), with
    the emulator's launch statistics (``stats``)."""

    emu: Any
    gpu: Any
    stats: Any
    gpu_reason: str | None = None

    @property
    def identical(self) -> bool | None:
        """True when every output array is equal bit for bit (None when there was no GPU)."""
        if self.gpu is None:
            return None
        a = self.emu if isinstance(self.emu, (list, tuple)) else [self.emu]
        b = self.gpu if isinstance(self.gpu, (list, tuple)) else [self.gpu]
        return len(a) == len(b) and all(
            np.asarray(x).shape == np.asarray(y).shape and np.asarray(x).tobytes() == np.asarray(y).tobytes()
            for x, y in zip(a, b))


def reader_reason(detail: str) -> str:
    """Why there is no GPU run, in words for a page (the driver's raw error, with library names and paths, is
    build-machine noise: ``h100lab.cuda.unavailable_reason()`` keeps it)."""
    low = detail.lower()
    if "driver" in low or "libcuda" in low or "dynamiclib" in low:
        why = "no CUDA driver on this machine"
    elif "compute capability" in low or "hopper" in low:
        why = "the GPU is not a Hopper (compute capability 9.x)"
    elif "cuda-python" in low or "bindings" in low:
        why = "cuda-python is not installed"
    else:
        why = "the GPU backend is not usable here"
    return f"not run on a GPU: {why}"


def run_both(experiment: Callable[[Any], Any]) -> BothResult:
    """Run ``experiment(be)`` — a function that compiles, launches and returns host arrays using only the
    backend module ``be`` it is given — on the emulator and, when a Hopper GPU is usable, on the GPU.
    ``experiment`` may return ``(outputs, stats)``; the emulator's ``launch`` returns its stats."""
    from . import cuda, emu

    out = experiment(emu)
    stats = None
    if isinstance(out, tuple) and len(out) == 2 and hasattr(out[1], "instructions"):
        out, stats = out
    gpu = None
    detail = cuda.unavailable_reason()
    reason = None if detail is None else reader_reason(detail)
    if detail is None:
        g = experiment(cuda)
        gpu = g[0] if isinstance(g, tuple) and len(g) == 2 and (g[1] is None or hasattr(g[1], "instructions")) else g
    return BothResult(out, gpu, stats, reason)
