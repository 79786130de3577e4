"""Rooflines of the Hopper products: arithmetic intensity, ridge points, attainable throughput.

The roofline model [Williams, Waterman, Patterson, CACM 52(4), 2009]: a kernel that performs
``F`` floating-point operations while moving ``B`` bytes from memory has arithmetic intensity
``I = F / B`` (FLOP/byte) and can reach at most ``min(peak, I x bandwidth)``. The *ridge point*
``peak / bandwidth`` is the intensity above which the compute peak, not memory, is the limit.
Peaks and bandwidths are the device spec's ([WP][DS], see :mod:`h100lab.specs`); dtype names are
those of :data:`h100lab.specs.DTYPES` plus ``"fp32"`` (SIMT) and ``"fp64_simt"``.

The datasheet roofs are *ceilings no kernel reaches*, not what is attainable: the H200's 4.8 TB/s is
the HBM3e pin rate, and the 989 TFLOP/s BF16 peak assumes the tensor clock held under full load.
:func:`measured_ceilings` reads what this project measured on an H200 (``data/l05/ceilings``, written by
``python -m h100lab.measure.timing_sweep``): the best cuBLAS GEMM per dtype (through PyTorch), the best
read stream (``ld.global.v4`` or TMA) and the best copy (``cuMemcpyDtoDAsync``, a vectorised copy kernel,
the TMA copy stream), each counted as bytes read + bytes written per second. :func:`measured_roofs`
turns them into :class:`Roof` objects to draw beside the datasheet ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .specs import ALL, DTYPES, SPARSE_DTYPES, H100_SXM, DeviceSpec

__all__ = ["ROOF_DTYPES", "DTYPE_BYTES", "peak_flops", "bandwidth", "ridge_point", "attainable", "bound",
           "arithmetic_intensity", "gemm_intensity", "Roof", "roofs", "RooflineError", "MeasuredCeilings",
           "measured_ceilings", "measured_roofs", "CEILINGS_DATASET"]

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


#: the dataset the measured ceilings come from (``python -m h100lab.measure.timing_sweep``)
CEILINGS_DATASET = "l05/ceilings"

#: record kinds of ``data/l05/ceilings`` that are copies (bytes read + written) and read-only streams
_COPY_KINDS = ("memcpy", "device_copy", "tma_copy", "tma_copy_stream")
_READ_KINDS = ("read_stream", "tma_read")


@dataclass(frozen=True)
class MeasuredCeilings:
    """What one GPU reached, from a dataset: the best GEMM throughput per dtype (FLOP/s, cuBLAS), the best
    read-only stream and the best copy (bytes read + written per second), each with the record that set it."""

    gpu: str
    where: str
    gemm_flops: dict
    read_bandwidth: float | None
    copy_bandwidth: float | None
    memcpy_bandwidth: float | None
    best: dict

    def fraction_of(self, spec: DeviceSpec, dtype: str = "bf16") -> dict:
        """Measured / datasheet: ``{"compute": ..., "read": ..., "copy": ...}`` (None where not measured)."""
        g = self.gemm_flops.get(dtype)
        return {"compute": g / peak_flops(spec, dtype) if g else None,
                "read": self.read_bandwidth / spec.hbm_bandwidth if self.read_bandwidth else None,
                "copy": self.copy_bandwidth / spec.hbm_bandwidth if self.copy_bandwidth else None}


def measured_ceilings(records=None, *, gpu: str = "", where: str = "") -> MeasuredCeilings | None:
    """The measured ceilings of ``records`` (default: the committed ``data/l05/ceilings``; ``None`` when that
    dataset does not exist). Records: ``{"kind": "gemm", "dtype", "tflops"}`` and memory records
    ``{"kind", "gbps"}`` with ``gbps`` = bytes read + written per ns (1 GB/s = 1 B/ns); records with
    ``"correct": False`` are ignored."""
    if records is None:
        from . import data

        if not data.available(CEILINGS_DATASET):
            return None
        ds = data.load(CEILINGS_DATASET)
        records, gpu, where = ds.records, ds.meta.get("gpu", ""), ds.describe()
    ok = [r for r in records if r.get("correct", True)]
    gemm: dict = {}
    best: dict = {}
    for r in ok:
        if r.get("kind") == "gemm" and r.get("tflops"):
            d = r["dtype"]
            if r["tflops"] * 1e12 > gemm.get(d, 0.0):
                gemm[d] = r["tflops"] * 1e12
                best[f"gemm_{d}"] = r

    def top(kinds):
        rows = [r for r in ok if r.get("kind") in kinds and r.get("gbps")]
        if not rows:
            return None, None
        b = max(rows, key=lambda r: r["gbps"])
        return b["gbps"] * 1e9, b

    read, best["read"] = top(_READ_KINDS)
    copy, best["copy"] = top(_COPY_KINDS)
    memcpy, best["memcpy"] = top(("memcpy",))
    if not gemm and read is None and copy is None:
        raise RooflineError("the ceilings dataset holds no GEMM and no memory-stream record")
    return MeasuredCeilings(gpu, where, gemm, read, copy, memcpy, best)


def measured_roofs(ceilings: MeasuredCeilings, dtypes=("bf16",)) -> list[Roof]:
    """Rooflines from measured ceilings: for each measured GEMM dtype one roof with the read-stream ceiling
    (``"<gpu> measured read"``) and one with the copy ceiling (``"<gpu> measured copy"``)."""
    out = []
    for d in dtypes:
        peak = ceilings.gemm_flops.get(d)
        if peak is None:
            continue
        for what, bw in (("read", ceilings.read_bandwidth), ("copy", ceilings.copy_bandwidth)):
            if bw:
                out.append(Roof(f"{ceilings.gpu or 'GPU'} measured {what}", d, False, peak, bw))
    return out
