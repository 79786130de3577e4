"""Loads, stores, atomics and address conversions: ``ld``, ``ldu``, ``st``, ``atom``, ``red``, ``cvta``,
``isspacep``, ``mapa``, ``getctarank`` (PTX ISA §9.7.9 "Data Movement and Conversion Instructions",
§9.7.13.5 ``atom``/``red``).

Every access is checked like the hardware checks it: the address must lie in its state space (global: an
allocation; ``.shared::cta``: the executing CTA's window, whose addresses carry the CTA's rank in bits 24+
on the H200; ``.shared::cluster``: a CTA of the cluster; ``.local``: the thread's frame) and be aligned to
the access size (PTX §5.4.4 "Variable alignment": "a memory access must be naturally aligned"); a
violation raises :class:`MemoryFault` naming the rule, the lane and the CUDA source line. Shared-memory
bytes that hold a valid mbarrier may not be touched by ordinary accesses (PTX §9.7.13.15), and bytes an
asynchronous copy is still writing may not be read or written (PTX §9.7.9.25.1): both raise.
"""
from __future__ import annotations

import numpy as np

from .errors import ExecutionError, MemoryFault, RaceError, relocated
from .lower import Ctx, register
from .memory import CONST_BASE, LOCAL_BASE, PARAM_BASE, SHARED_BASE, WINDOW
from .state import WARP
from .types import np_dtype, raw_dtype, width

__all__ = ["load", "store", "space_of_instr", "classify"]

_SHARED_WINDOW = 1 << 28      # 16 CTAs x 16 MiB (.shared::cluster window)
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def space_of_instr(ins) -> str:
    """The state space an ld/st/atom names (``generic`` when none)."""
    for m in ins.mods:
        if m in ("global", "local", "param", "const"):
            return m
        if m.startswith("shared"):
            return "shared::cluster" if m == "shared::cluster" else "shared"
        if m.startswith("param"):
            return "param"
    return "generic"


# ------------------------------------------------------------------------------------------------
# Per-space access on the active lanes (addresses already compressed to the active lanes)

def _fault(w, msg):
    return MemoryFault(msg, w.where_text())


def _check_align(w, addrs, align, what):
    if align > 1:
        bad = (addrs % np.uint64(align)) != 0
        if bad.any():
            a = int(addrs[bad][0])
            raise MemoryFault(f"{what}: address 0x{a:x} is not aligned to {align} bytes; every access must be "
                              "naturally aligned to its size (PTX §5.4.4, §9.7.9.8)", w.where_text(),
                              cuda_error="CUDA_ERROR_MISALIGNED_ADDRESS")


