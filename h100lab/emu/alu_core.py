"""What every ALU family module shares: the :class:`AluOp` contract, :class:`AluError`, the modifier
parser and the PTX ISA citations.

An :class:`AluOp` is the executable meaning of one static PTX instruction: ``fn`` takes one NumPy array
per source operand (one element per lane, dtype ``h100lab.emu.types.np_dtype(srcs[i])``) and returns a
tuple of fresh arrays, one per destination (dtype ``np_dtype(dsts[j])``). ``"pred"`` operands are bool
arrays, the carry flag ``"cc"`` (PTX's ``CC.CF``, PTX ISA §9.7.2) a uint32 array of 0/1.

Section numbers below follow the PTX ISA 9.x manual (integer arithmetic §9.7.1, extended precision
§9.7.2, floating point §9.7.3, half precision §9.7.4, comparison and selection §9.7.6, half-precision
comparison §9.7.7, logic and shift §9.7.8, data movement and conversion §9.7.9); each citation also
names the HTML anchor, which is stable across manual versions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

__all__ = ["AluOp", "AluError", "Mods", "SEC", "rule", "INT_TYPES", "SIGNED", "UNSIGNED", "BITS",
           "width_of", "uint_of", "sint_of"]


class AluError(ValueError):
    """An opcode / modifier / type combination that PTX does not define (the message names the rule)."""


@dataclass(frozen=True)
class AluOp:
    """The semantics of one PTX instruction form.

    ``fn(*srcs) -> tuple(dsts)``; ``srcs`` / ``dsts`` name the PTX type each operand is read / written
    as (``"pred"`` for predicates, ``"cc"`` for the carry flag ``CC.CF``, PTX ISA §9.7.2). ``approx`` is
    True for the ``.approx`` / ``.full`` forms whose results are a model, not bit-exact (see
    ``h100lab.emu.alu.APPROXIMATE_OPCODES``)."""

    fn: Callable[..., tuple]
    srcs: tuple
    dsts: tuple
    approx: bool = False


# --- PTX ISA citations (section, title, anchor) ----------------------------------------------------
_S = {
    # integer arithmetic §9.7.1
    "add": ("9.7.1.1", "integer add", "integer-arithmetic-instructions-add"),
    "sub": ("9.7.1.2", "integer sub", "integer-arithmetic-instructions-sub"),
    "mul": ("9.7.1.3", "integer mul", "integer-arithmetic-instructions-mul"),
    "mad": ("9.7.1.4", "integer mad", "integer-arithmetic-instructions-mad"),
    "mul24": ("9.7.1.5", "mul24", "integer-arithmetic-instructions-mul24"),
    "mad24": ("9.7.1.6", "mad24", "integer-arithmetic-instructions-mad24"),
    "sad": ("9.7.1.7", "sad", "integer-arithmetic-instructions-sad"),
    "div": ("9.7.1.8", "integer div", "integer-arithmetic-instructions-div"),
    "rem": ("9.7.1.9", "rem", "integer-arithmetic-instructions-rem"),
    "abs": ("9.7.1.10", "integer abs", "integer-arithmetic-instructions-abs"),
    "neg": ("9.7.1.11", "integer neg", "integer-arithmetic-instructions-neg"),
    "min": ("9.7.1.12", "integer min", "integer-arithmetic-instructions-min"),
    "max": ("9.7.1.13", "integer max", "integer-arithmetic-instructions-max"),
    "popc": ("9.7.1.14", "popc", "integer-arithmetic-instructions-popc"),
    "clz": ("9.7.1.15", "clz", "integer-arithmetic-instructions-clz"),
    "bfind": ("9.7.1.16", "bfind", "integer-arithmetic-instructions-bfind"),
    "fns": ("9.7.1.17", "fns", "integer-arithmetic-instructions-fns"),
    "brev": ("9.7.1.18", "brev", "integer-arithmetic-instructions-brev"),
    "bfe": ("9.7.1.19", "bfe", "integer-arithmetic-instructions-bfe"),
    "bfi": ("9.7.1.20", "bfi", "integer-arithmetic-instructions-bfi"),
    "szext": ("9.7.1.21", "szext", "integer-arithmetic-instructions-szext"),
    "bmsk": ("9.7.1.22", "bmsk", "integer-arithmetic-instructions-bmsk"),
    "dp4a": ("9.7.1.23", "dp4a", "integer-arithmetic-instructions-dp4a"),
    "dp2a": ("9.7.1.24", "dp2a", "integer-arithmetic-instructions-dp2a"),
    # extended precision §9.7.2
    "add.cc": ("9.7.2.1", "add.cc", "extended-precision-arithmetic-instructions-add-cc"),
    "addc": ("9.7.2.2", "addc", "extended-precision-arithmetic-instructions-addc"),
    "sub.cc": ("9.7.2.3", "sub.cc", "extended-precision-arithmetic-instructions-sub-cc"),
    "subc": ("9.7.2.4", "subc", "extended-precision-arithmetic-instructions-subc"),
    "mad.cc": ("9.7.2.5", "mad.cc", "extended-precision-arithmetic-instructions-mad-cc"),
    "madc": ("9.7.2.6", "madc", "extended-precision-arithmetic-instructions-madc"),
    # floating point §9.7.3
    "fp": ("9.7.3", "floating-point instructions", "floating-point-instructions"),
    "testp": ("9.7.3.1", "testp", "floating-point-instructions-testp"),
    "copysign": ("9.7.3.2", "copysign", "floating-point-instructions-copysign"),
    "fadd": ("9.7.3.3", "floating-point add", "floating-point-instructions-add"),
    "fsub": ("9.7.3.4", "floating-point sub", "floating-point-instructions-sub"),
    "fmul": ("9.7.3.5", "floating-point mul", "floating-point-instructions-mul"),
    "fma": ("9.7.3.6", "fma", "floating-point-instructions-fma"),
    "fmad": ("9.7.3.7", "floating-point mad", "floating-point-instructions-mad"),
    "fdiv": ("9.7.3.8", "floating-point div", "floating-point-instructions-div"),
    "fabs": ("9.7.3.9", "floating-point abs", "floating-point-instructions-abs"),
    "fneg": ("9.7.3.10", "floating-point neg", "floating-point-instructions-neg"),
    "fmin": ("9.7.3.11", "floating-point min", "floating-point-instructions-min"),
    "fmax": ("9.7.3.12", "floating-point max", "floating-point-instructions-max"),
    "rcp": ("9.7.3.13", "rcp", "floating-point-instructions-rcp"),
    "rcp64": ("9.7.3.14", "rcp.approx.ftz.f64", "floating-point-instructions-rcp-approx-ftz-f64"),
    "sqrt": ("9.7.3.15", "sqrt", "floating-point-instructions-sqrt"),
    "rsqrt": ("9.7.3.16", "rsqrt", "floating-point-instructions-rsqrt"),
    "rsqrt64": ("9.7.3.17", "rsqrt.approx.ftz.f64", "floating-point-instructions-rsqrt-approx-ftz-f64"),
    "sin": ("9.7.3.18", "sin", "floating-point-instructions-sin"),
    "cos": ("9.7.3.19", "cos", "floating-point-instructions-cos"),
    "lg2": ("9.7.3.20", "lg2", "floating-point-instructions-lg2"),
    "ex2": ("9.7.3.21", "ex2", "floating-point-instructions-ex2"),
    "tanh": ("9.7.3.22", "tanh", "floating-point-instructions-tanh"),
    # half precision §9.7.4
    "half": ("9.7.4", "half-precision instructions", "half-precision-floating-point-instructions"),
    "hadd": ("9.7.4.1", "half add", "half-precision-floating-point-instructions-add"),
    "hsub": ("9.7.4.2", "half sub", "half-precision-floating-point-instructions-sub"),
    "hmul": ("9.7.4.3", "half mul", "half-precision-floating-point-instructions-mul"),
    "hfma": ("9.7.4.4", "half fma", "half-precision-floating-point-instructions-fma"),
    "hneg": ("9.7.4.5", "half neg", "half-precision-floating-point-instructions-neg"),
    "habs": ("9.7.4.6", "half abs", "half-precision-floating-point-instructions-abs"),
    "hmin": ("9.7.4.7", "half min", "half-precision-floating-point-instructions-min"),
    "hmax": ("9.7.4.8", "half max", "half-precision-floating-point-instructions-max"),
    "htanh": ("9.7.4.9", "half tanh", "half-precision-floating-point-instructions-tanh"),
    "hex2": ("9.7.4.10", "half ex2", "half-precision-floating-point-instructions-ex2"),
    # comparison and selection §9.7.6, half comparison §9.7.7
    "set": ("9.7.6.1", "set", "comparison-and-selection-instructions-set"),
    "setp": ("9.7.6.2", "setp", "comparison-and-selection-instructions-setp"),
    "selp": ("9.7.6.3", "selp", "comparison-and-selection-instructions-selp"),
    "slct": ("9.7.6.4", "slct", "comparison-and-selection-instructions-slct"),
    "hset": ("9.7.7.1", "half set", "half-precision-comparison-instructions-set"),
    "hsetp": ("9.7.7.2", "half setp", "half-precision-comparison-instructions-setp"),
    # logic and shift §9.7.8
    "and": ("9.7.8.1", "and", "logic-and-shift-instructions-and"),
    "or": ("9.7.8.2", "or", "logic-and-shift-instructions-or"),
    "xor": ("9.7.8.3", "xor", "logic-and-shift-instructions-xor"),
    "not": ("9.7.8.4", "not", "logic-and-shift-instructions-not"),
    "cnot": ("9.7.8.5", "cnot", "logic-and-shift-instructions-cnot"),
    "lop3": ("9.7.8.6", "lop3", "logic-and-shift-instructions-lop3"),
    "shf": ("9.7.8.7", "shf", "logic-and-shift-instructions-shf"),
    "shl": ("9.7.8.8", "shl", "logic-and-shift-instructions-shl"),
    "shr": ("9.7.8.9", "shr", "logic-and-shift-instructions-shr"),
    # data movement and conversion §9.7.9
    "prmt": ("9.7.9.7", "prmt", "data-movement-and-conversion-instructions-prmt"),
    "cvt": ("9.7.9.21", "cvt", "data-movement-and-conversion-instructions-cvt"),
    "types": ("5.2", "types", "types"),
}


def rule(key: str) -> str:
    """``"PTX ISA §9.7.1.3 integer mul (#integer-arithmetic-instructions-mul)"``."""
    sec, title, anchor = _S[key]
    return f"PTX ISA §{sec} {title} (#{anchor})"


SEC = {k: rule(k) for k in _S}

# --- integer type tables ---------------------------------------------------------------------------
SIGNED = ("s8", "s16", "s32", "s64")
UNSIGNED = ("u8", "u16", "u32", "u64")
BITS = ("b8", "b16", "b32", "b64")
INT_TYPES = SIGNED + UNSIGNED + BITS
_W = {t: int(t[1:]) for t in INT_TYPES}
_U = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_I = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def width_of(t: str) -> int:
    """Bit width of an integer PTX type."""
    return _W[t]


def uint_of(bits: int):
    """The unsigned NumPy type of ``bits`` width."""
    return _U[bits]


def sint_of(bits: int):
    """The signed NumPy type of ``bits`` width."""
    return _I[bits]


# --- modifiers -------------------------------------------------------------------------------------
class Mods:
    """The non-type dot-suffixes of one instruction, checked against the set a form allows.

    Unknown or repeated modifiers raise :class:`AluError` naming ``where`` (the PTX rule of the form);
    :meth:`pick` returns the one modifier of a group that is present (error if two are)."""

    def __init__(self, opcode: str, mods: Iterable[str], allowed: Iterable[str], where: str):
        self.opcode = opcode
        self.mods = tuple(mods)
        self.where = where
        allowed = frozenset(allowed)
        seen: set = set()
        for m in self.mods:
            if m not in allowed:
                ok = " ".join("." + a for a in sorted(allowed)) or "none"
                raise AluError(f"{opcode}: modifier .{m} is not allowed in this form (allowed: {ok}; {where})")
            if m in seen:
                raise AluError(f"{opcode}: modifier .{m} given twice ({where})")
            seen.add(m)
        self.set = frozenset(self.mods)

    def __contains__(self, m: str) -> bool:
        return m in self.set

    def pick(self, group: Iterable[str], default=None):
        got = [m for m in self.mods if m in set(group)]
        if len(got) > 1:
            raise AluError(f"{self.opcode}: at most one of {', '.join('.' + g for g in got)} ({self.where})")
        return got[0] if got else default

    def require(self, group: Iterable[str], what: str):
        m = self.pick(group)
        if m is None:
            raise AluError(f"{self.opcode}: {what} is required ({self.where})")
        return m
