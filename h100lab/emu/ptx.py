"""Parse the PTX that NVRTC emits into plain data: a :class:`Module` of variables and :class:`Function` s,
each a flat list of :class:`Instr` with its labels, registers and CUDA source line.

What is read (PTX ISA 9.x, chapter 4 "Syntax", chapter 5 "State Spaces, Types and Variables", chapter 11
"Directives"):

* module directives ``.version``, ``.target``, ``.address_size``, ``.file`` (file names for ``.loc``),
  ``.section`` (debug data: skipped);
* module and function-scope variables in ``.global``, ``.const``, ``.shared`` (``.extern .shared`` is
  the dynamic shared memory) and ``.local``, with ``.align``, array sizes and ``= {...}`` initialisers
  (PTX §5.4 "Variables");
* ``.entry`` / ``.func`` with their ``.param`` lists (alignment, arrays) and performance directives
  (``.maxntid``, ``.reqntid``, ``.reqnctapercluster`` … kept as text);
* ``.reg`` declarations, including the parameterised form ``%r<97>`` (PTX §5.4.1 "Register
  variables"); registers and labels declared inside a ``{ }`` block are local to it (PTX §4.4
  "Scoping"), so they are renamed ``name@k`` for the k-th block — inline ``asm`` blocks that each
  declare ``.reg .pred done`` then never collide;
* instructions: optional guard ``@p``/``@!p``, opcode with its dot-suffixes (split into modifiers and
  PTX types), and operands (registers, special registers such as ``%tid.x``, immediates — decimal,
  hex, ``0f``/``0d`` float bit patterns —, symbols with an offset, ``[address]`` forms, vectors ``{a, b}``,
  negated predicates ``!p``, the sink ``_``, the two-destination form ``p|q``);
* ``.loc file line col`` directives: every instruction records the CUDA source line it came from
  (for inlined code the innermost line, which is the first ``file line`` pair).

Anything the parser does not understand raises :class:`PtxSyntaxError` with the PTX line.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from .types import PTX_TYPES, width

__all__ = ["PtxSyntaxError", "Operand", "Instr", "Variable", "Param", "Function", "Module", "parse",
           "split_opcode"]


class PtxSyntaxError(ValueError):
    """PTX text the emulator's parser cannot read (the message names the PTX line)."""


# ------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Operand:
    """One operand. ``kind`` is one of:

    ``reg`` (``name``), ``sreg`` (special register ``name`` such as ``%tid.x``), ``imm`` (``value``: int,
    or ``("f", bits, width)`` for ``0f``/``0d`` float literals), ``sym`` (``name`` + ``offset``: the address
    of a variable, a parameter or a function), ``label`` (``name``), ``addr`` (``base``: an Operand of kind
    reg/sym/imm, ``offset``: int; ``coords``: tensor coordinates for ``[tmap, {c0, c1}]``), ``vec``
    (``items``), ``sink`` (``_``), ``pair`` (``items``: the ``p|q`` destinations).
    ``neg`` marks a ``!p`` predicate operand.
    """

    kind: str
    name: str = ""
    value: object = None
    offset: int = 0
    base: "Operand | None" = None
    items: tuple = ()
    neg: bool = False

    def __str__(self) -> str:  # PTX-like text, for error messages
        k = self.kind
        if k in ("reg", "sreg", "label"):
            return ("!" if self.neg else "") + self.name
        if k == "sym":
            return self.name + (f"+{self.offset}" if self.offset else "")
        if k == "imm":
            v = self.value
            return f"0x{v[1]:x}" if isinstance(v, tuple) else str(v)
        if k == "addr":
            s = str(self.base) + (f"+{self.offset}" if self.offset else "")
            if self.items:
                s += ", {" + ", ".join(map(str, self.items)) + "}"
            return f"[{s}]"
        if k in ("vec",):
            return "{" + ", ".join(map(str, self.items)) + "}"
        if k == "pair":
            return "|".join(map(str, self.items))
        return "_"