def _smem_target(w, addrs, nbytes, space, what):
    """(cta, offsets) for ``.shared::cta`` addresses, or a list of (cta, lane-selector, offsets) for
    ``.shared::cluster``."""
    cta = w.cta
    rank = (addrs >> np.uint64(24)).astype(np.int64)
    off = (addrs & np.uint64(0xFFFFFF)).astype(np.int64)
    if space == "shared":
        if (rank != cta.rank).any():
            r = int(rank[rank != cta.rank][0])
            raise _fault(w, f"{what}: shared address 0x{int(addrs[rank != cta.rank][0]):x} names the CTA of rank {r}, "
                            f"but .shared::cta reaches only the executing CTA (rank {cta.rank}); use .shared::cluster "
                            "with a mapa address (PTX §5.1.7, §9.7.9.23)")
        groups = [(cta, None, off)]
    else:
        cl = cta.cluster
        groups = []
        for r in np.unique(rank):
            if r >= cl.size:
                raise _fault(w, f"{what}: .shared::cluster address names rank {r}, outside the cluster of {cl.size} "
                                "CTAs (PTX §9.7.9.23 mapa)")
            sel = rank == r
            peer = cl.ctas[int(r)]
            if peer is not cta and getattr(peer, "done", False):
                raise _fault(w, f"{what}: .shared::cluster address names the CTA of rank {r}, which has exited: a CTA's "
                                "shared memory must not be accessed after it exits — a cluster barrier before the exit "
                                "keeps it alive (CPG §6.2.5 distributed shared memory; PTX §9.7.13.3)")
            groups.append((peer, sel, off[sel]))
    for c, sel, o in groups:
        if o.size and (int(o.max()) + nbytes > c.smem.size or int(o.min()) < 0):
            bad = int(o.max())
            raise _fault(w, f"{what}: shared offset 0x{bad:x} (+{nbytes} B) is outside the CTA's shared memory of "
                            f"{c.smem.size} B (1 KB reserved + static + dynamic; PTX §5.1.7)")
        if c.smem._objects:
            idx = o[:, None] + np.arange(nbytes)
            if c.objmask[idx].any():
                a = int(o[c.objmask[idx].any(axis=1)][0])
                raise ExecutionError(f"{what} touches the valid mbarrier object near shared offset 0x{a:x}: an "
                                     "mbarrier may only be accessed with mbarrier instructions (PTX §9.7.13.15); "
                                     "invalidate it first (mbarrier.inval)", w.where_text())
        if c.inflight_ops:
            idx = o[:, None] + np.arange(nbytes)
            if c.inflight[idx].any():
                a = int(o[c.inflight[idx].any(axis=1)][0])
                raise RaceError(f"{what} of shared offset 0x{a:x}, which an asynchronous copy issued earlier is still "
                                "writing: wait for its completion (mbarrier try_wait on the barrier it signals, or "
                                "cp.async.bulk.wait_group) before touching its destination (PTX §9.7.9.25.1)",
                                w.where_text())
    return groups


def classify(w, addrs):
    """The state space of each generic address (PTX §6.4.1.1): 0 global, 1 shared, 2 local, 3 param, 4 const."""
    cls = np.zeros(addrs.shape, np.int8)
    a = addrs
    cls[(a >= np.uint64(SHARED_BASE)) & (a < np.uint64(SHARED_BASE + _SHARED_WINDOW))] = 1
    cls[(a >= np.uint64(LOCAL_BASE)) & (a < np.uint64(LOCAL_BASE + WINDOW))] = 2
    cls[(a >= np.uint64(PARAM_BASE)) & (a < np.uint64(PARAM_BASE + WINDOW))] = 3
    cls[(a >= np.uint64(CONST_BASE)) & (a < np.uint64(CONST_BASE + WINDOW))] = 4
    return cls


def _flat_bytes(buf, off, nbytes):
    idx = off.astype(np.intp)[:, None] + np.arange(nbytes)
    return buf[idx]


def load(w, space: str, addrs: np.ndarray, lanes: np.ndarray, nbytes: int, what: str, sem=None) -> np.ndarray:
    """``nbytes`` per active lane → (n, nbytes) uint8 (rows in lane order of ``lanes``)."""
    launch = w.cta.launch
    if space == "generic":
        cls = classify(w, addrs)
        if (cls == cls[0]).all():
            space = ("global", "shared::cluster", "local", "param", "const")[int(cls[0])]
            addrs = _to_space(addrs, int(cls[0]))
        else:
            out = np.zeros((addrs.size, nbytes), np.uint8)
            for c in np.unique(cls):
                sel = cls == c
                sp = ("global", "shared::cluster", "local", "param", "const")[int(c)]
                out[sel] = load(w, sp, _to_space(addrs[sel], int(c)), lanes[sel], nbytes, what, sem)
            return out
    _check_align(w, addrs, min(nbytes, 16), what)
    if space == "global":
        a = launch.device.find(int(addrs.min()), 1)
        if a is None or int(addrs.max()) + nbytes > a.end:
            launch.device._alloc_for(addrs, nbytes, what)      # raises with the nearest allocation
        return _flat_bytes(a.data, addrs - np.uint64(a.base), nbytes)
    if space in ("shared", "shared::cluster"):
        out = np.empty((addrs.size, nbytes), np.uint8)
        for cta, sel, off in _smem_target(w, addrs, nbytes, space, what):
            rows = _flat_bytes(cta.smem_u8, off, nbytes)
            if launch.racecheck:
                launch.race_read(w, cta, off.astype(np.intp)[:, None] + np.arange(nbytes), sem)
            if sel is None:
                out = rows
            else:
                out[sel] = rows
        launch.record_shared(w, lanes, addrs, nbytes, "ld")
        return out
    if space == "local":
        return _local(w, addrs, lanes, nbytes, what)[0]
    if space == "param":
        buf = launch.param_buf
        if int(addrs.max()) + nbytes > buf.size:
            raise _fault(w, f"{what}: parameter offset {int(addrs.max())} is beyond the {buf.size} B of parameters")
        return _flat_bytes(buf, addrs, nbytes)
    if space == "const":
        buf = launch.program.const_bank
        if buf is None or int(addrs.max()) + nbytes > buf.size:
            raise _fault(w, f"{what}: constant offset {int(addrs.max())} is outside the module's .const variables")
        return _flat_bytes(buf, addrs, nbytes)
    raise ExecutionError(f"unknown state space {space}")


