"""H100 SXM5, H100 PCIe and H200 SXM: the numbers, with their sources.

Peak throughputs are *computed* from per-SM, per-clock rates times SM count times clock, the way
the H100 whitepaper derives them; the computed values reproduce the published tables (989.4 TFLOP/s
BF16 dense on H100 SXM = 132 SMs x 4096 FLOP/clk x 1.83 GHz), which a test checks.
"""
from __future__ import annotations

from .device import DTYPES, SPARSE_DTYPES, DeviceSpec

__all__ = ["H100_SXM", "H100_PCIE", "H200_SXM", "ALL", "FLOP_PER_SM_PER_CLOCK",
           "SIMT_FLOP_PER_SM_PER_CLOCK", "peak_tflops"]

#: Dense tensor-core FLOP per SM per clock (an FMA counts 2). [WP Table 3, secondary; derived in
#: hopper-spec-facts.md §1.1]: TF32 1024 MAC, FP16/BF16 2048 MAC, FP8/INT8 4096 MAC, FP64 128 MAC.
FLOP_PER_SM_PER_CLOCK = {"fp64": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192, "int8": 8192}
#: SIMT (CUDA-core) FLOP per SM per clock: 128 FP32 lanes x FMA, 64 FP64 lanes x FMA [CPG §20.8.1].
SIMT_FLOP_PER_SM_PER_CLOCK = {"fp32": 256, "fp64": 128}
#: Which clock each path's published peak assumes [WP, secondary]: tensor paths the lower
#: "tensor" boost clock, FP64 tensor and SIMT paths the max boost clock.
_USES_BOOST_CLOCK = {"fp64"}


def peak_tflops(sm_count: int, flop_per_sm_clk: float, clock_mhz: float) -> float:
    """Peak throughput in TFLOP/s = SMs x FLOP/SM/clock x clock [WP §"H100 SM architecture"]."""
    if sm_count <= 0 or flop_per_sm_clk <= 0 or clock_mhz <= 0:
        raise ValueError("peak throughput needs a positive SM count, rate and clock")
    return sm_count * flop_per_sm_clk * clock_mhz * 1e6 / 1e12


def _throughputs(sm: int, tensor_mhz: float, boost_mhz: float):
    raw = {d: peak_tflops(sm, FLOP_PER_SM_PER_CLOCK[d], boost_mhz if d in _USES_BOOST_CLOCK else tensor_mhz)
           for d in DTYPES}
    dense = {d: round(v, 1) for d, v in raw.items()}
    sparse = {d: round(2 * raw[d], 1) for d in SPARSE_DTYPES}
    fp32 = round(peak_tflops(sm, SIMT_FLOP_PER_SM_PER_CLOCK["fp32"], boost_mhz), 1)
    fp64 = round(peak_tflops(sm, SIMT_FLOP_PER_SM_PER_CLOCK["fp64"], boost_mhz), 1)
    return dense, sparse, fp32, fp64


