"""Synchronisation and warp-level instructions on the machine model.

* ``bar.sync`` / ``bar.arrive`` / ``barrier.sync`` / ``bar.red`` — the CTA's 16 named barriers of
  :class:`h100lab.sync.named.NamedBarriers` (PTX §9.7.13.1); a warp that has exited counts as arrived at
  later CTA-wide barriers ([model]: what the hardware does for ``__syncthreads`` after early exits);
* ``barrier.cluster.arrive{.release|.relaxed}`` / ``.wait{.acquire}`` (PTX §9.7.13.3), every non-exited
  thread of the cluster arrives once per phase;
* every ``mbarrier`` form (PTX §9.7.13.15) on :class:`h100lab.sync.mbarrier.MBarrier` objects that live in
  the CTA's shared-memory bytes; ``try_wait`` suspends the warp until the phase completes — and, when
  nothing else in the launch can move, returns False as its time limit would (§9.7.13.15.16);
* fences: ``fence.proxy.async`` ends the executing warp's pending generic writes for the async proxy
  (PTX §8.6 "Proxies"), ``fence.mbarrier_init`` makes initialised barriers visible to it; ``fence.sc``/``fence.acq_rel``/``membar``
  order nothing more in an emulator that executes one instruction at a time, but count for ``racecheck``
  as the release and acquire patterns of PTX §8.8 (a fence before a strong store; a strong load before a fence);
* warp-level: ``shfl.sync``, ``vote.sync``, ``match.sync``, ``redux.sync``, ``activemask``, ``elect.sync``,
  ``bar.warp.sync`` (PTX §9.7.8): every lane named by ``membermask`` must be executing the instruction
  together, else the emulator raises (undefined on the GPU);
* ``nanosleep`` yields to the other warps; ``griddepcontrol`` is a no-op in a single launch; ``setmaxnreg``
  checks its operand (PTX §9.7.17.1: a multiple of 8 in 24..256).
"""
from __future__ import annotations

import numpy as np

from ..sync.mbarrier import MBarrier, MBarrierError, decode
from ..sync.named import BarrierError
from .errors import ExecutionError


class Trapped(ExecutionError):
    """The kernel executed ``trap``; on a GPU the launch fails and the context is lost."""

    cuda_error = "CUDA_ERROR_LAUNCH_FAILED"
from .lower import STOP, Ctx, guard_mask, register, register_step
from .state import NO_PC, WARP

__all__ = ["printf_step"]


def _err(exc_type, msg, w, ctx, ins):
    return exc_type(msg, f"{w.where_text()}\n{ctx.where(ins)}")


# ------------------------------------------------------------------------------------------------
# Named barriers

def _wait_for_lanes(w, pc, ins, others, at):
    """Set the current group aside at the barrier ``pc`` until the warp's ``others`` lanes (now at ``at``) reach it."""
    w.wait_pc = pc
    w.blocked_on = (f"{ins.full} waiting for lanes {np.flatnonzero(others).tolist()} of its warp (at PTX "
                    f"instructions {sorted(set(int(x) for x in at[others]))}) to reach it")
    npc = w.park(pc, _never)
    if npc < 0:
        w.wait = w.park_wait()
        w.timed = True
        return STOP
    return npc


