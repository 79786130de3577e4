"""Specs from a real GPU (``cudaGetDeviceProperties``), comparison and tables."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from .device import DeviceSpec
from .products import ALL, H100_PCIE, H100_SXM, H200_SXM, _throughputs

__all__ = ["PROPERTY_FIELDS", "from_properties", "from_device", "compare", "get", "table"]

#: cudaDeviceProp field -> (DeviceSpec field, scale applied to the property's value).
#: [RT cudaDeviceProp]: clockRate and memoryClockRate are in kHz.
PROPERTY_FIELDS: dict[str, tuple[str, float]] = {
    "multiProcessorCount": ("sm_count", 1),
    "l2CacheSize": ("l2_bytes", 1),
    "totalGlobalMem": ("hbm_bytes", 1),
    "memoryBusWidth": ("memory_bus_bits", 1),
    "memoryClockRate": ("memory_clock_mhz", 1e-3),
    "clockRate": ("boost_clock_mhz", 1e-3),
    "warpSize": ("warp_size", 1),
    "maxThreadsPerBlock": ("max_threads_per_block", 1),
    "maxThreadsPerMultiProcessor": ("max_threads_per_sm", 1),
    "maxBlocksPerMultiProcessor": ("max_blocks_per_sm", 1),
    "regsPerMultiprocessor": ("regs_per_sm", 1),
    "regsPerBlock": ("regs_per_block", 1),
    "sharedMemPerMultiprocessor": ("smem_per_sm", 1),
    "sharedMemPerBlockOptin": ("smem_per_block_optin", 1),
    "sharedMemPerBlock": ("smem_per_block_default", 1),
    "reservedSharedMemPerBlock": ("smem_reserved_per_block", 1),
    "totalConstMem": ("constant_bytes", 1),
    "persistingL2CacheMaxSize": ("persisting_l2_max_bytes", 1),
    "accessPolicyMaxWindowSize": ("access_policy_max_window_bytes", 1),
}


def _closest(name: str, sm_count: int | None, mem: int | None) -> DeviceSpec:
    n = name.upper()
    if "H200" in n or (mem is not None and mem > 100 * (1 << 30)):
        return H200_SXM
    if "PCIE" in n or sm_count == H100_PCIE.sm_count:
        return H100_PCIE
    return H100_SXM


def from_properties(props: Mapping[str, Any], reference: DeviceSpec | None = None) -> DeviceSpec:
    """A :class:`DeviceSpec` from ``cudaDeviceProp`` values (a dict with the runtime's field names).

    Reported fields replace the reference spec's (the closest product unless ``reference`` is
    given); peak throughputs are recomputed from the reported SM count and clock; HBM bandwidth is
    ``2 x memoryClockRate x memoryBusWidth / 8`` (double data rate) when both are reported
    [RT cudaDeviceProp]. Fields the device does not report (tensor clock, NVLink, TDP) keep the
    reference's values and sources. Raises ``ValueError`` for a device that is not compute
    capability 9.x: the model implements sm_90's rules only.
    """
    major, minor = int(props.get("major", 9)), int(props.get("minor", 0))
    if major != 9:
        raise ValueError(f"compute capability {major}.{minor} is not Hopper (9.x): "
                         "h100lab models sm_90 limits only")
    name = str(props.get("name", "unknown GPU"))
    ref = reference or _closest(name, props.get("multiProcessorCount"), props.get("totalGlobalMem"))
    changes: dict[str, Any] = {"name": name, "compute_capability": (major, minor), "gpc_sm_counts": None}
    sources = dict(ref.sources)
    for prop, (fld, scale) in PROPERTY_FIELDS.items():
        if props.get(prop) is not None:
            v = props[prop] * scale
            changes[fld] = int(v) if scale == 1 else float(v)
            sources[fld] = f"[HW] cudaDeviceProp.{prop} of {name}"
    if props.get("maxThreadsDim") is not None:
        changes["max_block_dims"] = tuple(int(x) for x in props["maxThreadsDim"])
    if "max_threads_per_sm" in changes or "warp_size" in changes:
        changes["max_warps_per_sm"] = (changes.get("max_threads_per_sm", ref.max_threads_per_sm)
                                       // changes.get("warp_size", ref.warp_size))
    sm = changes.get("sm_count", ref.sm_count)
    if sm <= 0:
        raise ValueError("multiProcessorCount must be positive")
    if sm != ref.sm_count:
        changes["tpc_count"] = sm // ref.sms_per_tpc
        changes["gpc_count"] = None
    if "memory_clock_mhz" in changes and "memory_bus_bits" in changes:
        changes["hbm_bandwidth"] = 2 * changes["memory_clock_mhz"] * 1e6 * changes["memory_bus_bits"] / 8
        sources["hbm_bandwidth"] = "[derived] 2 x memoryClockRate x memoryBusWidth / 8"
    boost = changes.get("boost_clock_mhz", ref.boost_clock_mhz)
    tensor = ref.tensor_clock_mhz * boost / ref.boost_clock_mhz
    dense, sparse, fp32, fp64 = _throughputs(sm, tensor, boost)
    changes.update(tensor_clock_mhz=tensor, dense_tflops=dense, sparse_tflops=sparse,
                   fp32_simt_tflops=fp32, fp64_simt_tflops=fp64, sources=sources)
    return dataclasses.replace(ref, **changes)


def from_device(device: int = 0) -> DeviceSpec:
    """A :class:`DeviceSpec` of GPU ``device``, read with ``h100lab.cuda.device_properties``.

    Raises ``RuntimeError`` with the backend's reason when no GPU (or no CUDA Python) is present.
    """
    from .. import cuda  # lazy: importing h100lab never touches CUDA

    if not cuda.available():
        raise RuntimeError(f"no GPU: {cuda.unavailable_reason()}")
    return from_properties(cuda.device_properties(device))


_COMPARED = ("sm_count", "l2_bytes", "hbm_bytes", "memory_bus_bits", "memory_clock_mhz", "boost_clock_mhz",
             "hbm_bandwidth", "warp_size", "max_threads_per_block", "max_threads_per_sm", "max_warps_per_sm",
             "max_blocks_per_sm", "regs_per_sm", "regs_per_block", "smem_per_sm", "smem_per_block_optin",
             "smem_per_block_default", "smem_reserved_per_block", "constant_bytes", "compute_capability",
             "persisting_l2_max_bytes", "access_policy_max_window_bytes")


def compare(a: DeviceSpec, b: DeviceSpec, fields: tuple[str, ...] = _COMPARED,
            rtol: float = 0.0) -> list[dict[str, Any]]:
    """Row per field: ``{"field", "a", "b", "equal"}``; floats equal within ``rtol``."""
    rows = []
    for f in fields:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, float) or isinstance(y, float):
            eq = abs(x - y) <= rtol * max(abs(x), abs(y))
        else:
            eq = x == y
        rows.append({"field": f, "a": x, "b": y, "equal": bool(eq)})
    return rows


def get(name: str) -> DeviceSpec:
    """A product spec by a loose name: ``"H100_SXM"``, ``"h100-pcie"``, ``"H200"``."""
    key = name.upper().replace("-", "_").replace(" ", "_")
    for s in ALL:
        k = s.name.upper().replace(" ", "_")
        if key in (k, k.replace("SXM5", "SXM")) or (key == "H200" and s is H200_SXM) or \
                (key == "H100" and s is H100_SXM):
            return s
    raise KeyError(f"unknown device {name!r}; known: H100_SXM, H100_PCIE, H200_SXM")


_TABLE_ROWS = (
    ("SMs (enabled / physical)", lambda s: f"{s.sm_count} / {s.physical_sm_count}"),
    ("TPCs (enabled)", lambda s: f"{s.tpc_count}"),
    ("GPCs (enabled)", lambda s: "7 or 8" if s.gpc_count is None else f"{s.gpc_count}"),
    ("boost clock, tensor / SIMT (MHz)", lambda s: f"{s.tensor_clock_mhz:.0f} / {s.boost_clock_mhz:.0f}"),
    ("L2 (MiB)", lambda s: f"{s.l2_bytes / 2**20:.0f}"),
    ("HBM (GiB)", lambda s: f"{s.hbm_bytes / 2**30:.0f}"),
    ("HBM bandwidth (TB/s)", lambda s: f"{s.hbm_bandwidth / 1e12:.2f}"),
    ("NVLink (GB/s)", lambda s: f"{s.nvlink_bandwidth / 1e9:.0f}"),
    ("BF16 dense / sparse (TFLOP/s)", lambda s: f"{s.dense_tflops['bf16']:.1f} / {s.sparse_tflops['bf16']:.1f}"),
    ("FP8 dense / sparse (TFLOP/s)", lambda s: f"{s.dense_tflops['fp8']:.1f} / {s.sparse_tflops['fp8']:.1f}"),
    ("TF32 dense (TFLOP/s)", lambda s: f"{s.dense_tflops['tf32']:.1f}"),
    ("FP64 tensor / SIMT (TFLOP/s)", lambda s: f"{s.dense_tflops['fp64']:.1f} / {s.fp64_simt_tflops:.1f}"),
    ("FP32 SIMT (TFLOP/s)", lambda s: f"{s.fp32_simt_tflops:.1f}"),
    ("registers / SM", lambda s: f"{s.regs_per_sm}"),
    ("shared memory / SM, / block opt-in (B)", lambda s: f"{s.smem_per_sm} / {s.smem_per_block_optin}"),
    ("max threads / warps / blocks per SM", lambda s: f"{s.max_threads_per_sm} / {s.max_warps_per_sm} / {s.max_blocks_per_sm}"),
)


def table(*specs: DeviceSpec) -> list[dict[str, str]]:
    """Rows ``{"quantity", <spec name>: value, ...}`` comparing specs side by side (all three by default)."""
    specs = specs or ALL
    return [{"quantity": q, **{s.name: f(s) for s in specs}} for q, f in _TABLE_ROWS]
