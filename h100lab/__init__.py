"""H100 Lab: an executable model of NVIDIA's Hopper GPU (H100, H200) for the book of the same name.

Subpackages load on first use (``h100lab.specs``, ``h100lab.tma``, ...), so ``import h100lab`` is
cheap and never pulls in matplotlib, ipywidgets or the CUDA bindings.
"""
from __future__ import annotations

import importlib

from ._version import __version__

__all__ = ["__version__", "backend"]

_SUBMODULES = {
    "specs", "occupancy", "memory", "roofline", "cluster", "ptx", "sync", "sim", "tma", "tensorcore",
    "design", "multigpu", "viz", "widgets", "cuda", "grading", "book", "data", "validation", "measure",
    "emu", "magic", "backends",
}


def backend(prefer: str | None = None):
    """The GPU backend (``h100lab.cuda``) when a Hopper GPU is usable, else the emulator (``h100lab.emu``);
    see :func:`h100lab.backend.backend`."""
    from .backends import backend as _backend

    return _backend(prefer)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'h100lab' has no attribute {name!r}")