def _to_space(addrs, c):
    base = (0, SHARED_BASE, LOCAL_BASE, PARAM_BASE, CONST_BASE)[c]
    return addrs - np.uint64(base) if base else addrs


def _local(w, addrs, lanes, nbytes, what):
    loc = w.local
    if loc is None or int(addrs.max()) + nbytes > loc.shape[1]:
        raise _fault(w, f"{what}: local offset {int(addrs.max())} is outside the thread's {0 if loc is None else loc.shape[1]}"
                        " B of local memory (PTX §5.1.4)")
    idx = addrs.astype(np.intp)[:, None] + np.arange(nbytes)
    return loc[lanes[:, None], idx], idx


def store(w, space: str, addrs: np.ndarray, lanes: np.ndarray, data: np.ndarray, what: str, sem=None) -> None:
    """Write ``data`` ((n, nbytes) uint8, lane order) at the active lanes' addresses."""
    launch = w.cta.launch
    nbytes = data.shape[1]
    if space == "generic":
        cls = classify(w, addrs)
        for c in np.unique(cls):
            sel = cls == c
            sp = ("global", "shared::cluster", "local", "param", "const")[int(c)]
            if sp in ("param", "const"):
                raise _fault(w, f"{what}: a generic store to the .{sp} window; .{sp} is read-only (PTX §5.1)")
            store(w, sp, _to_space(addrs[sel], int(c)), lanes[sel], data[sel], what, sem)
        return
    _check_align(w, addrs, min(nbytes, 16), what)
    launch.events += 1
    if space == "global":
        dev = launch.device
        a = dev.find(int(addrs.min()), 1)
        if a is None or int(addrs.max()) + nbytes > a.end:
            dev._alloc_for(addrs, nbytes, what)
        idx = (addrs - np.uint64(a.base)).astype(np.intp)[:, None] + np.arange(nbytes)
        a.data[idx] = data
        return
    if space in ("shared", "shared::cluster"):
        for cta, sel, off in _smem_target(w, addrs, nbytes, space, what):
            rows = data if sel is None else data[sel]
            idx = off.astype(np.intp)[:, None] + np.arange(nbytes)
            cta.smem_u8[idx] = rows
            cta.unfenced[idx] = w.wid + 1
            if launch.racecheck:
                launch.race_write(w, cta, idx, sem)
        launch.record_shared(w, lanes, addrs, nbytes, "st")
        return
    if space == "local":
        _, idx = _local(w, addrs, lanes, nbytes, what)
        w.local[lanes[:, None], idx] = data
        return
    raise _fault(w, f"{what}: .{space} is read-only for a kernel (PTX §5.1)")


# ------------------------------------------------------------------------------------------------
# ld / ldu / st

def _vec_count(ins) -> int:
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1])
    return 1


