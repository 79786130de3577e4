"""Tile size, stage count and RS/SS choice from the shared-memory and register limits (lesson 8).

A CTA tile BM × BN × BK of a 16-bit GEMM (A: BM × BK, B: BN × BK per stage, 2 bytes each) with ``consumers``
math warpgroups; each warpgroup owns (BM / consumers) × BN of the accumulators (cooperative) or the whole tile
(ping-pong, ``pingpong=True``: consumers take alternate tiles). Rules used:

* shared memory per CTA ≤ 227 KiB = 232,448 B (H100/H200 opt-in maximum, CUDA C++ Programming Guide, compute
  capability 9.0); a 128B-swizzled TMA tile is 1024-byte aligned (1 KiB slack); 8 B per mbarrier (2 per stage);
  an optional staging tile for a TMA-store epilogue (BM × BN × out bytes);
* wgmma: M = 64 per instruction, N a multiple of 8 (16 for the RS form's convenience here) in 8..256, K = 16 for
  16-bit inputs (PTX ISA §9.7.15.5.1); per-warpgroup rows a multiple of 64;
* registers: accumulators m/64 · n/2 per thread (f32) plus, for RS, the A fragment of one k16 step
  (m/64 · 4 registers, doubled to overlap ldmatrix with the wgmma) and ``overhead`` registers for addresses,
  loop counters and the epilogue ([model]: 24 by default) — within the consumers' ``setmaxnreg`` count
  (:func:`h100lab.design.registers.best_split`);
* shared-memory bandwidth (:func:`smem_bytes_per_clock`): 32 banks × 4 B = 128 B per clock per SM (CUDA C++
  Programming Guide §20.4.3 — each bank delivers 32 bits per clock; ``h100lab.specs`` ``smem_banks`` and
  ``smem_bank_bytes``) against what an SS mainloop moves per clock at the tensor core's dense rate.
"""
from __future__ import annotations

from dataclasses import dataclass

from .registers import accumulator_registers, best_split

__all__ = ["SMEM_LIMIT", "TileError", "Tile", "smem_bytes", "max_stages", "consumer_registers", "evaluate",
           "candidates", "choose", "SmemTraffic", "smem_bytes_per_clock"]

SMEM_LIMIT = 232448        #: bytes of shared memory one CTA may opt in to on sm_90


class TileError(ValueError):
    """A tile configuration that breaks a rule above."""


@dataclass(frozen=True)
class Tile:
    """One configuration and its verdicts: ``smem`` bytes, ``regs`` per consumer thread, the register budget
    ``reg_limit``, ``fits``; ``intensity`` = FLOPs per byte loaded into shared memory = 2·BM·BN·BK / stage bytes;
    ``reason`` says what fails."""

    bm: int
    bn: int
    bk: int
    stages: int
    consumers: int
    pingpong: bool
    a_source: str
    smem: int
    regs: int
    reg_limit: int
    intensity: float
    fits: bool
    reason: str


def smem_bytes(bm: int, bn: int, bk: int, stages: int, elem_bytes: int = 2, epilogue_bytes: int = 0,
               a_source: str = "ss") -> int:
    """Shared memory of the ring: 1 KiB alignment slack + stages · (A tile if SS + B tile) + 16 B of mbarriers per
    stage + the epilogue staging tile."""
    if min(bm, bn, bk, stages) < 1:
        raise TileError("tile extents and stages are >= 1")
    if a_source not in ("ss", "rs"):
        raise TileError(f"a_source {a_source!r}: 'ss' or 'rs'")
    a = bm * bk * elem_bytes            # RS still stages A in shared memory (TMA, then ldmatrix into registers)
    return 1024 + stages * (a + bn * bk * elem_bytes + 16) + epilogue_bytes


