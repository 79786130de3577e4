"""Rooflines of the Hopper products: arithmetic intensity, ridge points, attainable throughput.

The roofline model [Williams, Waterman, Patterson, CACM 52(4), 2009]: a kernel that performs
``F`` floating-point operations while moving ``B`` bytes from memory has arithmetic intensity
``I = F / B`` (FLOP/byte) and can reach at most ``min(peak, I x bandwidth)``. The *ridge point*
``peak / bandwidth`` is the intensity above which the compute peak, not memory, is the limit.
Peaks and bandwidths are the device spec's ([WP][DS], see :mod:`h100lab.specs`); dtype names are
those of :data:`h100lab.specs.DTYPES` plus ``"fp32"`` (SIMT) and ``"fp64_simt"``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .specs import ALL, DTYPES, SPARSE_DTYPES, H100_SXM, DeviceSpec

__all__ = ["ROOF_DTYPES", "DTYPE_BYTES", "peak_flops", "bandwidth", "ridge_point", "attainable", "bound",
           "arithmetic_intensity", "gemm_intensity", "Roof", "roofs", "RooflineError"]

#: every dtype a roofline can be drawn for
ROOF_DTYPES = DTYPES + ("fp32", "fp64_simt")
#: bytes per element
DTYPE_BYTES = {"fp64": 8, "fp64_simt": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


class RooflineError(ValueError):
    """A roofline question with no answer (unknown dtype, no sparse path, non-positive sizes)."""


def peak_flops(spec: DeviceSpec = H100_SXM, dtype: str = "bf16", sparse: bool = False) -> float:
    """Peak throughput in FLOP/s (OP/s for int8) of ``dtype`` on ``spec``.

    Tensor-core dense or 2:4-sparse peaks for :data:`~h100lab.specs.DTYPES` (``"fp64"`` is the FP64
    tensor path), SIMT peaks for ``"fp32"`` and ``"fp64_simt"`` [WP Table 3; derivation in
    :mod:`h100lab.specs.products`]. FP64 and SIMT paths have no sparse mode.
    """
    if dtype not in ROOF_DTYPES:
        raise RooflineError(f"unknown dtype {dtype!r}; choose one of {ROOF_DTYPES}")
    if sparse:
        if dtype not in SPARSE_DTYPES:
            raise RooflineError(f"{dtype} has no 2:4 structured-sparse tensor-core path "
                                f"(sparse dtypes: {SPARSE_DTYPES})")
        return spec.sparse_tflops[dtype] * 1e12
    if dtype == "fp32":
        return spec.fp32_simt_tflops * 1e12
    if dtype == "fp64_simt":
        return spec.fp64_simt_tflops * 1e12
    return spec.dense_tflops[dtype] * 1e12


def bandwidth(spec: DeviceSpec = H100_SXM, level: str = "hbm") -> float:
    """Memory bandwidth in bytes/s: ``"hbm"`` (device memory), ``"nvlink"`` or ``"pcie"``."""
    try:
        return {"hbm": spec.hbm_bandwidth, "nvlink": spec.nvlink_bandwidth, "pcie": spec.pcie_bandwidth}[level]
    except KeyError:
        raise RooflineError(f"unknown memory level {level!r}; choose 'hbm', 'nvlink' or 'pcie'") from None


def ridge_point(spec: DeviceSpec = H100_SXM, dtype: str = "bf16", sparse: bool = False, level: str = "hbm") -> float:
    """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof: peak / bandwidth."""
    return peak_flops(spec, dtype, sparse) / bandwidth(spec, level)


def attainable(intensity, spec: DeviceSpec = H100_SXM, dtype: str = "bf16", sparse: bool = False,
               level: str = "hbm"):
    """Attainable FLOP/s at ``intensity`` FLOP/byte: ``min(peak, intensity x bandwidth)`` (vectorised)."""
    i = np.asarray(intensity, dtype=float)
    if np.any(i <= 0) or not np.all(np.isfinite(i)):
        raise RooflineError("arithmetic intensity must be positive and finite (FLOP per byte)")
    out = np.minimum(peak_flops(spec, dtype, sparse), i * bandwidth(spec, level))
    return float(out) if out.ndim == 0 else out


def bound(intensity: float, spec: DeviceSpec = H100_SXM, dtype: str = "bf16", sparse: bool = False) -> str:
    """``"memory"`` below the ridge point, ``"compute"`` at or above it."""
    if intensity <= 0:
        raise RooflineError("arithmetic intensity must be positive (FLOP per byte)")
    return "memory" if intensity < ridge_point(spec, dtype, sparse) else "compute"


def arithmetic_intensity(flops: float, nbytes: float) -> float:
    """FLOP per byte moved: ``flops / nbytes``."""
    if flops <= 0 or nbytes <= 0:
        raise RooflineError(f"FLOPs and bytes must be positive, got {flops} and {nbytes}")
    return flops / nbytes


def gemm_intensity(m: int, n: int, k: int, dtype: str = "bf16", out_dtype: str | None = None) -> float:
    """Arithmetic intensity of ``C[m,n] = A[m,k] @ B[k,n]`` when A and B are read once and C written once.

    FLOPs ``2mnk``; bytes ``(mk + kn) x size(dtype) + mn x size(out_dtype)`` (out defaults to the
    input dtype). The best case an ideal tiling reaches; lesson 8 measures how close kernels get.
    """
    if min(m, n, k) <= 0:
        raise RooflineError(f"GEMM sizes must be positive, got m={m}, n={n}, k={k}")
    for d in (dtype, out_dtype or dtype):
        if d not in DTYPE_BYTES:
            raise RooflineError(f"unknown dtype {d!r}")
    nbytes = (m * k + k * n) * DTYPE_BYTES[dtype] + m * n * DTYPE_BYTES[out_dtype or dtype]
    return arithmetic_intensity(2.0 * m * n * k, nbytes)


@dataclass(frozen=True)
class Roof:
    """One roofline: a device, a dtype, its compute peak (FLOP/s), bandwidth (B/s) and ridge (FLOP/B)."""

    device: str
    dtype: str
    sparse: bool
    peak: float
    bandwidth: float

    @property
    def ridge(self) -> float:
        return self.peak / self.bandwidth

    def attainable(self, intensity):
        i = np.asarray(intensity, dtype=float)
        out = np.minimum(self.peak, i * self.bandwidth)
        return float(out) if out.ndim == 0 else out


def roofs(dtypes=("bf16", "fp8"), specs=ALL, sparse: bool = False) -> list[Roof]:
    """Rooflines for every (device, dtype) pair, devices in ``specs`` order."""
    return [Roof(s.name, d, sparse, peak_flops(s, d, sparse), s.hbm_bandwidth) for s in specs for d in dtypes]