def _access(ins, ctx: Ctx, addr_op: int):
    """(type, state space, vector count) of an ``ld``/``st``: ``.param`` accesses to a call-site parameter
    (a ``.param`` variable declared in the function body) go to the thread's frame (PTX §7.1 "Function
    declarations and definitions")."""
    t = ins.types[-1] if ins.types else None
    if t is None or len(ins.ops) != 2:
        raise ExecutionError(f"{ins.opcode} needs a type and two operands: {ins.text}")
    space = space_of_instr(ins)
    a = ins.ops[addr_op]
    if space == "param" and a.kind == "addr" and a.base.kind == "sym" and a.base.name in ctx.lay.local:
        space = "local"
    return t, space, _vec_count(ins)


def memory_semantics(ins) -> "str | None":
    """The ``.sem`` of an ``ld``/``st`` for the race checker (PTX §8.4 "Strong operations"): None for a weak
    access, ``"relaxed"`` for ``.relaxed`` and ``.volatile`` (PTX: ``.volatile`` is ``.relaxed.sys``),
    ``"acquire"`` / ``"release"`` for those qualifiers."""
    for m in ins.mods:
        if m in ("acquire", "release", "relaxed"):
            return m
        if m == "volatile":
            return "relaxed"
    return None


@register("ld", "ldu")
def _ld(ins, ctx: Ctx):
    t, space, n = _access(ins, ctx, 1)
    dst, src = ins.ops
    es = width(t) // 8
    nbytes = es * n
    ag = ctx.addr(src)
    dsts = list(dst.items) if dst.kind == "vec" else [dst]
    if len(dsts) != n:
        raise ExecutionError(f"ld.v{n} needs {n} destinations: {ins.text}")
    sets = [ctx.set(d, t) for d in dsts]
    dt = np_dtype(t)
    udt = _UINT.get(es)
    what = ins.full
    where = ctx.where(ins)
    sem = memory_semantics(ins)
    if space == "param" and src.base is not None and src.base.kind == "sym" and n == 1:
        # the common ld.param of a kernel argument: a lane-uniform value read once per launch
        name, off = src.base.name, src.offset
        s0 = sets[0]

        def ldparam(w, m, full):
            v = w.cta.launch.param_value(name, off, es, dt)
            s0(w, m, full, v)
        return ldparam

    def k(w, m, full):
        lanes = np.flatnonzero(m) if not full else _ALL
        a = ag(w)
        if not full:
            a = a[lanes]
        try:
            raw = load(w, space, a, lanes, nbytes, what, sem)
        except (ExecutionError, RaceError) as exc:
            raise relocated(exc, where) from None
        w.cta.launch.record_global(w, space, lanes, a, nbytes)
        vals = raw.view(udt).reshape(len(lanes), n) if udt is not None else raw
        for j, s in enumerate(sets):
            col = vals[:, j]
            if full:
                v = col.view(dt)
            else:
                v = np.zeros(WARP, udt)
                v[lanes] = col
                v = v.view(dt)
            s(w, m, full, v)
    return k


_ALL = np.arange(WARP)


@register("st")
def _st(ins, ctx: Ctx):
    t, space, n = _access(ins, ctx, 0)
    dst, src = ins.ops
    if space in ("param", "const"):
        raise ExecutionError(f"st.{space}: kernel parameters and constants are read-only (PTX §9.7.9.9)")
    es = width(t) // 8
    ag = ctx.addr(dst)
    srcs = list(src.items) if src.kind == "vec" else [src]
    gets = [ctx.get(x, t) for x in srcs]
    udt = _UINT[es]
    what = ins.full
    where = ctx.where(ins)
    sem = memory_semantics(ins)

    def k(w, m, full):
        lanes = np.flatnonzero(m) if not full else _ALL
        a = ag(w)
        if not full:
            a = a[lanes]
        cols = [g(w).view(udt) if g(w).dtype.itemsize == es else g(w).astype(udt) for g in gets]
        if n == 1:
            data = cols[0][lanes].view(np.uint8).reshape(len(lanes), es)
        else:
            data = np.stack([c[lanes] for c in cols], axis=1).view(np.uint8).reshape(len(lanes), es * n)
        try:
            store(w, space, a, lanes, data, what, sem)
        except (ExecutionError, RaceError) as exc:
            raise relocated(exc, where) from None
        w.cta.launch.record_global(w, space, lanes, a, es * n)
    return k