@register_step("bar", "barrier")
def _bar(ins, ctx: Ctx, pc: int):
    mods = ins.mods
    if ins.opcode == "barrier" and "cluster" in mods:
        return _cluster_barrier(ins, ctx, pc)
    if "warp" in mods:
        return _bar_warp(ins, ctx, pc)
    nxt = pc + 1
    kind = "arrive" if "arrive" in mods else ("red" if "red" in mods else "sync")
    ops = list(ins.ops)
    red_op = None
    if kind == "red":
        red_op = next(m for m in mods if m in ("popc", "and", "or"))
        dst = ops[0]
        ops = ops[1:]
        pred_op = ops[-1]
        ops = ops[:-1]
        sdst = ctx.set(dst, "u32" if red_op == "popc" else "pred")
        gpred = ctx.get(pred_op, "pred")
    gid = ctx.get(ops[0], "u32")
    gcnt = ctx.get(ops[1], "u32") if len(ops) > 1 else None
    active = guard_mask(ins, ctx)
    aligned = ins.opcode == "bar" or "aligned" in mods

    def step(w):
        m = active(w)
        if not m.any():
            return nxt
        others = w.alive & ~w.mask
        if aligned and others.any():
            # bar.sync / bar.arrive / bar.red are the .aligned forms (PTX §9.7.13.1): the warp arrives as one, after
            # ptxas reconverges it at the barrier (the barrier post-dominates the branch). Lanes of this warp
            # that are elsewhere — behind an if-block NVRTC placed after the barrier, or waiting in try_wait
            # (parked) — are waited for here; when all of them stand at this barrier the groups merge and the
            # whole warp arrives (CUDA C++ PG §"Independent Thread Scheduling": the other lanes make progress).
            pcs = w._lane_pcs()
            at = np.where(w.parked_pc < NO_PC, w.parked_pc, pcs) if w.parked_pc is not None else pcs
            if (at[others] == pc).all():
                w.unpark()
                w._lane_pcs()[w.mask] = pc
                w._pick()
                m = active(w)
            else:
                return _wait_for_lanes(w, pc, ins, others, at)
        if not aligned and w.parked_pc is not None and (w.parked_pc[w.alive & ~m] < NO_PC).any():
            # barrier.sync without .aligned: lanes of this warp wait in try_wait elsewhere (parked); wait here too
            # until they come, so the spinning lanes make progress
            return _wait_for_lanes(w, pc, ins, w.parked_pc < NO_PC, w.parked_pc)
        cta = w.cta
        launch = cta.launch
        lanes = np.flatnonzero(m)
        bid = int(gid(w)[lanes[0]])
        cnt = int(gcnt(w)[lanes[0]]) if gcnt is not None else None
        op = "bar.arrive" if kind == "arrive" else "bar.sync"
        try:
            gen, done = cta.bars.arrive(bid, cnt, w.wid, op=op, threads=WARP)
        except BarrierError as exc:
            raise _err(ExecutionError, str(exc), w, ctx, ins) from None
        launch.events += 1
        launch.sync_release(w, ("bar", cta.linear, bid, gen))
        if kind == "red":
            launch.bar_red_contribute(cta, bid, gen, red_op, gpred(w)[m])
        if kind == "arrive":
            return nxt
        bars = cta.bars

        def resume(w=w):
            return bars.completed(bid, gen)
        w.pc = nxt
        w.blocked_on = f"bar.sync {bid} (generation {gen}: {bars.bars[bid].arrived} of {bars.bars[bid].expected or '?'} threads arrived)"

        def after(w=w):
            launch.sync_acquire(w, ("bar", cta.linear, bid, gen))
            if kind == "red":
                sdst(w, w.mask, w.full, launch.bar_red_result(cta, bid, gen, red_op))
        if done:
            after()
            return nxt
        w.wait = resume
        w.on_wake = after
        w.wait_pc = pc
        return STOP
    return step


def _bar_warp(ins, ctx, pc):
    nxt = pc + 1
    gmask = ctx.get(ins.ops[0], "b32")

    def step(w):
        _check_membermask(w, gmask(w), ctx, ins, pc)
        return nxt
    return _yields(step)


class _Yield(Exception):
    """Raised inside a warp-synchronous step whose group had to wait for parked warp-mates; ``pc`` is what the
    step returns (the next group's PC, or STOP)."""

    def __init__(self, pc: int):
        self.pc = pc


def _yields(step):
    """Wrap a warp-synchronous step so that :func:`_check_membermask` can set its group aside."""
    def wrapped(w):
        try:
            return step(w)
        except _Yield as y:
            return y.pc
    return wrapped


def _never():
    return False


def _value_and_pred(ins, ctx):
    """Setters of the ``d`` and optional ``|p`` destinations of ``elect``/``shfl``/``match`` (PTX §9.7.8)."""
    d = ins.ops[0]
    dst, pred = (d.items if d.kind == "pair" else (d, None))
    return ctx.set(dst, "b32"), (ctx.set(pred, "pred") if pred is not None else None)


