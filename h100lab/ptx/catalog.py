"""A small catalogue of sm_90 PTX instructions used in the book, as inline-asm templates with typed operands.

Each entry names the PTX ISA section that defines the instruction and, for each operand, its
direction and the PTX type the instruction reads or writes. :func:`statement` turns an entry into an
:class:`~h100lab.ptx.asm.AsmStatement`, with C++ types of the caller's choosing — a mismatch between a
C++ type and the operand raises :class:`~h100lab.ptx.asm.ConstraintError` before any compiler runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .asm import AsmError, AsmStatement, build, imm, inout, inp, out

__all__ = ["Instruction", "OperandSpec", "INSTRUCTIONS", "statement", "DEFAULT_CTYPE"]


@dataclass(frozen=True)
class OperandSpec:
    name: str
    mode: str          # "out", "inout", "in", "imm"
    ptx: str           # PTX type at this position
    lanes: int = 1     # > 1: a vector operand {a, b, ...}
    value: int = 0     # immediates: the default value


@dataclass(frozen=True)
class Instruction:
    name: str
    template: str
    operands: tuple[OperandSpec, ...]
    memory: bool
    source: str        # PTX ISA section / anchor
    what: str


#: The C++ type a PTX operand type is naturally held in (the default of :func:`statement`).
DEFAULT_CTYPE = {
    ".s32": "int", ".u32": "unsigned", ".b32": "unsigned", ".f32": "float", ".f64": "double",
    ".u64": "unsigned long long", ".b64": "unsigned long long", ".s64": "long long",
    ".b16": "unsigned short", ".u16": "unsigned short", ".s16": "short",
}

_D = "#data-movement-and-conversion-instructions"


def _i(name, template, *ops, memory=False, source="", what=""):
    return Instruction(name, template, tuple(OperandSpec(*o) for o in ops), memory, source, what)


INSTRUCTIONS: dict[str, Instruction] = {i.name: i for i in [
    _i("add.s32", "add.s32 {d}, {a}, {b};", ("d", "out", ".s32"), ("a", "in", ".s32"), ("b", "in", ".s32"),
       source="PTX #integer-arithmetic-instructions-add", what="d = a + b (32-bit integers)"),
    _i("add.s32 (immediate)", "add.s32 {d}, {a}, {k};", ("d", "out", ".s32"), ("a", "in", ".s32"),
       ("k", "imm", ".s32", 1, 16), source="PTX #integer-arithmetic-instructions-add", what="d = a + 16: an 'n' operand is printed in"),
    _i("mul.wide.u32", "mul.wide.u32 {d}, {a}, {b};", ("d", "out", ".u64"), ("a", "in", ".u32"), ("b", "in", ".u32"),
       source="PTX #integer-arithmetic-instructions-mul", what="64-bit product of two 32-bit integers"),
    _i("fma.rn.f32", "fma.rn.f32 {d}, {a}, {b}, {c};", ("d", "out", ".f32"), ("a", "in", ".f32"),
       ("b", "in", ".f32"), ("c", "in", ".f32"),
       source="PTX #floating-point-instructions-fma", what="d = a*b + c, one rounding"),
    _i("fma.rn.f64 (accumulate)", "fma.rn.f64 {acc}, {a}, {b}, {acc};", ("acc", "inout", ".f64"),
       ("a", "in", ".f64"), ("b", "in", ".f64"),
       source="PTX #floating-point-instructions-fma", what="acc += a*b: a read-write ('+d') operand"),
    _i("cvt.rn.bf16x2.f32", "cvt.rn.bf16x2.f32 {d}, {hi}, {lo};", ("d", "out", ".b32"), ("hi", "in", ".f32"),
       ("lo", "in", ".f32"), source=f"PTX §9.7.9.21 {_D}-cvt",
       what="two f32 → packed bf16x2: the first source lands in the upper half"),
    _i("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e4m3x2.f32 {d}, {hi}, {lo};", ("d", "out", ".b16"),
       ("hi", "in", ".f32"), ("lo", "in", ".f32"), source=f"PTX §9.7.9.21 {_D}-cvt",
       what="two f32 → packed FP8 pair in a .b16 (first source in the upper byte)"),
    _i("mov.b32 (pack {lo, hi})", "mov.b32 {d}, {v};", ("d", "out", ".b32"), ("v", "in", ".b16", 2),
       source=f"PTX {_D}-mov", what="pack two 16-bit values, the first in bits 0-15"),
    _i("mov.b64 (unpack)", "mov.b64 {v}, {a};", ("v", "out", ".b32", 2), ("a", "in", ".b64"),
       source=f"PTX {_D}-mov", what="split a 64-bit value into {low, high} 32-bit halves"),
    _i("mov.u32 %cluster_ctarank", "mov.u32 {d}, %cluster_ctarank;", ("d", "out", ".u32"),
       source="PTX #special-registers-cluster-ctarank", what="this CTA's rank in its cluster ('%' → '%%')"),
    _i("mapa.shared::cluster.u32", "mapa.shared::cluster.u32 {d}, {a}, {rank};", ("d", "out", ".u32"),
       ("a", "in", ".u32"), ("rank", "in", ".u32"), source=f"PTX §9.7.9.23 {_D}-mapa",
       what="the address of the same variable in CTA `rank` of the cluster"),
    _i("ld.shared::cluster.u32", "ld.shared::cluster.u32 {d}, [{a}];", ("d", "out", ".u32"), ("a", "in", ".u32"),
       memory=True, source=f"PTX {_D}-ld", what="load from (possibly another CTA's) shared memory"),
    _i("st.shared::cluster.u32", "st.shared::cluster.u32 [{a}], {v};", ("a", "in", ".u32"), ("v", "in", ".u32"),
       memory=True, source=f"PTX {_D}-st", what="store into (possibly another CTA's) shared memory"),
    _i("atom.shared::cluster.add.u32", "atom.shared::cluster.add.u32 {d}, [{a}], {v};", ("d", "out", ".u32"),
       ("a", "in", ".u32"), ("v", "in", ".u32"), memory=True,
       source="PTX #parallel-synchronization-and-communication-instructions-atom",
       what="atomic add on a peer CTA's shared memory; returns the old value"),
    _i("cvta.to.shared.u64", "cvta.to.shared.u64 {d}, {a};", ("d", "out", ".u64"), ("a", "in", ".u64"),
       source=f"PTX {_D}-cvta", what="generic address → .shared::cta address"),
    _i("isspacep.shared", "{\n  .reg .pred p;\n  isspacep.shared p, {a};\n  selp.u32 {d}, 1, 0, p;\n}",
       ("d", "out", ".u32"), ("a", "in", ".u64"), source=f"PTX {_D}-isspacep",
       what="is a generic address inside the shared window? (braces scope the .pred register)"),
    _i("ld.global.nc.v4.f32", "ld.global.nc.v4.f32 {d}, [{p}];", ("d", "out", ".f32", 4), ("p", "in", ".u64"),
       memory=True, source=f"PTX {_D}-ld", what="128-bit vector load: a braced vector operand"),
    _i("barrier.cluster.arrive + wait",
       "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;", memory=True,
       source="PTX §9.7.13.3 #parallel-synchronization-and-communication-instructions-barrier-cluster",
       what="cluster.sync(): no operands, a 'memory' clobber"),
]}


def statement(name: str, ctypes: dict[str, str] | None = None, exprs: dict[str, object] | None = None) -> AsmStatement:
    """The asm statement of catalogue entry ``name``. ``ctypes`` overrides the C++ type of an operand
    (default: :data:`DEFAULT_CTYPE` of its PTX type); ``exprs`` its C++ expression(s) (default: the
    operand name, or ``name0, name1…`` for vectors). Raises ``ConstraintError`` on a mismatch."""
    if name not in INSTRUCTIONS:
        raise AsmError(f"no catalogue instruction {name!r}; choose one of {list(INSTRUCTIONS)}")
    ins = INSTRUCTIONS[name]
    ctypes = dict(ctypes or {})
    exprs = dict(exprs or {})
    unknown = set(ctypes) | set(exprs)
    unknown -= {o.name for o in ins.operands}
    if unknown:
        raise AsmError(f"{name} has no operand(s) {sorted(unknown)}; its operands are {[o.name for o in ins.operands]}")
    ops = {}
    for o in ins.operands:
        if o.mode == "imm":
            ops[o.name] = imm(int(exprs.get(o.name, o.value)), ptx=o.ptx)
            continue
        ctype = ctypes.get(o.name, DEFAULT_CTYPE[o.ptx])
        e = exprs.get(o.name, [f"{o.name}{k}" for k in range(o.lanes)] if o.lanes > 1 else o.name)
        maker = {"out": out, "inout": inout, "in": inp}[o.mode]
        ops[o.name] = maker(ctype, e, ptx=o.ptx)
    return build(ins.template, ops, memory=ins.memory)
