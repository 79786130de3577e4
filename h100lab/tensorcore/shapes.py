"""Every legal ``wgmma.mma_async`` shape and type combination of sm_90a, and the rules that reject the others.

PTX ISA §9.7.15.2 "Matrix shape" (``#asynchronous-warpgroup-level-matrix-shape``), §9.7.15.3 "Data types"
(``#asynchronous-warpgroup-level-matrix-data-types``), §9.7.15.5.2 ``wgmma.mma_async``
(``#asynchronous-warpgroup-level-matrix-instructions-wgmma-mma``); hopper-spec-facts §8.1:

============================  ===================  ====  =============================================
A/B types                     D (accumulator)      K     N
============================  ===================  ====  =============================================
``.f16`` · ``.f16``           ``.f16``, ``.f32``   16    8 … 256, step 8
``.bf16`` · ``.bf16``         ``.f32``             16    8 … 256, step 8
``.tf32`` · ``.tf32``         ``.f32``             8     8 … 256, step 8
``.e4m3``/``.e5m2`` (any mix) ``.f16``, ``.f32``   32    8 … 256, step 8
``.s8``/``.u8`` (any mix)     ``.s32`` (+``.satfinite``) 32  8, 16, 24, 32, 48 … 256 step 16
``.b1`` · ``.b1`` ``.and.popc`` ``.s32``           256   8, 16, 24, 32, 48 … 256 step 16
============================  ===================  ====  =============================================

M is always 64 (one warpgroup: 4 warps × 16 rows). B always comes from shared memory through a matrix
descriptor; A from a descriptor (``SS``) or from registers (``RS``). ``imm-scale-a/b`` (±1) exist only for
the floating-point types, ``imm-trans-a/b`` only for ``.f16``/``.bf16`` and only for descriptor operands
(the RS form has ``imm-trans-b`` alone); tf32, fp8, int8 and b1 operands are K-major.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["WgmmaError", "WgmmaSpec", "spec", "legal_n", "k_of", "accumulators_for", "all_specs", "parse_opcode",
           "ELEMENT_BITS", "FLOAT_INPUTS", "INT_INPUTS", "M"]

M = 64
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}
FLOAT_INPUTS = ("f16", "bf16", "tf32", "e4m3", "e5m2")
INT_INPUTS = ("s8", "u8")
_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
_N_FLOAT = tuple(range(8, 257, 8))
_N_INT = (8, 16, 24) + tuple(range(32, 257, 16))


class WgmmaError(ValueError):
    """An illegal ``wgmma.mma_async`` form; the message names the PTX ISA rule it breaks."""


def k_of(atype: str) -> int:
    """K of one ``wgmma.mma_async`` for A type ``atype`` (PTX §9.7.15.2: 16 for f16/bf16, 8 for tf32, 32 for
    fp8/int8, 256 for b1)."""
    if atype not in _K:
        raise WgmmaError(f"A type .{atype} is not a wgmma type: one of {sorted(_K)} (PTX ISA §9.7.15.3)")
    return _K[atype]


def legal_n(atype: str) -> tuple[int, ...]:
    """The N values ``wgmma.mma_async`` allows for A type ``atype``: multiples of 8 up to 256 for the
    floating-point types; 8, 16, 24, 32 then steps of 16 to 256 for ``.s8``/``.u8``/``.b1`` (PTX §9.7.15.2)."""
    k_of(atype)
    return _N_INT if atype in INT_INPUTS + ("b1",) else _N_FLOAT


def accumulators_for(atype: str) -> tuple[str, ...]:
    """The D types allowed with A type ``atype`` (PTX §9.7.15.3)."""
    k_of(atype)
    if atype in ("f16", "e4m3", "e5m2"):
        return ("f16", "f32")
    if atype in ("bf16", "tf32"):
        return ("f32",)
    return ("s32",)


@dataclass(frozen=True)
class WgmmaSpec:
    """One legal ``wgmma.mma_async`` form.

    ``n``: N; ``dtype``: D type; ``atype``/``btype``: input types; ``a_source``: ``"ss"`` (A through a descriptor)
    or ``"rs"`` (A in registers); ``satfinite``: integer saturation; immediates ``scale_a``/``scale_b`` (±1) and
    ``trans_a``/``trans_b`` (0 = K-major, 1 = MN-major). Register counts per thread
    (PTX §9.7.15.5.1.1): :attr:`d_regs` 32-bit accumulator registers (N/2 for f32/s32, N/4 for f16 — two f16
    per register) and :attr:`a_regs` (4 × b32 for RS, 0 for SS)."""

    n: int
    dtype: str
    atype: str
    btype: str
    a_source: str = "ss"
    satfinite: bool = False
    scale_a: int = 1
    scale_b: int = 1
    trans_a: int = 0
    trans_b: int = 0

    @property
    def m(self) -> int:
        return M

    @property
    def k(self) -> int:
        return _K[self.atype]

    @property
    def shape(self) -> str:
        return f"m64n{self.n}k{self.k}"

    @property
    def d_regs(self) -> int:
        return self.n // 4 if self.dtype == "f16" else self.n // 2

    @property
    def d_values(self) -> int:
        """Accumulator values per thread: 64·N / 128 = N/2."""
        return self.n // 2

    @property
    def a_regs(self) -> int:
        return 4 if self.a_source == "rs" else 0

    @property
    def is_float(self) -> bool:
        return self.atype in FLOAT_INPUTS

    def opcode(self) -> str:
        """The PTX instruction name, e.g. ``wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16``."""
        sat = ".satfinite" if self.satfinite else ""
        tail = ".and.popc" if self.atype == "b1" else ""
        return f"wgmma.mma_async.sync.aligned.{self.shape}{sat}.{self.dtype}.{self.atype}.{self.btype}{tail}"


def spec(n: int, dtype: str, atype: str, btype: str | None = None, a_source: str = "ss", *, satfinite: bool = False,
         scale_a: int = 1, scale_b: int = 1, trans_a: int = 0, trans_b: int = 0) -> WgmmaSpec:
    """A checked :class:`WgmmaSpec`; raises :class:`WgmmaError` naming the PTX rule for an illegal combination."""
    btype = atype if btype is None else btype
    k_of(atype)
    k_of(btype)
    rule = "PTX ISA §9.7.15.3 (wgmma data types)"
    if atype in ("e4m3", "e5m2"):
        if btype not in ("e4m3", "e5m2"):
            raise WgmmaError(f".{atype} A needs an fp8 B (.e4m3 or .e5m2), got .{btype} ({rule})")
    elif atype in INT_INPUTS:
        if btype not in INT_INPUTS:
            raise WgmmaError(f".{atype} A needs an integer B (.s8 or .u8), got .{btype} ({rule})")
    elif btype != atype:
        raise WgmmaError(f".{atype} A needs a .{atype} B, got .{btype} ({rule})")
    if dtype not in accumulators_for(atype):
        raise WgmmaError(f"D type .{dtype} is not allowed with .{atype} inputs: allowed {accumulators_for(atype)} ({rule})")
    if n not in legal_n(atype):
        raise WgmmaError(f"N = {n} is not a legal wgmma N for .{atype}: allowed {legal_n(atype)} "
                         "(PTX ISA §9.7.15.2 matrix shape)")
    if a_source not in ("ss", "rs"):
        raise WgmmaError(f"a_source {a_source!r}: 'ss' (A descriptor) or 'rs' (A in registers) (PTX ISA §9.7.15.5.2)")
    if satfinite and dtype != "s32":
        raise WgmmaError(".satfinite applies to the integer (.s32) forms only (PTX ISA §9.7.15.5.2)")
    if atype == "b1" and satfinite:
        raise WgmmaError(".b1 .and.popc has no .satfinite (PTX ISA §9.7.15.5.2)")
    if (scale_a, scale_b) != (1, 1):
        if atype not in FLOAT_INPUTS:
            raise WgmmaError("imm-scale-a/imm-scale-b exist only for floating-point wgmma (.f16/.bf16/.tf32/.e4m3/"
                             ".e5m2); integer and .b1 forms take no scale immediates (PTX ISA §9.7.15.5.2)")
        if scale_a not in (1, -1) or scale_b not in (1, -1):
            raise WgmmaError(f"imm-scale-a/b must be 1 or -1, got {scale_a}, {scale_b} (PTX ISA §9.7.15.5.2)")
    if trans_a not in (0, 1) or trans_b not in (0, 1):
        raise WgmmaError(f"imm-trans-a/b must be 0 or 1, got {trans_a}, {trans_b} (PTX ISA §9.7.15.5.2)")
    if (trans_a or trans_b) and atype not in ("f16", "bf16"):
        raise WgmmaError(f"imm-trans-a/b (MN-major operands) exist only for .f16/.bf16; .{atype} operands must be "
                         "K-major (PTX ISA §9.7.15.5.2)")
    if trans_a and a_source == "rs":
        raise WgmmaError("imm-trans-a applies to an A read through a descriptor; the RS form (A in registers) has "
                         "imm-trans-b only (PTX ISA §9.7.15.5.2)")
    return WgmmaSpec(n, dtype, atype, btype, a_source, satfinite, scale_a, scale_b, trans_a, trans_b)


def all_specs(a_source: str | None = None) -> list[WgmmaSpec]:
    """Every legal (N, D, A, B, source, satfinite) combination with default immediates, in a fixed order."""
    out = []
    pairs = [("f16", "f16"), ("bf16", "bf16"), ("tf32", "tf32")]
    pairs += [(a, b) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
    pairs += [(a, b) for a in INT_INPUTS for b in INT_INPUTS] + [("b1", "b1")]
    for src in (("ss", "rs") if a_source is None else (a_source,)):
        for a, b in pairs:
            for d in accumulators_for(a):
                for sat in ((False, True) if a in INT_INPUTS else (False,)):
                    for n in legal_n(a):
                        out.append(spec(n, d, a, b, src, satfinite=sat))
    return out


_OPC = re.compile(r"^wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)((?:\.\w+)+)$")


def parse_opcode(text: str, a_source: str = "ss") -> WgmmaSpec:
    """The :class:`WgmmaSpec` of a PTX name such as ``wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16``
    (the operand form decides ``a_source``; immediates are operands, set them with :func:`spec`)."""
    m = _OPC.match(text.strip())
    if not m:
        raise WgmmaError(f"{text!r} is not a dense wgmma.mma_async.sync.aligned.m64nNkK... name (PTX ISA §9.7.15.5.2)")
    n, k = int(m.group(1)), int(m.group(2))
    parts = m.group(3).strip(".").split(".")
    sat = "satfinite" in parts
    parts = [p for p in parts if p != "satfinite"]
    if parts[-2:] == ["and", "popc"]:
        parts = parts[:-2]
    elif "b1" in parts:
        raise WgmmaError(".b1 wgmma needs the .and.popc operation (PTX ISA §9.7.15.5.2)")
    if len(parts) != 3:
        raise WgmmaError(f"{text!r}: expected .dtype.atype.btype (PTX ISA §9.7.15.5.2)")
    d, a, b = parts
    s = spec(n, d, a, b, a_source, satfinite=sat)
    if k != s.k:
        raise WgmmaError(f"{text!r}: K = {k}, but .{a} wgmma has K = {s.k} (PTX ISA §9.7.15.2)")
    return s