def _check_membermask(w, mm, ctx, ins, pc):
    """PTX §9.7.8: every lane in membermask must execute the same ``.sync`` instruction. Lanes named there
    that wait in ``try_wait`` elsewhere (parked, :meth:`Warp.park`) are waited for, as independent thread
    scheduling does: the group parks here until they arrive. Lanes that exited, or that are at another
    instruction, make the instruction undefined: the emulator raises."""
    lanes = np.flatnonzero(w.mask)
    if lanes.size == 0:
        return 0
    mask = int(mm[lanes[0]])
    mine = int((w.mask.astype(np.uint64) << np.arange(WARP, dtype=np.uint64)).sum())
    missing = mask & ~mine & 0xFFFFFFFF
    if missing:
        alive = int((w.alive.astype(np.uint64) << np.arange(WARP, dtype=np.uint64)).sum())
        gone = missing & ~alive
        sel = ((missing >> np.arange(WARP, dtype=np.uint64).astype(np.uint32)) & 1).astype(bool)
        if not gone and w.parked_pc is not None and (w.parked_pc[sel] < NO_PC).all():
            w.wait_pc = pc
            w.blocked_on = f"{ins.full} waiting for lanes {np.flatnonzero(sel).tolist()} of its warp"
            npc = w.park(pc, _never)
            if npc < 0:
                w.wait = w.park_wait()
                w.timed = True
                npc = STOP
            raise _Yield(npc)
        why = (f"lanes {[i for i in range(32) if gone >> i & 1]} have exited" if gone else
               f"lanes {[i for i in range(32) if missing >> i & 1]} are at another instruction (divergent)")
        raise _err(ExecutionError, f"{ins.full} with membermask 0x{mask:08x}: {why}; every lane named in membermask "
                                   "must execute the instruction together (PTX §9.7.8)", w, ctx, ins)
    return mask


# ------------------------------------------------------------------------------------------------
# barrier.cluster (PTX §9.7.13.3)

def _cluster_barrier(ins, ctx, pc):
    nxt = pc + 1
    is_arrive = "arrive" in ins.mods
    if not is_arrive and "wait" not in ins.mods:
        raise ExecutionError(f"barrier.cluster needs .arrive or .wait: {ins.text}")

    def step(w):
        launch = w.cta.launch
        cl = w.cta.cluster
        lanes = np.flatnonzero(w.mask)
        if is_arrive:
            st = launch.cluster_state(cl)
            ph = st["phase"]
            for ln in lanes:
                key = (w.cta.rank, w.wid, int(ln))
                if st["who"].get(key) == ph:
                    raise _err(ExecutionError, "barrier.cluster.arrive twice before the phase completed: each "
                                               "thread arrives once per phase (PTX §9.7.13.3)", w, ctx, ins)
                st["who"][key] = ph
            st["arrived"] += lanes.size
            launch.events += 1
            launch.sync_release(w, ("cluster", cl.linear, ph))
            launch.cluster_check(cl)
            return nxt
        st = launch.cluster_state(cl)
        phs = {st["who"].get((w.cta.rank, w.wid, int(ln))) for ln in lanes}
        if None in phs:
            raise _err(ExecutionError, "barrier.cluster.wait without a preceding barrier.cluster.arrive by the same "
                                       "thread (PTX §9.7.13.3)", w, ctx, ins)
        ph = max(phs)
        if st["phase"] > ph:
            launch.sync_acquire(w, ("cluster", cl.linear, ph))
            return nxt
        w.pc = nxt
        w.blocked_on = (f"barrier.cluster.wait (phase {ph}: {st['arrived']} of {st['expected']} threads of the "
                        "cluster arrived)")
        w.wait = lambda: st["phase"] > ph
        w.wait_pc = pc
        w.on_wake = lambda w=w: launch.sync_acquire(w, ("cluster", cl.linear, ph))
        return STOP
    return step


# ------------------------------------------------------------------------------------------------
# mbarrier (PTX §9.7.13.15)

def _mbar_target(w, addr: int, remote_ok: bool, ins, ctx):
    """(cta, offset) of an mbarrier named by a 32-bit shared address (or a generic address)."""
    a = int(addr)
    if a >= (1 << 32):
        from .memory import SHARED_BASE
        a -= SHARED_BASE
    rank, off = a >> 24, a & 0xFFFFFF
    cta = w.cta
    if rank != cta.rank:
        if not remote_ok:
            raise _err(ExecutionError, f"mbarrier address 0x{a:x} names CTA rank {rank}, but this form reaches only "
                                       f"the executing CTA (rank {cta.rank}); remote arrivals use .shared::cluster "
                                       "(PTX §9.7.13.15.8)", w, ctx, ins)
        if rank >= cta.cluster.size:
            raise _err(ExecutionError, f"mbarrier address names rank {rank}, outside the cluster of {cta.cluster.size}",
                       w, ctx, ins)
        cta = cta.cluster.ctas[rank]
    return cta, off


