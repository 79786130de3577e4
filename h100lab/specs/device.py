"""The :class:`DeviceSpec` dataclass: one Hopper product's numbers, each with its source.

A spec is immutable (a frozen dataclass whose mappings are read-only views), so a chapter or a
test can pass it around without anyone changing the numbers the book teaches. Build variants with
:meth:`DeviceSpec.replace`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

__all__ = ["DeviceSpec", "DTYPES", "SPARSE_DTYPES", "frozen_map"]

#: dtype names used for throughput tables (tensor-core paths; "fp64" is the FP64 tensor path).
DTYPES = ("fp64", "tf32", "fp16", "bf16", "fp8", "int8")
#: dtypes the 2:4 structured-sparse tensor-core path supports (FP64 has no sparse path).
SPARSE_DTYPES = ("tf32", "fp16", "bf16", "fp8", "int8")


def frozen_map(d: Mapping) -> Mapping:
    """A read-only view of a copy of ``d``."""
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class DeviceSpec:
    """Numbers of one Hopper GPU product (compute capability 9.0).

    Units: bytes, bytes/s, MHz, TFLOP/s (TOP/s for int8). ``sources`` maps a field name to the
    citation of its value (see ``../shared/reference/hopper-spec-facts.md`` §0 for the source keys:
    [WP] whitepaper, [DS] datasheet, [CPG] CUDA C++ Programming Guide, [OCC] ``cuda_occupancy.h``,
    [HW] measured on an H200, [derived] computed from the others).
    """

    name: str
    # --- chip organisation -------------------------------------------------------------------
    sm_count: int                       # enabled SMs (cudaDeviceProp.multiProcessorCount)
    physical_sm_count: int              # SMs on the full GH100 die
    gpc_count: int | None               # enabled GPCs (None where the sources disagree)
    physical_gpc_count: int
    tpc_count: int                      # enabled TPCs
    physical_tpc_count: int
    sms_per_tpc: int
    gpc_sm_counts: tuple[int, ...] | None   # enabled SMs per GPC; None unless measured/primary
    # --- clocks --------------------------------------------------------------------------------
    tensor_clock_mhz: float             # clock the tensor-core peak numbers assume
    boost_clock_mhz: float              # max SM clock (FP32/FP64 peak numbers assume it)
    memory_clock_mhz: float             # memory clock (data rate = 2x)
    # --- memory system -------------------------------------------------------------------------
    l2_bytes: int
    hbm_bytes: int
    memory_bus_bits: int
    hbm_bandwidth: float                # bytes/s
    nvlink_bandwidth: float             # bytes/s, total bidirectional
    pcie_bandwidth: float               # bytes/s, PCIe Gen5 x16, bidirectional
    # --- throughput ----------------------------------------------------------------------------
    dense_tflops: Mapping[str, float]   # tensor-core dense peaks (fp64 = FP64 tensor path)
    sparse_tflops: Mapping[str, float]  # 2:4 structured sparsity (2x dense)
    fp32_simt_tflops: float
    fp64_simt_tflops: float
    tdp_watts: float
    # --- compute capability 9.0 limits [CPG §20.2 technical specifications, OCC] ---------------
    compute_capability: tuple[int, int] = (9, 0)
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_threads_per_sm: int = 2048
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256           # registers, allocated per warp
    sub_partitions: int = 4             # SMSPs per SM, each with 1/4 of the register file
    fp32_lanes_per_sm: int = 128
    tensor_cores_per_sm: int = 4
    sfus_per_sm: int = 16
    lsus_per_sm: int = 32
    l1_smem_bytes: int = 256 * 1024     # unified L1 data cache + shared memory per SM
    smem_per_sm: int = 233472           # 228 KB: the largest carveout
    smem_per_block_optin: int = 232448  # 227 KB: cudaFuncAttributeMaxDynamicSharedMemorySize limit
    smem_per_block_default: int = 49152  # 48 KB without opt-in
    smem_static_limit: int = 49152      # static __shared__ arrays, always
    smem_reserved_per_block: int = 1024  # system use, added to every block's footprint
    smem_alloc_granularity: int = 128
    carveout_kb: tuple[int, ...] = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
    smem_banks: int = 32
    smem_bank_bytes: int = 4
    named_barriers_per_block: int = 16
    max_cluster_size_portable: int = 8
    max_cluster_size_nonportable: int = 16
    constant_bytes: int = 65536
    # --- L2 residency control [RT cudaDeviceProp; CPG §"L2 cache set-aside for persisting accesses"] ------
    persisting_l2_max_bytes: int | None = None      # cudaDeviceProp.persistingL2CacheMaxSize (None: not measured)
    access_policy_max_window_bytes: int | None = None  # cudaDeviceProp.accessPolicyMaxWindowSize (None: not measured)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        for name in ("dense_tflops", "sparse_tflops", "sources"):
            object.__setattr__(self, name, frozen_map(getattr(self, name)))

    # --- derived quantities ---------------------------------------------------------------------
    @property
    def carveout_bytes(self) -> tuple[int, ...]:
        """Shared-memory carveout steps in bytes [CPG §20.8.3 shared-memory-9-0]."""
        return tuple(k * 1024 for k in self.carveout_kb)

    @property
    def regs_per_sub_partition(self) -> int:
        """32-bit registers in one SM sub-partition's register file (65536 / 4) [OCC]."""
        return self.regs_per_sm // self.sub_partitions

    @property
    def register_file_bytes(self) -> int:
        """Register file size per SM in bytes (65,536 x 4 B = 256 KB) [CPG §20.2]."""
        return self.regs_per_sm * 4

    @property
    def max_warps_per_sub_partition(self) -> int:
        """Resident warps one sub-partition's scheduler can hold (64 / 4 = 16)."""
        return self.max_warps_per_sm // self.sub_partitions

    @property
    def cuda_cores(self) -> int:
        """FP32 lanes on the whole GPU (132 x 128 = 16,896 on H100 SXM) [WP]."""
        return self.sm_count * self.fp32_lanes_per_sm

    @property
    def max_resident_threads(self) -> int:
        """Threads the whole GPU keeps resident (SMs x 2048)."""
        return self.sm_count * self.max_threads_per_sm

    def source(self, field_name: str) -> str:
        """The citation of one field's value."""
        if field_name not in {f.name for f in dataclasses.fields(self)} and not hasattr(self, field_name):
            raise KeyError(f"DeviceSpec has no field {field_name!r}")
        return self.sources.get(field_name, self.sources.get("*", "[CPG §20.2] compute capability 9.0 limit"))

    def replace(self, **changes) -> "DeviceSpec":
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:  # short: the full dump is in `table()`
        return f"DeviceSpec({self.name!r}, {self.sm_count} SMs, CC {self.compute_capability[0]}.{self.compute_capability[1]})"
