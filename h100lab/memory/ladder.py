"""The latency/bandwidth ladder of the memory hierarchy — registers, shared memory, L1, L2, HBM — and
Little's law, the bridge between the two.

The model's side of lesson 1's ladder (the silicon's side is ``data/l01/latency_ladder``, measured by
``python -m h100lab.measure.l01 --only ladder`` with ``l01_latency_ladder.cu``):

* :data:`LEVELS`: per level the capacity (per SM or per GPU), the bandwidth the spec implies and where
  that number comes from. Bandwidths that a documented per-clock rate gives are ``derived`` (shared
  memory: 32 banks × 4 B per clock per SM [CPG §20.4.3]; registers: what the FP32 lanes read, three
  4-byte operands per FMA per lane per clock [CPG §20.8.1]); HBM is the datasheet's; L1 and L2 have no
  documented bandwidth, and no level has a documented latency — NVIDIA publishes none for Hopper, so the
  ladder's latencies are measured, never modelled.
* :func:`chase_chain`: the random cyclic chain a pointer chase follows (host side): every step lands on a
  cache line chosen at random, so neither the hardware nor the compiler can fetch the next one early.
* :func:`littles_law` / :func:`bytes_in_flight` / :func:`bandwidth_from_inflight`: L = λ·W [Little, Oper.
  Res. 9(3), 1961] read as *bytes in flight = bandwidth × latency*: to sustain a bandwidth, the requests
  outstanding at any moment must cover the latency.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..specs import H200_SXM, DeviceSpec

__all__ = ["Level", "levels", "LEVELS", "chase_chain", "chase_order", "littles_law", "bytes_in_flight",
           "bandwidth_from_inflight", "LINE_BYTES"]

LINE_BYTES = 128   #: a cache line, four 32-byte sectors [NCU "Quantities"]


@dataclass(frozen=True)
class Level:
    """One rung of the ladder: name, capacity per SM and per GPU (bytes), the bandwidth the spec implies for
    the whole GPU (bytes/s, ``None`` where nothing documented gives one) and where that comes from."""

    name: str
    capacity_per_sm: int | None
    capacity_gpu: int
    bandwidth: float | None
    source: str


def levels(spec: DeviceSpec = H200_SXM, clock_mhz: float | None = None) -> tuple[Level, ...]:
    """The ladder of ``spec`` at ``clock_mhz`` (default: its max SM clock, the clock the SIMT peaks use)."""
    hz = (clock_mhz or spec.boost_clock_mhz) * 1e6
    sms = spec.sm_count
    return (
        Level("registers", spec.register_file_bytes, sms * spec.register_file_bytes,
              sms * spec.fp32_lanes_per_sm * 3 * 4 * hz,
              "[derived] 128 FP32 lanes per SM each read 3 operands of 4 B per clock (an FMA) [CPG §20.8.1]"),
        Level("shared memory", spec.smem_per_sm, sms * spec.smem_per_sm,
              sms * spec.smem_banks * spec.smem_bank_bytes * hz,
              "[derived] 32 banks x 4 B per clock per SM [CPG §20.4.3]"),
        Level("L1", spec.l1_smem_bytes, sms * spec.l1_smem_bytes, None,
              "no documented bandwidth; shares the 256 KB array with shared memory [CPG §20.8.3]"),
        Level("L2", None, spec.l2_bytes, None, "no documented bandwidth"),
        Level("HBM", None, spec.hbm_bytes, spec.hbm_bandwidth, spec.source("hbm_bandwidth")),
    )


#: the H200's ladder at 1980 MHz
LEVELS = levels()


def chase_chain(slots: int, stride: int = LINE_BYTES // 8, seed: int = 0, dtype=np.uint64) -> np.ndarray:
    """A random cyclic pointer-chase chain over ``slots`` slots, ``stride`` elements apart: an array of
    ``slots · stride`` elements in which element ``s · stride`` of every slot ``s`` holds the *element index*
    of the next slot (the others are 0). Following it from element 0 visits every slot exactly once before
    returning to 0, in an order drawn with ``numpy.random.default_rng(seed)``.

    With ``dtype=uint64`` and the default stride every slot sits on its own 128-byte line; the kernel
    ``chase_relocate`` turns the indices into addresses on the device."""
    if slots < 1 or stride < 1:
        raise ValueError(f"a chain needs at least one slot and a stride of at least one element, got "
                         f"slots={slots}, stride={stride}")
    limit = np.iinfo(dtype).max
    if slots * stride - 1 > limit:
        raise ValueError(f"{slots} slots x {stride} elements do not fit {np.dtype(dtype).name} indices")
    rng = np.random.default_rng(seed)
    order = np.empty(slots, dtype=np.int64)
    order[0] = 0
    order[1:] = rng.permutation(np.arange(1, slots, dtype=np.int64))
    order *= stride
    chain = np.zeros(slots * stride, dtype=dtype)
    chain[order] = np.roll(order, -1).astype(dtype)
    return chain


def chase_order(chain: np.ndarray, start: int = 0, steps: int | None = None) -> np.ndarray:
    """The element indices a chase of ``chain`` visits from ``start``, ``steps`` of them (default: until it
    returns to ``start``); what a correct chase kernel's final pointer must agree with."""
    out, j = [], int(start)
    limit = steps if steps is not None else chain.size
    for _ in range(limit):
        out.append(j)
        j = int(chain[j])
        if steps is None and j == start:
            break
    return np.asarray(out, dtype=np.int64)


def littles_law(bandwidth: float, latency_s: float) -> float:
    """Bytes that must be in flight to sustain ``bandwidth`` (bytes/s) when each request takes ``latency_s``
    seconds: L = λ·W [Little 1961]."""
    if bandwidth < 0 or latency_s < 0:
        raise ValueError("bandwidth and latency are non-negative")
    return bandwidth * latency_s


def bytes_in_flight(bandwidth: float, latency_s: float, sms: int = 132) -> dict[str, float]:
    """Little's law for a whole GPU: bytes in flight on the GPU, per SM, and 16-byte loads per SM (a
    ``float4`` per thread: how many threads must each have one load outstanding)."""
    total = littles_law(bandwidth, latency_s)
    return {"gpu": total, "per_sm": total / sms, "float4_loads_per_sm": total / sms / 16}


def bandwidth_from_inflight(inflight, latency_s: float, peak: float):
    """The bandwidth a workload keeping ``inflight`` bytes outstanding can reach: ``min(peak, inflight /
    latency)`` — Little's law below the ceiling, the ceiling above (vectorised)."""
    x = np.asarray(inflight, dtype=float)
    if latency_s <= 0 or peak <= 0 or np.any(x < 0):
        raise ValueError("latency and peak are positive, bytes in flight non-negative")
    out = np.minimum(peak, x / latency_s)
    return float(out) if out.ndim == 0 else out