def _mbar(w, cta, off, ins, ctx) -> MBarrier:
    try:
        return MBarrier(cta.smem, off)
    except MBarrierError as exc:
        raise _err(ExecutionError, str(exc), w, ctx, ins) from None


@register_step("mbarrier")
def _mbarrier(ins, ctx: Ctx, pc: int):
    mods = ins.mods
    sub = mods[0]
    nxt = pc + 1
    ops = list(ins.ops)
    remote = "shared::cluster" in mods
    active = guard_mask(ins, ctx)

    def run(w, m, body):
        try:
            return body(w, m)
        except MBarrierError as exc:
            raise _err(ExecutionError, str(exc), w, ctx, ins) from None

    if sub == "init":
        ga = ctx.addr(ops[0])
        gc = ctx.get(ops[1], "u32")

        def init(w, m):
            a, c = ga(w), gc(w)
            for ln in np.flatnonzero(m):
                cta, off = _mbar_target(w, a[ln], False, ins, ctx)
                _mbar(w, cta, off, ins, ctx).init(int(c[ln]), rank=w.cta.rank)
                cta.objmask[off:off + 8] = True
                cta.unfenced[off:off + 8] = w.wid + 1     # a generic write: the async proxy needs a fence
                w.cta.launch.mbar_inits.add((cta.linear, off))
            w.cta.launch.events += 1
        return _simple(active, run, init, nxt)

    if sub == "inval":
        ga = ctx.addr(ops[0])

        def inval(w, m):
            a = ga(w)
            for ln in np.flatnonzero(m):
                cta, off = _mbar_target(w, a[ln], False, ins, ctx)
                _mbar(w, cta, off, ins, ctx).inval(rank=w.cta.rank)
                cta.objmask[off:off + 8] = False
        return _simple(active, run, inval, nxt)

    if sub in ("arrive", "arrive_drop"):
        drop = sub == "arrive_drop"
        etx = "expect_tx" in mods
        noc = "noComplete" in mods
        # forms: [state,] [addr] {, count | , txCount}
        state_op = ops[0] if ops and ops[0].kind in ("reg", "sink") else None
        rest = ops[1:] if state_op is not None else ops
        ga = ctx.addr(rest[0])
        gx = ctx.get(rest[1], "u32") if len(rest) > 1 else None
        sset = ctx.set(state_op, "b64") if state_op is not None else None

        def arrive(w, m):
            a = ga(w)
            x = gx(w) if gx is not None else None
            tok = np.zeros(WARP, np.uint64)
            launch = w.cta.launch
            for ln in np.flatnonzero(m):
                cta, off = _mbar_target(w, a[ln], remote, ins, ctx)
                bar = _mbar(w, cta, off, ins, ctx)
                rank = w.cta.rank
                if etx:
                    n = int(x[ln])
                    t = bar.arrive_drop_expect_tx(n, rank=rank) if drop else bar.arrive_expect_tx(n, rank=rank)
                else:
                    n = int(x[ln]) if x is not None else 1
                    t = (bar.arrive_drop(n, no_complete=noc, rank=rank) if drop
                         else bar.arrive(n, no_complete=noc, rank=rank))
                if t is not None:
                    tok[ln] = t
                launch.sync_release(w, ("mbar", cta.linear, off))
            launch.events += 1
            if sset is not None:
                sset(w, m, w.full and bool(m.all()), tok)
        return _simple(active, run, arrive, nxt)

    if sub in ("expect_tx", "complete_tx"):
        ga = ctx.addr(ops[0])
        gx = ctx.get(ops[1], "u32")

        def tx(w, m):
            a, x = ga(w), gx(w)
            for ln in np.flatnonzero(m):
                cta, off = _mbar_target(w, a[ln], remote, ins, ctx)
                bar = _mbar(w, cta, off, ins, ctx)
                (bar.expect_tx if sub == "expect_tx" else bar.complete_tx)(int(x[ln]), rank=w.cta.rank)
            w.cta.launch.events += 1
        return _simple(active, run, tx, nxt)

    if sub == "pending_count":
        sd = ctx.set(ops[0], "u32")
        gt = ctx.get(ops[1], "b64")

        def pend(w, m):
            t = gt(w)
            out = np.array([MBarrier.pending_count(int(v)) for v in t], np.uint32)
            sd(w, m, w.full and bool(m.all()), out)
        return _simple(active, run, pend, nxt)

    if sub in ("test_wait", "try_wait"):
        parity = "parity" in mods
        blocking = sub == "try_wait"
        pd = ctx.set(ops[0], "pred")
        ga = ctx.addr(ops[1])
        gs = ctx.get(ops[2], "b64" if not parity else "u32")

        def step(w):
            m = active(w)
            if not m.any():
                return nxt
            a, s = ga(w), gs(w)
            lanes = np.flatnonzero(m)
            res = np.zeros(WARP, bool)
            bars = {}
            try:
                for ln in lanes:
                    key = (int(a[ln]), int(s[ln]))
                    r = bars.get(key)
                    if r is None:
                        cta, off = _mbar_target(w, a[ln], False, ins, ctx)
                        bar = _mbar(w, cta, off, ins, ctx)
                        r = bar.test_wait_parity(int(s[ln]) & 1, rank=w.cta.rank) if parity else \
                            bar.test_wait(int(s[ln]), rank=w.cta.rank)
                        bars[key] = (r, cta, off)
                    res[ln] = bars[key][0]
            except MBarrierError as exc:
                raise _err(ExecutionError, str(exc), w, ctx, ins) from None
            launch = w.cta.launch
            if res[lanes].all():
                for _, cta, off in bars.values():
                    launch.sync_acquire(w, ("mbar", cta.linear, off))
                pd(w, m, w.full and bool(m.all()), res)
                w.stall = 0
                return nxt
            if blocking and not w.stall:
                # suspend until one of the barriers changes; the scheduler may wake us with a time-out
                (k0, (_, cta, off)) = next((k, v) for k, v in bars.items() if not v[0])
                word0 = cta.smem.load_u64(off)
                st = decode(word0)
                w.blocked_on = (f"mbarrier.try_wait{'.parity' if parity else ''} on the mbarrier at shared "
                                f"0x{(cta.rank << 24) | off:x} (CTA rank {cta.rank}) waiting for "
                                + (f"the phase of parity {k0[1] & 1} to complete" if parity else "its token's phase")
                                + f"; barrier state: {st}")
                w.wait_pc = pc

                def changed():
                    return cta.smem.load_u64(off) != word0
                if w.other != NO_PC:       # other lanes of the warp are elsewhere: let them run
                    npc = w.park(pc, changed)
                    if npc >= 0:
                        return npc
                    w.wait = w.park_wait()
                else:
                    w.pc = pc
                    w.wait = changed
                w.timed = True
                return STOP
            # a failed poll (test_wait, or try_wait after its time limit): False, and let others run
            if not blocking:
                (k0, (_, cta, off)) = next((k, v) for k, v in bars.items() if not v[0])
                w.blocked_on = (f"polling mbarrier.test_wait on the mbarrier at shared 0x{(cta.rank << 24) | off:x}; "
                                f"barrier state: {decode(cta.smem.load_u64(off))}")
            w.stall = 0
            pd(w, m, w.full and bool(m.all()), res)
            w.pc = nxt
            w.spin = True
            return STOP
        return step

    raise ExecutionError(f"mbarrier.{sub} is not a PTX mbarrier operation (PTX §9.7.13.15)")