# ------------------------------------------------------------------------------------------------
# atom / red (PTX §9.7.13.5): lanes apply their operation one after another, in lane order

_ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


def _atom_apply(op, t, old, b, c=None):
    dt = np_dtype(t)
    o = np.array([old], dt)
    v = np.array([b], dt)
    if op == "add":
        if t == "f32" or t == "f64" or t in ("f16", "bf16"):
            return (o + v).astype(dt)[0]
        return (o.view(raw_dtype(t)) + v.view(raw_dtype(t))).view(dt)[0]
    if op == "min":
        return np.minimum(o, v)[0]
    if op == "max":
        return np.maximum(o, v)[0]
    if op == "inc":   # ((old >= b) ? 0 : old + 1)
        return dt.type(0) if o[0] >= v[0] else dt.type(o[0] + 1)
    if op == "dec":   # (((old == 0) | (old > b)) ? b : old - 1)
        return v[0] if (o[0] == 0 or o[0] > v[0]) else dt.type(o[0] - 1)
    if op == "and":
        return (o & v)[0]
    if op == "or":
        return (o | v)[0]
    if op == "xor":
        return (o ^ v)[0]
    if op == "exch":
        return v[0]
    if op == "cas":
        return np.array([c], dt)[0] if o[0] == v[0] else o[0]
    raise ExecutionError(f"atomic .{op} is not modelled")


@register("atom", "red")
def _atom(ins, ctx: Ctx):
    t = ins.types[-1]
    op = next((m for m in ins.mods if m in _ATOM_OPS), None)
    if op is None:
        raise ExecutionError(f"{ins.opcode} needs an operation (.add, .min, ...): {ins.text}")
    space = space_of_instr(ins)
    is_red = ins.opcode == "red"
    ops = list(ins.ops)
    if is_red:
        aop, srcs, dst = ops[0], ops[1:], None
    else:
        dst, aop, srcs = ops[0], ops[1], ops[2:]
    ag = ctx.addr(aop)
    gets = [ctx.get(x, t) for x in srcs]
    s = ctx.set(dst, t) if dst is not None else None
    es = width(t) // 8
    udt = _UINT[es]
    dt = np_dtype(t)
    where = ctx.where(ins)
    what = ins.full

    def k(w, m, full):
        lanes = np.flatnonzero(m)
        a = ag(w)[lanes]
        vals = [g(w) for g in gets]
        out = np.zeros(WARP, dt)
        try:
            for j, lane in enumerate(lanes):
                aa = a[j:j + 1]
                old = load(w, space, aa, lanes[j:j + 1], es, what).reshape(-1).view(udt).view(dt)[0]
                new = _atom_apply(op, t, old, vals[0][lane], vals[1][lane] if len(vals) > 1 else None)
                store(w, space, aa, lanes[j:j + 1], np.array([new], dt).view(np.uint8).reshape(1, es), what)
                out[lane] = old
        except (ExecutionError, RaceError) as exc:
            raise relocated(exc, where) from None
        if s is not None:
            s(w, m, full, out)
    return k


# ------------------------------------------------------------------------------------------------
# Generic addressing: cvta, isspacep (PTX §9.7.9.17-18); mapa, getctarank (§9.7.9.23-24)

_SPACE_BASE = {"shared": SHARED_BASE, "shared::cta": SHARED_BASE, "shared::cluster": SHARED_BASE,
               "local": LOCAL_BASE, "param": PARAM_BASE, "const": CONST_BASE, "global": 0}


