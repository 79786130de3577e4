"""Tensor-core instructions on the model of :mod:`h100lab.tensorcore` (lesson 6).

* ``wgmma.fence.sync.aligned`` / ``wgmma.commit_group.sync.aligned`` / ``wgmma.wait_group.sync.aligned N``
  (PTX ISA §9.7.15.7.1–3) and ``wgmma.mma_async.sync.aligned.*`` (§9.7.15.5.2), SS (A through a descriptor)
  and RS (A in registers), and ``wgmma.mma_async.sp`` (§9.7.15.6: the packed A of the dense form with half the K,
  each thread's ``sp-meta`` register and the ``sp-sel`` constant read by :mod:`h100lab.tensorcore.sparsity`; invalid
  metadata raises naming the rule — undefined behaviour in PTX). The instruction is ``.aligned`` across the **warpgroup** (4 contiguous warps,
  §9.7.15.1): a warp that reaches it waits, like ``bar.sync``, until the other three reach the same instruction;
  the last one computes ``D = A·B + C`` for all 128 threads (:func:`h100lab.tensorcore.mma` on the operands
  :func:`h100lab.tensorcore.gather` reads from the CTA's shared-memory bytes) and writes every warp's
  accumulator registers;
* ``ldmatrix`` / ``stmatrix`` ``.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16`` (§9.7.14.5.15–16) on
  :func:`h100lab.tensorcore.ldmatrix` / :func:`~h100lab.tensorcore.stmatrix` roles, through the checked
  shared-memory accesses of :mod:`.lower_mem`.

Rules the emulator enforces (each violation raises :class:`ExecutionError` naming the rule and the CUDA line):

* **fence** (§9.7.15.7.1): ``wgmma.fence`` before the first ``wgmma.mma_async`` of a warp, and between a write of
  an accumulator or A register by another instruction and a wgmma that uses it (chaining wgmma → wgmma on the
  same accumulators needs none). Detected by identity: registers are immutable arrays, so a register whose array
  changed since the warp's last fence (or since the wgmma that produced it) was written by something else.
  [model: reads by other instructions before a fence are not detected.]
* **wait** (§9.7.15.7.3, §9.7.15.5.2 "accessing the accumulator registers before wgmma.wait_group … is
  undefined"): until a ``wgmma.wait_group`` retires its group, a wgmma's accumulator registers hold an
  *in-flight* array that raises when any other instruction reads it; a write to them is reported at the wait.
* **async proxy** (§9.7.15.4): wgmma reads shared memory through the async proxy, so bytes written by generic
  stores and not fenced with ``fence.proxy.async`` raise :class:`ProxyFenceError`; bytes a copy is still writing
  raise :class:`RaceError`.
* all 4 warps give the same descriptors, scale-d and immediates; the warpgroup is complete and converged.
"""
from __future__ import annotations

import numpy as np

from .errors import ExecutionError, ProxyFenceError, RaceError
from .lower import STOP, Ctx, guard_mask, register, register_step
from .state import WARP
from .types import raw_dtype

__all__ = ["InFlight", "warp_state"]


class InFlight(np.ndarray):
    """The array an accumulator register holds while its wgmma is in flight: any use by an instruction raises
    (PTX ISA §9.7.15.5.2: the registers may not be accessed before ``wgmma.wait_group`` covers the wgmma)."""

    def _trip(self, *args, **kwargs):
        w = getattr(self, "_wg_warp", None)
        where = ""
        if w is not None:
            from .lower import _where
            ins = w.fn.body[w.pc] if 0 <= w.pc < len(w.fn.body) else None
            where = w.where_text() + (f"\n{_where(w.cta.launch.program.module, ins)}" if ins is not None else "")
        raise ExecutionError(
            f"register {getattr(self, '_wg_name', '?')} is an accumulator of a wgmma.mma_async still in flight "
            f"(issued at {getattr(self, '_wg_issued', '?')}): wait for it with wgmma.wait_group before reading it "
            "(PTX ISA §9.7.15.5.2, §9.7.15.7.3: accessing the accumulator registers before the wait is undefined)",
            where)

    __array_ufunc__ = None

    def __array_function__(self, func, types, args, kwargs):
        self._trip()

    view = astype = tobytes = __getitem__ = __int__ = __index__ = __bool__ = __float__ = copy = _trip


def _real(arr):
    r = getattr(arr, "_wg_real", None) if type(arr) is InFlight else None
    return arr if r is None else r


