"""h100lab.emu.alu — the exact semantics of PTX's non-memory instructions, one NumPy element per lane.

The executor parses an instruction into its opcode (first word), its non-type modifiers in source
order and its types in source order (for ``cvt`` destination first), and asks :func:`lookup` once per
static instruction for an :class:`AluOp`::

    op = lookup("mad", ("lo",), ("s32",))          # mad.lo.s32 d, a, b, c
    op.srcs, op.dsts                               # ("s32", "s32", "s32"), ("s32",)
    (d,) = op.fn(a, b, c)                          # int32 arrays, one element per lane

``fn`` never modifies its inputs and always returns fresh arrays, each of the NumPy dtype
``h100lab.emu.types.np_dtype`` gives its destination type (``"pred"`` → bool, the carry flag ``"cc"``
→ uint32 0/1). Forms PTX does not define raise :class:`AluError` at lookup time, naming the rule.

The families live in :mod:`.alu_int` (integer, bit-field, carry chain, logic, shifts, ``prmt``),
:mod:`.alu_float` (f32/f64/f16/bf16 arithmetic, exact in every rounding mode), :mod:`.alu_cmp`
(``setp set selp slct``) and :mod:`.alu_cvt` (``cvt``); :mod:`.alu_round` holds the exact-rounding
machinery. ``mov`` belongs to the executor.

Model-only results: the ``.approx`` transcendental instructions (:data:`APPROXIMATE_OPCODES`) and
``rcp/sqrt/div.approx``, ``div.full`` return the correctly rounded value of the exact function (or the
approximation PTX documents), "[model] within the PTX-stated ulp bound, not bit-exact"; their
:class:`AluOp` has ``approx=True`` (:func:`is_approximate` answers from the instruction's words).
"""
from __future__ import annotations

from functools import lru_cache

from . import alu_cmp, alu_cvt, alu_float, alu_int
from .alu_core import AluError, AluOp
from .types import PTX_TYPES

__all__ = ["AluOp", "AluError", "lookup", "is_approximate", "APPROXIMATE_OPCODES", "OPCODES"]

#: Opcodes whose every form is an approximation (``.approx`` required): results are a model, within
#: the PTX-stated error bound, not bit-exact [PTX ISA §9.7.3.16–§9.7.3.22, §9.7.4.9, §9.7.4.10].
#: ``rcp``, ``sqrt`` and ``div`` are approximate only with ``.approx`` (and ``div.full``).
APPROXIMATE_OPCODES = frozenset(alu_float.APPROX)

_FLOAT = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"})
_SHARED = frozenset({"add", "sub", "mul", "mad", "div", "abs", "neg", "min", "max"})
_EXTRA_TYPES = frozenset({"u16x2", "s16x2"})   # packed integer types of add/min/max (read as .b32)

#: Every opcode :func:`lookup` knows.
OPCODES = frozenset(alu_int.OPCODES | alu_float.OPCODES | alu_cmp.OPCODES | {"cvt"})


def is_approximate(opcode: str, mods=()) -> bool:
    """True when the instruction's result is a model rather than bit-exact: the opcodes of
    :data:`APPROXIMATE_OPCODES`, and ``rcp``/``sqrt``/``div`` with ``.approx`` or ``.full``."""
    mods = {m.lstrip(".") for m in mods}
    return opcode in APPROXIMATE_OPCODES or (opcode in ("rcp", "sqrt", "div") and bool(mods & {"approx", "full"}))


def lookup(opcode: str, mods: tuple = (), types: tuple = ()) -> AluOp:
    """The :class:`AluOp` implementing ``opcode{.mods}{.types}`` (PTX ISA chapter 9.7; each family's
    builder names its section). Raises :class:`AluError` for a form PTX does not define on sm_90."""
    if not isinstance(opcode, str):
        raise AluError(f"opcode must be a string such as 'add', got {opcode!r}")
    return _lookup(opcode.lstrip("."), tuple(str(m).lstrip(".") for m in mods),
                   tuple(str(t).lstrip(".") for t in types))


@lru_cache(maxsize=8192)
def _lookup(opcode: str, mods: tuple, types: tuple) -> AluOp:
    for t in types:
        if t not in PTX_TYPES and t not in _EXTRA_TYPES:
            raise AluError(f"{opcode}: .{t} is not a PTX type (PTX ISA §5.2 #types)")
    if opcode == "cvt":
        return alu_cvt.build(opcode, mods, types)
    if opcode in alu_cmp.OPCODES:
        return alu_cmp.build(opcode, mods, types)
    if opcode in _SHARED:
        if types and types[0] in _FLOAT and "cc" not in mods:
            return alu_float.build(opcode, mods, types)
        return alu_int.build(opcode, mods, types)
    if opcode in alu_float.OPCODES:
        return alu_float.build(opcode, mods, types)
    if opcode in alu_int.OPCODES:
        return alu_int.build(opcode, mods, types)
    raise AluError(f"{opcode} is not an ALU instruction known to h100lab.emu.alu (mov, ld, st, bra and the "
                   "other non-ALU instructions belong to the executor; PTX ISA §9.7)")