@register("cvta")
def _cvta(ins, ctx: Ctx):
    to = "to" in ins.mods
    space = next((m for m in ins.mods if m != "to"), None)
    if space not in _SPACE_BASE:
        raise ExecutionError(f"cvta needs a state space: {ins.text}")
    t = ins.types[-1]
    d, a = ins.ops
    g = ctx.get(a, t) if a.kind != "sym" else None
    sa = ctx.sym_addr(a.name, a.offset) if a.kind == "sym" else None
    s = ctx.set(d, t)
    base = np.uint64(_SPACE_BASE[space])
    rdt = raw_dtype(t)
    where = ctx.where(ins)

    def k(w, m, full):
        v = (g(w) if g is not None else sa(w)).astype(np.uint64)
        if to:
            if space != "global":
                inside = classify(w, v) == {"shared": 1, "shared::cta": 1, "shared::cluster": 1, "local": 2,
                                            "param": 3, "const": 4}[space]
                if not inside[m].all():
                    lane = int(np.flatnonzero(m & ~inside)[0])
                    raise ExecutionError(f"cvta.to.{space}: lane {lane}'s generic address 0x{int(v[lane]):x} is not "
                                         f"in the .{space} window, so the result is undefined (PTX §9.7.9.17; test "
                                         "with isspacep first)", f"{w.where_text()}\n{where}")
            r = v - base
        else:
            r = v + base if space != "global" else v
        s(w, m, full, r.astype(rdt))
    return k


@register("isspacep")
def _isspacep(ins, ctx: Ctx):
    space = ins.mods[0]
    d, a = ins.ops
    g = ctx.get(a, "u64")
    s = ctx.set(d, "pred")

    def k(w, m, full):
        v = g(w)
        cls = classify(w, v)
        if space == "global":
            r = cls == 0
            dev = w.cta.launch.device
            r = r & np.array([dev.find(int(x), 1) is not None for x in v])
        elif space in ("shared", "shared::cta", "shared::cluster"):
            r = cls == 1
            rank = ((v - np.uint64(SHARED_BASE)) >> np.uint64(24)).astype(np.int64)
            if space == "shared::cluster":
                r = r & (rank < w.cta.cluster.size)
            else:
                r = r & (rank == w.cta.rank)
        else:
            r = cls == {"local": 2, "param": 3, "const": 4}[space]
        s(w, m, full, r)
    return k


@register("mapa")
def _mapa(ins, ctx: Ctx):
    t = ins.types[-1]
    generic = not any(x.startswith("shared") for x in ins.mods)
    d, a, b = ins.ops
    ga = ctx.get(a, t) if a.kind != "sym" else (lambda w, f=ctx.sym_addr(a.name, a.offset): f(w))
    gb = ctx.get(b, "u32")
    s = ctx.set(d, t)
    rdt = raw_dtype(t)
    where = ctx.where(ins)

    def k(w, m, full):
        v = ga(w).astype(np.uint64)
        r = gb(w).astype(np.uint64)
        n = w.cta.cluster.size
        if (r[m] >= n).any():
            lane = int(np.flatnonzero(m & (r >= n))[0])
            raise ExecutionError(f"mapa to rank {int(r[lane])}: the cluster has {n} CTAs (ranks 0..{n - 1}); a rank "
                                 "outside the cluster is undefined (PTX §9.7.9.23)", f"{w.where_text()}\n{where}")
        if generic:
            off = (v - np.uint64(SHARED_BASE)) & np.uint64(0xFFFFFF)
            out = np.uint64(SHARED_BASE) + (r << np.uint64(24)) + off
        else:
            out = (r << np.uint64(24)) | (v & np.uint64(0xFFFFFF))
        s(w, m, full, out.astype(rdt))
    return k


@register("getctarank")
def _getctarank(ins, ctx: Ctx):
    generic = not any(x.startswith("shared") for x in ins.mods)
    d, a = ins.ops
    t = ins.types[-1]
    ga = ctx.get(a, t) if a.kind != "sym" else (lambda w, f=ctx.sym_addr(a.name, a.offset): f(w))
    s = ctx.set(d, "u32")

    def k(w, m, full):
        v = ga(w).astype(np.uint64)
        if generic:
            v = v - np.uint64(SHARED_BASE)
        s(w, m, full, (v >> np.uint64(24)).astype(np.uint32) & np.uint32(0xF))
    return k
