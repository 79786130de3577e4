"""One kernel launch on the emulator: CTAs and clusters, the warp scheduler, the copy engine, counters.

**Scheduling policy** (deterministic; documented because it is the emulator's, not the GPU's):

* clusters run one after another in launch order (cluster id, x fastest; without clusters each CTA is a
  cluster of one), all CTAs of a cluster together — the CUDA guarantee for clusters (CPG §"Thread Block
  Clusters": a cluster's CTAs are co-scheduled) — ``resident=k`` keeps k clusters resident at once;
* inside, warps take turns round-robin (CTA rank, then warp id); a warp runs until it blocks
  (``bar.sync``, ``barrier.cluster.wait``, an unfinished ``mbarrier.try_wait``), yields (a failed
  ``test_wait``, ``nanosleep``) or has issued ``quantum`` instructions;
* **warp fusion** (``fuse=True``, the default; :mod:`h100lab.emu.fuse`): converged warps of the resident
  CTAs that stand at the same instruction run a stretch of non-blocking instructions together — register
  arithmetic as one NumPy operation over all their lanes, ``ld``/``st.global`` as one gather/scatter
  (counted per warp), other memory instructions warp after warp — until a blocking or control instruction
  or a branch that is not uniform over all their lanes. A warp that reaches such a stretch while converged
  warps are behind it gives up its turn once per instruction. The results and counters are those of the
  same launch with ``fuse=False``; only the interleaving differs (one instruction per warp in turn inside a
  fused stretch — an interleaving a GPU may also produce);
* copies issued during a round complete when the round ends (the copy engine), in issue order;
* ``seed=k`` shuffles the warp order of every round and the completion order of copies with a seeded RNG,
  to expose kernels that rely on one interleaving;
* when no warp can run and no copy is in flight, warps in ``try_wait`` are woken with the time-out result
  False (PTX §9.7.13.15.16: try_wait may return False after a time limit); if that repeats
  ``max_idle_rounds`` times with no store, arrival or copy in between, or no warp can run at all, the
  launch stops with a :class:`DeadlockError` naming each waiting warp, its instruction and CUDA line, and
  the state of what it waits on.

**Clock**: ``%clock64`` counts warp-instructions issued by the launch so far (one per instruction, all
SMs together) and ``%globaltimer`` converts it at 1980 MHz. They order events; they do not time them.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..launchcfg import LaunchConfigError, normalize_dims
from .errors import BudgetExceeded, DeadlockError, EmuError, ExecutionError
from .state import RESERVED_SMEM, WARP, Cluster, Cta, Warp

__all__ = ["Launch", "LaunchStats", "CLOCK_HZ"]

CLOCK_HZ = 1.98e9     #: the H200's boost clock (device properties, clockRate 1980 MHz) for %globaltimer


@dataclass
class LaunchStats:
    """What the launch did, as Nsight Compute would count it from the same code.

    ``instructions``: warp-instructions issued; ``by_opcode``: per full PTX opcode; ``per_warp``:
    instructions of each (CTA linear index, warp id); ``shared_wavefronts`` / ``shared_requests`` and
    ``bank_conflicts`` (wavefronts beyond one per request) from :func:`h100lab.memory.banks.wavefronts_trace`;
    ``shared_by_pc``: (PTX line, PTX text, requests, wavefronts) per shared-memory instruction; ``global_sectors`` /
    ``global_requests`` from :func:`h100lab.memory.coalescing.sectors_trace`; ``tma_bytes``: bytes the
    copies delivered (tx bytes); ``copies``; ``barrier_waits``: times a warp blocked on a barrier;
    ``output``: printf lines; ``wgmma``: warpgroup MMAs; ``matrix_wavefronts``: ldmatrix/stmatrix wavefronts."""

    instructions: int = 0
    by_opcode: dict = field(default_factory=dict)
    per_warp: dict = field(default_factory=dict)
    shared_requests: int = 0
    shared_wavefronts: int = 0
    bank_conflicts: int = 0
    shared_by_pc: list = field(default_factory=list)
    global_requests: int = 0
    global_sectors: int = 0
    tma_bytes: int = 0
    copies: int = 0
    barrier_waits: int = 0
    timeouts: int = 0
    output: list = field(default_factory=list)
    approximate_instructions: int = 0
    wgmma: int = 0                 #: wgmma.mma_async executed (per warpgroup)
    matrix_wavefronts: int = 0     #: shared wavefronts of ldmatrix/stmatrix (h100lab.memory.banks.matrix_wavefronts)

    def summary(self) -> str:
        lines = [f"warp-instructions   {self.instructions}",
                 f"shared requests     {self.shared_requests}  wavefronts {self.shared_wavefronts}  "
                 f"bank conflicts {self.bank_conflicts}",
                 f"global requests     {self.global_requests}  sectors {self.global_sectors}",
                 f"bulk/TMA copies     {self.copies}  bytes {self.tma_bytes}",
                 f"barrier waits       {self.barrier_waits}"]
        return "\n".join(lines)


def _dims(v, what):
    return normalize_dims(v, what)


class Launch:
    """Runs one launch of ``kernel`` (an :class:`h100lab.emu.api.Kernel`) on ``emulator``."""

    def __init__(self, emulator, kernel, grid, block, args, shared_mem=0, cluster=None, *, seed=None,
                 racecheck=False, quantum=256, max_instructions=200_000_000, counters=True, max_idle_rounds=1000,
                 resident=1, fuse=True):
        self.emu = emulator
        self.kernel = kernel
        self.program = kernel.program
        self.fn = kernel.fn
        self.lay = kernel.layout
        self.device = emulator.memory
        self.grid = _dims(grid, "grid")
        self.block = _dims(block, "block")
        self.cluster_dim = _dims(cluster, "cluster") if cluster is not None else (1, 1, 1)
        self.explicit_cluster = cluster is not None
        self.threads = self.block[0] * self.block[1] * self.block[2]
        self.dynamic = int(shared_mem)
        self.seed = seed
        self.rng = random.Random(seed) if seed is not None else None
        self.racecheck = racecheck
        self.quantum = int(quantum)
        self.max_instructions = int(max_instructions)
        self.counters = counters
        self.max_idle_rounds = int(max_idle_rounds)
        self.resident = max(1, int(resident))
        self.events = 0
        self.retired = 0
        self.stats = LaunchStats()
        self._shared_log: list = []
        self._global_log: list = []
        self._queue: list = []
        self._cluster_state: dict = {}
        self._bar_red: dict = {}
        self.mbar_inits: set = set()
        self._cc: dict = {}
        self._run_start = 0
        if racecheck:
            from .racecheck import RaceChecker
            self._race = RaceChecker()
        self._check_config()
        self.param_buf = self._pack(args)
        self._param_cache: dict = {}
        self._sregs = None
        self.code = kernel.code
        self.pc_counts = [0] * len(self.code)
        self._plan = None
        if fuse:
            from .fuse import FusePlan
            self._plan = getattr(kernel, "_fuse_plan", None)
            if self._plan is None:
                self._plan = kernel._fuse_plan = FusePlan(self.program.module, self.fn, self.lay, self.program)
        self._cur_warps: list = []

    # -- configuration ----------------------------------------------------------------------------
    def _check_config(self):
        k = self.kernel
        if self.threads > 1024:
            raise LaunchConfigError(f"block {self.block} has {self.threads} threads: at most 1024 per block "
                                    "(CPG §\"Compute Capabilities\", Table 21)")
        if self.block[2] > 64:
            raise LaunchConfigError(f"block z dimension {self.block[2]} exceeds 64 (CPG Table 21)")
        if self.grid[1] > 65535 or self.grid[2] > 65535 or self.grid[0] > 2**31 - 1:
            raise LaunchConfigError(f"grid {self.grid}: y and z at most 65535, x at most 2^31-1 (CPG Table 21)")
        for axis, g, c in zip("xyz", self.grid, self.cluster_dim):
            if g % c:
                raise LaunchConfigError(
                    f"grid {self.grid} is not a whole number of clusters {self.cluster_dim} along {axis}: the grid "
                    "dimension counts blocks and must be a multiple of the cluster dimension (CPG \"Thread Block "
                    "Clusters\")")
        n = self.cluster_dim[0] * self.cluster_dim[1] * self.cluster_dim[2]
        limit = 16 if k.non_portable else 8
        if n > limit:
            raise LaunchConfigError(f"a cluster of {n} CTAs exceeds the {limit} allowed "
                                    + ("(16 is the H100/H200 maximum)" if limit == 16 else
                                       "without kernel.allow_non_portable_cluster_size() (8 is portable)"))
        need = self.lay.static_shared + self.dynamic
        if self.dynamic > 48 * 1024 and self.dynamic > k.max_dynamic_shared:
            raise LaunchConfigError(
                f"{self.dynamic} B of dynamic shared memory exceeds kernel {k.name}'s limit of {k.max_dynamic_shared} B: "
                "above 48 KiB a kernel opts in first, kernel.set_max_dynamic_shared_memory(nbytes) "
                "(cudaFuncAttributeMaxDynamicSharedMemorySize; CUDA C++ Programming Guide §\"Shared Memory\")")
        if need > 232448:
            raise LaunchConfigError(f"{need} B of shared memory per block (static {self.lay.static_shared} + dynamic "
                                    f"{self.dynamic}) exceeds the 227 KB a block may use on sm_90 (CPG §20.8.3)")
        req = self.fn.directives.get("reqntid") or self.fn.directives.get("maxntid")
        if req:
            dims = [int(x) for x in req.replace(",", " ").split()]
            tot = int(np.prod(dims))
            if "reqntid" in self.fn.directives and tuple((dims + [1, 1])[:3]) != self.block:
                raise LaunchConfigError(f"kernel requires block {tuple(dims)} (.reqntid), launched with {self.block}")
            if self.threads > tot:
                raise LaunchConfigError(f"kernel allows at most {tot} threads per block (.maxntid), launched with "
                                        f"{self.threads}")

    def _pack(self, args) -> np.ndarray:
        params = self.fn.params
        if len(args) != len(params):
            raise LaunchConfigError(f"kernel {self.fn.name} takes {len(params)} parameters, got {len(args)}")
        buf = np.zeros(max(self.fn.param_bytes, 1), np.uint8)
        from .api import DeviceArray, TensorMap
        for i, (p, a) in enumerate(zip(params, args)):
            if isinstance(a, DeviceArray):
                blob = np.uint64(a.ptr).tobytes()
            elif isinstance(a, TensorMap):
                blob = a.data
            elif isinstance(a, np.generic):
                blob = a.tobytes()
            elif isinstance(a, (bool, int, float)):
                raise LaunchConfigError(
                    f"kernel argument {a!r}: give its C type explicitly, e.g. np.int32({a!r}) or np.float32(...), so "
                    "that its width matches the kernel's parameter")
            else:
                raise LaunchConfigError(f"kernel argument of type {type(a).__name__}: pass a DeviceArray, a NumPy scalar "
                                        "(np.int32(3)) or a TensorMap")
            if len(blob) != p.size:
                raise LaunchConfigError(f"kernel {self.fn.name} parameter {i} is {p.size} B, argument "
                                        f"{type(a).__name__} is {len(blob)} B")
            buf[p.offset:p.offset + p.size] = np.frombuffer(blob, np.uint8)
        return buf

    def param_value(self, name, off, es, dt):
        key = (name, off, es, dt)
        v = self._param_cache.get(key)
        if v is None:
            o = self.lay.params[name][0] + off
            raw = self.param_buf[o:o + es].copy().view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[es])
            v = np.full(WARP, raw[0]).view(dt) if raw.dtype.itemsize == dt.itemsize else np.full(WARP, raw[0]).astype(dt)
            v.flags.writeable = False
            self._param_cache[key] = v
        return v

    # -- the run ----------------------------------------------------------------------------------
    def run(self) -> LaunchStats:
        gx, gy, gz = self.grid
        cx, cy, cz = self.cluster_dim
        ncx, ncy, ncz = gx // cx, gy // cy, gz // cz
        clusters = [(x, y, z) for z in range(ncz) for y in range(ncy) for x in range(ncx)]
        smids = self._placement(len(clusters))
        for i in range(0, len(clusters), self.resident):
            group = [self._make_cluster(cid, i + j, smids) for j, cid in enumerate(clusters[i:i + self.resident])]
            self._run_group(group)
        self._finish_counters()
        return self.stats

    def _placement(self, nclusters):
        """%smid of each CTA: the lesson-2 placement model for one wave (``h100lab.cluster.placement``);
        later waves reuse the first wave's SMs in order ([model])."""
        n = self.cluster_dim[0] * self.cluster_dim[1] * self.cluster_dim[2]
        try:
            from ..cluster.placement import place_clusters
            p = place_clusters(nclusters, n, 1)
            table = {(c.cluster, c.rank): c.sm for c in p.ctas}
            wave = max(1, len(p.ctas) // n)
        except Exception:
            table, wave = {}, 1

        def smid(cl, rank):
            key = (cl % wave if table else cl, rank)
            return table.get(key, (cl * n + rank) % 132)
        return smid

    def _make_cluster(self, cid, linear, smids) -> Cluster:
        cx, cy, cz = self.cluster_dim
        n = cx * cy * cz
        cl = Cluster(cid, linear, n, self.threads)
        smem = self.lay.static_shared + self.dynamic
        for rank in range(n):
            rx, ry, rz = rank % cx, (rank // cx) % cy, rank // (cx * cy)
            ctaid = (cid[0] * cx + rx, cid[1] * cy + ry, cid[2] * cz + rz)
            lin = ctaid[0] + self.grid[0] * (ctaid[1] + self.grid[1] * ctaid[2])
            cta = Cta(self, ctaid, rank, cl, smem, self.threads, f"{ctaid}", lin, smids(linear, rank))
            cl.ctas.append(cta)
            cta_sregs = self._cta_sregs(cta, cl, rank, (rx, ry, rz))
            nw = -(-self.threads // WARP)
            for wid in range(nw):
                lanes = min(WARP, self.threads - wid * WARP)
                w = Warp(cta, wid, lanes, self.lay.initial_registers(), self.code, self.fn, self.lay.local_bytes)
                w.label = f"CTA {ctaid} (cluster rank {rank}) warp {wid}"
                w.sregs = self._warp_sregs(w, cta_sregs)
                cta.warps.append(w)
        self._cluster_state[cl.linear] = {"phase": 0, "arrived": 0, "expected": n * self.threads, "who": {}}
        return cl

    def _launch_sregs(self) -> dict:
        """Special registers with one value for the whole launch (PTX §10), made once."""
        u = lambda v: np.full(WARP, v, np.uint32)
        s = {}
        for k, ax in enumerate("xyz"):
            s[f"%ntid.{ax}"] = u(self.block[k])
            s[f"%nctaid.{ax}"] = u(self.grid[k])
            s[f"%nclusterid.{ax}"] = u(self.grid[k] // self.cluster_dim[k])
            s[f"%cluster_nctaid.{ax}"] = u(self.cluster_dim[k])
        s["%laneid"] = np.arange(WARP, dtype=np.uint32)
        s["%nwarpid"] = u(64)
        s["%is_explicit_cluster"] = u(1 if self.explicit_cluster else 0)
        s["%nsmid"] = u(132)
        s["%gridid"] = u(1)
        lane = np.arange(WARP, dtype=np.uint64)
        one = np.uint64(1)
        s["%lanemask_eq"] = (one << lane).astype(np.uint32)
        s["%lanemask_lt"] = ((one << lane) - one).astype(np.uint32)
        s["%lanemask_le"] = ((one << (lane + one)) - one).astype(np.uint32)
        s["%lanemask_ge"] = (~((one << lane) - one)).astype(np.uint32)
        s["%lanemask_gt"] = (~((one << (lane + one)) - one)).astype(np.uint32)
        s["%dynamic_smem_size"] = u(self.dynamic)
        s["%total_smem_size"] = u(self.lay.static_shared + self.dynamic)
        s["%aggr_smem_size"] = u(RESERVED_SMEM + self.lay.static_shared + self.dynamic)
        s["%cluster_nctarank"] = u(self.cluster_dim[0] * self.cluster_dim[1] * self.cluster_dim[2])
        for v in s.values():
            v.flags.writeable = False
        return s

    def _cta_sregs(self, cta, cl, rank, cctaid) -> dict:
        """The launch's special registers plus those of one CTA (%ctaid, %clusterid, %cluster_ctaid,
        %cluster_ctarank, %smid)."""
        if self._sregs is None:
            self._sregs = self._launch_sregs()
        u = lambda v: np.full(WARP, v, np.uint32)
        s = dict(self._sregs)
        for k, ax in enumerate("xyz"):
            s[f"%ctaid.{ax}"] = u(cta.ctaid[k])
            s[f"%clusterid.{ax}"] = u(cl.cid[k])
            s[f"%cluster_ctaid.{ax}"] = u(cctaid[k])
        s["%cluster_ctarank"] = u(rank)
        s["%smid"] = u(cta.smid)
        return s

    def _warp_sregs(self, w, cta_sregs: dict) -> dict:
        """A warp's special registers: its CTA's, plus %tid and %warpid."""
        bx, by, _ = self.block
        tid = np.arange(w.wid * WARP, w.wid * WARP + WARP, dtype=np.int64)
        s = dict(cta_sregs)
        s["%tid.x"], s["%tid.y"], s["%tid.z"] = (a.astype(np.uint32) for a in (tid % bx, (tid // bx) % by,
                                                                                 tid // (bx * by)))
        s["%warpid"] = np.full(WARP, w.wid, np.uint32)
        return s

    def sreg(self, w, name):
        raise ExecutionError(f"special register {name} has no value here", w.where_text())

    def clock_of(self, w) -> int:
        return self.retired + (w.icount - self._run_start)

    @staticmethod
    def ns_of(clock: int) -> int:
        return int(clock * 1e9 / CLOCK_HZ)

    # -- scheduler --------------------------------------------------------------------------------
    def _run_group(self, group):
        warps = [w for cl in group for cta in cl.ctas for w in cta.warps]
        self._cur_warps = warps
        idle = 0
        streak_timeouts = 0
        while True:
            live = [w for w in warps if not w.done]
            if not live:
                break
            ev0 = self.events
            order = live
            if self.rng is not None:
                order = live[:]
                self.rng.shuffle(order)
            ran = full_turns = 0
            for w in order:
                if w.done:
                    continue
                if w.wait is not None:
                    if not w.wait():
                        continue
                    w.wait = None
                    w.timed = False
                    f = w.on_wake
                    if f is not None:
                        w.on_wake = None
                        f(w)
                    w.settle()
                ran += 1
                w.spin = False
                if self._run_warp(w):
                    full_turns += 1
                elif w.wait is not None:
                    self.stats.barrier_waits += 1
            had_copies = bool(self._queue)
            self._complete_copies()
            if self.events != ev0 or had_copies or full_turns:
                idle = 0
                streak_timeouts = 0
                continue
            idle += 1
            timed = [w for w in warps if not w.done and w.wait is not None and w.timed]
            if idle > self.max_idle_rounds or (not ran and not timed):
                self._deadlock([w for w in warps if not w.done],
                               spinning=bool(ran) and not timed and not streak_timeouts)
            streak_timeouts += len(timed)
            for w in timed:      # the try_wait time limit expires
                w.wait = None
                w.timed = False
                w.stall = 1
                self.stats.timeouts += 1

    def _run_warp(self, w: Warp):
        code = w.code
        cnt = self.pc_counts
        pc = w.pc
        q = self.quantum
        n = 0
        exhausted = False
        self._run_start = w.icount
        fk = self._plan.kind if self._plan is not None else None
        tried = False
        try:
            while n < q:
                if fk is not None and fk[pc] and not tried and w.full:
                    tried = True
                    w.pc = pc
                    r = self._fuse(w, pc, q - n)
                    if r < 0:        # gives up its turn once, for the warps behind it (fuse.py)
                        w.pc = pc
                        break
                    if r:
                        n += r
                        pc = w.pc
                        continue
                elif fk is not None and not fk[pc]:
                    tried = False
                cnt[pc] += 1
                w.icount += 1
                w.pc = pc
                npc = code[pc](w)
                n += 1
                if npc < 0:
                    break
                if npc >= w.other:
                    npc = w.regroup(npc)
                    if npc < 0:
                        self.warp_exited(w)
                        break
                pc = npc
            else:
                w.pc = pc
                exhausted = True
            if w.wait is None and not w.done:
                w.settle()
        except EmuError:
            raise
        except (ValueError, IndexError, KeyError, TypeError, FloatingPointError, OverflowError) as exc:
            ins = self.fn.body[pc]
            from .lower import _where
            raise ExecutionError(f"{type(exc).__name__}: {exc}", f"{w.where_text()}\n{_where(self.program.module, ins)}") from exc
        self.retired += n
        if self.retired > self.max_instructions:
            self._over_budget(w)
        return exhausted

    def _fuse(self, w, pc: int, limit: int) -> int:
        """Warp fusion (:mod:`h100lab.emu.fuse`): run the register-only stretch at ``pc`` for ``w`` and the
        converged warps standing at ``pc`` with it; 0 when there are none, -1 when ``w`` should give up its
        turn because converged warps are behind it (once per instruction and warp in a launch)."""
        group, behind = [], False
        code = w.code
        for x in self._cur_warps:
            if x is w:
                group.append(x)
                continue
            if x.done or x.wait is not None or not x.full or x.code is not code or x.stall:
                continue
            if x.pc == pc:
                group.append(x)
            elif x.pc < pc:
                behind = True
        if len(group) < 2:
            if behind:
                ys = w.fuse_yield
                if ys is None:
                    ys = w.fuse_yield = set()
                if pc not in ys:
                    ys.add(pc)
                    return -1
            return 0
        from .fuse import run_fused
        steps = run_fused(self._plan, group, pc, limit, self.pc_counts, self.code)
        self.retired += steps * (len(group) - 1)
        if self.retired > self.max_instructions:
            self._over_budget(w)
        return steps

    def _over_budget(self, w):
        from .lower import _where
        where = w.where_text()
        if 0 <= w.pc < len(self.fn.body):
            where += "\n" + _where(self.program.module, self.fn.body[w.pc])
        raise BudgetExceeded(f"the launch issued more than {self.max_instructions} warp-instructions (a kernel "
                             "that never ends, or max_instructions set too low)", where)

    def _deadlock(self, waiting, spinning):
        rep = []
        from .lower import _where
        for w in waiting:
            pc = w.wait_pc if w.wait_pc is not None else w.pc
            ins = self.fn.body[pc] if 0 <= pc < len(self.fn.body) else None
            rep.append({"warp": w.label, "pc": w.pc, "instruction": ins.text if ins else "",
                        "ptx_line": ins.line if ins else 0, "source_line": ins.src[1] if ins and ins.src else None,
                        "waits_for": w.blocked_on or ("polling (test_wait / nanosleep loop)" if spinning else "?")})
        head = ("deadlock: every warp that has not exited is waiting, and nothing in flight can release it "
                f"(try_wait time-outs: {self.stats.timeouts})"
                if not spinning else
                f"livelock: for {self.max_idle_rounds} rounds no warp stored, arrived or copied anything; the "
                "remaining warps only poll")
        lines = []
        for r, w in zip(rep, waiting):
            pc = w.wait_pc if w.wait_pc is not None else w.pc
            ins = self.fn.body[pc] if 0 <= pc < len(self.fn.body) else None
            lines.append(f"- {r['warp']}: {r['waits_for']}\n" + (_where(self.program.module, ins) if ins else ""))
        raise DeadlockError(head, "\n".join(lines), rep)

    # -- exits and barriers -----------------------------------------------------------------------
    def lanes_exited(self, w, m):
        n = int(np.count_nonzero(m & w.lanes_valid))
        self.events += 1
        st = self._cluster_state.get(w.cta.cluster.linear)
        if st is not None:
            st["expected"] -= n
            self.cluster_check(w.cta.cluster)

    def warp_exited(self, w):
        cta = w.cta
        cta.exited_warps += 1
        bars = cta.bars
        live = cta.live_warps()
        old = -(-bars.cta_threads // WARP) * WARP
        if live:
            bars.cta_threads = live * WARP
            for st in bars.bars:
                if st.arrived and st.expected == old:
                    st.expected = live * WARP
                    if st.arrived >= st.expected:
                        st.expected, st.arrived, st.warps, st.generation = 0, 0, set(), st.generation + 1
        else:
            cta.done = True

    def cluster_state(self, cl):
        return self._cluster_state[cl.linear]

    def cluster_check(self, cl):
        st = self._cluster_state[cl.linear]
        if st["arrived"] and st["arrived"] >= st["expected"]:
            st["phase"] += 1
            st["arrived"] = 0

    def bar_red_contribute(self, cta, bid, gen, op, preds):
        key = (cta.linear, bid, gen)
        acc = self._bar_red.get(key, 0 if op in ("popc", "or") else 1)
        if op == "popc":
            acc += int(np.count_nonzero(preds))
        elif op == "and":
            acc = acc & int(bool(preds.all()))
        else:
            acc = acc | int(bool(preds.any()))
        self._bar_red[key] = acc

    def bar_red_result(self, cta, bid, gen, op):
        v = self._bar_red.get((cta.linear, bid, gen), 0)
        if op == "popc":
            return np.full(WARP, v, np.uint32)
        return np.full(WARP, bool(v))

    # race-check hooks (vector clocks); no-ops unless racecheck=True
    def sync_release(self, w, key):
        if self.racecheck:
            self._race.release(w, key)

    def sync_acquire(self, w, key):
        if self.racecheck:
            self._race.acquire(w, key)

    def race_write(self, w, cta, idx, sem=None):
        self._race.write(w, cta, idx, sem)

    def race_read(self, w, cta, idx, sem=None):
        self._race.read(w, cta, idx, sem)

    def race_fence(self, w):
        if self.racecheck:
            self._race.fence(w)

    # carry flag of add.cc / addc (PTX §9.7.1.x extended-precision arithmetic)
    def cc_of(self, w):
        return self._cc.get(id(w), np.zeros(WARP, np.uint32))

    def set_cc(self, w, m, v):
        old = self.cc_of(w)
        self._cc[id(w)] = np.where(m, v, old).astype(np.uint32)

    # -- the copy engine --------------------------------------------------------------------------
    def issue(self, w, op, marks, ins, ctx, tx_bytes, grouped=False):
        for cta, off, n in marks:
            cta.inflight[off:off + n] += 1
            cta.inflight_ops += 1
        self._queue.append((op, marks, ins, ctx, w.label))
        self.stats.copies += 1
        self.stats.tma_bytes += int(tx_bytes) * max(1, len(marks))
        self.events += 1

    def _complete_copies(self):
        q = self._queue
        if not q:
            return
        self._queue = []
        if self.rng is not None:
            self.rng.shuffle(q)
        for entry in q:
            self._complete(entry)

    def _complete(self, entry):
        op, marks, ins, ctx, label = entry
        for cta, off, n in marks:
            cta.inflight[off:off + n] -= 1
            cta.inflight_ops -= 1
        if op.state != "complete":
            try:
                op.complete()
            except EmuError:
                raise
            except ValueError as exc:
                from .lower_async import TmaFault
                from .errors import MemoryFault
                cls = MemoryFault if isinstance(exc, TmaFault) else ExecutionError
                kw = {"cuda_error": exc.error} if isinstance(exc, TmaFault) else {}
                raise cls(f"the copy issued by {label} failed when it completed: {exc}", ctx.where(ins), **kw) from None
        self.events += 1

    def engine_sync(self):
        """Copies a ``wait_group`` completed: release their in-flight marks now."""
        keep = []
        for entry in self._queue:
            if entry[0].state == "complete":
                self._complete(entry)
            else:
                keep.append(entry)
        self._queue = keep

    # -- counters ---------------------------------------------------------------------------------
    def record_shared(self, w, lanes, addrs, nbytes, op):
        if self.counters:
            self._shared_log.append((w.pc, lanes, (addrs & np.uint64(0xFFFFFF)).astype(np.int64), nbytes, op))

    def record_global(self, w, space, lanes, addrs, nbytes):
        if self.counters and space in ("global", "generic"):
            self._global_log.append((lanes, addrs.astype(np.int64), nbytes))

    def _finish_counters(self):
        from ..memory import banks, coalescing

        st = self.stats
        st.instructions = self.retired
        by = Counter()
        for pc, c in enumerate(self.pc_counts):
            if c:
                by[self.fn.body[pc].full] += c
        st.by_opcode = dict(sorted(by.items()))
        if self._shared_log:
            groups: dict = {}
            for pc, lanes, offs, nb, op in self._shared_log:
                groups.setdefault((nb, op), []).append((pc, lanes, offs))
            per_pc: dict = {}
            for (nb, op), items in groups.items():
                width = nb if nb in (4, 8, 16) else 4
                addr = np.zeros((len(items), WARP), np.int64)
                act = np.zeros((len(items), WARP), bool)
                for i, (pc, lanes, offs) in enumerate(items):
                    o = offs if nb in (4, 8, 16) else offs - offs % 4
                    addr[i, lanes] = o
                    act[i, lanes] = True
                wf = banks.wavefronts_trace(addr, width, op, act)
                st.shared_requests += len(items)
                st.shared_wavefronts += int(wf.sum())
                for (pc, _, _), f in zip(items, wf):
                    r = per_pc.setdefault(pc, [0, 0])
                    r[0] += 1
                    r[1] += int(f)
            st.bank_conflicts = st.shared_wavefronts - st.shared_requests
            st.shared_by_pc = [(self.fn.body[pc].line, self.fn.body[pc].text, r, f)
                               for pc, (r, f) in sorted(per_pc.items())]
        if self._global_log:
            by_w: dict = {}
            for lanes, addrs, nb in self._global_log:
                by_w.setdefault(nb, []).append((lanes, addrs))
            for nb, items in by_w.items():
                full = [a for lanes, a in items if len(lanes) == WARP]
                part = [(lanes, a) for lanes, a in items if len(lanes) != WARP]
                addr = np.zeros((len(items), WARP), np.int64)
                act = np.zeros((len(items), WARP), bool)
                if full:              # whole-warp requests (lanes 0..31 in order): one copy for all of them
                    addr[:len(full)] = np.stack(full)
                    act[:len(full)] = True
                for i, (lanes, a) in enumerate(part, start=len(full)):
                    addr[i, lanes] = a
                    act[i, lanes] = True
                if nb in (1, 2, 4, 8, 16):
                    s = coalescing.sectors_trace(addr, nb, act)
                    st.global_sectors += int(s["sectors"].sum())
                st.global_requests += len(items)
        st.output = list(self.emu.output_since(self))

    # -- printf -----------------------------------------------------------------------------------
    def printf(self, w, lane, fmt_addr, buf_addr):
        from .printf import format_printf
        text = format_printf(self, w, lane, fmt_addr, buf_addr)
        self.emu.print_line(self, text)
