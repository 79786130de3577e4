"""Operand access for lowered instructions: getters that read a register, an immediate, a special register
or a symbol's address as a typed 32-lane array, and setters that write a typed result into a register
under the lane mask.

Rules (PTX ISA §5.2.3 "Operand type information" and the per-instruction "Semantics"): an instruction reads
a register *as* its instruction type; bit-size registers of the same width are interchangeable; a load or
``cvt`` may name a register wider than its type (the value is zero- or sign-extended by the instruction
type, §9.7.9.8 ``ld``: "the destination register may be wider ... sign-extended for signed types") and a
store a wider register (truncated).
"""
from __future__ import annotations

import numpy as np

from .errors import ExecutionError
from .ptx import Operand
from .state import WARP
from .types import np_dtype, raw_dtype, width

__all__ = ["Layout", "getter", "setter", "imm_value", "sreg_getter", "addr_getter", "reg_index"]

_ZERO = {}


def _zero(dt):
    z = _ZERO.get(dt)
    if z is None:
        z = _ZERO[dt] = np.zeros(WARP, dt)
        z.flags.writeable = False
    return z


class Layout:
    """Where a function's symbols live: ``shared`` (name → offset in the CTA window, from 0x400),
    ``dynamic_offset`` (start of the extern dynamic shared memory), ``local`` (name → per-thread offset),
    ``const`` (name → offset in the module's constant bank), ``globals`` (name → device address, filled when
    a program is loaded), ``params`` (name → (offset, size)), registers (``regidx`` name → index,
    ``regtypes`` index → PTX type)."""

    def __init__(self):
        self.shared: dict[str, int] = {}
        self.static_shared = 0
        self.dynamic_offset = 0
        self.dynamic_name: str | None = None
        self.local: dict[str, int] = {}
        self.local_bytes = 0
        self.const: dict[str, int] = {}
        self.globals: dict[str, int] = {}
        self.params: dict[str, tuple[int, int]] = {}
        self.regidx: dict[str, int] = {}
        self.regtypes: list[str] = []

    def initial_registers(self) -> list:
        """A new register list of read-only zero arrays (shared: writes replace arrays, never modify them)."""
        init = getattr(self, "_init_regs", None)
        if init is None or len(init) != len(self.regtypes):
            init = self._init_regs = [_zero(raw_dtype(t)) for t in self.regtypes]
        return list(init)


def reg_index(lay: Layout, name: str) -> int:
    return lay.regidx[name]


def imm_value(op: Operand, t: str) -> np.ndarray:
    """A 32-lane constant array of immediate ``op`` read as type ``t`` (integers wrap to the type's width;
    ``0f``/``0d`` literals are bit patterns; an integer given to a float type is converted)."""
    v = op.value
    dt = np_dtype(t)
    if t == "pred":
        return np.full(WARP, bool(v), bool)
    if isinstance(v, tuple):
        _, bits, w = v
        raw = np.full(WARP, bits, np.uint32 if w == 32 else np.uint64)
        f = raw.view(np.float32 if w == 32 else np.float64)
        if dt.kind == "f" or t in ("bf16",):
            return f.astype(dt)
        if width(t) == w:
            return raw.view(dt)
        return f.astype(dt)
    if dt.kind == "f" or t == "bf16":
        return np.full(WARP, v, np.float64).astype(dt)
    w = width(t)
    bits = int(v) & ((1 << w) - 1)
    return np.full(WARP, bits, raw_dtype(t)).view(dt) if w <= 64 else None


def _convert(raw: np.ndarray, rw: int, t: str) -> np.ndarray:
    """Raw register bits of width ``rw`` read as type ``t`` (same width: a view; narrower type: truncate;
    wider type: extend by the type's signedness)."""
    tw = width(t)
    dt = np_dtype(t)
    if tw == rw:
        return raw.view(dt) if raw.dtype != dt else raw
    if tw < rw:
        return raw.astype(raw_dtype(t)).view(dt)
    # register narrower than the type (e.g. a .b16 register read by a .u32 instruction): extend
    if t[0] == "s":
        sdt = np.dtype(f"int{rw}")
        return raw.view(sdt).astype(dt)
    return raw.astype(raw_dtype(t)).view(dt) if dt.kind in "ui" else raw.astype(raw_dtype(t)).view(dt)


def getter(lay: Layout, op: Operand, t: str, sym_addr=None):
    """A function ``w -> ndarray`` reading operand ``op`` as PTX type ``t``."""
    k = op.kind
    if k == "reg":
        i = lay.regidx[op.name]
        rt = lay.regtypes[i]
        if t == "pred" or rt == "pred":
            if rt != "pred" or t != "pred":
                raise ExecutionError(f"operand {op} is a .{rt} register used as .{t}: predicates and values "
                                     "do not mix (PTX §5.2.3)")
            if op.neg:
                return lambda w: ~w.R[i]
            return lambda w: w.R[i]
        rw = width(rt)
        dt = np_dtype(t)
        if width(t) == rw:
            if raw_dtype(rt) == dt:
                return lambda w: w.R[i]
            return lambda w: w.R[i].view(dt)
        return lambda w: _convert(w.R[i], rw, t)
    if k == "imm":
        c = imm_value(op, t)
        c.flags.writeable = False
        return lambda w: c
    if k == "sreg":
        return sreg_getter(op.name, t)
    if k == "sym":
        if sym_addr is None:
            raise ExecutionError(f"symbol {op.name} cannot be used here")
        g = sym_addr(op.name, op.offset)
        dt = np_dtype(t)
        return lambda w: g(w).astype(dt)
    raise ExecutionError(f"operand {op} cannot be read as a value")


