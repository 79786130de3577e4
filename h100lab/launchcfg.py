"""Launch-configuration rules shared by both backends (the GPU's :mod:`h100lab.cuda` and the emulator's
:mod:`h100lab.emu`): the shape of grids, blocks and clusters, and the error for a configuration that
breaks a CUDA rule before any driver sees it."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LaunchConfigError", "normalize_dims"]


class LaunchConfigError(ValueError):
    """A launch, occupancy query or kernel argument list breaks a CUDA rule before the driver sees it."""


def normalize_dims(dims: Any, what: str) -> tuple[int, int, int]:
    """``int`` or a 1–3-tuple of positive ints → ``(x, y, z)`` (CUDA C++ Programming Guide §"Thread
    Hierarchy": grids, blocks and clusters are 1-, 2- or 3-dimensional; missing dimensions are 1)."""
    if isinstance(dims, (int, np.integer)):
        dims = (int(dims),)
    t = tuple(int(x) for x in dims)
    if not 1 <= len(t) <= 3:
        raise LaunchConfigError(f"{what} {dims}: a {what} has 1, 2 or 3 dimensions")
    if any(x < 1 for x in t):
        raise LaunchConfigError(f"{what} {dims}: every {what} dimension is at least 1")
    return (t + (1, 1))[:3]
