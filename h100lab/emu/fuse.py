"""Warp fusion: register-only instructions executed for several converged warps at once.

An arithmetic instruction reads and writes only its warp's registers, so the order in which the warps
of a launch execute it is invisible to every other warp and to memory. The emulator uses this to run
one NumPy operation for *k* warps (``k × 32`` lanes) instead of *k* operations of 32 lanes: when a
converged warp (all 32 lanes active, no divergence) reaches a stretch of register-only instructions and
other converged warps of the same CTA group stand at the same instruction, they execute the stretch
together as one :class:`FusedWarp`, up to the first instruction that touches anything else (memory,
barriers, special registers, shuffles, carry flags) or a branch that is not uniform over all their lanes.

Scheduling policy (documented in :mod:`h100lab.emu.launch`): a warp that reaches such a stretch while
other runnable converged warps are *behind* it (at a smaller program counter) gives up the rest of its
turn once, so that they can catch up; then it goes on, fused or alone. Fusion changes which warp issues
an instruction when, never what any instruction computes: counters (per opcode, per warp, retired) are
the same as without fusion, and ``fuse=False`` on a launch turns it off (the tests compare both).

The fused code is the same lowering (:func:`h100lab.emu.lower._lower`) over a context whose immediates
are 0-d arrays (they broadcast over ``k × 32`` lanes) and whose register writes broadcast a 0-d result.
An instruction that fails in fused form (a NumPy shape it does not expect) is marked not fusable and
executed warp by warp: fused execution writes registers only through the final setter, so nothing has
changed when it fails.
"""
from __future__ import annotations

import numpy as np

from .lower import HANDLERS, STEPS, Ctx, _lower
from .operands import WARP

__all__ = ["FusedWarp", "FusePlan", "NOT", "ALU", "BRANCH", "PERWARP"]

NOT, ALU, BRANCH, PERWARP = 0, 1, 2, 3

#: instructions that never block or branch and touch only their warp's own state besides memory: inside a
#: fused stretch each warp of the group executes them in turn (a legal interleaving: one instruction per
#: warp, in launch order), so the group stays together across a loop's loads and stores
_PER_WARP = {"ld", "ldu", "st", "cvta", "mov", "atom", "red", "isspacep", "mapa", "getctarank", "prefetch",
             "prefetchu"}


class FusedWarp:
    """``k`` converged warps as one warp of ``k × 32`` lanes: only what register-only code touches."""

    __slots__ = ("R", "mask", "full", "cta", "label", "group")

    def __init__(self, R, lanes: int, cta, label: str, group=()):
        self.R = R
        self.group = group
        self.mask = np.ones(lanes, bool)
        self.full = True
        self.cta = cta
        self.label = label

    def where_text(self) -> str:
        return self.label


class _FusedCtx(Ctx):
    """Lowering context for fused code: 0-d immediates, register writes that broadcast a 0-d value."""

    def get(self, op, t):
        g = super().get(op, t)
        if op.kind == "imm":
            c = g(None)
            c0 = c[:1].reshape(())
            return lambda w: c0
        return g

    def set(self, op, t):
        s = super().set(op, t)

        def bset(w, m, full, v):
            if v.ndim == 0 or v.shape[0] != m.shape[0]:
                v = np.broadcast_to(v, m.shape).copy()
            s(w, m, full, v)
        return bset


def _reg_names(op) -> list[str]:
    """Every register an operand names (address bases and vector items included)."""
    if op is None:
        return []
    if op.kind == "reg":
        return [op.name]
    if op.kind in ("pair", "vec"):
        return [r for x in op.items for r in _reg_names(x)]
    if op.kind == "addr":
        return _reg_names(op.base) + [r for c in (getattr(op, "coords", None) or ()) for r in _reg_names(c)]
    return []


def _fusable(ins) -> bool:
    """Whether ``ins`` reads and writes registers only (module docstring)."""
    op = ins.opcode
    if op in STEPS:
        return False
    if HANDLERS.get(op) is not None and op != "mov":
        return False
    ops = ins.ops
    if not ops:
        return False
    for o in ops:
        if o.kind not in ("reg", "imm", "pair"):
            return False
        if o.kind == "pair" and any(x.kind != "reg" for x in o.items):
            return False
    if op == "mov":
        return len(ops) == 2 and ops[0].kind == "reg" and ops[1].kind in ("reg", "imm")
    if not any(o.kind == "reg" for o in ops[1:]):
        return False  # every source an immediate: nothing to broadcast against
    from . import alu

    try:
        aop = alu.lookup(op, ins.mods, ins.types)
    except Exception:
        return False
    return "cc" not in aop.srcs and "cc" not in aop.dsts