@dataclass
class Instr:
    """One PTX instruction: ``opcode`` (first word), ``mods`` (the other dot-suffixes that are not types,
    in order), ``types`` (PTX type suffixes in order), ``ops`` (operands), the guard predicate
    (``guard`` register name or None, ``guard_neg``), and where it came from: ``line`` (PTX line, 1-based),
    ``text`` (the PTX statement), ``src`` ((file, line) of the CUDA source or None)."""

    opcode: str
    mods: tuple[str, ...]
    types: tuple[str, ...]
    ops: tuple[Operand, ...]
    guard: str | None = None
    guard_neg: bool = False
    line: int = 0
    text: str = ""
    src: tuple[str, int] | None = None

    @property
    def full(self) -> str:
        """The dotted opcode as written (``mbarrier.try_wait.parity.shared::cta.b64``)."""
        return ".".join((self.opcode,) + self._suffixes)

    _suffixes: tuple[str, ...] = ()


@dataclass
class Variable:
    """A variable declaration (PTX §5.4): ``space`` (``global``, ``const``, ``shared``, ``local``),
    ``name``, element ``type``, ``count`` elements (``None`` for ``[]``: extern dynamic shared), ``align``
    bytes, ``init`` (list of ints or None), ``extern``."""

    space: str
    name: str
    type: str
    count: int | None
    align: int
    init: list | None = None
    extern: bool = False

    @property
    def size(self) -> int:
        return (width(self.type) // 8) * (self.count or 0)


@dataclass
class Param:
    """A kernel or function parameter: ``name``, ``type``, ``size`` bytes, ``align``, ``offset`` in the
    parameter buffer (each parameter aligned to its alignment, in order: the ABI the CUDA driver uses)."""

    name: str
    type: str
    size: int
    align: int
    offset: int = 0


@dataclass
class Function:
    """A ``.entry`` (kernel) or ``.func``: parameters, return parameters, registers (name → PTX type),
    function-scope variables, instructions, labels (name → instruction index), directives."""

    name: str
    entry: bool
    params: list[Param]
    rets: list[Param]
    regs: dict[str, str] = field(default_factory=dict)
    variables: list[Variable] = field(default_factory=list)
    body: list[Instr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    directives: dict[str, str] = field(default_factory=dict)

    def param(self, name: str) -> Param | None:
        for p in self.params + self.rets:
            if p.name == name:
                return p
        return None

    @property
    def param_bytes(self) -> int:
        if not self.params:
            return 0
        last = self.params[-1]
        return last.offset + last.size


@dataclass
class Module:
    """A parsed PTX module: ``version``, ``target``, ``address_size``, module variables, functions
    (name → :class:`Function`), source ``files`` (index → path)."""

    version: str = ""
    target: str = ""
    address_size: int = 64
    variables: list[Variable] = field(default_factory=list)
    functions: dict[str, Function] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)

    def entries(self) -> list[str]:
        return [n for n, f in self.functions.items() if f.entry]


# ------------------------------------------------------------------------------------------------
# Lexing helpers

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LABEL = re.compile(r"^\s*([A-Za-z_$%][\w$]*)\s*:(?!:)")
_REGDECL = re.compile(r"^([%\w$]+)<(\d+)>$")
_INT = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)[uU]?$")
_FLT = re.compile(r"^0([fFdD])([0-9a-fA-F]+)$")
#: a decimal floating-point literal (PTX ISA §4.5.1: "1.0", "2.5e-3"; double precision), e.g. the fraction of
#: ``createpolicy.fractional ... 1.0`` that NVRTC writes
_DEC_FLT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?$")
_SYM_OFF = re.compile(r"^([A-Za-z_$][\w$]*)\s*([+-])\s*(\w+)$")
_SREGS = {
    "%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid", "%gridid",
    "%is_explicit_cluster", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
    "%cluster_ctarank", "%cluster_nctarank", "%lanemask_eq", "%lanemask_le", "%lanemask_lt",
    "%lanemask_ge", "%lanemask_gt", "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
    "%globaltimer_hi", "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%current_graph_exec",
}


def split_opcode(word: str) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """``"cvt.rn.satfinite.e4m3x2.f32"`` → ``("cvt", ("rn", "satfinite"), ("e4m3x2", "f32"), all suffixes)``.
    A suffix is a type when it names a PTX fundamental type (PTX §5.2)."""
    parts = word.split(".")
    op, rest = parts[0], tuple(parts[1:])
    if any(not p for p in rest):
        raise PtxSyntaxError(f"opcode {word!r} has an empty suffix")
    types = tuple(p for p in rest if p in PTX_TYPES)
    mods = tuple(p for p in rest if p not in PTX_TYPES)
    return op, mods, types, rest


