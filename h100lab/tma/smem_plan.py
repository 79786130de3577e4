"""Plan a kernel's dynamic shared memory: barriers first, then tiles at the alignment their swizzle needs.

With ``extern __shared__`` memory the kernel lays out everything by hand. The course's recipe (seed
lesson 5 §10): put the 8-byte mbarriers at the start, then round the data offset up to the TMA
alignment, ``(sizeof(uint64_t) * n + 127) & ~127``. The alignment a tile needs depends on its use:

* 128 bytes for any tensor-copy destination, or the copy faults [CPG §10.29.2 Table 10; HW];
* 256 / 512 / 1024 bytes for a 32B / 64B / 128B-swizzled tile that a WGMMA descriptor with
  ``base_offset = 0`` reads, or whose swizzle pattern should start at phase 0
  [CPG §10.29.3.2 Tables 11–12; PTX §9.7.15.5.1.2.2];
* 8 bytes for an mbarrier [PTX §9.7.13.15.1]; 16 bytes for a raw ``cp.async.bulk`` buffer [PTX §9.7.9.25.4.1].

Offsets are relative to the start of dynamic shared memory, whose own alignment the kernel may not
know (only 16 bytes are promised): :func:`plan_smem` assumes ``base_alignment`` and, when a region
needs more, reserves the slack a kernel uses to round its base up at run time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..memory.swizzle import pattern_alignment
from .descriptor import TensorMap

__all__ = ["Region", "SmemPlan", "plan_smem", "tile_alignment"]


def tile_alignment(swizzle: str) -> int:
    """The alignment of a tile used with ``swizzle``: 128 (none), 256, 512, 1024 bytes (module docstring)."""
    return pattern_alignment(swizzle)


@dataclass(frozen=True)
class Region:
    """One named region: ``[offset, offset + nbytes)`` aligned to ``align``; ``kind`` is mbarrier/tile/buffer."""

    name: str
    offset: int
    nbytes: int
    align: int
    kind: str

    @property
    def end(self) -> int:
        return self.offset + self.nbytes


@dataclass(frozen=True)
class SmemPlan:
    """The regions in address order, the bytes they span, and the run-time alignment slack."""

    regions: tuple[Region, ...]
    base_alignment: int
    slack: int

    def __getitem__(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(f"no region named {name!r}; regions: {[r.name for r in self.regions]}")

    def offset(self, name: str) -> int:
        return self[name].offset

    @property
    def used_bytes(self) -> int:
        """Bytes from the (aligned) base to the end of the last region, padding included."""
        return max((r.end for r in self.regions), default=0)

    @property
    def padding_bytes(self) -> int:
        return self.used_bytes - sum(r.nbytes for r in self.regions)

    @property
    def dynamic_bytes(self) -> int:
        """The ``sharedMem`` launch argument: used bytes plus the slack for aligning the base at run time."""
        return self.used_bytes + self.slack

    def fits(self, spec=None) -> bool:
        """Whether one CTA may have this much dynamic shared memory (227 KB on sm_90) [CPG §20.8.3]."""
        if spec is None:
            from ..specs import H200_SXM as spec
        return self.dynamic_bytes <= spec.smem_per_block_optin

    def needs_opt_in(self, spec=None) -> bool:
        """Above 48 KB a kernel must raise ``cudaFuncAttributeMaxDynamicSharedMemorySize`` first [CPG §20.8.3]."""
        if spec is None:
            from ..specs import H200_SXM as spec
        return self.dynamic_bytes > spec.smem_per_block_default

    def table(self) -> list[tuple[str, int, int, int, str]]:
        """``(name, offset, nbytes, align, kind)`` rows for a table in the book."""
        return [(r.name, r.offset, r.nbytes, r.align, r.kind) for r in self.regions]


def _tile_entry(t) -> tuple[str, int, int]:
    if isinstance(t, TensorMap):
        return (f"tile{t.rank}d", t.smem_bytes, tile_alignment(t.swizzle))
    if isinstance(t, (tuple, list)) and len(t) == 3:
        name, nbytes, swz = t
        if isinstance(swz, int):
            return (str(name), int(nbytes), int(swz))
        return (str(name), int(nbytes), tile_alignment(swz))
    raise ValueError(f"a tile is (name, bytes, swizzle mode or alignment) or a TensorMap, got {t!r}")


def plan_smem(barriers: int | Sequence[str] = 1, tiles: Sequence = (), *, stages: int = 1,
              base_alignment: int = 1024) -> SmemPlan:
    """Lay out ``barriers`` mbarriers, then ``stages`` copies of each tile, in that order.

    ``barriers``: a count (named ``bar0``, ``bar1``...) or names; each is 8 bytes, 8-aligned.
    ``tiles``: ``(name, nbytes, swizzle)`` (swizzle a mode name, or an int alignment) or
    :class:`~h100lab.tma.TensorMap` objects (their ``smem_bytes`` and swizzle). With ``stages > 1``
    each tile appears once per stage as ``name[s]``. ``base_alignment`` is what the kernel can assume
    of the dynamic-shared-memory base; regions needing more add ``slack`` = their alignment minus it.
    """
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages}")
    if base_alignment < 16 or base_alignment & (base_alignment - 1):
        raise ValueError(f"base_alignment {base_alignment} must be a power of two >= 16 (dynamic shared memory is "
                         "at least 16-byte aligned)")
    names = [f"bar{i}" for i in range(barriers)] if isinstance(barriers, int) else list(barriers)
    regions: list[Region] = []
    off = 0
    for n in names:
        regions.append(Region(n, off, 8, 8, "mbarrier"))
        off += 8
    entries = [_tile_entry(t) for t in tiles]
    seen = {r.name for r in regions}
    max_align = 8
    for s in range(stages):
        for name, nbytes, align in entries:
            if nbytes <= 0:
                raise ValueError(f"tile {name!r} has {nbytes} bytes")
            if align & (align - 1) or align < 16:
                raise ValueError(f"tile {name!r}: alignment {align} must be a power of two >= 16")
            label = f"{name}[{s}]" if stages > 1 else name
            if label in seen:
                raise ValueError(f"two regions are named {label!r}")
            seen.add(label)
            off = -(-off // align) * align
            regions.append(Region(label, off, nbytes, align, "tile"))
            off += nbytes
            max_align = max(max_align, align)
    slack = max(0, max_align - base_alignment)
    return SmemPlan(tuple(regions), base_alignment, slack)
