"""Build CUDA C++ inline-PTX statements — ``asm volatile("…" : outputs : inputs : clobbers);`` — that compile.

The rules implemented here are those of NVIDIA's *Inline PTX Assembly in CUDA* (§1.1.1 "Parameters",
§1.1.2 "Constraints", §1.2 "Pitfalls"), which follows GCC's extended-asm syntax:

* operands are numbered in text order, **outputs first, then inputs**: ``%0`` is the first output;
* a constraint is a modifier plus a letter. ``=`` marks a write-only output, ``+`` a read-write
  operand (listed with the outputs), no modifier an input. Inputs are read-only: an input can never
  carry ``=``, and the immediate letter ``n`` is input-only;
* the letter says which PTX register class the C++ value lives in: ``h`` = ``.u16``, ``r`` = ``.u32``,
  ``l`` = ``.u64``, ``q`` = ``.u128``, ``f`` = ``.f32``, ``d`` = ``.f64`` register, ``n`` = an integer
  immediate known at compile time. There is no letter for 8-bit values or predicates (widen to ``h``
  / ``r``; build a predicate inside the asm with ``setp``);
* a literal ``%`` in the template (special registers such as ``%cluster_ctarank``) is written ``%%``,
  because ``%`` introduces an operand reference;
* ``volatile`` keeps the compiler from deleting or moving the statement; the ``"memory"`` clobber
  tells it the asm reads or writes memory it cannot see (§1.2.3 "Incorrect Optimization").

Templates are written with *named* placeholders (``"add.s32 {d}, {a}, {b};"``); the builder assigns the
numbers, so the numbering rule is computed, never typed. A placeholder bound to several C++ values is a
PTX vector operand and renders as ``{%0, %1, %2, %3}``.

Every statement can be wrapped in a kernel (:meth:`AsmStatement.kernel_source`) and compiled with NVRTC
for sm_90a (:meth:`AsmStatement.compile`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .types import PtxTypeError, ptx_type

__all__ = [
    "AsmError", "ConstraintError", "Operand", "AsmStatement", "out", "inout", "inp", "imm", "build",
    "CONSTRAINT_LETTERS", "constraint_for", "C_TYPES",
]


class AsmError(ValueError):
    """An inline-asm statement breaks a rule of *Inline PTX Assembly in CUDA* (the message names it)."""


class ConstraintError(AsmError):
    """A constraint does not fit its operand: wrong letter for the C++ type, wrong modifier, wrong width."""


#: Constraint letter → (PTX register it stands for, width in bits) [Inline PTX Assembly §1.1.2].
CONSTRAINT_LETTERS: dict[str, tuple[str, int]] = {
    "h": (".u16 register", 16), "r": (".u32 register", 32), "l": (".u64 register", 64),
    "q": (".u128 register", 128), "f": (".f32 register", 32), "d": (".f64 register", 64),
    "n": ("integer immediate", 0),
}

#: C++ scalar types and the constraint letter that holds them.
C_TYPES: dict[str, str] = {
    "short": "h", "unsigned short": "h", "int16_t": "h", "uint16_t": "h",
    "int": "r", "unsigned": "r", "unsigned int": "r", "int32_t": "r", "uint32_t": "r",
    "long": "l", "unsigned long": "l", "long long": "l", "unsigned long long": "l",
    "int64_t": "l", "uint64_t": "l", "size_t": "l",
    "__int128": "q", "unsigned __int128": "q",
    "float": "f", "double": "d",
}

_NO_LETTER = {
    "char": "widen it to 'unsigned short' ('h') or 'unsigned int' ('r'): there is no 8-bit constraint",
    "signed char": "widen it to 'short' ('h') or 'int' ('r'): there is no 8-bit constraint",
    "unsigned char": "widen it to 'unsigned short' ('h') or 'unsigned int' ('r'): there is no 8-bit constraint",
    "int8_t": "widen it to 'short' ('h') or 'int' ('r'): there is no 8-bit constraint",
    "uint8_t": "widen it to 'unsigned short' ('h') or 'unsigned int' ('r'): there is no 8-bit constraint",
    "bool": "a predicate cannot be an operand: pass an integer ('r') and build the predicate with setp "
            "inside the asm ({ .reg .pred p; setp.ne.u32 p, %1, 0; ... })",
    "__half": "pass its bits: __half_as_ushort(x) with 'h'",
    "__nv_bfloat16": "pass its bits: __bfloat16_as_ushort(x) with 'h'",
    "__half2": "pass its 32 bits with 'r' (e.g. *reinterpret_cast<unsigned*>(&x))",
    "__nv_bfloat162": "pass its 32 bits with 'r' (e.g. *reinterpret_cast<unsigned*>(&x))",
}

_MODES = {"out": "=", "inout": "+", "in": ""}
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")


def _norm_ctype(ctype: str) -> str:
    return " ".join(ctype.replace("*", " * ").split()).replace(" *", "*")


def constraint_for(ctype: str) -> str:
    """The constraint letter for a C++ type [Inline PTX Assembly §1.1.2]; pointers use ``l`` (64-bit
    addresses). Raises :class:`ConstraintError` for types no letter can hold, naming the fix."""
    t = _norm_ctype(ctype)
    if t.endswith("*"):
        return "l"
    base = t.replace("const ", "").replace("volatile ", "").strip()
    if base in C_TYPES:
        return C_TYPES[base]
    if base in _NO_LETTER:
        raise ConstraintError(f"C++ type {base!r} has no inline-PTX constraint letter: {_NO_LETTER[base]}")
    raise ConstraintError(f"unknown C++ operand type {ctype!r}; inline PTX takes 16/32/64/128-bit integers "
                          f"('h','r','l','q'), float ('f'), double ('d') or pointers ('l')")


@dataclass(frozen=True)
class Operand:
    """One asm operand: C++ type and expression(s), direction, constraint, and the PTX type it feeds.

    ``exprs`` holds one C++ expression, or several for a PTX vector operand ``{a, b, c, d}``.
    ``ptx`` (optional) is the PTX type the instruction expects in this position; the builder checks
    that the constraint's register width matches it.
    """

    ctype: str
    exprs: tuple[str, ...]
    mode: str = "in"                  # "out" (=), "inout" (+), "in"
    letter: str = ""
    ptx: str | None = None

    @property
    def is_vector(self) -> bool:
        return len(self.exprs) > 1

    @property
    def constraint(self) -> str:
        return _MODES[self.mode] + self.letter


def _operand(ctype: str, expr, mode: str, constraint: str | None, ptx: str | None) -> Operand:
    exprs = tuple(expr) if isinstance(expr, (list, tuple)) else (expr,)
    if not exprs:
        raise AsmError("an operand needs at least one C++ expression")
    exprs = tuple(str(e) for e in exprs)
    letter = constraint_for(ctype) if mode != "imm" else "n"
    if constraint is not None:
        m = re.fullmatch(r"([=+]?)([hrlqfdn])", constraint)
        if not m:
            raise ConstraintError(f"constraint {constraint!r}: a modifier (=, + or none) followed by one of "
                                  f"{', '.join(CONSTRAINT_LETTERS)} [Inline PTX Assembly §1.1.2]")
        mod, given = m.groups()
        if given == "n" and mode != "in":
            raise ConstraintError("the immediate constraint 'n' is input-only: a compile-time constant cannot be "
                                  "written ('=n' and '+n' are rejected by the compiler)")
        if mode == "in" and mod == "=":
            raise ConstraintError(f"input {exprs[0]!r} has constraint {constraint!r}: inputs are read-only and "
                                  "can never be write-only ('='); put the operand among the outputs")
        if mode == "in" and mod == "+":
            raise ConstraintError(f"input {exprs[0]!r} has constraint {constraint!r}: a read-write ('+') operand "
                                  "is listed with the outputs; use inout(...)")
        if mode in ("out", "inout") and mod != _MODES[mode]:
            raise ConstraintError(f"output {exprs[0]!r} needs modifier '{_MODES[mode]}' "
                                  f"({'write-only' if mode == 'out' else 'read-write'}), got {constraint!r}")
        if given != letter:
            need = CONSTRAINT_LETTERS[letter][0]
            raise ConstraintError(f"constraint {constraint!r} ({CONSTRAINT_LETTERS[given][0]}) does not match C++ "
                                  f"type {ctype!r}, which lives in a {need} ('{letter}')")
    if letter == "n" and mode != "in":
        raise ConstraintError("the immediate constraint 'n' is input-only: a compile-time constant cannot be "
                              "written ('=n' and '+n' are rejected by the compiler)")
    if ptx is not None:
        _check_width(letter, ptx, exprs[0])
    return Operand(_norm_ctype(ctype), exprs, mode, letter, ptx)


def _check_width(letter: str, ptx: str, what: str) -> None:
    try:
        t = ptx_type(ptx)
    except PtxTypeError as exc:
        raise ConstraintError(str(exc)) from None
    if t.kind == "predicate":
        raise ConstraintError(f"operand {what!r}: the instruction wants a .pred, which no constraint provides; "
                              "compute it with setp inside the asm and pass an integer")
    if letter == "n":
        return
    width = CONSTRAINT_LETTERS[letter][1]
    bits = 32 if t.name == ".tf32" else t.bits
    if bits == 8 and width in (16, 32):
        return  # 8-bit PTX types accept wider registers [Inline PTX Assembly §1.1.2]
    if width != bits:
        raise ConstraintError(f"operand {what!r}: the instruction expects a {bits}-bit {t.name} operand but "
                              f"constraint '{letter}' is a {CONSTRAINT_LETTERS[letter][0]} ({width} bits)")
    if letter in ("f", "d") and t.kind != "bits" and t.name not in (".f32", ".f64"):
        # an .f32/.f64 register is only type-compatible with its own float type or an untyped .bN operand;
        # integer registers ('h','r','l') are untyped .bN and fit any type of their size [PTX §5.2 type
        # compatibility; ptxas reports "Arguments mismatch"]
        raise ConstraintError(f"operand {what!r}: constraint '{letter}' gives a {CONSTRAINT_LETTERS[letter][0]}, "
                              f"which a {t.name} operand does not accept (ptxas: Arguments mismatch); "
                              f"pass the bits with '{'r' if width == 32 else 'l'}'")


def out(ctype: str, expr, *, constraint: str | None = None, ptx: str | None = None) -> Operand:
    """A write-only output (``=``)."""
    return _operand(ctype, expr, "out", constraint, ptx)


def inout(ctype: str, expr, *, constraint: str | None = None, ptx: str | None = None) -> Operand:
    """A read-write operand (``+``), listed with the outputs."""
    return _operand(ctype, expr, "inout", constraint, ptx)


def inp(ctype: str, expr, *, constraint: str | None = None, ptx: str | None = None) -> Operand:
    """A read-only input (no modifier)."""
    return _operand(ctype, expr, "in", constraint, ptx)


def imm(value: int, *, ptx: str | None = None) -> Operand:
    """An integer immediate, constraint ``n`` (the value is printed into the statement)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConstraintError(f"an 'n' operand is an integer constant, got {value!r}")
    if ptx is not None:
        _check_width("n", ptx, str(value))
    return Operand("int", (str(value),), "in", "n", ptx)


