"""PTX for the book: data types at the bit level, and an inline-assembly builder whose statements compile.

``types``: every PTX type (``.b8``…``.b128``, ``.u``/``.s``, ``.f16``/``.bf16``/``.tf32``/``.f32``/``.f64``,
FP8 ``.e4m3``/``.e5m2``, packed ``.f16x2``/``.bf16x2``/``.e4m3x2``/…) with encode/decode and packing
(element 0 in the low half). ``asm``: ``build(template, **operands)`` → ``asm volatile(...)`` with the
constraint letters, numbering and clobbers of *Inline PTX Assembly in CUDA*. ``catalog``: the sm_90
instructions the book uses, ready to build.
"""
from .asm import (AsmError, AsmStatement, ConstraintError, Operand, build, constraint_for, imm, inout, inp, out)
from .catalog import INSTRUCTIONS, Instruction, statement
from .types import (TYPES, PtxType, PtxTypeError, bit_fields, cvt_x2, decode, encode, float_layout, pack,
                    pack_register, ptx_type, round_trip, unpack, unpack_register)

__all__ = [
    "TYPES", "PtxType", "PtxTypeError", "ptx_type", "encode", "decode", "pack", "unpack", "cvt_x2",
    "pack_register", "unpack_register", "bit_fields", "float_layout", "round_trip",
    "AsmError", "ConstraintError", "AsmStatement", "Operand", "build", "out", "inout", "inp", "imm",
    "constraint_for", "INSTRUCTIONS", "Instruction", "statement",
]
