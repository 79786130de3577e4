"""The ``cp.async.bulk`` family on the lesson-4/5 TMA model (:mod:`h100lab.tma.bulk`).

Each copy is issued as a deferred :class:`~h100lab.tma.bulk.AsyncOp` (operands checked at issue, PTX
§9.7.9.25.4 and §9.7.9.27) and completed by the launch's copy engine at the end of the scheduling round in
which it was issued — never at once, so a kernel that reads a destination before waiting on its
mbarrier (or before ``cp.async.bulk.wait_group``) reads bytes still in flight and the emulator reports the
race. ``.bulk_group`` copies belong to the issuing thread's bulk async-groups; ``wait_group`` completes
them. Forms:

* ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster}``
* ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``
* ``cp.async.bulk.global.shared::cta.bulk_group``
* ``cp.reduce.async.bulk.{global,shared::cluster}.shared::cta.…``
* ``cp.async.bulk.tensor.Nd.shared::cluster.global.{tile,im2col}.mbarrier::complete_tx::bytes{.multicast::cluster}``
* ``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`` and ``cp.reduce.async.bulk.tensor…``
* ``cp.async.bulk.prefetch{.tensor}``, ``cp.async.bulk.commit_group``, ``cp.async.bulk.wait_group{.read}``

Proxies (PTX §8.6): the copies run in the async proxy. Bytes the CTA's warps wrote with ordinary stores
since their last ``fence.proxy.async`` (and mbarriers initialised without ``fence.mbarrier_init`` or
``fence.proxy.async``) may not be read or overwritten by a copy: the emulator raises
:class:`~h100lab.emu.errors.ProxyFenceError`.
"""
from __future__ import annotations

import numpy as np

from ..tma import bulk as tb
from ..tma.tensor import TmaFault
from .errors import ExecutionError, MemoryFault, ProxyFenceError
from .lower import Ctx, guard_mask, register_step
from . import lower_tensormap  # noqa: F401,E402  (tensormap.replace, fence.proxy.tensormap::generic)

__all__ = ["TENSORMAP_MAGIC", "tensormap_registry"]

TENSORMAP_MAGIC = b"H100LAB-EMU-TMAP"          #: first 16 bytes of an emulator tensor map
tensormap_registry: dict[int, object] = {}     #: id → h100lab.tma.descriptor.TensorMap


def _split_shared(addr: int) -> tuple[int, int]:
    return (int(addr) >> 24) & 0xFF, int(addr) & 0xFFFFFF


def _proxy_check(w, cta, off: int, n: int, role: str, ctx, ins):
    u = cta.unfenced[off:off + n]
    if u.any():
        k = int(np.flatnonzero(u)[0])
        writer = int(u[k]) - 1
        what = "mbarrier.init" if cta.objmask[off + k] else "ordinary stores (st.shared, generic proxy)"
        raise ProxyFenceError(
            f"{ins.full} {role} shared bytes [0x{(cta.rank << 24) | (off + k):x}, ...) of CTA rank {cta.rank} that warp "
            f"{writer} wrote with {what} and did not fence: a generic-proxy write must be followed by "
            "fence.proxy.async (fence.mbarrier_init.release.cluster for a barrier) before the async proxy uses "
            "the bytes (PTX §8.6 Proxies, §9.7.13.4.2)", f"{w.where_text()}\n{ctx.where(ins)}")


def _tmap(w, addr: int, ctx, ins):
    """Decode the emulator's tensor map at a generic (or param/const) address."""
    from .lower_mem import load
    a = np.array([addr], np.uint64)
    raw = load(w, "generic", a, np.array([0]), 128, "tensor map").reshape(-1).tobytes()
    if raw[:16] != TENSORMAP_MAGIC:
        raise ExecutionError("the tensor-map operand does not point at a tensor map made by "
                             "h100lab.emu.encode_tiled (pass it as a const __grid_constant__ CUtensorMap parameter; "
                             "PTX §5.5.8)", f"{w.where_text()}\n{ctx.where(ins)}")
    tid = int.from_bytes(raw[16:24], "little")
    tm = tensormap_registry.get(tid)
    if tm is None:
        raise ExecutionError("unknown tensor map (was it made by this process's h100lab.emu.encode_tiled?)")
    from .lower_tensormap import check_tensormap_use, resolve   # maps edited on the device (tensormap.replace)
    where = lambda: f"{w.where_text()}\n{ctx.where(ins)}"  # noqa: E731  (built only for a report)
    check_tensormap_use(w, addr, where)
    return resolve(tm, where)