def _c_string(text: str) -> str:
    lines = text.split("\n")
    esc = [ln.replace("\\", "\\\\").replace('"', '\\"') for ln in lines]
    if len(esc) == 1:
        return f'"{esc[0]}"'
    return "\n    ".join(f'"{ln}\\n"' if i < len(esc) - 1 else f'"{ln}"' for i, ln in enumerate(esc))


@dataclass(frozen=True)
class AsmStatement:
    """A built inline-PTX statement. ``text`` is the C++ statement; ``numbering`` lists
    ``(index, placeholder, C++ expression, constraint)`` in operand order."""

    template: str                      # the template with named placeholders, as given
    operands: tuple[tuple[str, Operand], ...]
    volatile: bool
    memory: bool
    asm_template: str                  # the template as it appears in the asm string (%0, %%)
    numbering: tuple[tuple[int, str, str, str], ...]
    text: str
    extra_clobbers: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return self.text

    @property
    def ptx(self) -> str:
        """The PTX the statement inserts, with ``%N`` replaced by the C++ expressions (conceptually; the
        compiler substitutes registers) [Inline PTX Assembly §1.1.1]."""
        names = {str(i): expr for i, _, expr, _ in self.numbering}
        s = re.sub(r"%(\d+)", lambda m: names[m.group(1)], self.asm_template)
        return s.replace("%%", "%")

    def kernel_source(self, name: str = "asm_probe") -> str:
        """A complete ``extern "C" __global__`` kernel that declares every operand, executes the statement
        and stores each output to ``out[]`` — enough for NVRTC to compile (and a GPU to run) it.
        Needs every C++ expression to be a plain identifier."""
        if not _IDENT.match(name):
            raise AsmError(f"kernel name {name!r} is not a C identifier")
        params = ["unsigned long long* __restrict__ out"]
        decls: list[str] = []
        stores: list[str] = []
        seen: set[str] = set()
        k = 0
        for _, op in self.operands:
            for e in op.exprs:
                if op.letter == "n":
                    continue
                if not _IDENT.match(e):
                    raise AsmError(f"kernel_source needs plain identifiers as operands, got {e!r}")
                if e in seen:
                    continue
                seen.add(e)
                if op.mode == "in":
                    params.append(f"{op.ctype} {e}")
                elif op.mode == "inout":
                    params.append(f"{op.ctype} {e}_init")
                    decls.append(f"    {op.ctype} {e} = {e}_init;")
                else:
                    decls.append(f"    {op.ctype} {e};")
                if op.mode != "in":
                    stores.append(f"    out[{k}] = {_as_bits(op.ctype, e)};")
                    k += 1
        body = "\n".join(decls + [f"    {self.text}"] + stores)
        used = {op.ctype.replace("const ", "").rstrip("*").strip() for _, op in self.operands}
        typedefs = "".join(f"typedef {_FIXED[t]} {t};\n" for t in sorted(used) if t in _FIXED)
        return (f"// generated by h100lab.ptx.asm: compiles one inline-PTX statement\n{typedefs}"
                f"extern \"C\" __global__ void {name}({', '.join(params)})\n{{\n{body}\n}}\n")

    def compile(self, arch: str = "sm_90a", name: str = "asm_probe"):
        """Compile :meth:`kernel_source` with NVRTC (``h100lab.cuda.compile``); returns the Program
        (``.ptx``, ``.cubin``). Raises ``CompileError`` with the failing lines if the compiler rejects it."""
        try:
            from h100lab.cuda import compile as _compile
        except ImportError:  # the backend's package front is not there: use its compiler module
            from h100lab.cuda.compiler import compile as _compile
        return _compile(self.kernel_source(name), name=f"{name}.cu", arch=arch)

    def compiled_ptx(self, arch: str = "sm_90a") -> str:
        """The PTX the compiler emitted for this statement: the lines between ``// begin inline asm`` and
        ``// end inline asm`` of the compiled kernel, registers filled in."""
        ptx = self.compile(arch).ptx
        blocks = re.findall(r"// begin inline asm\n(.*?)\n\s*// end inline asm", ptx, re.S)
        return "\n".join(b.strip("\n") for b in blocks)