class _WarpWgmma:
    """A warp's wgmma bookkeeping: ``known`` (register index → the array a fence or a wgmma left there),
    ``open`` (issued, uncommitted wgmmas), ``groups`` (committed groups, oldest first)."""

    __slots__ = ("known", "open", "groups")

    def __init__(self):
        self.known = None
        self.open = []
        self.groups = []


def warp_state(w) -> _WarpWgmma:
    d = w.cta.__dict__.setdefault("_wgmma_warps", {})
    s = d.get(w.wid)
    if s is None:
        s = d[w.wid] = _WarpWgmma()
    return s


def _err(msg, w, ctx, ins, cls=ExecutionError):
    return cls(msg, f"{w.where_text()}\n{ctx.where(ins)}")


def _need_aligned(w, ctx, ins, what="warpgroup"):
    if not w.full or not w.lanes_valid.all():
        raise _err(f"{ins.full} with only lanes {np.flatnonzero(w.mask).tolist()} of the warp: the instruction is "
                   f".sync.aligned — every thread of the {what} executes it together, converged "
                   "(PTX ISA §9.7.15.5.2; undefined in divergent code)", w, ctx, ins)


# ------------------------------------------------------------------------------------------------
# wgmma.fence / commit_group / wait_group / mma_async

@register_step("wgmma")
def _wgmma(ins, ctx: Ctx, pc: int):
    what = ins.mods[0] if ins.mods else ""
    if what == "fence":
        return _fence(ins, ctx, pc)
    if what == "commit_group":
        return _commit(ins, ctx, pc)
    if what == "wait_group":
        return _wait(ins, ctx, pc)
    if what == "mma_async":
        return _mma(ins, ctx, pc, sparse="sp" in ins.mods)
    raise ExecutionError(f"unknown wgmma instruction {ins.full} (PTX ISA §9.7.15)")


def _fence(ins, ctx, pc):
    nxt = pc + 1

    def step(w):
        _need_aligned(w, ctx, ins)
        warp_state(w).known = list(w.R)
        return nxt
    return step


def _commit(ins, ctx, pc):
    nxt = pc + 1

    def step(w):
        _need_aligned(w, ctx, ins)
        s = warp_state(w)
        s.groups.append(s.open)
        s.open = []
        return nxt
    return step


def _wait(ins, ctx, pc):
    nxt = pc + 1
    if len(ins.ops) != 1 or ins.ops[0].kind != "imm":
        raise ExecutionError(f"{ins.full} takes one integer constant N (PTX ISA §9.7.15.7.3)")
    keep = int(ins.ops[0].value)

    def step(w):
        _need_aligned(w, ctx, ins)
        s = warp_state(w)
        while len(s.groups) > keep:
            done = {}
            for rec in s.groups.pop(0):
                for i, poison in rec["regs"]:
                    done[id(poison)] = poison
                    cur = w.R[i]
                    if cur is not poison and type(cur) is not InFlight:
                        nm = next((n for n, j in ctx.lay.regidx.items() if j == i), str(i))
                        raise _err(f"accumulator register {nm} of the wgmma.mma_async at {rec['where']} was written "
                                   "before this wgmma.wait_group retired it (PTX ISA §9.7.15.5.2: accessing the "
                                   "accumulator registers of an in-flight wgmma is undefined)", w, ctx, ins)
            # the retired results replace their in-flight arrays wherever plain register copies (PTX-level movs,
            # which ptxas coalesces) carried them
            R = w.R
            for j, arr in enumerate(R):
                if type(arr) is InFlight and id(arr) in done and done[id(arr)] is arr:
                    R[j] = arr._wg_real
            if s.known is not None:
                for j, arr in enumerate(s.known):
                    if type(arr) is InFlight and id(arr) in done and done[id(arr)] is arr:
                        s.known[j] = arr._wg_real
        return nxt
    return step


def _regs_of(op, ctx):
    if op.kind != "vec":
        raise ExecutionError(f"operand {op} must be a vector of registers {{...}} (PTX ISA §9.7.15.5.2)")
    idx = []
    for x in op.items:
        if x.kind != "reg":
            raise ExecutionError(f"{x} in {{...}} is not a register")
        idx.append(ctx.lay.regidx[x.name])
    return idx