def _fault(exc, w, ctx, ins):
    if isinstance(exc, TmaFault):
        return MemoryFault(str(exc), f"{w.where_text()}\n{ctx.where(ins)}", cuda_error=exc.error)
    return ExecutionError(f"{exc} ", f"{w.where_text()}\n{ctx.where(ins)}")


@register_step("cp")
def _cp(ins, ctx: Ctx, pc: int):
    mods = ins.mods
    nxt = pc + 1
    if not mods or mods[0] != "async" or len(mods) < 2 or mods[1] != "bulk":
        from .errors import UnsupportedInstruction
        raise UnsupportedInstruction(f"{ins.full}: only the cp.async.bulk family is emulated (cp.async of sm_80 is "
                                     "not, yet)")
    if "commit_group" in mods:
        return _commit(ins, ctx, nxt)
    if "wait_group" in mods:
        return _wait(ins, ctx, nxt)
    if "prefetch" in mods:
        return _guarded(ins, ctx, nxt, lambda w, lane: None)
    if "tensor" in mods:
        return _tensor(ins, ctx, nxt, reduce_op=None)
    return _raw(ins, ctx, nxt, reduce_op=None)


def _reduce_entry(ins, ctx: Ctx, pc: int):
    nxt = pc + 1
    ops = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
    red = next(m for m in ins.mods if m in ops)
    if "tensor" in ins.mods:
        return _tensor(ins, ctx, nxt, reduce_op=red)
    return _raw(ins, ctx, nxt, reduce_op=red)


def _guarded(ins, ctx, nxt, per_lane):
    active = guard_mask(ins, ctx)

    def step(w):
        for ln in np.flatnonzero(active(w)):
            per_lane(w, int(ln))
        return nxt
    return step


def _groups(w, lane):
    g = w.bulk_groups.get(lane)
    if g is None:
        g = w.bulk_groups[lane] = tb.BulkGroups()
    return g


def _commit(ins, ctx, nxt):
    def per(w, lane):
        _groups(w, lane).commit_group()
    return _guarded(ins, ctx, nxt, per)


def _wait(ins, ctx, nxt):
    gn = ctx.get(ins.ops[0], "u32")
    read = "read" in ins.mods

    def per(w, lane):
        n = int(gn(w)[lane])
        try:
            _groups(w, lane).wait_group(n, read=read)
        except (TmaFault, tb.BulkCopyError, ValueError) as exc:
            raise _fault(exc, w, ctx, ins) from None
        w.cta.launch.engine_sync()
    return _guarded(ins, ctx, nxt, per)