# NVRTC has no <cstdint>: fixed-width names are declared in the generated kernel
_FIXED = {"int16_t": "short", "uint16_t": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
          "int64_t": "long long", "uint64_t": "unsigned long long"}


def _as_bits(ctype: str, e: str) -> str:
    t = ctype.replace("const ", "")
    if t == "float":
        return f"(unsigned long long)__float_as_uint({e})"
    if t == "double":
        return f"(unsigned long long)__double_as_longlong({e})"
    return f"(unsigned long long)({e})"


def build(template: str, operands: dict[str, Operand] | Sequence[tuple[str, Operand]] | None = None, *,
          volatile: bool = True, memory: bool = False, clobbers: Sequence[str] = (), **named: Operand) -> AsmStatement:
    """Build ``asm volatile("template" : outputs : inputs : clobbers);`` from a template with named
    placeholders and typed operands [Inline PTX Assembly §1.1].

    ``build("add.s32 {d}, {a}, {b};", d=out("int", "i"), a=inp("int", "j"), b=inp("int", "k"))`` gives
    ``asm volatile("add.s32 %0, %1, %2;" : "=r"(i) : "r"(j), "r"(k));``.

    Rejects: a placeholder with no operand (missing operand), an operand the template never uses,
    ``%N`` references typed by hand, and (through :func:`out`/:func:`inp`/…) constraint/type mismatches
    and write-only inputs.
    """
    if not isinstance(template, str) or not template.strip():
        raise AsmError("the asm template is a non-empty string of PTX")
    if re.search(r"(?<!%)%\d", template):
        raise AsmError("write operands as named placeholders ({d}, {a}); the builder numbers them "
                       "(outputs first, then inputs) — hand-written %0/%1 are not accepted")
    ops: list[tuple[str, Operand]] = list(operands.items() if isinstance(operands, dict) else (operands or []))
    ops += list(named.items())
    names = [n for n, _ in ops]
    if len(set(names)) != len(names):
        raise AsmError(f"operand names must be unique, got {names}")
    for n, op in ops:
        if not isinstance(op, Operand):
            raise AsmError(f"operand {n!r} must be built with out(), inout(), inp() or imm(), got {op!r}")
    used = _PLACEHOLDER.findall(template)
    missing = [u for u in dict.fromkeys(used) if u not in names]
    if missing:
        raise AsmError(f"the template uses {', '.join('{' + m + '}' for m in missing)} but no operand is given "
                       f"for {'it' if len(missing) == 1 else 'them'}: every %N must name an operand")
    unused = [n for n in names if n not in used]
    if unused:
        raise AsmError(f"operand(s) {unused} are never used in the template")
    # outputs (= and +) first, in the order given; then inputs [Inline PTX Assembly §1.1.1]
    ordered = [(n, op) for n, op in ops if op.mode != "in"] + [(n, op) for n, op in ops if op.mode == "in"]
    index: dict[str, list[int]] = {}
    numbering = []
    i = 0
    for n, op in ordered:
        index[n] = []
        for e in op.exprs:
            index[n].append(i)
            numbering.append((i, n, e, op.constraint))
            i += 1

    def render(name: str) -> str:
        idx = index[name]
        return f"%{idx[0]}" if len(idx) == 1 else "{" + ", ".join(f"%{j}" for j in idx) + "}"

    # escape literal % (special registers such as %cluster_ctarank), then substitute the placeholders
    parts = _PLACEHOLDER.split(template)
    asm_t = "".join(part.replace("%", "%%") if k % 2 == 0 else render(part) for k, part in enumerate(parts))
    outs = [f'"{op.constraint}"({e})' for n, op in ordered if op.mode != "in" for e in op.exprs]
    ins = [f'"{op.constraint}"({e})' for n, op in ordered if op.mode == "in" for e in op.exprs]
    clob = [f'"{c}"' for c in clobbers]
    if memory and '"memory"' not in clob:
        clob.append('"memory"')
    sections = [", ".join(outs), ", ".join(ins), ", ".join(clob)]
    while sections and not sections[-1]:
        sections.pop()
    kw = "asm volatile" if volatile else "asm"
    s = _c_string(asm_t)
    text = f"{kw}({s}" + "".join(f" : {sec}" if sec else " :" for sec in sections) + ");"
    text = text.replace(" : :", " ::").replace(" :: :", " :::")
    return AsmStatement(template, tuple(ordered), volatile, memory, asm_t, tuple(numbering), text,
                        tuple(clobbers))