_LIMITS = "[CPG §20.2 #features-and-technical-specifications-technical-specifications-per-compute-capability]"
_COMMON_SOURCES = {
    "*": f"{_LIMITS}; reported identically by an H200 through cudaGetDeviceProperties [HW]",
    "physical_sm_count": "[WP, secondary] full GH100 die: 8 GPC x 9 TPC x 2 SM = 144 SMs",
    "physical_gpc_count": "[WP, secondary] full GH100 die has 8 GPCs",
    "physical_tpc_count": "[WP, secondary] full GH100 die has 72 TPCs (9 per GPC)",
    "sms_per_tpc": "[WP, secondary] 2 SMs per TPC",
    "gpc_sm_counts": "not given by a primary source (lesson 2 measures it on an H200)",
    "reg_alloc_unit": "[OCC cudaOccRegAllocationGranularity] 256 registers per warp",
    "sub_partitions": "[OCC cudaOccSubPartitionsPerMultiprocessor] 4; [WP Fig. 7, secondary] 4 processing blocks",
    "max_regs_per_thread": f"{_LIMITS} 255 (cuda_occupancy.h allows 256 for CC 7-9 [OCC])",
    "smem_per_sm": "[CPG §20.8.3 #shared-memory-9-0] 228 KB; H200 sharedMemPerMultiprocessor = 233472 [HW]",
    "smem_per_block_optin": "[CPG §20.8.3] 227 KB; H200 sharedMemPerBlockOptin = 232448 [HW]",
    "smem_per_block_default": "[CPG §20.8.3, §20.6.4] 48 KB without cudaFuncAttributeMaxDynamicSharedMemorySize",
    "smem_static_limit": "[CPG §20.8.3] static shared memory is limited to 48 KB",
    "smem_reserved_per_block": "[CPG §20.8.3] 1 KB per block reserved; [OCC cudaOccSMemPerBlock]; reservedSharedMemPerBlock = 1024 [HW]",
    "smem_alloc_granularity": "[OCC cudaOccSMemAllocationGranularity] 128 B for CC 8.x/9.x",
    "carveout_kb": "[CPG §20.8.3]; [OCC cudaOccAlignUpShmemSizeVoltaPlus, case 9]",
    "l1_smem_bytes": "[CPG §20.8.1, §20.8.3] 256 KB unified L1/shared per SM",
    "fp32_lanes_per_sm": "[CPG §20.8.1 #architecture-9-0] 128 FP32 cores per SM",
    "tensor_cores_per_sm": "[CPG §20.8.1] 4 tensor cores per SM",
    "sfus_per_sm": "[WP Fig. 7, secondary] 4 SFUs per sub-partition",
    "lsus_per_sm": "[WP Fig. 7, secondary] 8 LD/ST units per sub-partition",
    "smem_banks": "[CPG §20.4.3 #shared-memory-5-x] 32 banks of 4 bytes",
    "smem_bank_bytes": "[CPG §20.4.3] successive 32-bit words map to successive banks",
    "named_barriers_per_block": "[PTX §9.7.13.1 #parallel-synchronization-and-communication-instructions-bar] ids 0-15",
    "max_cluster_size_portable": "[CPG §5.2.1 #thread-block-clusters]; [RT cudaFuncAttributes]",
    "max_cluster_size_nonportable": "[CUTLASS python/cutlass_library/sm90_utils.py]; H200 cudaOccupancyMaxPotentialClusterSize = 16 after opt-in [HW]",
    "dense_tflops": "[derived] SMs x FLOP/SM/clock x clock; matches [WP Table 3][DS] (secondary)",
    "sparse_tflops": "[WP][DS, secondary] 2:4 structured sparsity doubles the dense peak",
    "fp32_simt_tflops": "[derived] SMs x 128 lanes x 2 FLOP x boost clock; matches [WP][DS]",
    "fp64_simt_tflops": "[derived] SMs x 64 lanes x 2 FLOP x boost clock; matches [WP][DS]",
    "pcie_bandwidth": "[WP][DS, secondary] PCIe Gen5 x16, 128 GB/s bidirectional",
}


def _make(name: str, *, sm: int, tpc: int, gpc: int | None, tensor_mhz: float, boost_mhz: float,
          mem_mhz: float, l2: int, hbm: int, bus_bits: int, bw: float, nvlink: float, tdp: float,
          sources: dict[str, str]) -> DeviceSpec:
    dense, sparse, fp32, fp64 = _throughputs(sm, tensor_mhz, boost_mhz)
    return DeviceSpec(
        name=name, sm_count=sm, physical_sm_count=144, gpc_count=gpc, physical_gpc_count=8,
        tpc_count=tpc, physical_tpc_count=72, sms_per_tpc=2, gpc_sm_counts=None,
        tensor_clock_mhz=tensor_mhz, boost_clock_mhz=boost_mhz, memory_clock_mhz=mem_mhz,
        l2_bytes=l2, hbm_bytes=hbm, memory_bus_bits=bus_bits, hbm_bandwidth=bw,
        nvlink_bandwidth=nvlink, pcie_bandwidth=128e9, dense_tflops=dense, sparse_tflops=sparse,
        fp32_simt_tflops=fp32, fp64_simt_tflops=fp64, tdp_watts=tdp,
        sources=_COMMON_SOURCES | sources)


MiB = 1 << 20
GiB = 1 << 30

H100_SXM = _make(
    "H100 SXM5", sm=132, tpc=66, gpc=8, tensor_mhz=1830, boost_mhz=1980,
    mem_mhz=2619, l2=50 * MiB, hbm=80 * GiB, bus_bits=5120, bw=3.352e12, nvlink=900e9, tdp=700,
    sources={
        "sm_count": "[WP][DS, secondary] 132 SMs (66 TPCs)",
        "tpc_count": "[WP, secondary] 66 TPCs",
        "gpc_count": "[WP, secondary] 8 GPCs",
        "tensor_clock_mhz": "[WP, secondary] 1830 MHz boost for tensor-core peaks",
        "boost_clock_mhz": "[WP, secondary] 1980 MHz boost for FP32/FP64 peaks",
        "memory_clock_mhz": "[derived] 3352 GB/s / (5120 bit / 8) / 2 = 2619 MHz",
        "l2_bytes": "[WP][DS, secondary] 50 MB (counted in MiB, as cudaDeviceProp.l2CacheSize counts the H200's 60 MiB)",
        "hbm_bytes": "[WP][DS, secondary] 80 GB HBM3, 5 stacks x 16 GiB",
        "memory_bus_bits": "[WP, secondary] 5120-bit (10 x 512-bit controllers)",
        "hbm_bandwidth": "[WP][DS, secondary] 3.35 TB/s (3,352 GB/s)",
        "nvlink_bandwidth": "[WP][DS, secondary] NVLink 4: 18 links x 50 GB/s = 900 GB/s bidirectional",
        "tdp_watts": "[DS, secondary] up to 700 W",
    })