def _raw(ins, ctx, nxt, reduce_op):
    mods = ins.mods
    launch_ops = list(ins.ops)
    # destination and source spaces: cp{.reduce}.async.bulk.<dst>.<src>...
    spaces = [m for m in mods if m in ("global", "shared::cluster", "shared::cta")]
    if len(spaces) < 2:
        raise ExecutionError(f"{ins.full}: cannot tell the destination and source state spaces")
    dst_sp, src_sp = spaces[0], spaces[1]
    multicast = "multicast::cluster" in mods
    gd, gs = ctx.addr(launch_ops[0]), ctx.addr(launch_ops[1])
    gsize = ctx.get(launch_ops[2], "u32")
    gbar = ctx.addr(launch_ops[3]) if len(launch_ops) > 3 and launch_ops[3].kind == "addr" else None
    gmask = ctx.get(launch_ops[4], "b16") if multicast else None
    rtype = ins.types[-1] if reduce_op else None

    def per(w, lane):
        launch = w.cta.launch
        cta = w.cta
        d, s, n = int(gd(w)[lane]), int(gs(w)[lane]), int(gsize(w)[lane])
        try:
            if dst_sp == "shared::cluster" and src_sp == "global" and reduce_op is None:
                dr, doff = _split_shared(d)
                br, boff = _split_shared(int(gbar(w)[lane]))
                if multicast:
                    ranks = tb.mask_ranks(int(gmask(w)[lane]), cta.cluster.size)
                    smems = [c.smem for c in cta.cluster.ctas]
                    for r in ranks:
                        _proxy_check(w, cta.cluster.ctas[r], doff, n, "overwrites", ctx, ins)
                        _proxy_check(w, cta.cluster.ctas[r], boff, 8, "signals an mbarrier in", ctx, ins)
                    op = tb.bulk_copy_multicast(smems, doff, launch.device, s, n, boff, int(gmask(w)[lane]),
                                                issuer=cta.rank, deferred=True)
                    marks = [(cta.cluster.ctas[r], doff, n) for r in ranks]
                else:
                    if br != dr:
                        raise ExecutionError("the mbarrier of cp.async.bulk must be in the destination CTA's "
                                             "shared memory (PTX §9.7.9.25.4.1)")
                    tcta = cta.cluster.ctas[dr] if dr < cta.cluster.size else None
                    if tcta is None:
                        raise MemoryFault(f"destination rank {dr} is outside the cluster")
                    _proxy_check(w, tcta, doff, n, "overwrites", ctx, ins)
                    _proxy_check(w, tcta, boff, 8, "signals an mbarrier in", ctx, ins)
                    op = tb.bulk_copy_global_to_shared(tcta.smem, doff, launch.device, s, n, boff, deferred=True)
                    marks = [(tcta, doff, n)]
                launch.issue(w, op, marks, ins, ctx, tx_bytes=n)
            elif dst_sp == "shared::cluster" and src_sp == "shared::cta":
                sr, soff = _split_shared(s)
                dr, doff = _split_shared(d)
                br, boff = _split_shared(int(gbar(w)[lane]))
                tcta = cta.cluster.ctas[dr]
                _proxy_check(w, cta, soff, n, "reads", ctx, ins)
                _proxy_check(w, tcta, doff, n, "overwrites", ctx, ins)
                if reduce_op is None:
                    op = tb.bulk_copy_shared_to_cluster(cta.smem, soff, tcta.smem, doff, n, boff, deferred=True)
                else:
                    op = tb.bulk_reduce("shared::cluster", reduce_op, rtype, cta.smem, soff, n, dst=doff,
                                        dst_smem=tcta.smem, mbar=boff, noftz="noftz" in mods, deferred=True)
                launch.issue(w, op, [(tcta, doff, n)], ins, ctx, tx_bytes=n)
            elif dst_sp == "global":
                sr, soff = _split_shared(s)
                if sr != cta.rank:
                    raise MemoryFault(f"source shared address 0x{s:x} is not in the executing CTA (rank {cta.rank}); "
                                      ".shared::cta names the own CTA")
                _proxy_check(w, cta, soff, n, "reads", ctx, ins)
                groups = _groups(w, lane)
                if reduce_op is None:
                    op = tb.bulk_copy_shared_to_global(launch.device, d, cta.smem, soff, n, groups)
                else:
                    op = tb.bulk_reduce("global", reduce_op, rtype, cta.smem, soff, n, gmem=launch.device, dst=d,
                                        groups=groups, noftz="noftz" in mods)
                launch.issue(w, op, [], ins, ctx, tx_bytes=n, grouped=True)
            else:
                raise ExecutionError(f"{ins.full}: unsupported direction .{dst_sp}.{src_sp}")
        except (TmaFault, tb.BulkCopyError, ValueError) as exc:
            if isinstance(exc, (ExecutionError,)):
                raise
            raise _fault(exc, w, ctx, ins) from None
    return _guarded(ins, ctx, nxt, per)