def _simple(active, run, body, nxt):
    def step(w):
        m = active(w)
        if m.any():
            run(w, m, body)
        return nxt
    return step


# ------------------------------------------------------------------------------------------------
# Fences (PTX §9.7.13.4 membar/fence)

@register("fence", "membar")
def _fence(ins, ctx: Ctx):
    mods = ins.mods
    if "proxy" in mods and any(m.startswith("async") for m in mods):
        def fpa(w, m, full):
            cta = w.cta
            u = cta.unfenced
            u[u == w.wid + 1] = 0
        return fpa
    if "mbarrier_init" in mods:
        def fmi(w, m, full):
            launch = w.cta.launch
            for cl in [w.cta.cluster]:
                for c in cl.ctas:
                    for off in list(c.smem._objects):
                        if c.unfenced[off] == w.wid + 1 and c is w.cta:
                            c.unfenced[off:off + 8] = 0
            launch.events += 1
        return fmi
    if "proxy" in mods:
        return lambda w, m, full: None

    def facq(w, m, full):      # fence.sc / fence.acq_rel / membar: release and acquire for the race checker
        w.cta.launch.race_fence(w)
    return facq


# ------------------------------------------------------------------------------------------------
# Warp-level (PTX §9.7.8)

@register("activemask")
def _activemask(ins, ctx):
    s = ctx.set(ins.ops[0], "b32")
    sh = np.arange(WARP, dtype=np.uint32)

    def k(w, m, full):
        v = np.uint32((w.mask.astype(np.uint32) << sh).sum())
        s(w, m, full, np.full(WARP, v, np.uint32))
    return k