H100_PCIE = _make(
    "H100 PCIe", sm=114, tpc=57, gpc=None, tensor_mhz=1620, boost_mhz=1755,
    mem_mhz=1593, l2=50 * MiB, hbm=80 * GiB, bus_bits=5120, bw=2.039e12, nvlink=600e9, tdp=350,
    sources={
        "sm_count": "[WP, secondary] 114 SMs (57 TPCs)",
        "tpc_count": "[WP, secondary] 57 TPCs",
        "gpc_count": "[WP, secondary] '7 or 8 GPCs': not fixed by the product, so None",
        "tensor_clock_mhz": "[WP, secondary] 1620 MHz (derived from the 1,513 TFLOP/s FP8 dense peak)",
        "boost_clock_mhz": "[WP, secondary] 1755 MHz",
        "memory_clock_mhz": "[derived] 2039 GB/s / (5120 bit / 8) / 2 = 1593 MHz",
        "l2_bytes": "[WP, secondary] 50 MB",
        "hbm_bytes": "[WP, secondary] 80 GB HBM2e",
        "memory_bus_bits": "[WP, secondary] 5120-bit",
        "hbm_bandwidth": "[WP, secondary] 2.0 TB/s (2,039 GB/s)",
        "nvlink_bandwidth": "[DS, secondary] 600 GB/s through an NVLink bridge",
        "tdp_watts": "[DS, secondary] 300-350 W",
    })

H200_SXM = _make(
    "H200 SXM", sm=132, tpc=66, gpc=8, tensor_mhz=1830, boost_mhz=1980,
    mem_mhz=3201, l2=60 * MiB, hbm=150_109_880_320, bus_bits=6016, bw=4.8e12, nvlink=900e9, tdp=700,
    sources={
        "sm_count": "[HW] multiProcessorCount = 132",
        "tpc_count": "[DS, secondary] same GH100 configuration as H100 SXM5",
        "gpc_count": "[DS, secondary] same GH100 configuration as H100 SXM5",
        "tensor_clock_mhz": "[DS, secondary] same silicon and peaks as H100 SXM5",
        "boost_clock_mhz": "[HW] max SM clock 1980 MHz (nvidia-smi, cudaDevAttrClockRate)",
        "memory_clock_mhz": "[HW] 3201 MHz",
        "l2_bytes": "[HW] l2CacheSize = 62,914,560 B (60 MiB)",
        "hbm_bytes": "[HW] cudaDeviceProp.totalGlobalMem = 150,109,880,320 B (139.8 GiB; marketed as 141 GB "
                     "HBM3e), data/l01/device_properties",
        "persisting_l2_max_bytes": "[HW] cudaDeviceProp.persistingL2CacheMaxSize = 39,321,600 B (37.5 MiB), "
                                   "data/l01/device_properties",
        "access_policy_max_window_bytes": "[HW] cudaDeviceProp.accessPolicyMaxWindowSize = 134,217,728 B (128 MiB), "
                                          "data/l01/device_properties",
        "memory_bus_bits": "[HW] memoryBusWidth = 6016 bit",
        "hbm_bandwidth": "[DS, secondary] 4.8 TB/s; [HW] 2 x 3.201 GHz x 752 B = 4.81 TB/s",
        "nvlink_bandwidth": "[DS, secondary] 900 GB/s",
        "tdp_watts": "[HW] power limit 700 W",
        "gpc_sm_counts": "[HW] python -m h100lab.measure.l02 (data/l02/gpc_map.json): SMs that share clusters form 8 "
                         "virtual GPCs of 18, 18, 16, 16, 16, 16, 16, 8 SMs plus 4 singleton TPCs (%smid 124-131) "
                         "that never join a cluster of more than 2; CUDA cannot see which GPC a singleton sits in, "
                         "and they are counted here with the 8-SM GPC (its 4 missing TPCs; an H100's driver table "
                         "shows that GPC with 16 SMs: accel-sim/gpu-app-collection PR #87, secondary). "
                         "Cluster capacity uses the domains: h100lab.cluster.gpc.H200_CGA",
    }).replace(gpc_sm_counts=(18, 18, 16, 16, 16, 16, 16, 16), persisting_l2_max_bytes=39_321_600,
               access_policy_max_window_bytes=134_217_728)

#: The three products, in the order the book compares them.
ALL = (H100_SXM, H100_PCIE, H200_SXM)
