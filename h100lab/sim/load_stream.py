"""Load-based read streams: how fast a grid of threads reads device memory with 16-byte vector loads (issue 13).

``l05_read_stream.cu`` keeps ``unroll`` independent ``ld.global.v4.u32`` loads in flight per thread in a grid-stride
loop (PTX ISA 9.7.9.8). Its rate is modelled as

* **Little's law** (bytes in flight = rate × latency): each SM holds ``resident_threads × unroll × 16`` bytes of
  loads in flight, where ``resident_threads = min(blocks_per_sm × threads, max_threads_per_sm)`` (assumption: every
  block of the grid's first wave is resident — the kernel uses few registers and no shared memory — and a thread
  issues its next round as soon as its loads returned, so the loop's own instructions add nothing); the grid then
  reads ``sms × bytes_in_flight / loaded_latency_ns`` B/ns, where ``loaded_latency_ns`` is one load's round trip
  *under that load* (not the idle latency of chapter 1's ladder: queues in the memory system lengthen it);
* **the read ceiling**: no stream reads faster than ``ceiling_bytes_per_ns`` (the DRAM's sustained read rate with
  this access pattern); the rate is the smaller of the two (a hard minimum: assumption; the H200's streams bend
  smoothly, by a few per cent, near the knee);
* **the 256-byte L2 prefetch** (``ld.global.L1::no_allocate.L2::256B``, variant ``pf``): the H200 reads a fixed
  fraction ``prefetch_256b_factor`` slower than the same stream without the prefetch qualifier, at every unroll
  and grid shape (``l05/ceilings``: ~0.93; assumption: the prefetch costs DRAM bandwidth in proportion — e.g. a
  256-byte block fetched again for a line another warp already asked for — rather than adding latency; not
  measured directly). The read-only path (``ld.global.nc``, variant ``nc``) is taken to be the plain load's.

:class:`LoadStream` holds the three constants; :func:`h100lab.validation.micro.fit_load_stream` calibrates them on a
documented subset of ``l05/ceilings`` and the validation reports the held-out rest. Rates in B/ns (= GB/s, bytes
read only), times in ns.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["LoadStream", "VARIANTS", "bytes_in_flight_per_sm", "load_stream_rate"]

#: the load forms of ``l05_read_stream.cu``: plain ``ld.global``, ``ld.global.nc``, and ``.L1::no_allocate.L2::256B``
VARIANTS = ("plain", "nc", "pf")
VECTOR_BYTES = 16


@dataclass(frozen=True)
class LoadStream:
    """The constants of the read-stream model (module docstring); defaults are order-of-magnitude guesses until
    :func:`h100lab.validation.micro.fit_load_stream` calibrates them."""

    loaded_latency_ns: float = 1000.0
    ceiling_bytes_per_ns: float = 4500.0
    prefetch_256b_factor: float = 1.0
    max_threads_per_sm: int = 2048

    def with_values(self, **kw) -> "LoadStream":
        return replace(self, **kw)


def bytes_in_flight_per_sm(blocks_per_sm: int, threads: int, unroll: int, max_threads_per_sm: int = 2048) -> int:
    """Bytes of 16-byte loads one SM has in flight: resident threads (at most ``max_threads_per_sm``) × ``unroll``
    × 16. Raises ValueError for a shape with no thread or no load."""
    if blocks_per_sm < 1 or threads < 1 or unroll < 1:
        raise ValueError(f"a read stream has at least one block per SM, one thread and one load in flight "
                         f"(got {blocks_per_sm} blocks/SM, {threads} threads, unroll {unroll})")
    return min(blocks_per_sm * threads, max_threads_per_sm) * unroll * VECTOR_BYTES


def load_stream_rate(m: LoadStream, *, sms: int, blocks_per_sm: int, threads: int, unroll: int,
                     variant: str = "plain") -> float:
    """The grid's read rate (B/ns): ``min(ceiling, sms × bytes in flight per SM / loaded latency)``, times the
    prefetch factor for variant ``pf`` (module docstring). Raises ValueError for an unknown variant or no SM."""
    if variant not in VARIANTS:
        raise ValueError(f"read-stream variant {variant!r}: one of {', '.join(VARIANTS)} (l05_read_stream.cu)")
    if sms < 1:
        raise ValueError(f"{sms} SMs: a grid runs on at least one")
    flight = sms * bytes_in_flight_per_sm(blocks_per_sm, threads, unroll, m.max_threads_per_sm)
    little = flight / m.loaded_latency_ns if m.loaded_latency_ns > 0 else float("inf")
    rate = min(m.ceiling_bytes_per_ns, little)
    return rate * (m.prefetch_256b_factor if variant == "pf" else 1.0)