def _global_access(ins, ctx):
    """A fused ``ld.global``/``st.global`` (register address, full warps): one gather or scatter for all
    ``k × 32`` lanes, with the global-memory counters recorded per warp as if each had issued it. Returns
    ``step(fw) -> next pc`` or None when the instruction does not qualify. The step raises
    :class:`_PerWarp` (before touching anything) when the access is not inside one allocation or breaks a
    rule: the group then executes it warp by warp, which reports the error with the right warp."""
    from .lower_mem import _UINT, _access, load, store
    from .operands import np_dtype, width

    op = ins.opcode
    if op not in ("ld", "st") or ins.guard is not None or len(ins.ops) != 2:
        return None
    try:
        t, space, n = _access(ins, ctx, 1 if op == "ld" else 0)
    except Exception:
        return None
    a_op = ins.ops[1] if op == "ld" else ins.ops[0]
    if space != "global" or a_op.kind != "addr" or a_op.base is None or a_op.base.kind != "reg":
        return None
    es = width(t) // 8
    udt = _UINT.get(es)
    if udt is None:
        return None
    ag = ctx.addr(a_op)
    nbytes = es * n
    what = ins.full
    nxt = None
    dt = np_dtype(t)

    def records(fw, a):
        launch = fw.cta.launch
        if launch.counters:
            log = launch._global_log
            a64 = a.astype(np.int64)
            for j in range(len(fw.group)):
                log.append((_ALL, a64[j * WARP:(j + 1) * WARP], nbytes))

    def inside(fw, a):
        dev = fw.cta.launch.device
        if (a % np.uint64(min(nbytes, 16))).any():
            raise _PerWarp
        alloc = dev.find(int(a.min()), 1)
        if alloc is None or int(a.max()) + nbytes > alloc.end:
            raise _PerWarp
        return alloc

    if op == "ld":
        dst = ins.ops[0]
        dsts = list(dst.items) if dst.kind == "vec" else [dst]
        if len(dsts) != n or any(d.kind not in ("reg", "sink") for d in dsts):
            return None
        sets = [ctx.set(d, t) for d in dsts]

        def ld(fw):
            a = ag(fw)
            alloc = inside(fw, a)
            raw = load(fw, "global", a, None, nbytes, what)
            del alloc
            records(fw, a)
            vals = raw.view(udt).reshape(a.size, n)
            m = fw.mask
            for j, st in enumerate(sets):
                st(fw, m, True, vals[:, j].view(dt))
            return nxt
        step = ld
    else:
        src = ins.ops[1]
        srcs = list(src.items) if src.kind == "vec" else [src]
        if len(srcs) != n or any(x.kind not in ("reg", "imm") for x in srcs):
            return None
        gets = [ctx.get(x, t) for x in srcs]

        def st(fw):
            a = ag(fw)
            inside(fw, a)
            cols = []
            for g in gets:
                v = g(fw)
                v = v.view(udt) if v.dtype.itemsize == es else v.astype(udt)
                if v.ndim == 0:
                    v = np.broadcast_to(v, a.shape)
                cols.append(v)
            data = (cols[0] if n == 1 else np.stack(cols, axis=1)).reshape(a.size, n).view(np.uint8).reshape(a.size, nbytes) \
                if n > 1 else np.ascontiguousarray(cols[0]).view(np.uint8).reshape(a.size, es)
            fw.cta.launch.events += len(fw.group) - 1
            store(fw, "global", a, None, data, what)
            records(fw, a)
            return nxt
        step = st

    def bind(pc):
        nonlocal nxt
        nxt = pc + 1
        return step
    return bind


class _PerWarp(Exception):
    """A fused access that the group must execute warp by warp instead."""


_ALL = np.arange(WARP)


def _is_alu(ins) -> bool:
    from . import alu

    try:
        alu.lookup(ins.opcode, ins.mods, ins.types)
    except Exception:
        return False
    return True


