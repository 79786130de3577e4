"""Device specs: published numbers, derivations, immutability, from_properties."""
import dataclasses

import pytest

from h100lab.specs import (ALL, DTYPES, H100_PCIE, H100_SXM, H200_SXM, SPARSE_DTYPES, compare, from_device,
                           from_properties, get, peak_tflops, table)

# Published peaks (whitepaper Table 3 / datasheets, dense = sparse / 2) the derivation must reproduce.
PUBLISHED_DENSE = {
    "H100 SXM5": {"fp64": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9},
    "H100 PCIe": {"fp64": 51.2, "tf32": 378.0, "fp16": 756.0, "bf16": 756.0, "fp8": 1513.0, "int8": 1513.0},
}

# What the H200 reported through cudaGetDeviceProperties (hopper-spec-facts.md §1.1, §1.2).
H200_PROPS = {"name": "NVIDIA H200", "major": 9, "minor": 0, "multiProcessorCount": 132,
              "sharedMemPerMultiprocessor": 233472, "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 232448,
              "reservedSharedMemPerBlock": 1024, "regsPerMultiprocessor": 65536, "regsPerBlock": 65536,
              "maxThreadsPerMultiProcessor": 2048, "maxBlocksPerMultiProcessor": 32, "maxThreadsPerBlock": 1024,
              "warpSize": 32, "l2CacheSize": 62914560, "memoryBusWidth": 6016, "memoryClockRate": 3201000,
              "clockRate": 1980000, "totalGlobalMem": 150109880320, "totalConstMem": 65536,
              "persistingL2CacheMaxSize": 39321600, "accessPolicyMaxWindowSize": 134217728,
              "maxThreadsDim": (1024, 1024, 64)}


@pytest.mark.parametrize("spec", [H100_SXM, H100_PCIE])
def test_dense_peaks_match_published(spec):
    for d, v in PUBLISHED_DENSE[spec.name].items():
        assert spec.dense_tflops[d] == pytest.approx(v, rel=2e-3), d


def test_h200_compute_equals_h100_sxm():
    assert dict(H200_SXM.dense_tflops) == dict(H100_SXM.dense_tflops)
    assert H200_SXM.hbm_bandwidth > H100_SXM.hbm_bandwidth
    assert H200_SXM.l2_bytes == 62914560


@pytest.mark.parametrize("spec", ALL)
def test_sparse_is_twice_dense(spec):
    assert set(spec.dense_tflops) == set(DTYPES)
    assert set(spec.sparse_tflops) == set(SPARSE_DTYPES)
    for d in SPARSE_DTYPES:
        assert spec.sparse_tflops[d] == pytest.approx(2 * spec.dense_tflops[d], abs=0.11)
    assert spec.fp32_simt_tflops == pytest.approx(2 * spec.fp64_simt_tflops, abs=0.11)


@pytest.mark.parametrize("spec", ALL)
def test_cc90_limits_are_consistent(spec):
    assert spec.max_warps_per_sm * spec.warp_size == spec.max_threads_per_sm
    assert spec.regs_per_sub_partition * spec.sub_partitions == spec.regs_per_sm
    assert spec.register_file_bytes == 256 * 1024
    assert spec.smem_per_sm == spec.carveout_bytes[-1]
    assert spec.smem_per_sm - spec.smem_per_block_optin == spec.smem_reserved_per_block
    assert spec.physical_sm_count == spec.physical_gpc_count * 9 * spec.sms_per_tpc
    assert spec.sm_count == spec.tpc_count * spec.sms_per_tpc
    assert spec.gpc_sm_counts is None or (sum(spec.gpc_sm_counts) == spec.sm_count
                                       and len(spec.gpc_sm_counts) == spec.gpc_count)


def test_known_counts():
    assert H100_SXM.cuda_cores == 16896
    assert H100_SXM.sm_count * H100_SXM.tensor_cores_per_sm == 528
    assert H100_PCIE.sm_count == 114 and H100_PCIE.gpc_count is None
    assert H100_SXM.max_resident_threads == 270336


def test_every_number_has_a_source():
    for spec in ALL:
        for f in dataclasses.fields(spec):
            if f.name in ("name", "sources"):
                continue
            assert spec.source(f.name), f.name
        assert "[HW]" in H200_SXM.source("l2_bytes")
    with pytest.raises(KeyError):
        H100_SXM.source("no_such_field")