def max_stages(bm: int, bn: int, bk: int, elem_bytes: int = 2, epilogue_bytes: int = 0,
               limit: int = SMEM_LIMIT) -> int:
    """The most stages that fit ``limit`` (0 if not even one)."""
    per = bm * bk * elem_bytes + bn * bk * elem_bytes + 16
    return max(0, (limit - 1024 - epilogue_bytes) // per)


def consumer_registers(wg_m: int, bn: int, a_source: str = "ss", overhead: int = 24) -> int:
    """Registers a consumer thread needs: accumulators + (RS) two k16 A fragments + ``overhead``."""
    if a_source not in ("ss", "rs"):
        raise TileError(f"a_source {a_source!r}: 'ss' (A from shared memory) or 'rs' (A in registers)")
    acc = accumulator_registers(wg_m, bn)
    frag = 2 * (wg_m // 64) * 4 if a_source == "rs" else 0
    return acc + frag + overhead


def evaluate(bm: int, bn: int, bk: int = 64, stages: int = 4, consumers: int = 2, pingpong: bool = False,
             a_source: str = "ss", epilogue_bytes: int = 0, overhead: int = 24, limit: int = SMEM_LIMIT) -> Tile:
    """Check one configuration (module rules) and report it."""
    if bk % 16 or bk < 16:
        raise TileError(f"BK = {bk}: a multiple of the wgmma K (16 for 16-bit inputs)")
    wg_m = bm if pingpong else bm // consumers
    reasons = []
    if wg_m < 64 or wg_m % 64:
        reasons.append(f"a consumer's {wg_m} rows are not a multiple of the wgmma M = 64")
        regs = 0
    else:
        regs = consumer_registers(wg_m, bn, a_source, overhead) if 8 <= bn <= 256 and bn % 8 == 0 else 0
    if not (8 <= bn <= 256 and bn % 8 == 0):
        reasons.append(f"BN = {bn} is not a wgmma N (multiple of 8 in 8..256)")
    limit_regs = best_split(1, consumers).regs[-1]
    if regs > limit_regs:
        reasons.append(f"{regs} registers per consumer thread > {limit_regs} (setmaxnreg budget)")
    smem = smem_bytes(bm, bn, bk, stages, 2, epilogue_bytes, a_source)
    if smem > limit:
        reasons.append(f"{smem} B of shared memory > {limit} B")
    if stages < 2:
        reasons.append("one stage cannot overlap loads with MMAs")
    inten = 2 * bm * bn * bk / (bm * bk * 2 + bn * bk * 2)
    return Tile(bm, bn, bk, stages, consumers, pingpong, a_source, smem, regs, limit_regs, inten, not reasons,
                "; ".join(reasons))


def candidates(bk: int = 64, consumers: int = 2, epilogue_bytes_per_elem: int = 0, min_stages: int = 2) -> list[Tile]:
    """Every (BM, BN, variant, A source) with the most stages that fit, for BM ∈ {64, 128, 192, 256},
    BN ∈ {64, 96, ..., 256}: the calculator's table."""
    out = []
    for pingpong in (False, True):
        for bm in (64, 128, 192, 256):
            for bn in range(64, 257, 32):
                epi = bm * bn * epilogue_bytes_per_elem
                s = max(min_stages, min(8, max_stages(bm, bn, bk, 2, epi)))
                for src in ("ss", "rs"):
                    out.append(evaluate(bm, bn, bk, s, consumers, pingpong, src, epi))
    return out


def choose(tiles: list[Tile] | None = None, min_stages: int = 3) -> Tile:
    """The feasible configuration with the highest intensity and at least ``min_stages`` stages (ties: more
    stages, then SS)."""
    ok = [t for t in (tiles if tiles is not None else candidates()) if t.fits and t.stages >= min_stages]
    if not ok:
        raise TileError("no configuration fits the limits")
    return max(ok, key=lambda t: (t.intensity, t.stages, t.a_source == "ss"))


# ------------------------------------------------------------------------------------------------
# shared-memory bandwidth of an SS mainloop

#: bytes per element and the tensor core's dense rate (h100lab.specs.FLOP_PER_SM_PER_CLOCK key) of each input type
_DTYPES = {"bf16": (2, "bf16"), "f16": (2, "fp16"), "e4m3": (1, "fp8"), "e5m2": (1, "fp8")}


@dataclass(frozen=True)
class SmemTraffic:
    """Shared-memory bytes per clock of one SM running a BM × BN tile's mainloop at the tensor core's dense rate:
    ``reads`` (the wgmmas' SS operands), ``writes`` (the TMA filling the stages), ``total``, the bandwidth
    ``limit`` (B/clk), ``tensor_cycles`` per ``bk_bytes`` of K, and ``bound`` = min(1, limit / total), the fraction
    of the tensor rate the shared memory could feed if nothing else limited it."""

    dtype: str
    bm: int
    bn: int
    wgmma_n: int
    tensor_cycles: float
    reads: float
    writes: float
    limit: float

    @property
    def total(self) -> float:
        return self.reads + self.writes

    @property
    def bound(self) -> float:
        return min(1.0, self.limit / self.total)


def smem_bytes_per_clock(dtype: str, bm: int, bn: int, wgmma_n: int | None = None, bk_bytes: int = 128,
                         spec=None) -> SmemTraffic:
    """Shared-memory traffic of an SS wgmma mainloop on a BM × BN tile (A: BM × K, B: BN × K, both K-major in
    shared memory) per clock when the tensor core runs at its dense rate (h100lab.specs.FLOP_PER_SM_PER_CLOCK: 2048
    MAC/clk/SM for bf16, 4096 for e4m3 — every m64nNkK wgmma takes N/2 cycles either way).

    Per ``bk_bytes`` of K (one 128-byte swizzle row per stage, as the capstone's ring):

    * tensor cycles = BM · BN · K / rate;
    * reads: the tile takes (BM / 64) · (BN / ``wgmma_n``) m64 × ``wgmma_n`` wgmmas per k-step, each reading its A
      slab (64 rows) and its B slab (``wgmma_n`` rows) over the K bytes — (BM / 64) · (BN / n) · (64 + n) · K bytes,
      however the rows are shared among consumer warpgroups (cooperative or ping-pong);
    * writes: the TMA fills one stage, (BM + BN) · K bytes;
    * limit: ``spec.smem_banks · spec.smem_bank_bytes`` = 128 B/clk (CUDA C++ Programming Guide §20.4.3).

    [model: a wgmma reads each operand byte from shared memory exactly once (B is not re-read per sub-partition,
    no operand is cached between wgmmas), the TMA's writes share the same 128 B/clk, and ldmatrix / epilogue
    traffic (outside the mainloop) is not counted.] Examples, ``bk_bytes`` = 128: bf16 128 × 256 (m64n256k16) reads
    80 and writes 48 B/clk, 128 in all; e4m3 128 × 128 (m64n128k32) 96 + 64 = 160; e4m3 128 × 192 85.3 + 53.3 =
    138.7; e4m3 256 × 128 96 + 48 = 144."""
    from ..specs import FLOP_PER_SM_PER_CLOCK, H200_SXM

    spec = H200_SXM if spec is None else spec
    if dtype not in _DTYPES:
        raise TileError(f"dtype {dtype!r}: one of {sorted(_DTYPES)} (the wgmma input types with a dense rate here)")
    n = bn if wgmma_n is None else wgmma_n
    if bm < 64 or bm % 64:
        raise TileError(f"BM = {bm}: a multiple of the wgmma M = 64")
    if not (8 <= n <= 256 and n % 8 == 0):
        raise TileError(f"wgmma N = {n}: a multiple of 8 in 8..256 (PTX ISA §9.7.15.5.1)")
    if bn % n:
        raise TileError(f"BN = {bn} is not a whole number of wgmma N = {n} columns")
    if bk_bytes < 1:
        raise TileError("bk_bytes >= 1")
    elem, rate_key = _DTYPES[dtype]
    k = bk_bytes / elem                                          # K elements per stage
    cycles = bm * bn * k / (FLOP_PER_SM_PER_CLOCK[rate_key] / 2)
    reads = (bm // 64) * (bn // n) * (64 + n) * bk_bytes
    writes = (bm + bn) * bk_bytes
    limit = spec.smem_banks * spec.smem_bank_bytes
    return SmemTraffic(dtype, bm, bn, n, cycles, reads / cycles, writes / cycles, float(limit))
