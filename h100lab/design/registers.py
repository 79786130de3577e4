"""Register budgets of a warp-specialized kernel and ``setmaxnreg`` (lesson 8).

Rules (hopper-spec-facts; PTX ISA §9.7.17.1 ``setmaxnreg``; CUDA C++ Programming Guide, compute capability 9.0
table):

* an SM has 65,536 32-bit registers (:data:`REGISTER_FILE`); a thread may use at most 255;
* registers are allocated per warp in units of 256 (8 per thread): a kernel's per-thread count rounds up to a
  multiple of 8 (:func:`allocated`); ``__launch_bounds__(T, B)`` caps it at the largest multiple of 8 with
  T·B·r ≤ 65,536 (:func:`launch_cap`);
* ``setmaxnreg.{inc,dec}.sync.aligned.u32 N``: N a multiple of 8 in 24..256, executed by every warp of a
  warpgroup (4 warps); ``dec`` releases registers to the CTA's pool, ``inc`` blocks until the pool has them
  ([model]: the pool is what the CTA was allocated at launch, so the final split must fit in it — an ``inc`` asking
  for more waits forever).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REGISTER_FILE", "MAX_PER_THREAD", "WARPGROUP", "RegisterError", "check_setmaxnreg", "allocated",
           "launch_cap", "Split", "split", "accumulator_registers", "best_split"]

REGISTER_FILE = 65536      #: 32-bit registers per SM
MAX_PER_THREAD = 255       #: per-thread limit of the ISA
WARPGROUP = 128            #: threads in a warpgroup


class RegisterError(ValueError):
    """A register request that breaks a rule above."""


def check_setmaxnreg(n: int) -> int:
    """Raise :class:`RegisterError` unless ``n`` is a legal ``setmaxnreg`` operand (multiple of 8 in 24..256)."""
    if int(n) != n or n % 8 or not 24 <= n <= 256:
        raise RegisterError(f"setmaxnreg {n}: the register count must be a multiple of 8 in 24..256 (PTX ISA §9.7.17.1)")
    return int(n)


def allocated(regs: int) -> int:
    """Registers per thread actually allocated for a kernel using ``regs``: rounded up to a multiple of 8."""
    if not 1 <= regs <= MAX_PER_THREAD:
        raise RegisterError(f"{regs} registers per thread: 1 .. {MAX_PER_THREAD}")
    return -(-regs // 8) * 8


def launch_cap(threads: int, min_blocks: int = 1) -> int:
    """The per-thread register cap ``__launch_bounds__(threads, min_blocks)`` implies: the largest multiple of 8
    with threads · min_blocks · r ≤ 65,536, at most 256 (a 255-register thread is allocated 256)."""
    if threads < 1 or threads > 1024 or min_blocks < 1:
        raise RegisterError(f"threads {threads}, min_blocks {min_blocks}: 1..1024 threads, >= 1 block")
    r = REGISTER_FILE // (threads * min_blocks) // 8 * 8
    if r < 8:
        raise RegisterError(f"{threads} x {min_blocks} threads cannot each have 8 registers in a 65,536 file")
    return min(r, 256)


@dataclass(frozen=True)
class Split:
    """Per-warpgroup register counts after ``setmaxnreg``; ``pool`` = registers the CTA got at launch; ``used`` =
    128 · Σ regs; ``fits`` = used ≤ pool; ``ctas_per_sm`` = CTAs whose launch allocation fits the file."""

    regs: tuple
    launch_regs: int
    pool: int
    used: int
    fits: bool
    ctas_per_sm: int


def split(regs, launch_regs: int | None = None) -> Split:
    """Check a per-warpgroup split (e.g. (40, 232, 232): producer down, two consumers up) against the pool the CTA
    was launched with (``launch_regs`` per thread; default :func:`launch_cap` of the thread count)."""
    regs = tuple(int(r) for r in regs)
    if not regs:
        raise RegisterError("a split names at least one warpgroup")
    for r in regs:
        check_setmaxnreg(r)
    threads = WARPGROUP * len(regs)
    launch = launch_cap(threads) if launch_regs is None else allocated(launch_regs)
    pool = threads * launch
    if pool > REGISTER_FILE:
        raise RegisterError(f"{threads} threads x {launch} registers = {pool} > {REGISTER_FILE}: the CTA does not fit")
    used = WARPGROUP * sum(regs)
    return Split(regs, launch, pool, used, used <= pool, REGISTER_FILE // pool)


def accumulator_registers(m: int, n: int, dtype: str = "f32") -> int:
    """Accumulator registers per thread for a warpgroup's m × n f32 (or f16) tile of m64nNk* wgmmas: m/64 · n/2
    f32 (n/4 for f16, two per register) — PTX ISA §9.7.15.5.1.1.1."""
    if m % 64 or m < 64 or n % 8 or not 8 <= n <= 256:
        raise RegisterError(f"warpgroup tile {m} x {n}: m a multiple of 64, n a multiple of 8 in 8..256")
    per = n // 2 if dtype in ("f32", "s32") else n // 4
    return (m // 64) * per


def best_split(producers: int, consumers: int, producer_regs: int = 24, threads_cap: int | None = None) -> Split:
    """Give the producers ``producer_regs`` and the consumers the largest legal equal count that fits the pool
    (a multiple of 8, at most 256)."""
    check_setmaxnreg(producer_regs)
    n = producers + consumers
    launch = launch_cap(WARPGROUP * n) if threads_cap is None else threads_cap
    pool = WARPGROUP * n * launch
    c = (pool // WARPGROUP - producers * producer_regs) // max(consumers, 1) // 8 * 8
    c = min(c, 256)
    if c < 24:
        raise RegisterError(f"no legal consumer count: {c} registers left per consumer")
    return split((producer_regs,) * producers + (c,) * consumers, launch)