def _mma(ins, ctx, pc, sparse=False):
    """``wgmma.mma_async`` and, with ``sparse``, ``wgmma.mma_async.sp`` (PTX ISA §9.7.15.6: operands
    ``d, a, b-desc, sp-meta, sp-sel, scale-d, imm...``; :mod:`h100lab.tensorcore.sparsity`)."""
    from ..tensorcore import shapes, sparsity

    nxt = pc + 1
    opcode = ins.full
    # the parser lists the .and.popc of b1 among the modifiers; rebuild the canonical name
    parts = [m for m in ins.mods[4 if sparse else 3:] if m not in ("and", "popc", "satfinite", "b1")]
    sat = "satfinite" in ins.mods
    types = tuple(ins.types)
    if "b1" in ins.mods and len(types) == 1:       # the parser does not know .b1 as a type
        types = (types[0], "b1", "b1")
    rs = len(ins.ops) > 1 and ins.ops[1].kind == "vec"
    try:
        if len(parts) != 1 or len(types) != 3:
            raise shapes.WgmmaError(f"{opcode}: expected wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype")
        text = (f"wgmma.mma_async{'.sp' if sparse else ''}.sync.aligned.{parts[0]}{'.satfinite' if sat else ''}."
                + ".".join(types) + (".and.popc" if "popc" in ins.mods else ""))
        if sparse:
            sbase = sparsity.parse_sparse_opcode(text, "rs" if rs else "ss")
            base = sbase.dense
        else:
            base = shapes.parse_opcode(text, "rs" if rs else "ss")
    except shapes.WgmmaError as exc:
        raise ExecutionError(str(exc)) from None
    ops = list(ins.ops)
    get_meta = None
    sp_sel = 0
    if sparse:
        if len(ops) < 6 or ops[4].kind != "imm":
            raise ExecutionError(f"{opcode}: operands are d, a, b-desc, sp-meta, sp-sel (an integer constant), scale-d, "
                                 "... (PTX ISA §9.7.15.6)")
        get_meta = ctx.get(ops[3], "b32")
        sp_sel = int(ops[4].value)
        ops = ops[:3] + ops[5:]
    d_idx = _regs_of(ops[0], ctx)
    if len(d_idx) != base.d_regs:
        raise ExecutionError(f"{opcode} needs {base.d_regs} accumulator registers per thread, got {len(d_idx)} "
                             "(PTX ISA §9.7.15.5.1.1.1)")
    if rs:
        a_idx = _regs_of(ops[1], ctx)
        if len(a_idx) != 4:
            raise ExecutionError(f"{opcode} (RS) needs 4 A registers per thread, got {len(a_idx)} (PTX §9.7.15.5.1.1.2)")
        get_a = None
    else:
        a_idx = []
        get_a = ctx.get(ops[1], "b64")
    get_b = ctx.get(ops[2], "b64")
    rest = ops[3:]
    if not rest:
        raise ExecutionError(f"{opcode} needs the scale-d operand (PTX ISA §9.7.15.5.2)")
    sd_op = rest[0]
    get_sd = ctx.get(sd_op, "pred") if sd_op.kind == "reg" else (lambda w, v=bool(sd_op.value): np.full(WARP, v))
    imms = []
    for o in rest[1:]:
        if o.kind != "imm":
            raise ExecutionError(f"{opcode}: the scale/transpose operands are integer constants (PTX ISA §9.7.15.5.2)")
        imms.append(int(o.value))
    if base.is_float:
        want = (2 + (1 if rs else 2)) if base.atype in ("f16", "bf16") else 2
    else:
        want = 0
    if len(imms) != want:
        raise ExecutionError(f"{opcode} ({'RS' if rs else 'SS'}) takes {want} immediates after scale-d, got "
                             f"{len(imms)} (PTX ISA §9.7.15.5.2: imm-scale-a/b for floating types, imm-trans-a/b for "
                             ".f16/.bf16 — the RS form has imm-trans-b only)")
    sa, sb = (imms[0], imms[1]) if want else (1, 1)
    ta = imms[2] if want == 4 else 0
    tb = imms[-1] if base.atype in ("f16", "bf16") and want else 0
    try:
        sp = shapes.spec(base.n, base.dtype, base.atype, base.btype, base.a_source, satfinite=sat, scale_a=sa,
                         scale_b=sb, trans_a=ta, trans_b=tb)
        if sparse:
            sp = sparsity.sparse_spec(base.n, base.dtype, base.atype, base.btype, base.a_source, sp_sel=sp_sel,
                                      satfinite=sat, scale_a=sa, scale_b=sb, trans_a=ta, trans_b=tb)
    except shapes.WgmmaError as exc:
        raise ExecutionError(str(exc)) from None
    d_rt = raw_dtype(ctx.lay.regtypes[d_idx[0]])
    active = guard_mask(ins, ctx)
    line = f"PTX line {ins.line}" + (f" (CUDA line {ins.src[1]})" if ins.src else "")
    names = [x.name for x in ops[0].items]

    def step(w):
        m = active(w)
        if not m.any():
            return nxt
        _need_aligned(w, ctx, ins)
        cta = w.cta
        launch = cta.launch
        s = warp_state(w)
        used = d_idx + a_idx
        if s.known is None:
            raise _err(f"{opcode} without a wgmma.fence before it: a warp's first wgmma.mma_async must follow "
                       "wgmma.fence.sync.aligned (PTX ISA §9.7.15.7.1)", w, ctx, ins)
        for i in used:
            if w.R[i] is not s.known[i]:
                nm = next((n for n, j in ctx.lay.regidx.items() if j == i), str(i))
                raise _err(f"register {nm} (an accumulator or A register of this wgmma) was written by another "
                           "instruction after the last wgmma.fence: wgmma.fence.sync.aligned must order register "
                           "accesses before a wgmma.mma_async that uses the same registers (PTX ISA §9.7.15.7.1)",
                           w, ctx, ins)
        wg = w.wid // 4
        table = cta.__dict__.setdefault("_wgmma_meet", {})
        key = (wg, pc)
        entry = table.get(key)
        if entry is None:
            entry = table[key] = {"warps": {}, "done": False}
        if w.wid in entry["warps"]:
            raise _err(f"{opcode}: warp {w.wid} reached it twice before its warpgroup completed it", w, ctx, ins)
        entry["warps"][w.wid] = {
            "w": w,
            "c": [_real(w.R[i]) for i in d_idx],
            "a": [_real(w.R[i]) for i in a_idx],
            "da": None if get_a is None else np.asarray(get_a(w)).astype(np.uint64),
            "db": np.asarray(get_b(w)).astype(np.uint64),
            "sd": np.asarray(get_sd(w)).astype(bool),
            "meta": None if get_meta is None else np.asarray(get_meta(w)).astype(np.uint32),
        }
        launch.events += 1
        group = [x for x in cta.warps if x.wid // 4 == wg]
        if len(group) != 4 or cta.threads < 128 * (wg + 1):
            raise _err(f"{opcode} in warp {w.wid}: its warpgroup (warps {4 * wg}..{4 * wg + 3}) is incomplete — "
                       "a warpgroup is 4 contiguous warps of 128 threads (PTX ISA §9.7.15.1)", w, ctx, ins)
        if len(entry["warps"]) < 4:
            w.pc = nxt
            w.wait = lambda: entry["done"]
            w.wait_pc = pc
            w.blocked_on = (f"{opcode} waiting for warps "
                            f"{sorted(set(range(4 * wg, 4 * wg + 4)) - set(entry['warps']))} of its warpgroup")
            return STOP
        del table[key]
        _execute(sp, entry["warps"], d_idx, a_idx, d_rt, names, w, ctx, ins, line)
        entry["done"] = True
        launch.stats.wgmma += 1
        return nxt
    return step


def _uniform(vals, what, w, ctx, ins):
    v = np.concatenate([np.atleast_1d(x) for x in vals])
    if not (v == v[0]).all():
        raise _err(f"the {what} differs between the threads of the warpgroup: it must be the same in all 128 "
                   "(PTX ISA §9.7.15.5.1.2.2, §9.7.15.5.2)", w, ctx, ins)
    return v[0]


def _async_read_check(cta, addrs, nbytes, w, ctx, ins):
    off = np.unique((addrs.reshape(-1)[:, None] + np.arange(nbytes)).reshape(-1))
    if off.size and (off.min() < 0 or off.max() >= cta.smem.size):
        raise _err(f"the descriptor reads shared offset 0x{int(off.max()):x}, outside the CTA's {cta.smem.size} B of "
                   "shared memory (PTX ISA §9.7.15.5.1.2)", w, ctx, ins)
    u = cta.unfenced[off]
    if u.any():
        k = int(off[np.flatnonzero(u)[0]])
        raise _err(f"{ins.full} reads shared byte 0x{k:x} that warp {int(cta.unfenced[k]) - 1} wrote with generic "
                   "stores and did not fence: wgmma reads shared memory through the async proxy, so the writes need "
                   "fence.proxy.async before it (PTX ISA §9.7.15.4, §8.6 Proxies)", w, ctx, ins, ProxyFenceError)
    if cta.inflight_ops and cta.inflight[off].any():
        raise _err(f"{ins.full} reads shared bytes an asynchronous copy is still writing: wait for the copy's mbarrier "
                   "phase first (PTX ISA §9.7.9.25.1)", w, ctx, ins, RaceError)


def _execute(sp, warps, d_idx, a_idx, d_rt, names, w, ctx, ins, line):
    from ..tensorcore import descriptor as dsc
    from ..tensorcore import fragments, numerics, sparsity

    order = [warps[k] for k in sorted(warps)]
    sparse = isinstance(sp, sparsity.SparseSpec)
    ak = sp.packed_k if sparse else sp.k          # columns of A as stored (a sparse A is packed to K/2)
    cta = w.cta
    smem = cta.smem_u8
    sd = bool(_uniform([x["sd"] for x in order], "scale-d predicate", w, ctx, ins))
    es = 1 if sp.atype == "b1" else max(1, {"f16": 2, "bf16": 2, "tf32": 4}.get(sp.atype, 1))
    try:
        db = dsc.MatrixDescriptor.decode(int(_uniform([x["db"] for x in order], "B descriptor", w, ctx, ins)))
        bcols = sp.k // 8 if sp.btype == "b1" else sp.k
        badr = dsc.addresses(db, "MN" if sp.trans_b else "K", sp.n, bcols, "u8" if sp.btype == "b1" else sp.btype)
        _async_read_check(cta, badr, es, w, ctx, ins)
        b = dsc.gather(smem, db, "MN" if sp.trans_b else "K", sp.n, sp.k, sp.btype).T
        if sp.a_source == "ss":
            da = dsc.MatrixDescriptor.decode(int(_uniform([x["da"] for x in order], "A descriptor", w, ctx, ins)))
            acols = ak // 8 if sp.atype == "b1" else ak
            aadr = dsc.addresses(da, "MN" if sp.trans_a else "K", 64, acols, "u8" if sp.atype == "b1" else sp.atype)
            _async_read_check(cta, aadr, es, w, ctx, ins)
            a = dsc.gather(smem, da, "MN" if sp.trans_a else "K", 64, ak, sp.atype)
        else:
            regs = np.stack([np.stack([np.asarray(r).view(np.uint32) for r in x["a"]], axis=1) for x in order])
            a = fragments.unpack_a_fragment(regs.reshape(128, 4), sp.atype)
            if sp.atype in ("f16", "bf16"):
                a = a.astype(np.uint16)
            elif sp.atype in ("e4m3", "e5m2", "s8", "u8"):
                a = a.astype(np.uint8)
    except numerics.WgmmaError as exc:
        raise _err(str(exc), w, ctx, ins) from None
    c_regs = np.stack([np.stack([np.asarray(r).view(np.uint32) for r in x["c"]], axis=1) for x in order])
    c_regs = c_regs.reshape(128, sp.d_regs)
    if sp.dtype == "f16":
        vals = np.stack([c_regs & 0xFFFF, c_regs >> 16], axis=2).reshape(128, sp.n // 2).astype(np.uint16)
    else:
        vals = c_regs
    c = fragments.accumulator_to_matrix(vals, sp.n)
    if sparse:
        meta = np.concatenate([x["meta"] for x in order])
        nib = sparsity.metadata_from_registers(meta, sp.atype, sp.sp_sel)
        try:
            d = sparsity.mma_sp(a, nib, b, c, atype=sp.atype, btype=sp.btype, dtype=sp.dtype, scale_d=sd,
                                scale_a=sp.scale_a, scale_b=sp.scale_b, satfinite=sp.satfinite)
        except sparsity.SparsityError as exc:
            raise _err(f"{ins.full}: the sp-meta registers hold invalid metadata — {exc}", w, ctx, ins) from None
    else:
        d = numerics.mma(a, b, c, atype=sp.atype, btype=sp.btype, dtype=sp.dtype, scale_d=sd, scale_a=sp.scale_a,
                         scale_b=sp.scale_b, satfinite=sp.satfinite)
    out = fragments.accumulator_registers(d, sp.n, sp.dtype)
    out = out.astype(np.uint32).reshape(4, WARP, sp.d_regs)
    rec = {"regs": [], "where": line}
    for k, x in enumerate(order):
        ww = x["w"]
        st = warp_state(ww)
        r_ = {"regs": [], "where": line}
        for j, i in enumerate(d_idx):
            real = out[k, :, j].astype(np.uint32).view(d_rt) if d_rt.itemsize == 4 else out[k, :, j].astype(d_rt)
            real.flags.writeable = False
            poison = np.ndarray.view(real, InFlight)
            poison._wg_real = real
            poison._wg_warp = ww
            poison._wg_name = names[j]
            poison._wg_issued = line
            ww.R[i] = poison
            r_["regs"].append((i, poison))
            if st.known is not None:
                st.known[i] = poison
        st.open.append(r_)
    return rec


# ------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix

def _matrix_form(ins):
    num = next((int(m[1:]) for m in ins.mods if m in ("x1", "x2", "x4")), None)
    if "m8n8" not in ins.mods or num is None or ins.types != ("b16",):
        raise ExecutionError(f"{ins.full}: sm_90 has .m8n8 .x1/.x2/.x4 .b16 only (PTX ISA §9.7.14.5.15; .m16n16, "
                             ".b8 and sub-byte forms are sm_100a+)")
    if not any(m.startswith("shared") for m in ins.mods):
        raise ExecutionError(f"{ins.full}: the state space is .shared (PTX ISA §9.7.14.5.15)")
    return num, "trans" in ins.mods


@register("ldmatrix")
def _ldmatrix(ins, ctx: Ctx):
    from .lower_mem import load

    num, trans = _matrix_form(ins)
    dst = _regs_of(ins.ops[0], ctx)
    if len(dst) != num:
        raise ExecutionError(f"{ins.full} writes {num} registers per thread, got {len(dst)}")
    sets = [ctx.set(x, "b32") for x in ins.ops[0].items]
    addr = ctx.addr(ins.ops[1])
    lanes = np.arange(8 * num)
    from ..tensorcore import fragments

    def k(w, m, full):
        _need_aligned(w, ctx, ins, "warp")
        a = addr(w)[:8 * num]
        try:
            fragments.ldmatrix_addresses(a.astype(np.int64).tolist() + [0] * (32 - 8 * num), num)
        except fragments.WgmmaError as exc:
            raise _err(str(exc), w, ctx, ins) from None
        rows = load(w, "shared", a, lanes, 16, ins.full)          # (8·num, 16) checked, counted
        buf = np.zeros(128 * num, np.uint8)
        buf[:] = rows.reshape(-1)
        regs = fragments.ldmatrix(buf, np.concatenate([np.arange(8 * num) * 16, np.zeros(32 - 8 * num, int)]),
                                  num, trans)
        st = w.cta.launch.stats
        if w.cta.launch.counters:
            from ..memory.banks import matrix_wavefronts
            st.matrix_wavefronts += matrix_wavefronts(
                (a & np.uint64(0xFFFFFF)).astype(np.int64).reshape(num, 8))
        for j, s in enumerate(sets):
            s(w, m, full, regs[:, j].astype(np.uint32))
    return k


@register("stmatrix")
def _stmatrix(ins, ctx: Ctx):
    from .lower_mem import store

    num, trans = _matrix_form(ins)
    addr = ctx.addr(ins.ops[0])
    src = _regs_of(ins.ops[1], ctx)
    if len(src) != num:
        raise ExecutionError(f"{ins.full} reads {num} registers per thread, got {len(src)}")
    gets = [ctx.get(x, "b32") for x in ins.ops[1].items]
    lanes = np.arange(8 * num)
    from ..tensorcore import fragments

    def k(w, m, full):
        _need_aligned(w, ctx, ins, "warp")
        a = addr(w)[:8 * num]
        try:
            fragments.ldmatrix_addresses(a.astype(np.int64).tolist() + [0] * (32 - 8 * num), num)
        except fragments.WgmmaError as exc:
            raise _err(str(exc), w, ctx, ins) from None
        regs = np.stack([np.asarray(g(w)).astype(np.uint32) for g in gets], axis=1)
        buf = np.zeros(128 * num, np.uint8)
        fragments.stmatrix(buf, np.concatenate([np.arange(8 * num) * 16, np.zeros(32 - 8 * num, int)]), regs, num,
                           trans)
        store(w, "shared", a, lanes, buf.reshape(8 * num, 16), ins.full)
        st = w.cta.launch.stats
        if w.cta.launch.counters:
            from ..memory.banks import matrix_wavefronts
            st.matrix_wavefronts += matrix_wavefronts(
                (a & np.uint64(0xFFFFFF)).astype(np.int64).reshape(num, 8))
    return k