def setter(lay: Layout, op: Operand, t: str):
    """A function ``(w, m, full, value)`` writing a typed result into register ``op`` on lanes ``m``."""
    if op.kind == "sink":
        return lambda w, m, full, v: None
    if op.kind != "reg":
        raise ExecutionError(f"destination {op} is not a register")
    i = lay.regidx[op.name]
    rt = lay.regtypes[i]
    if rt == "pred":
        if t != "pred":
            raise ExecutionError(f"destination {op} is a predicate but the instruction produces .{t}")

        def setp(w, m, full, v):
            R = w.R
            R[i] = v if full else np.where(m, v, R[i])
        return setp
    rdt = raw_dtype(rt)
    rw = width(rt)
    tw = width(t)
    signed = t[0] == "s"

    def conv(v):
        if tw == rw:
            return v.view(rdt) if v.dtype != rdt else v
        if tw > rw:
            return v.view(raw_dtype(t)).astype(rdt)
        if signed:   # sign-extend into the wider register (PTX §9.7.9.8)
            return v.astype(np.dtype(f"int{rw}")).view(rdt)
        return v.view(raw_dtype(t)).astype(rdt) if v.dtype.kind in "uifV" else v.astype(rdt)

    if tw == rw:
        def st(w, m, full, v):
            if v.dtype != rdt:
                v = v.view(rdt)
            R = w.R
            R[i] = v if full else np.where(m, v, R[i])
        return st

    def st2(w, m, full, v):
        v = conv(v)
        R = w.R
        R[i] = v if full else np.where(m, v, R[i])
    return st2


# ------------------------------------------------------------------------------------------------
# Special registers (PTX ISA chapter 10)

_SREG_FIELDS = {"x": 0, "y": 1, "z": 2}


def sreg_getter(name: str, t: str):
    """``%tid.x`` … ``%globaltimer``: per-warp values from :attr:`Warp.sregs` (filled at launch) or the
    launch's deterministic clock (PTX §10)."""
    dt = np_dtype(t)
    base = name.split(".")[0]
    if base in ("%clock64", "%clock", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
        def clk(w):
            c = w.cta.launch.clock_of(w)
            if base == "%clock64":
                v = c
            elif base == "%clock":
                v = c & 0xFFFFFFFF
            elif base == "%clock_hi":
                v = c >> 32
            else:
                ns = w.cta.launch.ns_of(c)
                v = ns if base == "%globaltimer" else (ns & 0xFFFFFFFF if base.endswith("lo") else ns >> 32)
            return np.full(WARP, v, np.uint64).astype(dt)
        return clk
    if base not in ("%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid",
                    "%gridid", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank",
                    "%cluster_nctarank", "%is_explicit_cluster", "%lanemask_eq", "%lanemask_le", "%lanemask_lt",
                    "%lanemask_ge", "%lanemask_gt", "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size"):
        raise ExecutionError(f"special register {name} is not modelled by the emulator")

    def get(w):
        v = w.sregs.get(name)
        if v is None:
            v = w.cta.launch.sreg(w, name)
        return v if v.dtype == dt else v.astype(dt)
    return get


def addr_getter(lay: Layout, op: Operand, sym_addr):
    """A function ``w -> uint64 array`` of the address named by ``[base+offset]`` (state-space address:
    register value + offset, or a symbol's address + offset)."""
    if op.kind != "addr":
        raise ExecutionError(f"{op} is not an address operand")
    base, off = op.base, op.offset
    if base.kind == "reg":
        i = lay.regidx[base.name]
        rt = lay.regtypes[i]
        o = np.uint64(off & 0xFFFFFFFFFFFFFFFF)
        if width(rt) == 64:
            if off == 0:
                return lambda w: w.R[i]
            return lambda w: w.R[i] + o
        if width(rt) == 32:
            o32 = np.uint32(off & 0xFFFFFFFF)
            return lambda w: (w.R[i] + o32).astype(np.uint64)
        raise ExecutionError(f"address register {base} is .{rt}: addresses are 32 or 64 bits (PTX §6.4)")
    if base.kind == "sym":
        return sym_addr(base.name, off)
    if base.kind == "imm":
        c = np.full(WARP, (int(base.value) + off) & 0xFFFFFFFFFFFFFFFF, np.uint64)
        return lambda w: c
    raise ExecutionError(f"cannot use {op} as an address")
