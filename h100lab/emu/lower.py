"""Lowering: each PTX instruction becomes a Python closure ``step(w) -> next_pc`` over a warp's NumPy lanes.

The closure reads its operands as typed 32-lane arrays (:mod:`h100lab.emu.operands`), computes with the exact
semantics of :mod:`h100lab.emu.alu` (arithmetic) or of the machine model (memories, barriers, copies), writes
its results under the lane mask and returns the next program counter, or ``STOP`` after it has parked the
warp (blocked on a barrier, yielding from a failed poll, or out of lanes). Instruction families live in
:mod:`.lower_mem` (loads, stores, atomics, address conversion), :mod:`.lower_sync` (barriers, mbarriers,
fences, warp-level operations) and :mod:`.lower_async` (the ``cp.async.bulk`` family); this module holds the
registry, data movement, arithmetic and control flow.

Extension point: ``HANDLERS[opcode] = fn(ins, ctx) -> kernel(w, m, full)`` (or a full step via
``STEPS``); lesson 6 registers ``wgmma``, ``ldmatrix`` and ``stmatrix`` here.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import EmuError, ExecutionError, UnsupportedInstruction
from .operands import Layout, addr_getter, getter, setter
from .ptx import Function, Instr, Module, Operand
from .state import WARP
from .types import raw_dtype, width

__all__ = ["STOP", "Ctx", "lower_function", "HANDLERS", "STEPS", "register", "register_step", "layout_of",
           "guard_mask"]

STOP = -1
HANDLERS: dict[str, Callable] = {}
STEPS: dict[str, Callable] = {}


def register(*opcodes: str):
    """Decorator: ``fn(ins, ctx)`` returns ``kernel(w, m, full)`` executing ``ins`` on lanes ``m``."""
    def deco(fn):
        for o in opcodes:
            HANDLERS[o] = fn
        return fn
    return deco


def register_step(*opcodes: str):
    """Decorator: ``fn(ins, ctx, pc)`` returns a full step ``step(w) -> next_pc`` (control flow, blocking)."""
    def deco(fn):
        for o in opcodes:
            STEPS[o] = fn
        return fn
    return deco


class Ctx:
    """What lowering knows: the module, the function, its :class:`Layout`, the program (for symbols)."""

    def __init__(self, module: Module, fn: Function, layout: Layout, program=None):
        self.module = module
        self.fn = fn
        self.lay = layout
        self.program = program

    def where(self, ins: Instr) -> str:
        return _where(self.module, ins)

    # symbol address getters ---------------------------------------------------------------------
    def sym_space(self, name: str) -> str:
        lay = self.lay
        if name in lay.shared or name == lay.dynamic_name:
            return "shared"
        if name in lay.local:
            return "local"
        if name in lay.const:
            return "const"
        if name in lay.params:
            return "param"
        if name in lay.globals or any(v.name == name and v.space == "global" for v in self.module.variables):
            return "global"
        raise ExecutionError(f"unknown symbol {name}")

    def sym_addr(self, name: str, off: int = 0):
        lay = self.lay
        sp = self.sym_space(name)
        if sp == "shared":
            o = (lay.shared[name] if name in lay.shared else lay.dynamic_offset) + off
            key = ("sh", o)

            def get(w):
                c = w.cta.symcache.get(key)
                if c is None:
                    c = w.cta.symcache[key] = np.full(WARP, w.cta.shared_base + o, np.uint64)
                return c
            return get
        if sp == "global":
            def getg(w):
                c = w.cta.symcache.get(("g", name, off))
                if c is None:
                    c = w.cta.symcache[("g", name, off)] = np.full(
                        WARP, w.cta.launch.program.global_address(name) + off, np.uint64)
                return c
            return getg
        base = {"local": lay.local, "const": lay.const}.get(sp)
        v = (base[name] if base is not None else lay.params[name][0]) + off
        c = np.full(WARP, v, np.uint64)
        c.flags.writeable = False
        return lambda w: c

    def get(self, op: Operand, t: str):
        return getter(self.lay, op, t, self.sym_addr)

    def set(self, op: Operand, t: str):
        return setter(self.lay, op, t)

    def addr(self, op: Operand):
        return addr_getter(self.lay, op, self.sym_addr)


def _where(module: Module, ins: Instr) -> str:
    src = ""
    if ins.src is not None:
        f, line = ins.src
        path = module.files.get(int(f), f)
        src = f"\n  CUDA source: {path.rsplit('/', 1)[-1]}:{line}"
        text = getattr(module, "source_lines", None)
        if text and 1 <= line <= len(text):
            src += f"\n      {text[line - 1].strip()}"
    return f"  PTX line {ins.line}: {ins.text}{src}"


# ------------------------------------------------------------------------------------------------
# Layout of a function's symbols

def layout_of(module: Module, fn: Function) -> Layout:
    """Registers, parameters and variables of ``fn``: static shared variables from offset 0x400 in order of
    declaration (each at its ``.align``), the extern dynamic shared array after them, local variables of the
    function, the module's constant bank (PTX §5.1.3 ``.const``, §5.1.5 ``.shared``, §5.1.4 ``.local``)."""
    from .state import RESERVED_SMEM

    lay = Layout()
    for i, (name, t) in enumerate(fn.regs.items()):
        lay.regidx[name] = i
        lay.regtypes.append(t)
    for p in fn.params:
        lay.params[p.name] = (p.offset, p.size)
    used = set()
    for ins in fn.body:
        for o in ins.ops:
            stack = [o]
            while stack:
                x = stack.pop()
                if x.kind == "sym":
                    used.add(x.name)
                if x.base is not None:
                    stack.append(x.base)
                stack.extend(x.items)
    off = RESERVED_SMEM
    shared_vars = [v for v in module.variables if v.space == "shared" and not v.extern and v.name in used]
    shared_vars += [v for v in fn.variables if v.space == "shared" and not v.extern]
    for v in shared_vars:
        off = -(-off // v.align) * v.align
        lay.shared[v.name] = off
        off += v.size
    ext = [v for v in list(module.variables) + fn.variables if v.space == "shared" and v.extern and v.name in used]
    lay.static_shared = off - RESERVED_SMEM
    align = max([v.align for v in ext] + [16])
    lay.dynamic_offset = -(-off // align) * align
    if ext:
        lay.dynamic_name = ext[0].name
        for v in ext[1:]:
            lay.shared[v.name] = lay.dynamic_offset
    loff = 0
    for v in fn.variables:
        if v.space in ("local", "param"):     # call-site .param variables live in the caller's frame
            loff = -(-loff // v.align) * v.align
            lay.local[v.name] = loff
            loff += v.size
    lay.local_bytes = loff
    coff = 0
    for v in module.variables:
        if v.space == "const":
            coff = -(-coff // v.align) * v.align
            lay.const[v.name] = coff
            coff += v.size
    return lay


# ------------------------------------------------------------------------------------------------
# Lowering a function

def lower_function(module: Module, fn: Function, layout: Layout, program=None) -> list:
    """The closures of every instruction of ``fn`` (index = PTX instruction index = program counter)."""
    from . import lower_async, lower_mem, lower_mma, lower_sync  # noqa: F401  (they register their handlers)

    ctx = Ctx(module, fn, layout, program)
    code = []
    for pc, ins in enumerate(fn.body):
        try:
            code.append(_lower(ins, ctx, pc))
        except EmuError as exc:
            code.append(_deferred_error(exc, ctx.where(ins)))
        except (ValueError, KeyError) as exc:
            code.append(_deferred_error(UnsupportedInstruction(str(exc)), ctx.where(ins)))
    return code


def guard_mask(ins: Instr, ctx: Ctx):
    """``w -> bool[32]``: the lanes that execute ``ins`` — the warp's current group, narrowed by the guard
    predicate ``@p`` / ``@!p`` (PTX §9.7.1 "Predicated execution")."""
    g = ins.guard
    if g is None:
        return lambda w: w.mask
    gi = ctx.lay.regidx[g]
    if ins.guard_neg:
        return lambda w: w.mask & ~w.R[gi]
    return lambda w: w.mask & w.R[gi]


def _deferred_error(exc: EmuError, where: str):
    """An instruction that cannot be lowered fails when (and only if) it executes."""
    def step(w):
        raise type(exc)(exc.rule if hasattr(exc, "rule") else str(exc), f"{w.label}\n{where}")
    return step


def _lower(ins: Instr, ctx: Ctx, pc: int):
    op = ins.opcode
    nxt = pc + 1
    if op in STEPS:
        return STEPS[op](ins, ctx, pc)
    h = HANDLERS.get(op)
    if h is None:
        kern = _alu_kernel(ins, ctx)
    else:
        kern = h(ins, ctx)
    if ins.guard is None:
        def step(w):
            kern(w, w.mask, w.full)
            return nxt
        return step
    active = guard_mask(ins, ctx)

    def gstep(w):
        m = active(w)
        if m.any():
            kern(w, m, False if not w.full else bool(m.all()))
        return nxt
    return gstep


# ------------------------------------------------------------------------------------------------
# Arithmetic through alu.lookup

def _alu_kernel(ins: Instr, ctx: Ctx):
    from . import alu

    try:
        aop = alu.lookup(ins.opcode, ins.mods, ins.types)
    except alu.AluError as exc:
        raise UnsupportedInstruction(str(exc)) from None
    ops = list(ins.ops)
    nd = len([t for t in aop.dsts if t != "cc"])
    dst_ops = ops[:1]
    if ops and ops[0].kind == "pair":
        dst_ops = list(ops[0].items)
    src_ops = ops[1:]
    srcs = [t for t in aop.srcs if t != "cc"]
    if len(src_ops) != len(srcs):
        raise ExecutionError(f"{ins.full} takes {len(srcs)} source operands, got {len(src_ops)} (PTX ISA)")
    gets = [ctx.get(o, t) for o, t in zip(src_ops, srcs)]
    uses_cc_in = "cc" in aop.srcs
    writes_cc = "cc" in aop.dsts
    sets = [ctx.set(o, t) for o, t in zip(dst_ops, aop.dsts[:nd])]
    fn = aop.fn
    if len(gets) == 2 and len(sets) == 1 and not uses_cc_in and not writes_cc:
        g0, g1 = gets
        s0 = sets[0]

        def k2(w, m, full):
            s0(w, m, full, fn(g0(w), g1(w))[0])
        return k2

    def k(w, m, full):
        args = [g(w) for g in gets]
        if uses_cc_in:
            args.append(w.cta.launch.cc_of(w))
        res = fn(*args)
        for s, v in zip(sets, res):
            s(w, m, full, v)
        if writes_cc:
            w.cta.launch.set_cc(w, m, res[-1])
    return k


# ------------------------------------------------------------------------------------------------
# Data movement: mov (PTX §9.7.9.1), including packing {a, b} and unpacking, and symbol addresses

@register("mov")
def _mov(ins: Instr, ctx: Ctx):
    if len(ins.ops) != 2 or len(ins.types) != 1:
        raise ExecutionError(f"mov takes one type and two operands: {ins.text}")
    t = ins.types[0]
    d, a = ins.ops
    if d.kind == "vec":            # unpack: mov.b64 {lo, hi}, %rd
        parts = d.items
        n = len(parts)
        pw = width(t) // n
        g = ctx.get(a, t)
        pt = f"b{pw}"
        sets = [ctx.set(p, pt) for p in parts]
        pdt = raw_dtype(pt)

        def unpack(w, m, full):
            v = g(w)
            v = v.view(raw_dtype(t)) if v.dtype != raw_dtype(t) else v
            for k, s in enumerate(sets):
                s(w, m, full, ((v >> np.array(k * pw, v.dtype)) & np.array((1 << pw) - 1, v.dtype)).astype(pdt))
        return unpack
    if a.kind == "vec":            # pack: mov.b64 %rd, {lo, hi}
        parts = a.items
        n = len(parts)
        pw = width(t) // n
        pt = f"b{pw}"
        gets = [ctx.get(p, pt) for p in parts]
        s = ctx.set(d, t)
        rdt = raw_dtype(t)

        def pack(w, m, full):
            v = np.zeros(WARP, rdt)
            for k, g in enumerate(gets):
                v = v | (g(w).astype(rdt) << np.array(k * pw, rdt))
            s(w, m, full, v)
        return pack
    if a.kind == "sym":
        g = ctx.sym_addr(a.name, a.offset)
        s = ctx.set(d, t)
        rdt = raw_dtype(t)

        def movsym(w, m, full):
            s(w, m, full, g(w).astype(rdt))
        return movsym
    g = ctx.get(a, t)
    s = ctx.set(d, t)

    def mov(w, m, full):
        s(w, m, full, g(w))
    return mov


# ------------------------------------------------------------------------------------------------
# Control flow: bra, exit, ret, call (PTX §9.7.12)

@register_step("bra")
def _bra(ins: Instr, ctx: Ctx, pc: int):
    if not ins.ops or ins.ops[0].kind != "label":
        raise ExecutionError(f"bra needs a label: {ins.text}")
    target = ctx.fn.labels[ins.ops[0].name]
    nxt = pc + 1
    if ins.guard is None:
        return lambda w: target
    active = guard_mask(ins, ctx)
    uni = "uni" in ins.mods

    def step(w):
        taken = active(w)
        if w.full:
            if taken.all():
                return target
            if not taken.any():
                return nxt
        else:
            if not taken.any():
                return nxt
            if (taken == w.mask).all():
                return target
        if uni:
            raise ExecutionError("bra.uni with a guard that differs between the active lanes: .uni promises a "
                                 "non-divergent branch (PTX §9.7.12.1)", f"{w.where_text()}\n{ctx.where(ins)}")
        return w.diverge(taken, target, nxt)
    return step


@register_step("exit", "ret")
def _exit(ins: Instr, ctx: Ctx, pc: int):
    if ins.opcode == "ret" and not ctx.fn.entry:
        raise UnsupportedInstruction("ret from a .func: the emulator runs kernels whose device functions NVRTC "
                                     "inlined (mark them __forceinline__)")
    nxt = pc + 1
    active = guard_mask(ins, ctx)

    def step(w):
        m = active(w)
        if not m.any():
            return nxt
        launch = w.cta.launch
        launch.lanes_exited(w, m)
        r = w.exit_lanes(m, nxt)
        if r < 0:
            launch.warp_exited(w)
            return STOP
        return r
    return step


@register_step("call")
def _call(ins: Instr, ctx: Ctx, pc: int):
    name = ins.ops[0].name
    if name == "vprintf":
        from .lower_sync import printf_step
        return printf_step(ins, ctx, pc)
    raise UnsupportedInstruction(f"call {name}: calls of device functions are inlined before lowering "
                                 "(h100lab.emu.inline); this one could not be (PTX §9.7.12.3)")


# no-ops for the functional model: hints and performance directives that change no state
@register("prefetch", "prefetchu", "pmevent", "discard", "applypriority", "createpolicy")
def _nop(ins: Instr, ctx: Ctx):
    if ins.opcode == "createpolicy":
        s = ctx.set(ins.ops[0], "b64")
        z = np.zeros(WARP, np.uint64)

        def pol(w, m, full):
            s(w, m, full, z)
        return pol
    return lambda w, m, full: None