def test_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        H100_SXM.sm_count = 1
    with pytest.raises(TypeError):
        H100_SXM.dense_tflops["fp8"] = 0
    assert H100_SXM.replace(sm_count=100).sm_count == 100 and H100_SXM.sm_count == 132


def test_from_properties_h200_matches_table():
    s = from_properties(H200_PROPS)
    rows = compare(s, H200_SXM, rtol=0.01)
    assert all(r["equal"] for r in rows), [r for r in rows if not r["equal"]]
    assert s.hbm_bandwidth == pytest.approx(4.8154e12, rel=1e-3)
    assert "[HW] cudaDeviceProp.l2CacheSize" in s.source("l2_bytes")


def test_h200_memory_is_the_drivers_total_global_mem():
    # the spec's source note says totalGlobalMem: the number must be what the H200 reported
    # (data/l01/device_properties), not 143,771 MiB
    assert H200_SXM.hbm_bytes == 150_109_880_320 and "totalGlobalMem" in H200_SXM.source("hbm_bytes")
    assert H200_SXM.persisting_l2_max_bytes == 39_321_600
    assert H200_SXM.access_policy_max_window_bytes == 128 << 20
    assert H100_SXM.persisting_l2_max_bytes is None          # not measured on an H100
    from h100lab import data
    if data.available("l01/device_properties"):
        props = data.load("l01/device_properties").records[0]
        assert props["totalGlobalMem"] == H200_SXM.hbm_bytes
        assert props["persistingL2CacheMaxSize"] == H200_SXM.persisting_l2_max_bytes
        assert props["accessPolicyMaxWindowSize"] == H200_SXM.access_policy_max_window_bytes


def test_from_properties_changed_device_recomputes_peaks():
    s = from_properties(H200_PROPS | {"multiProcessorCount": 66, "name": "NVIDIA H200 (MIG half)"})
    assert s.tpc_count == 33 and s.gpc_count is None
    assert s.dense_tflops["bf16"] == pytest.approx(H200_SXM.dense_tflops["bf16"] / 2, rel=1e-3)
    assert not all(r["equal"] for r in compare(s, H200_SXM))


def test_from_properties_rejects_non_hopper():
    with pytest.raises(ValueError, match="not Hopper"):
        from_properties({"name": "A100", "major": 8, "minor": 0})
    with pytest.raises(ValueError, match="positive"):
        from_properties(H200_PROPS | {"multiProcessorCount": 0})


def test_from_device_without_gpu_says_why():
    from h100lab import cuda
    if not hasattr(cuda, "available"):
        pytest.skip("the h100lab.cuda backend is not written yet")
    if cuda.available():
        assert from_device().compute_capability[0] == 9
    else:
        with pytest.raises(RuntimeError, match="no GPU"):
            from_device()


def test_get_and_table():
    assert get("h100-sxm") is H100_SXM and get("H200") is H200_SXM and get("H100_PCIE") is H100_PCIE
    with pytest.raises(KeyError):
        get("B200")
    rows = table()
    assert rows[0]["H100 SXM5"] == "132 / 144"
    assert {r["quantity"] for r in rows} and all(len(r) == 4 for r in rows)


def test_peak_tflops_rejects_nonpositive():
    assert peak_tflops(132, 4096, 1830) == pytest.approx(989.4, abs=0.05)
    with pytest.raises(ValueError):
        peak_tflops(0, 4096, 1830)


def test_derived_properties():
    s = H100_SXM
    assert s.carveout_bytes[0] == 0 and s.carveout_bytes[-1] == 233472 and len(s.carveout_bytes) == 10
    assert s.regs_per_sub_partition == 16384 and s.max_warps_per_sub_partition == 16
    assert "132 SMs" in repr(s)
    ref = from_properties({"name": "NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "multiProcessorCount": 132})
    assert ref.tensor_clock_mhz == H100_SXM.tensor_clock_mhz and ref.l2_bytes == H100_SXM.l2_bytes
    pcie = from_properties({"name": "NVIDIA H100 PCIe", "major": 9, "minor": 0})
    assert pcie.sm_count == 114
    forced = from_properties({"name": "x", "major": 9, "minor": 0}, reference=H200_SXM)
    assert forced.hbm_bandwidth == H200_SXM.hbm_bandwidth