def _tensor(ins, ctx, nxt, reduce_op):
    mods = ins.mods
    ops = list(ins.ops)
    load = mods.index("shared::cluster") < mods.index("global") if "shared::cluster" in mods else False
    im2col = "im2col" in mods
    multicast = "multicast::cluster" in mods
    if load:
        gd = ctx.addr(ops[0])
        tmo = ops[1]
        gbar = ctx.addr(ops[2])
        extra = ops[3:]
        goff = None
        gmask = None
        if im2col:
            offs = extra[0].items if extra and extra[0].kind == "vec" else ()
            goff = [ctx.get(o, "u16") for o in offs]
            extra = extra[1:]
        if multicast:
            gmask = ctx.get(extra[0], "b16")
    else:
        tmo = ops[0]
        gs = ctx.addr(ops[1])
    gt = ctx.addr(type(tmo)("addr", base=tmo.base, offset=tmo.offset))
    gcs = [ctx.get(c, "s32") for c in tmo.items]

    def per(w, lane):
        launch = w.cta.launch
        cta = w.cta
        try:
            tm = _tmap(w, int(gt(w)[lane]), ctx, ins)
            coords = [int(g(w)[lane]) for g in gcs]
            if len(coords) != tm.rank:
                raise ExecutionError(f"{ins.full} gives {len(coords)} coordinates for a rank-{tm.rank} tensor map")
            gview = launch.device.view(tm.global_address)
            if load:
                dr, doff = _split_shared(int(gd(w)[lane]))
                br, boff = _split_shared(int(gbar(w)[lane]))
                if im2col:
                    offsets = [int(g(w)[lane]) for g in goff]
                    tcta = cta.cluster.ctas[dr]
                    _proxy_check(w, tcta, doff, tm.smem_bytes, "overwrites", ctx, ins)
                    _proxy_check(w, tcta, boff, 8, "signals an mbarrier in", ctx, ins)
                    op = _im2col_op(tm, gview, coords, offsets, tcta.smem, doff, boff)
                    marks = [(tcta, doff, tm.smem_bytes)]
                elif multicast:
                    mask = int(gmask(w)[lane])
                    ranks = tb.mask_ranks(mask, cta.cluster.size)
                    for r in ranks:
                        _proxy_check(w, cta.cluster.ctas[r], doff, tm.smem_bytes, "overwrites", ctx, ins)
                        _proxy_check(w, cta.cluster.ctas[r], boff, 8, "signals an mbarrier in", ctx, ins)
                    op = tb.tensor_load_multicast(tm, gview, coords, [c.smem for c in cta.cluster.ctas], doff, boff,
                                                  mask, issuer=cta.rank, deferred=True)
                    marks = [(cta.cluster.ctas[r], doff, tm.smem_bytes) for r in ranks]
                else:
                    tcta = cta.cluster.ctas[dr]
                    _proxy_check(w, tcta, doff, tm.smem_bytes, "overwrites", ctx, ins)
                    _proxy_check(w, tcta, boff, 8, "signals an mbarrier in", ctx, ins)
                    op = tb.tensor_load(tm, gview, coords, tcta.smem, doff, boff, deferred=True)
                    marks = [(tcta, doff, tm.smem_bytes)]
                launch.issue(w, op, marks, ins, ctx, tx_bytes=tm.tx_bytes)
            else:
                sr, soff = _split_shared(int(gs(w)[lane]))
                _proxy_check(w, cta, soff, tm.smem_bytes, "reads", ctx, ins)
                groups = _groups(w, lane)
                if reduce_op is None:
                    op = tb.tensor_store(tm, cta.smem, soff, gview, coords, groups)
                else:
                    op = tb.tensor_reduce(tm, cta.smem, soff, gview, coords, reduce_op, groups)
                launch.issue(w, op, [], ins, ctx, tx_bytes=tm.tx_bytes, grouped=True)
        except (TmaFault, tb.BulkCopyError, ValueError) as exc:
            if isinstance(exc, ExecutionError):
                raise
            raise _fault(exc, w, ctx, ins) from None
    return _guarded(ins, ctx, nxt, per)


def _im2col_op(tm, gview, coords, offsets, smem, dst, mbar):
    from ..sync.mbarrier import MBarrier
    from ..tma.tensor import load_im2col

    if dst % 128:
        load_im2col(tm, gview, coords, offsets, smem=smem, dst=dst)      # raises the fault
    bar = MBarrier(smem, mbar)
    smem.check_range(dst, tm.smem_bytes)
    op = tb.AsyncOp(f"cp.async.bulk.tensor.{tm.rank}d.shared::cluster.global.im2col", tm.tx_bytes, (smem.cta_rank,))

    def do(_):
        load_im2col(tm, gview, coords, offsets, smem=smem, dst=dst)
        bar.complete_tx(tm.tx_bytes)

    return tb._issue(op, None, do, True)


def install():
    """Route ``cp.reduce.async.bulk…`` (opcode ``cp``, first modifier ``reduce``) to the reduction forms."""
    from .lower import STEPS

    base = STEPS["cp"]

    def cp(ins, ctx, pc):
        if ins.mods and ins.mods[0] == "reduce":
            return _reduce_entry(ins, ctx, pc)
        return base(ins, ctx, pc)
    STEPS["cp"] = cp


install()
