"""Epilogue fusion: the operation list a GEMM epilogue applies to its accumulators, in a fixed order, with each
operation's register cost per thread and the global-memory bytes fusing it saves (lesson 8).

Order (CUTLASS's epilogue-visitor order, and what a fused kernel must respect for the result to equal the
unfused sequence): ``scale_ab`` (per-tensor or block scales of A/B, FP8) → ``alpha`` → ``beta_c`` (+ β·C) →
``bias`` (+ per-row or per-column vector) → ``activation`` (ReLU/GELU/SiLU, elementwise) → ``residual``
(+ a second M × N input) → ``aux_out`` (store the pre-activation or any intermediate) → ``row_reduce`` /
``col_reduce`` (sums along N / M) → ``amax`` (max |x| of the output, for the next FP8 scale) → ``scale_out``
(multiply by the output scale) → ``block_scale`` (per-block quantization scales, FP8/MX out) → convert + store.
An operation named twice or out of this order raises :class:`EpilogueError`.

Register cost ([model]): the extra 32-bit registers a consumer thread holds beyond its accumulators while the
operation runs, for a thread owning ``v`` accumulator values of a 64-row warpgroup fragment (each thread holds
values of 2 rows and v/4 columns, PTX ISA §9.7.15.5.1.1.1). Bytes saved: an unfused operation is its own
elementwise kernel that reads the M × N intermediate and writes it back (2 · M · N · bytes), plus its own extra
input; fused, only the extra input is read.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ORDER", "EpilogueError", "Op", "OPS", "Plan", "plan"]

ORDER = ("scale_ab", "alpha", "beta_c", "bias", "activation", "residual", "aux_out", "row_reduce", "col_reduce",
         "amax", "scale_out", "block_scale")


class EpilogueError(ValueError):
    """An epilogue list that breaks the order or names an unknown operation."""


@dataclass(frozen=True)
class Op:
    """``extra_in``: bytes per output element it reads besides the accumulators (C, residual: one element;
    bias: a vector, counted per output as 0); ``extra_out``: bytes per output element it writes besides C;
    extra registers per thread = ``fixed + per_value · v`` for a thread holding v accumulator values."""

    name: str
    extra_in: float
    extra_out: float
    per_value: float   # extra registers per accumulator value the thread holds
    fixed: int         # extra registers independent of v


OPS = {
    "scale_ab": Op("scale_ab", 0, 0, 0, 2),               # one A scale per row (2 rows) + one B scale
    "alpha": Op("alpha", 0, 0, 0, 1),
    "beta_c": Op("beta_c", 1, 0, 0.5, 0),                 # C loaded as packed 16-bit pairs
    "bias": Op("bias", 0, 0, 0.25, 0),                     # per-column bias for the thread's v/4 columns
    "activation": Op("activation", 0, 0, 0, 2),
    "residual": Op("residual", 1, 0, 0.5, 0),
    "aux_out": Op("aux_out", 0, 1, 0.5, 0),
    "row_reduce": Op("row_reduce", 0, 0, 0, 2),           # one partial per row the thread holds
    "col_reduce": Op("col_reduce", 0, 0, 0.25, 0),
    "amax": Op("amax", 0, 0, 0, 1),
    "scale_out": Op("scale_out", 0, 0, 0, 1),
    "block_scale": Op("block_scale", 0, 0, 0, 2),
}


def _regs(op: Op, v: int) -> int:
    return op.fixed + int(op.per_value * v)


@dataclass(frozen=True)
class Plan:
    """``ops`` in order; ``extra_regs`` = the largest extra register count (registers free again after an op
    except the reductions' partials, which live to the end: added); ``bytes_unfused`` / ``bytes_fused`` of
    global traffic beyond the GEMM's own C store; ``saved`` = unfused - fused."""

    ops: tuple
    extra_regs: int
    bytes_unfused: int
    bytes_fused: int
    saved: int


def plan(ops, M: int, N: int, out_bytes: int = 2, acc_per_thread: int = 128) -> Plan:
    """Check the order and cost an epilogue list for an M × N output of ``out_bytes`` elements."""
    ops = tuple(ops)
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise EpilogueError(f"unknown epilogue operations {unknown}; known: {list(ORDER)}")
    if len(set(ops)) != len(ops):
        raise EpilogueError(f"{ops}: an operation appears twice")
    idx = [ORDER.index(o) for o in ops]
    if idx != sorted(idx):
        raise EpilogueError(f"{ops}: out of the fused order {ORDER} — a fused epilogue applies them in that order")
    if M < 1 or N < 1 or acc_per_thread < 4 or acc_per_thread % 4:
        raise EpilogueError("M, N >= 1 and a thread's accumulator count a multiple of 4")
    mn = M * N
    reduce_regs = sum(_regs(OPS[o], acc_per_thread) for o in ops if o.endswith("_reduce") or o == "amax")
    transient = max((_regs(OPS[o], acc_per_thread) for o in ops if not (o.endswith("_reduce") or o == "amax")),
                    default=0)
    unfused = fused = 0
    for o in ops:
        op = OPS[o]
        extra = int(mn * (op.extra_in + op.extra_out) * out_bytes)
        if o in ("bias",):
            extra = N * out_bytes
        if o in ("row_reduce",):
            extra = M * 4
        if o in ("col_reduce",):
            extra = N * 4
        unfused += 2 * mn * out_bytes + extra
        fused += extra
    return Plan(ops, reduce_regs + transient, unfused, fused, unfused - fused)