@register_step("elect")
def _elect(ins, ctx, pc):
    nxt = pc + 1
    sd, sp = _value_and_pred(ins, ctx)
    gm = ctx.get(ins.ops[1], "b32")

    def step(w):
        mask = _check_membermask(w, gm(w), ctx, ins, pc)
        leader = (mask & -mask).bit_length() - 1 if mask else -1
        sd(w, w.mask, w.full, np.full(WARP, max(leader, 0), np.uint32))
        if sp is not None:
            sp(w, w.mask, w.full, np.arange(WARP) == leader)
        return nxt
    return _yields(step)


@register_step("shfl")
def _shfl(ins, ctx, pc):
    nxt = pc + 1
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    sd, sp = _value_and_pred(ins, ctx)
    ga, gb, gc, gm = (ctx.get(o, "b32") for o in ins.ops[1:5])
    lane = np.arange(WARP, dtype=np.int64)

    def step(w):
        _check_membermask(w, gm(w), ctx, ins, pc)
        a = ga(w)
        b = gb(w).astype(np.int64) & 0x1F
        c = gc(w).astype(np.int64)
        cval = c & 0x1F
        segmask = (c >> 8) & 0x1F
        maxlane = (lane & segmask) | (cval & ~segmask)
        minlane = lane & segmask
        if mode == "up":
            j = lane - b
            ok = j >= maxlane
        elif mode == "down":
            j = lane + b
            ok = j <= maxlane
        elif mode == "bfly":
            j = lane ^ b
            ok = j <= maxlane
        else:
            j = minlane | (b & ~segmask)
            ok = j <= maxlane
        j = np.where(ok, j, lane)
        src_ok = w.mask[j & 31]
        if not src_ok[w.mask].all():
            raise _err(ExecutionError, "shfl.sync reads a lane that is not executing the instruction: the value is "
                                       "undefined (PTX §9.7.8.6)", w, ctx, ins)
        sd(w, w.mask, w.full, a[j & 31])
        if sp is not None:
            sp(w, w.mask, w.full, ok)
        return nxt
    return _yields(step)


@register_step("vote")
def _vote(ins, ctx, pc):
    nxt = pc + 1
    mode = next(m for m in ins.mods if m in ("all", "any", "uni", "ballot"))
    ballot = mode == "ballot"
    sd = ctx.set(ins.ops[0], "b32" if ballot else "pred")
    gp = ctx.get(ins.ops[1], "pred")
    gm = ctx.get(ins.ops[2], "b32")
    sh = np.arange(WARP, dtype=np.uint32)

    def step(w):
        mask = _check_membermask(w, gm(w), ctx, ins, pc)
        sel = ((mask >> sh) & 1).astype(bool) & w.mask
        p = gp(w)
        if ballot:
            v = np.uint32(((p & sel).astype(np.uint32) << sh).sum())
            sd(w, w.mask, w.full, np.full(WARP, v, np.uint32))
        else:
            ps = p[sel]
            r = ps.all() if mode == "all" else (ps.any() if mode == "any" else (ps.all() or not ps.any()))
            sd(w, w.mask, w.full, np.full(WARP, bool(r)))
        return nxt
    return _yields(step)


@register_step("match")
def _match(ins, ctx, pc):
    nxt = pc + 1
    mode = "all" if "all" in ins.mods else "any"
    t = ins.types[-1]
    sd, sp = _value_and_pred(ins, ctx)
    ga = ctx.get(ins.ops[1], t)
    gm = ctx.get(ins.ops[2], "b32")
    sh = np.arange(WARP, dtype=np.uint64)

    def step(w):
        mask = _check_membermask(w, gm(w), ctx, ins, pc)
        sel = ((mask >> sh.astype(np.uint32)) & 1).astype(bool) & w.mask
        a = ga(w)
        eq = (a[:, None] == a[None, :]) & sel[None, :]
        bits = (eq.astype(np.uint64) << sh[None, :]).sum(axis=1).astype(np.uint32)
        if mode == "any":
            sd(w, w.mask, w.full, bits)
        else:
            allsame = bool((a[sel] == a[sel][0]).all()) if sel.any() else True
            v = np.uint32(mask) if allsame else np.uint32(0)
            sd(w, w.mask, w.full, np.full(WARP, v, np.uint32))
            if sp is not None:
                sp(w, w.mask, w.full, np.full(WARP, allsame))
        return nxt
    return _yields(step)