def _split_top(s: str, sep: str = ",") -> list[str]:
    """Split ``s`` at ``sep`` outside brackets and braces."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or out:
        out.append(tail)
    return out


def _int(tok: str) -> int:
    t = tok.rstrip("uU")
    neg = t.startswith("-")
    t = t.lstrip("+-")
    if t.lower().startswith("0x"):
        v = int(t, 16)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


# ------------------------------------------------------------------------------------------------
# Parser


class _Parser:
    def __init__(self, text: str):
        self.src = text
        self.mod = Module()

    # -- errors
    def err(self, msg: str, line: int) -> PtxSyntaxError:
        lines = self.src.splitlines()
        ptx = lines[line - 1].strip() if 1 <= line <= len(lines) else ""
        return PtxSyntaxError(f"PTX line {line}: {msg}" + (f"\n    {ptx}" if ptx else ""))

    # -- statement scanner: yields (kind, text, line) with kind in {"stmt", "open", "close", "label", "loc", "directive"}
    def scan(self):
        text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), self.src)
        i, n, line = 0, len(text), 1
        while i < n:
            ch = text[i]
            if ch == "\n":
                line += 1
                i += 1
                continue
            if ch.isspace():
                i += 1
                continue
            if ch == "{":
                yield "open", "{", line
                i += 1
                continue
            if ch == "}":
                yield "close", "}", line
                i += 1
                continue
            if re.match(r"\.(loc|file|section|version|target|address_size)\s", text[i:i + 16]) or (
                    text.startswith(".", i) and re.match(r"\.(maxntid|reqntid|minnctapersm|maxnreg|maxclusterrank|"
                                                         r"reqnctapercluster|explicitcluster|noreturn|pragma_abi)\b",
                                                         text[i:i + 24])):
                j = text.find("\n", i)
                j = n if j < 0 else j
                stmt = text[i:j].strip().rstrip(";")
                if stmt.startswith(".section"):
                    # skip the section's { ... } block
                    k = text.find("{", j)
                    depth, m = 0, k
                    while m < n:
                        if text[m] == "{":
                            depth += 1
                        elif text[m] == "}":
                            depth -= 1
                            if depth == 0:
                                break
                        m += 1
                    line += text.count("\n", i, m + 1)
                    i = m + 1
                    continue
                yield "directive", stmt, line
                i = j
                continue
            m = _LABEL.match(text[i:i + 256])
            if m:
                yield "label", m.group(1), line
                i += m.end()
                continue
            # a statement: up to ';' outside braces; a function header ends at '{' or ';' instead
            depth, j = 0, i
            while j < n:
                c = text[j]
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                elif c == "{":
                    if depth == 0 and self._header_brace(text, i, j):
                        break
                    depth += 1
                elif c == "}":
                    depth -= 1
                elif c == ";" and depth == 0:
                    break
                j += 1
            stmt = text[i:j]
            yield "stmt", " ".join(stmt.split()), line
            line += stmt.count("\n")
            i = j + 1 if j < n and text[j] == ";" else j

    @staticmethod
    def _header_brace(text: str, i: int, j: int) -> bool:
        head = text[i:j].lstrip()
        return bool(re.match(r"(\.(visible|extern|weak)\s+)*\.(entry|func)\b", head)) or head.startswith("=")

    # -- declarations
    def variable(self, words: str, line: int) -> Variable:
        m = re.match(r"^((?:\.\w+\s+(?:\d+\s+)?)*)([A-Za-z_$][\w$]*)\s*(\[\s*(\d*)\s*\])?\s*(=\s*(.*))?$", words)
        if not m:
            raise self.err(f"cannot read the variable declaration {words!r}", line)
        quals = m.group(1).split()
        extern = ".extern" in quals
        space = next((q[1:] for q in quals if q in (".global", ".const", ".shared", ".local", ".param")), None)
        if space is None:
            raise self.err("a variable needs a state space (.global, .const, .shared, .local)", line)
        align = 0
        ty = None
        for k, q in enumerate(quals):
            if q == ".align":
                align = int(quals[k + 1])
            elif q[1:] in PTX_TYPES:
                ty = q[1:]
        if ty is None:
            raise self.err("a variable needs a type", line)
        count: int | None
        if m.group(3) is None:
            count = 1
        elif m.group(4) == "":
            count = None
        else:
            count = int(m.group(4))
        init = None
        if m.group(5):
            body = m.group(6).strip()
            vals = [v.strip() for v in body.strip("{}").split(",") if v.strip()]
            init = []
            for v in vals:
                fm = _FLT.match(v)
                init.append(int(fm.group(2), 16) if fm else _int(v) if _INT.match(v) else v)
            if count is None:
                count = len(init)
        return Variable(space, m.group(2), ty, count, align or width(ty) // 8 or 1, init, extern)

    def params(self, text: str, line: int) -> list[Param]:
        out: list[Param] = []
        off = 0
        for p in _split_top(text):
            if not p:
                continue
            m = re.match(r"^\.param\s+((?:\.\w+\s+(?:\d+\s+)?)*)([\w$]+)\s*(\[\s*(\d+)\s*\])?$", p)
            if not m:
                raise self.err(f"cannot read the parameter {p!r}", line)
            quals = m.group(1).split()
            align, ty = 0, None
            for k, q in enumerate(quals):
                if q == ".align":
                    align = int(quals[k + 1])
                elif q[1:] in PTX_TYPES:
                    ty = q[1:]
                elif q == ".ptr" or q.startswith(".") and q[1:] in ("global", "shared", "const", "local"):
                    pass
            if ty is None:
                raise self.err(f"parameter {p!r} has no type", line)
            es = max(width(ty) // 8, 1)
            size = es * int(m.group(4)) if m.group(4) else es
            align = align or es
            off = -(-off // align) * align
            out.append(Param(m.group(2), ty, size, align, off))
            off += size
        return out

    # -- operands
    def operand(self, tok: str, fn: Function, scopes: list[dict], line: int) -> Operand:
        t = tok.strip()
        if not t:
            raise self.err("empty operand", line)
        if t == "_":
            return Operand("sink")
        if t.startswith("!"):
            o = self.operand(t[1:], fn, scopes, line)
            if o.kind != "reg":
                raise self.err(f"only a predicate register can be negated: {tok!r}", line)
            return Operand("reg", o.name, neg=True)
        if t.startswith("{") and t.endswith("}"):
            return Operand("vec", items=tuple(self.operand(x, fn, scopes, line) for x in _split_top(t[1:-1])))
        if t.startswith("[") and t.endswith("]"):
            inner = _split_top(t[1:-1])
            base_txt = inner[0]
            coords: tuple = ()
            if len(inner) == 2:
                c = self.operand(inner[1], fn, scopes, line)
                coords = c.items if c.kind == "vec" else (c,)
            elif len(inner) > 2:
                raise self.err(f"cannot read the address {tok!r}", line)
            off = 0
            m = re.match(r"^(.*?)\s*\+\s*(-?\s*\w+)$", base_txt)
            if m and not base_txt.startswith("-"):
                base_txt, off = m.group(1), _int(m.group(2).replace(" ", ""))
            elif base_txt and _INT.match(base_txt):
                return Operand("addr", base=Operand("imm", value=_int(base_txt)), offset=0, items=coords)
            base = self.operand(base_txt, fn, scopes, line)
            if base.kind == "sym":
                base, off = Operand("sym", base.name, offset=base.offset), off + base.offset
                base = Operand("sym", base.name)
            return Operand("addr", base=base, offset=off, items=coords)
        if "|" in t:
            a, b = t.split("|", 1)
            return Operand("pair", items=(self.operand(a, fn, scopes, line), self.operand(b, fn, scopes, line)))
        fm = _FLT.match(t)
        if fm:
            bits = int(fm.group(2), 16)
            return Operand("imm", value=("f", bits, 32 if fm.group(1) in "fF" else 64))
        if _INT.match(t):
            return Operand("imm", value=_int(t))
        if _DEC_FLT.match(t):
            return Operand("imm", value=("f", int.from_bytes(struct.pack("<d", float(t)), "little"), 64))
        if t.startswith("%"):
            base = t.split(".")[0]
            if base in _SREGS and self.resolve(t, scopes) is None:
                return Operand("sreg", t)
            name = self.resolve(t, scopes)
            if name is None:
                raise self.err(f"register {t} is not declared", line)
            return Operand("reg", name)
        m = _SYM_OFF.match(t)
        if m:
            return Operand("sym", m.group(1), offset=_int(m.group(3)) * (1 if m.group(2) == "+" else -1))
        name = self.resolve(t, scopes)
        if name is not None:
            return Operand("reg", name)
        if re.match(r"^[A-Za-z_$][\w$]*$", t):
            return Operand("sym", t)
        raise self.err(f"cannot read the operand {tok!r}", line)

    @staticmethod
    def resolve(name: str, scopes: list[dict]) -> str | None:
        for sc in reversed(scopes):
            if name in sc:
                return sc[name]
        return None

    # -- function bodies
    def function(self, header: str, it, line: int) -> None:
        m = re.match(r"^((?:\.\w+\s+)*)\.(entry|func)\s+(\(([^)]*)\)\s*)?([A-Za-z_$][\w$]*)\s*(\((.*?)\))?\s*(.*)$",
                     header, re.S)
        if not m:
            raise self.err(f"cannot read the function header {header[:80]!r}", line)
        entry = m.group(2) == "entry"
        rets = self.params(m.group(4) or "", line)
        params = self.params(m.group(7) or "", line)
        fn = Function(m.group(5), entry, params, rets)
        for d in re.findall(r"(\.\w+)\s*([\d,\s]*)", m.group(8) or ""):
            fn.directives[d[0][1:]] = d[1].strip()
        self.mod.functions[fn.name] = fn
        scopes: list[dict] = [{}]
        label_scopes: list[dict] = [{}]
        block_no = 0
        unresolved: list[tuple[int, int, str, int]] = []   # (instr index, operand index, label, line)
        src: tuple[str, int] | None = None
        depth = 0
        for kind, text, ln in it:
            if kind == "directive":
                if text.startswith(".loc"):
                    lm = re.match(r"\.loc\s+(\d+)\s+(\d+)", text)
                    if lm:
                        src = (lm.group(1), int(lm.group(2)))
                elif text.startswith((".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".reqnctapercluster",
                                      ".explicitcluster", ".maxclusterrank")):
                    parts = text.split(None, 1)
                    fn.directives[parts[0][1:]] = parts[1] if len(parts) > 1 else ""
                continue
            if kind == "open":
                depth += 1
                if depth > 1:
                    block_no += 1
                    scopes.append({})
                    label_scopes.append({})
                continue
            if kind == "close":
                depth -= 1
                if depth == 0:
                    break
                scopes.pop()
                ls = label_scopes.pop()
                # labels of the closed block resolve jumps made inside it
                for k in range(len(unresolved) - 1, -1, -1):
                    ii, oi, lab, lln = unresolved[k]
                    if lab in ls:
                        self._set_label(fn, ii, oi, ls[lab])
                        del unresolved[k]
                continue
            if depth == 0:
                if kind == "stmt" and not text:
                    continue
                raise self.err(f"statement before the function body: {text[:60]!r}", ln)
            if kind == "label":
                uname = text if depth == 1 else f"{text}@{block_no}"
                label_scopes[-1][text] = uname
                fn.labels[uname] = len(fn.body)
                continue
            if not text:
                continue
            if text.startswith(".reg"):
                mm = re.match(r"^\.reg\s+((?:\.\w+\s+)*)(.*)$", text)
                quals = mm.group(1).split()
                ty = next((q[1:] for q in quals if q[1:] in PTX_TYPES), None)
                vec = next((q for q in quals if q in (".v2", ".v4")), None)
                if ty is None or vec:
                    raise self.err(f"register declaration {text!r}: a scalar PTX type is needed", ln)
                for name in _split_top(mm.group(2)):
                    pm = _REGDECL.match(name)
                    names = [f"{pm.group(1)}{k}" for k in range(int(pm.group(2)))] if pm else [name]
                    for nm in names:
                        uname = nm if depth == 1 else f"{nm}@{block_no}"
                        scopes[-1][nm] = uname
                        fn.regs[uname] = ty
                continue
            if text.startswith((".shared", ".local", ".global", ".const", ".extern", ".param")):
                v = self.variable(text, ln)
                (fn.variables if depth >= 1 else self.mod.variables).append(v)
                continue
            if text.startswith(".pragma"):
                continue
            if text.startswith("."):
                raise self.err(f"unknown directive {text.split()[0]!r} in a function body", ln)
            ins = self.instruction(text, fn, scopes, ln, src)
            for oi, o in enumerate(ins.ops):
                if o.kind == "sym" and ins.opcode in ("bra", "brx", "call") or (o.kind == "sym" and o.name in ()):
                    lab = self.resolve(o.name, label_scopes)
                    if lab is None:
                        unresolved.append((len(fn.body), oi, o.name, ln))
                    else:
                        ins.ops = ins.ops[:oi] + (Operand("label", lab),) + ins.ops[oi + 1:]
            fn.body.append(ins)
        # labels declared at function scope (or later in the same block) resolve the rest
        for ii, oi, lab, lln in unresolved:
            target = label_scopes[0].get(lab)
            if target is None:
                if fn.body[ii].opcode == "call":
                    continue  # a callee's name, resolved by the executor
                raise self.err(f"branch to an undefined label {lab}", lln)
            self._set_label(fn, ii, oi, target)

    @staticmethod
    def _set_label(fn: Function, ii: int, oi: int, name: str) -> None:
        ins = fn.body[ii]
        ins.ops = ins.ops[:oi] + (Operand("label", name),) + ins.ops[oi + 1:]

    def instruction(self, text: str, fn: Function, scopes, line: int, src) -> Instr:
        guard, neg = None, False
        t = text
        if t.startswith("@"):
            gm = re.match(r"^@(!?)(%?[\w$@]+)\s+(.*)$", t)
            if not gm:
                raise self.err(f"cannot read the guard of {text!r}", line)
            neg = gm.group(1) == "!"
            guard = self.resolve(gm.group(2), scopes)
            if guard is None:
                raise self.err(f"guard predicate {gm.group(2)} is not declared", line)
            t = gm.group(3)
        parts = t.split(None, 1)
        word = parts[0]
        opnds = parts[1] if len(parts) > 1 else ""
        op, mods, types, suffixes = split_opcode(word)
        if op == "call":
            return self.call(t, fn, scopes, line, src, guard, neg)
        ops = tuple(self.operand(x, fn, scopes, line) for x in _split_top(opnds)) if opnds.strip() else ()
        ins = Instr(op, mods, types, ops, guard, neg, line, text, src)
        ins._suffixes = suffixes
        return ins

    def call(self, t, fn, scopes, line, src, guard, neg) -> Instr:
        # call{.uni} (ret), func, (a, b);   call{.uni} func, (a);   call func;
        m = re.match(r"^call(\.uni)?\s+(?:\(([^)]*)\)\s*,\s*)?([\w$]+)\s*(?:,\s*\(([^)]*)\))?\s*(?:,\s*[\w$]+)?$", t)
        if not m:
            raise self.err(f"cannot read the call {t!r}", line)
        rets = tuple(self.operand(x, fn, scopes, line) for x in _split_top(m.group(2) or "") if x)
        args = tuple(self.operand(x, fn, scopes, line) for x in _split_top(m.group(4) or "") if x)
        ins = Instr("call", ("uni",) if m.group(1) else (), (),
                    (Operand("sym", m.group(3)), Operand("vec", items=rets), Operand("vec", items=args)),
                    guard, neg, line, t, src)
        ins._suffixes = ins.mods
        return ins

    # -- module
    def run(self) -> Module:
        it = self.scan()
        for kind, text, ln in it:
            if kind == "directive":
                if text.startswith(".version"):
                    self.mod.version = text.split()[1]
                elif text.startswith(".target"):
                    self.mod.target = text.split(None, 1)[1]
                elif text.startswith(".address_size"):
                    self.mod.address_size = int(text.split()[1])
                elif text.startswith(".file"):
                    fm = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', text)
                    if fm:
                        self.mod.files[int(fm.group(1))] = fm.group(2)
                continue
            if kind in ("open", "close"):
                raise self.err("unexpected brace at module scope", ln)
            if kind == "label":
                raise self.err(f"label {text} outside a function", ln)
            if not text:
                continue
            if re.match(r"^(\.(visible|extern|weak)\s+)*\.(entry|func)\b", text):
                if text.startswith(".extern"):
                    continue  # a declaration of a function defined elsewhere
                self.function(text, it, ln)
            elif re.match(r"^(\.(visible|extern|weak)\s+)*\.(global|const|shared)\b", text):
                self.mod.variables.append(self.variable(text, ln))
            else:
                raise self.err(f"unknown module-scope statement {text.split()[0]!r}", ln)
        return self.mod


def parse(ptx: str) -> Module:
    """Parse PTX text (as NVRTC emits it) into a :class:`Module`; raises :class:`PtxSyntaxError`."""
    return _Parser(ptx).run()