class FusePlan:
    """Per kernel: the fused code of each register-only instruction and the uniform-branch table."""

    def __init__(self, module, fn, layout, program=None):
        body = fn.body
        n = len(body)
        self.kind = bytearray(n)
        self.code: list = [None] * n
        self.branch: dict[int, tuple[int, int | None, bool]] = {}
        self.mem: list = [None] * n
        self._reads: list = [()] * n
        self._writes: list = [()] * n
        self._regions: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        ctx = _FusedCtx(module, fn, layout, program)
        idx = layout.regidx
        for pc, ins in enumerate(body):
            guard = () if ins.guard is None else (idx[ins.guard],)
            if ins.opcode == "bra" and ins.ops and ins.ops[0].kind == "label" and ins.ops[0].name in fn.labels:
                self.kind[pc] = BRANCH
                self.branch[pc] = (fn.labels[ins.ops[0].name], guard[0] if guard else None, ins.guard_neg)
                self._reads[pc] = guard
                continue
            try:
                names = [r for o in ins.ops for r in _reg_names(o)]
                reads = tuple(sorted({idx[r] for r in names} | set(guard)))
                writes = tuple(sorted({idx[r] for r in _reg_names(ins.ops[0])})) \
                    if ins.ops and ins.ops[0].kind in ("reg", "vec", "pair") else ()
            except KeyError:  # a register the layout does not know: leave the instruction to its own path
                continue
            if _fusable(ins):
                try:
                    self.code[pc] = _lower(ins, ctx, pc)
                    self.kind[pc] = ALU
                except Exception:  # lowered per warp instead (it raises there, with its message, if at all)
                    pass
            if not self.kind[pc] and ins.opcode not in STEPS and (
                    ins.opcode in _PER_WARP or (HANDLERS.get(ins.opcode) is None and _is_alu(ins))):
                self.kind[pc] = PERWARP
            if self.kind[pc] == PERWARP:
                try:
                    bind = _global_access(ins, ctx)
                    self.mem[pc] = bind(pc) if bind is not None else None
                except Exception:
                    self.mem[pc] = None
            if self.kind[pc]:
                self._reads[pc], self._writes[pc] = reads, writes

    def disable(self, pc: int) -> None:
        """Execute instruction ``pc`` warp by warp from now on."""
        self.kind[pc] = NOT
        self._regions.clear()

    def region(self, pc: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(registers read, registers written) by the register-only stretch reachable from ``pc``."""
        r = self._regions.get(pc)
        if r is None:
            reads, writes, seen, todo = set(), set(), set(), [pc]
            kind = self.kind
            while todo:
                p = todo.pop()
                if p in seen or p >= len(kind) or not kind[p]:
                    continue
                seen.add(p)
                reads.update(self._reads[p])
                writes.update(self._writes[p])
                if kind[p] == BRANCH:
                    target, g, _ = self.branch[p]
                    todo.append(target)
                    if g is not None:
                        todo.append(p + 1)
                else:
                    todo.append(p + 1)
            r = self._regions[pc] = (tuple(sorted(reads | writes)), tuple(sorted(writes)))
        return r


def run_fused(plan: FusePlan, group: list, pc: int, limit: int, counts: list, code_of_warp: list) -> int:
    """Execute the register-only stretch at ``pc`` for the converged warps ``group`` together, at most
    ``limit`` instructions; returns how many were executed (each warp's ``pc``, registers and ``icount``
    are updated; ``counts[pc]`` gets one per warp per instruction)."""
    k = len(group)
    first = group[0]
    reads, writes = plan.region(pc)
    R = list(first.R)
    for i in reads:
        R[i] = np.concatenate([x.R[i] for x in group])
    fw = FusedWarp(R, k * WARP, first.cta, f"{k} fused warps from {first.label}", group)
    kind, code, branch = plan.kind, plan.code, plan.branch
    steps = 0
    while steps < limit:
        kd = kind[pc]
        if kd == NOT:
            break
        if kd == BRANCH:
            target, g, neg = branch[pc]
            if g is None:
                npc = target
            else:
                p = R[g]
                if neg:
                    p = ~p
                if p.all():
                    npc = target
                elif not p.any():
                    npc = pc + 1
                else:
                    break  # divergent over the fused lanes: each warp takes it on its own
        elif kd == PERWARP:
            fast = plan.mem[pc]
            if fast is not None:
                try:
                    npc = fast(fw)
                except _PerWarp:
                    fast = None
            if fast is not None:
                counts[pc] += k
                steps += 1
                pc = npc
                continue
            rd, wr = plan._reads[pc], plan._writes[pc]
            step = code_of_warp[pc]
            npc = pc + 1
            for j, x in enumerate(group):
                lo = j * WARP
                xr = x.R
                for i in rd:
                    xr[i] = R[i][lo:lo + WARP]
                x.pc = pc
                x.icount += 1
                npc = step(x)
                x.icount -= 1
                for i in wr:
                    R[i][lo:lo + WARP] = xr[i]
        else:
            try:
                npc = code[pc](fw)
            except Exception:
                plan.disable(pc)
                break
        counts[pc] += k
        steps += 1
        pc = npc
    for j, x in enumerate(group):
        lo = j * WARP
        xr = x.R
        for i in writes:
            xr[i] = R[i][lo:lo + WARP]
        x.pc = pc
        x.icount += steps
    return steps