@register_step("redux")
def _redux(ins, ctx, pc):
    nxt = pc + 1
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    t = ins.types[-1]
    sd = ctx.set(ins.ops[0], t)
    ga = ctx.get(ins.ops[1], t)
    gm = ctx.get(ins.ops[2], "b32")
    sh = np.arange(WARP, dtype=np.uint32)

    def step(w):
        mask = _check_membermask(w, gm(w), ctx, ins, pc)
        sel = ((mask >> sh) & 1).astype(bool) & w.mask
        a = ga(w)[sel]
        if op == "add":
            v = a.astype(np.uint64).sum() & 0xFFFFFFFF if t != "f32" else a.sum()
        elif op == "min":
            v = a.min()
        elif op == "max":
            v = a.max()
        elif op == "and":
            v = np.bitwise_and.reduce(a)
        elif op == "or":
            v = np.bitwise_or.reduce(a)
        else:
            v = np.bitwise_xor.reduce(a)
        sd(w, w.mask, w.full, np.full(WARP, v).astype(a.dtype))
        return nxt
    return _yields(step)


# ------------------------------------------------------------------------------------------------
# Scheduling hints and resource instructions

@register_step("nanosleep")
def _nanosleep(ins, ctx, pc):
    nxt = pc + 1

    def step(w):
        w.pc = nxt
        w.spin = True
        w.blocked_on = "a nanosleep polling loop"
        return STOP
    return step


@register_step("trap")
def _trap(ins, ctx, pc):
    """``trap`` (``__trap()``, PTX §9.7.19 "trap"): the kernel aborts; a GPU reports an error for the launch
    and the context is lost. The printf lines printed before it stay in :func:`h100lab.emu.synchronize`."""
    nxt = pc + 1
    active = guard_mask(ins, ctx)

    def step(w):
        if not active(w).any():
            return nxt
        raise _err(Trapped, "trap: the kernel executed __trap() / trap (PTX §9.7.19) and aborted the launch", w, ctx,
                   ins)
    return step


@register("griddepcontrol")
def _gdc(ins, ctx):
    return lambda w, m, full: None


@register("setmaxnreg")
def _setmaxnreg(ins, ctx):
    g = ctx.get(ins.ops[0], "u32")

    def k(w, m, full):
        n = int(g(w)[np.flatnonzero(m)[0]])
        if n % 8 or not 24 <= n <= 256:
            raise ExecutionError(f"setmaxnreg {n}: the register count must be a multiple of 8 in 24..256 "
                                 "(PTX §9.7.17.1)", w.where_text())
    return k


# ------------------------------------------------------------------------------------------------
# printf (CUDA's vprintf(format, args) — CUDA C++ Programming Guide §"Formatted Output")

def printf_step(ins, ctx, pc):
    nxt = pc + 1
    rets, args = ins.ops[1].items, ins.ops[2].items
    if len(args) != 2:
        raise ExecutionError("vprintf takes (format, argument buffer)")
    offs = []
    for a in args:
        if a.kind != "sym" or a.name not in ctx.lay.local:
            raise ExecutionError("vprintf's arguments are call-site .param variables")
        offs.append(ctx.lay.local[a.name])
    ret_off = ctx.lay.local.get(rets[0].name) if rets and rets[0].kind == "sym" else None

    def step(w):
        launch = w.cta.launch
        loc = w.local
        for ln in np.flatnonzero(w.mask):
            fa = int(loc[ln, offs[0]:offs[0] + 8].view(np.uint64)[0])
            ba = int(loc[ln, offs[1]:offs[1] + 8].view(np.uint64)[0])
            launch.printf(w, int(ln), fa, ba)
        if ret_off is not None:
            loc[w.mask, ret_off:ret_off + 4] = 0
        return nxt
    return step
