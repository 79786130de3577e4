"""Lesson 2 measurements: cluster occupancy, GPC grouping and placement, special registers, DSMEM, packing,
state spaces — and the SASS of the chapter's small kernel.

``python -m h100lab.measure.l02 [--out DIR] [--quick]`` writes (``h100lab.data``):

* ``l02/cluster_occupancy``: ``cuOccupancyMaxActiveClusters`` (twin of ``cudaOccupancyMaxActiveClusters``)
  for cluster shapes of 1–16 CTAs (1-D, 2-D, 3-D; sizes over 8 with the non-portable opt-in), block sizes
  32…1024 and dynamic shared-memory sizes chosen to give 1, 2, 3, 4, 5, 6, 8, 11, 16 and 32 blocks per
  SM, with the driver's blocks per SM — enough cases to tell the GPC rules of
  :mod:`h100lab.cluster.gpc` apart;
* ``l02/gpc_map``: the SMs of each cluster domain, found from ``%smid``: SMs that host CTAs of one cluster
  share a domain (a virtual GPC; a singleton TPC, which only ever hosts clusters of 2, shows up as a domain
  of its own 2 SMs — see :mod:`h100lab.cluster.gpc`);
* ``l02/placement``: every CTA of one full wave for several cluster sizes (rank, cluster, ``%smid``);
* ``l02/cluster_residency``: whether a cluster launch really runs no more than the 8 CTAs per SM that
  ``cudaOccupancyMaxActiveClusters`` counts: the same grid of spinning CTAs timed as a plain launch and as
  a cluster launch (:data:`RESIDENCY_CASES`); the time ratio counts the extra waves;
* ``l02/cluster_sregs``: every cluster special register of every CTA for several launch shapes;
* ``l02/dsmem_ring``: the DSMEM ring exchange (``l02_dsmem_ring.cu``) for clusters of 1–16 CTAs;
* ``l02/pack``: ``cvt.rn.{f16x2,bf16x2}``, ``cvt.rn.satfinite.{e4m3x2,e5m2x2}`` and ``mov.b32 {lo, hi}``
  on special and random values;
* ``l02/spaces``: ``isspacep``/``cvta`` answers for shared, peer-shared, local, global and constant addresses;
* ``l02/cluster_histogram``: ``l02_cluster_histogram.cu`` — a histogram of 64 Mi random values with global
  atomics, with one shared-memory copy per CTA, and split over the CTAs of clusters of 2–16 through DSMEM —
  timed for bin counts from 1 Ki (4 KiB) to 256 Ki (1 MiB, more than any CTA's shared memory), each kernel
  launched as one full wave (:func:`histogram_cases`, :func:`measure_histogram`);
* ``l02/asm_zoo``: what the GPU computed with each kernel of ``l02_asm_zoo.cu`` — inline PTX without
  ``volatile``, without the ``"memory"`` clobber, with ``"=r"`` on a read operand, and their corrected twins
  (:func:`measure_asm_zoo`);
* ``l02/swizzle_read``: Nsight Compute's shared-load wavefronts for the four accesses of
  ``l02_swizzle_read.cu`` — a 2-byte column and a 16-byte column of 32 rows of a 64 × 64 bf16 tile, plain and
  128-byte swizzled (:data:`SWIZZLE_MODES`, :func:`measure_swizzle_read`; needs ``ncu``);
* and, when ``cuobjdump`` or ``nvdisasm`` is on ``PATH``, ``l02/l02_axpy.sass``, ``l02/l02_dsmem_ring.sass``,
  ``l02/l02_asm_zoo.sass`` and ``l02/l02_cluster_histogram.sass`` (text) in the data folder.

``--only STEP[,STEP]`` runs some steps alone (:data:`STEPS`).

The case lists, the shared-memory sizes and the record builders are plain Python, tested without a GPU.
Runs in well under two minutes on an H200.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence
from . import begin

__all__ = ["CLUSTER_SHAPES", "BLOCK_SIZES", "BLOCKS_PER_SM_TARGETS", "smem_for_blocks", "occupancy_cases",
           "SREG_LAUNCHES", "RING_SHAPES", "PLACEMENT_SIZES", "pack_inputs", "probe_records", "ring_records",
           "spaces_records", "RESIDENCY_CASES", "residency_record", "measure_occupancy", "measure_placement",
           "measure_residency", "measure_sregs", "measure_ring",
           "measure_pack", "measure_spaces", "dump_sass", "ptx_snapshot", "main", "PROBE_FIELDS", "RING_FIELDS",
           "SPACES_FIELDS", "HIST_BINS", "HIST_CLUSTERS", "histogram_cases", "histogram_data", "measure_histogram",
           "ASM_ZOO", "asm_zoo_run", "measure_asm_zoo", "STEPS", "SASS_KERNELS", "SWIZZLE_MODES", "run_swizzle_read",
           "swizzle_records", "measure_swizzle_read"]

#: Cluster shapes asked about: every 1-D size 1..16, and 2-D / 3-D shapes of 4, 8, 9, 12 and 16 CTAs.
CLUSTER_SHAPES: tuple[tuple[int, int, int], ...] = tuple((n, 1, 1) for n in range(1, 17)) + (
    (1, 2, 1), (2, 2, 1), (1, 4, 1), (4, 2, 1), (2, 4, 1), (2, 2, 2), (3, 3, 1), (4, 3, 1), (4, 4, 1), (8, 2, 1),
    (2, 8, 1), (2, 2, 4), (1, 1, 8))
BLOCK_SIZES = (32, 128, 256, 512, 1024)
#: Blocks per SM the dynamic shared-memory sizes aim at (the thread limit may lower them).
BLOCKS_PER_SM_TARGETS = (1, 2, 3, 4, 5, 6, 8, 11, 16, 32)
QUICK = {"shapes": tuple((n, 1, 1) for n in (1, 2, 3, 4, 8, 12, 16)) + ((2, 2, 1), (4, 4, 1)),
         "blocks": (128, 1024), "targets": (1, 2, 3, 8, 32)}

SMEM_PER_SM = 233472      # sharedMemPerMultiprocessor on CC 9.0 [CPG §20.8.3]
SMEM_OPTIN = 232448       # sharedMemPerBlockOptin
RESERVED = 1024           # reservedSharedMemPerBlock
GRANULE = 128

PROBE_FIELDS = 20
RING_FIELDS = 8
SPACES_FIELDS = 13

#: (grid, cluster or None, non_portable) launches whose special registers are recorded.
SREG_LAUNCHES: tuple[tuple[tuple[int, int, int], tuple[int, int, int] | None, bool], ...] = (
    ((4, 4, 2), (2, 2, 2), False), ((8, 2, 1), (4, 2, 1), False), ((6, 3, 2), (3, 1, 2), False),
    ((16, 1, 1), (16, 1, 1), True), ((4, 2, 1), None, False), ((12, 4, 1), (1, 4, 1), False))
#: Cluster shapes of the DSMEM ring exchange (4 clusters each).
RING_SHAPES: tuple[tuple[int, int, int], ...] = tuple((n, 1, 1) for n in range(1, 17)) + (
    (2, 2, 1), (4, 2, 1), (2, 2, 2), (4, 4, 1))
#: (cluster size, blocks per SM) of the one-wave placement launches.
PLACEMENT_SIZES: tuple[tuple[int, int], ...] = ((2, 1), (4, 1), (8, 1), (16, 1), (3, 1), (6, 1), (12, 1),
                                                (4, 2), (16, 2), (8, 4))


#: (cluster size, CTAs per SM by occupancy) of the residency test: 32-thread CTAs, grid = 132 × CTAs/SM.
RESIDENCY_CASES: tuple[tuple[int, int], ...] = ((1, 8), (1, 16), (2, 16), (1, 32), (4, 32))
RESIDENCY_SPIN_NS = 100_000


def smem_for_blocks(target: int, static: int = 0) -> int:
    """Dynamic shared memory per block that makes exactly ``target`` blocks fit on an SM by shared memory
    (``floor(233472 / roundup(static + dyn + 1024, 128)) == target``, the occupancy rule of
    hopper-spec-facts §1.3), clipped to the 227 KB opt-in limit; 0 for ``target >= 32``."""
    if target < 1:
        raise ValueError("target blocks per SM is >= 1")
    if target >= 32:
        return 0
    alloc = (SMEM_PER_SM // target) // GRANULE * GRANULE      # the largest allocation that still fits target
    dyn = min(alloc - RESERVED - static, SMEM_OPTIN - static)
    if SMEM_PER_SM // (((static + dyn + RESERVED + GRANULE - 1) // GRANULE) * GRANULE) != target:
        raise ValueError(f"no shared-memory size gives exactly {target} blocks per SM")
    return dyn


def occupancy_cases(shapes=CLUSTER_SHAPES, blocks=BLOCK_SIZES, targets=BLOCKS_PER_SM_TARGETS) -> list[dict[str, Any]]:
    """Every (cluster shape, block size, dynamic shared memory) case asked of cuOccupancyMaxActiveClusters."""
    out = []
    for s in shapes:
        for b in blocks:
            for t in targets:
                out.append({"cluster": list(s), "cluster_size": s[0] * s[1] * s[2], "block_size": b,
                            "smem_target": t, "dynamic_smem": smem_for_blocks(t)})
    return out


def pack_inputs(n_random: int = 256, seed: int = 2) -> tuple[list[float], list[float]]:
    """Float pairs for ``l02_pack.cu``: rounding ties, overflows, subnormals, ±0, ±inf, NaN, then seeded
    random values over many magnitudes."""
    import numpy as np

    special = [0.0, -0.0, 1.0, -1.0, 448.0, 449.0, 464.0, 480.0, 500.0, 57344.0, 61440.0, 65504.0, 65520.0, 1e6,
               3e38, float("inf"), float("-inf"), float("nan"), 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.0 ** -16,
               2.0 ** -17, 2.0 ** -24, 2.0 ** -25, 1.00390625, 1.0078125, 3.0e-39, 0.333333343]
    rng = np.random.default_rng(seed)
    mags = 2.0 ** rng.uniform(-30, 20, n_random)
    rnd = (rng.choice([-1.0, 1.0], n_random) * mags).astype(np.float32).tolist()
    a = special + rnd
    b = list(reversed(special)) + rng.permutation(rnd).tolist()
    return [float(x) for x in a], [float(x) for x in b]


def probe_records(raw, grid, cluster, launch: str, extra: dict | None = None) -> list[dict[str, Any]]:
    """Records of ``l02_cluster_probe.cu``'s output array (one per CTA)."""
    n = grid[0] * grid[1] * grid[2]
    out = []
    for blk in range(n):
        v = [int(x) for x in raw[PROBE_FIELDS * blk: PROBE_FIELDS * (blk + 1)]]
        out.append(dict(extra or {}, launch=launch, grid=list(grid), cluster=list(cluster) if cluster else None,
                        smid=v[0], ctaid=v[1:4], clusterid=v[4:7], nclusterid=v[7:10], cluster_ctaid=v[10:13],
                        cluster_nctaid=v[13:16], cluster_ctarank=v[16], cluster_nctarank=v[17],
                        is_explicit_cluster=bool(v[18])))
    return out


def ring_records(raw, grid, cluster) -> list[dict[str, Any]]:
    """Records of ``l02_dsmem_ring.cu``'s output array (one per CTA), with the block's cluster id."""
    n = grid[0] * grid[1] * grid[2]
    out = []
    for blk in range(n):
        v = [int(x) for x in raw[RING_FIELDS * blk: RING_FIELDS * (blk + 1)]]
        x, y, z = blk % grid[0], (blk // grid[0]) % grid[1], blk // (grid[0] * grid[1])
        cid = (x // cluster[0], y // cluster[1], z // cluster[2])
        out.append({"cluster": list(cluster), "grid": list(grid), "block": blk, "ctaid": [x, y, z],
                    "clusterid": list(cid), "received": v[0], "sent": v[1], "local_addr": v[2], "mapa_addr": v[3],
                    "mapa_owner": v[4], "counter": v[5], "rank": v[6], "nrank": v[7]})
    return out


def spaces_records(raw, nblocks: int, smem_static: int) -> list[dict[str, Any]]:
    """Records of ``l02_spaces.cu`` (one per CTA). Bits: 1 .shared::cta, 2 .shared::cluster, 4 .global,
    8 .local, 16 .const."""
    out = []
    for blk in range(nblocks):
        v = [int(x) for x in raw[SPACES_FIELDS * blk: SPACES_FIELDS * (blk + 1)]]
        out.append({"block": blk, "shared": v[0], "local": v[1], "global": v[2], "const": v[3], "peer_shared": v[4],
                    "shared_offset": v[5], "cvta_round_trip": bool(v[6]), "shared_generic": v[7] | (v[8] << 32),
                    "peer_generic": v[9] | (v[10] << 32), "local_generic": v[11] | (v[12] << 32),
                    "static_smem": smem_static})
    return out


def residency_record(cluster_size: int, blocks_per_sm: int, api_clusters: int, grid: int, plain_ms: float,
                     cluster_ms: float, spin_ns: int = RESIDENCY_SPIN_NS) -> dict[str, Any]:
    """One ``l02/cluster_residency`` record: the same ``grid`` CTAs (each spinning ``spin_ns``) as a plain
    launch (one wave when ``grid = SMs × blocks_per_sm``) and as a cluster launch; ``waves`` is the measured
    ratio of the two times, rounded — how many waves the cluster launch needed."""
    ratio = cluster_ms / plain_ms if plain_ms > 0 else float("nan")
    return {"cluster_size": cluster_size, "blocks_per_sm": blocks_per_sm, "api_clusters": api_clusters,
            "grid": grid, "block": 32, "spin_ns": spin_ns, "plain_ms": plain_ms, "cluster_ms": cluster_ms,
            "ratio": ratio, "waves": round(ratio) if ratio == ratio else None}


# ------------------------------------------------------------------------------------------------
# GPU parts


def _tqdm(it, **kw):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return it
    return tqdm(it, **kw)


def _probe_kernel():
    from .. import cuda

    k = cuda.compile_kernel("l02_cluster_probe").function("cluster_probe")
    k.set_max_dynamic_shared_memory(SMEM_OPTIN)
    k.allow_non_portable_cluster_size(True)
    return k


def measure_occupancy(cases: Sequence[dict[str, Any]], progress: bool = True) -> list[dict[str, Any]]:
    """Ask the driver for blocks per SM and max active clusters in every case (driver errors recorded by name)."""
    from .. import cuda
    from ..cuda.errors import DriverError

    k = _probe_kernel()
    a = k.attributes()
    out = []
    for c in _tqdm(cases, desc="cluster occupancy", disable=not progress):
        r = dict(c, num_regs=a["num_regs"], static_smem=a["shared_size_bytes"])
        try:
            r["blocks_per_sm"] = cuda.occupancy_max_active_blocks(k, c["block_size"], c["dynamic_smem"])
        except DriverError as exc:
            r["blocks_per_sm"], r["blocks_error"] = None, exc.result
        try:
            r["clusters"] = cuda.occupancy_max_active_clusters(k, c["cluster"], c["block_size"], c["cluster"],
                                                               c["dynamic_smem"])
        except DriverError as exc:
            r["clusters"], r["api_error"] = None, exc.result
        out.append(r)
    return out


def _run_probe(k, grid, block, cluster, smem, spin_ns=0):
    import numpy as np

    from .. import cuda

    n = grid[0] * grid[1] * grid[2]
    buf = cuda.zeros(PROBE_FIELDS * n, np.uint32)
    cuda.launch(k, grid, block, buf, np.uint32(spin_ns), shared_mem=smem, cluster=cluster)
    cuda.synchronize()
    return buf.to_host()


def measure_placement(occupancy: Sequence[dict[str, Any]] | None = None, waves: int = 6,
                      progress: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One resident wave per (cluster size, blocks/SM) of :data:`PLACEMENT_SIZES` (CTAs spin 200 µs so the
    wave is on the GPU together), plus ``waves`` more waves of each to see every SM; returns
    ``(placement records of the first waves, gpc_map records)``."""
    from .. import cuda
    from ..cluster.gpc import gpcs_from_clusters

    k = _probe_kernel()
    placement: list[dict[str, Any]] = []
    clusters_seen: list[list[int]] = []
    for size, bps in _tqdm(PLACEMENT_SIZES, desc="placement", disable=not progress):
        smem = smem_for_blocks(bps)
        cap = cuda.occupancy_max_active_clusters(k, size, 128, size, smem)
        if cap <= 0:
            continue
        grid = (size * cap, 1, 1)
        raw = _run_probe(k, grid, 128, (size, 1, 1), smem, spin_ns=200_000)
        recs = probe_records(raw, grid, (size, 1, 1), f"wave c{size} b{bps}",
                             {"cluster_size": size, "blocks_per_sm": bps, "api_clusters": cap})
        placement += recs
        grid_more = (size * cap * waves, 1, 1)
        more = probe_records(_run_probe(k, grid_more, 128, (size, 1, 1), smem, spin_ns=2_000), grid_more,
                             (size, 1, 1), "more")
        for recs_ in (recs, more):
            by: dict[int, list[int]] = {}
            for r in recs_:
                by.setdefault(r["clusterid"][0], []).append(r["smid"])
            clusters_seen += list(by.values())
    groups = gpcs_from_clusters(clusters_seen)
    gmap = [{"gpc": i, "sms": g, "sm_count": len(g)} for i, g in enumerate(groups)]
    return placement, gmap


def measure_residency(cases=RESIDENCY_CASES, spin_ns: int = RESIDENCY_SPIN_NS) -> list[dict[str, Any]]:
    """For each (cluster size, CTAs/SM) of :data:`RESIDENCY_CASES`: time ``132 × CTAs/SM`` spinning 32-thread
    CTAs as a plain launch and as a cluster launch (median of 5), with the driver's answers."""
    import numpy as np

    from .. import cuda

    k = _probe_kernel()
    sms = cuda.device_properties(0)["multiProcessorCount"]
    out = []
    for size, bps in cases:
        smem = smem_for_blocks(bps)
        got = cuda.occupancy_max_active_blocks(k, 32, smem)
        api = cuda.occupancy_max_active_clusters(k, size, 32, size, smem)
        grid = sms * got
        buf = cuda.zeros(PROBE_FIELDS * grid, np.uint32)
        t = {}
        for name, cl in (("plain", None), ("cluster", (size, 1, 1))):
            t[name] = cuda.time_kernel(k, grid, 32, buf, np.uint32(spin_ns), shared_mem=smem, cluster=cl,
                                       warmup=1, repeats=5).median_ms
        out.append(residency_record(size, got, api, grid, t["plain"], t["cluster"], spin_ns))
    return out


def measure_sregs(launches=SREG_LAUNCHES) -> list[dict[str, Any]]:
    """Special registers of every CTA of each launch of :data:`SREG_LAUNCHES`."""
    k = _probe_kernel()
    out = []
    for grid, cluster, nonport in launches:
        raw = _run_probe(k, grid, 64, cluster, 0)
        name = f"grid {grid} cluster {cluster}" if cluster else f"grid {grid} (no cluster)"
        out += probe_records(raw, grid, cluster, name, {"non_portable": nonport})
    return out


def measure_ring(shapes=RING_SHAPES, clusters: int = 4) -> list[dict[str, Any]]:
    """The DSMEM ring exchange for each cluster shape (``clusters`` clusters along x)."""
    import numpy as np

    from .. import cuda

    k = cuda.compile_kernel("l02_dsmem_ring").function("dsmem_ring")
    k.allow_non_portable_cluster_size(True)
    out = []
    for s in shapes:
        grid = (s[0] * clusters, s[1], s[2])
        n = grid[0] * grid[1] * grid[2]
        buf = cuda.zeros(RING_FIELDS * n, np.uint32)
        cuda.launch(k, grid, 64, buf, cluster=s)
        cuda.synchronize()
        out += ring_records(buf.to_host(), grid, s)
    return out


def measure_pack() -> list[dict[str, Any]]:
    """``l02_pack.cu`` on :func:`pack_inputs`: one record per input pair with the five packed results."""
    import numpy as np

    from .. import cuda

    a, b = pack_inputs()
    n = len(a)
    k = cuda.compile_kernel("l02_pack").function("pack_probe")
    da, db = cuda.to_device(np.asarray(a, np.float32)), cuda.to_device(np.asarray(b, np.float32))
    out_d = cuda.zeros(5 * n, np.uint32)
    cuda.launch(k, (n + 127) // 128, 128, da, db, out_d, np.int32(n))
    cuda.synchronize()
    raw = out_d.to_host()
    a32 = np.asarray(a, np.float32).view(np.uint32)
    b32 = np.asarray(b, np.float32).view(np.uint32)
    return [{"a_bits": int(a32[i]), "b_bits": int(b32[i]), "f16x2": int(raw[5 * i]), "bf16x2": int(raw[5 * i + 1]),
             "e4m3x2": int(raw[5 * i + 2]), "e5m2x2": int(raw[5 * i + 3]), "mov_b32": int(raw[5 * i + 4])}
            for i in range(n)]


def measure_spaces(clusters: int = 2) -> list[dict[str, Any]]:
    """``l02_spaces.cu`` in ``clusters`` clusters of 2 CTAs."""
    import numpy as np

    from .. import cuda

    k = cuda.compile_kernel("l02_spaces").function("spaces_probe")
    n = 2 * clusters
    g = cuda.zeros(n, np.uint32)
    out_d = cuda.zeros(SPACES_FIELDS * n, np.uint32)
    cuda.launch(k, n, 32, g, out_d, np.int32(3), cluster=2)
    cuda.synchronize()
    return spaces_records(out_d.to_host(), n, k.attributes()["shared_size_bytes"])


#: the kernels whose SASS the measurement disassembles
SASS_KERNELS = ("l02_axpy", "l02_dsmem_ring", "l02_asm_zoo", "l02_cluster_histogram")


def dump_sass(folder: Path, kernels: Sequence[str] = SASS_KERNELS) -> list[Path]:
    """Disassemble the kernels' cubins with ``cuobjdump -sass`` (else ``nvdisasm``) when either is on PATH;
    writes ``<folder>/<kernel>.sass``. Returns the files written (none without the tools)."""
    from .. import cuda

    tool = shutil.which("cuobjdump") or shutil.which("nvdisasm")
    if not tool:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in kernels:
            cubin = Path(tmp) / f"{name}.cubin"
            cubin.write_bytes(cuda.compile_kernel(name).cubin)
            cmd = [tool, "-sass", str(cubin)] if tool.endswith("cuobjdump") else [tool, "-c", str(cubin)]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if res.returncode == 0 and res.stdout.strip():
                p = folder / f"{name}.sass"
                p.write_text(f"// {' '.join([Path(tool).name] + cmd[1:-1])} {name}.cubin (NVRTC {cuda.nvrtc_version()}, "
                             f"sm_90a)\n" + res.stdout)
                written.append(p)
    return written


# ------------------------------------------------------------------------------------------------
# The DSMEM histogram (l02_cluster_histogram.cu) and the asm bug zoo (l02_asm_zoo.cu)

HIST_N = 1 << 26                   # 64 Mi values, 256 MiB
HIST_BINS = (1024, 16384, 57344, 65536, 131072, 262144)
HIST_CLUSTERS = (2, 4, 8, 16)
HIST_BLOCK = 512


def histogram_cases(bins: Sequence[int] = HIST_BINS, clusters: Sequence[int] = HIST_CLUSTERS,
                    optin: int = SMEM_OPTIN) -> list[dict[str, Any]]:
    """Every (kernel, cluster size, bins) the histogram measurement times: ``global`` for every bin count,
    ``shared`` when all bins fit one CTA (4 bytes each within ``optin``), ``cluster`` for each cluster size
    whose per-CTA slice ``ceil(bins / c)`` fits. ``smem`` is the dynamic shared memory of one CTA."""
    out = []
    for nb in bins:
        out.append({"kernel": "global", "cluster": 1, "nbins": nb, "smem": 0})
        if 4 * nb <= optin:
            out.append({"kernel": "shared", "cluster": 1, "nbins": nb, "smem": 4 * nb})
        for c in clusters:
            per = -(-nb // c)
            if 4 * per <= optin and nb >= c:
                out.append({"kernel": "cluster", "cluster": c, "nbins": nb, "smem": 4 * per})
    return out


def histogram_data(n: int = HIST_N, nbins: int = 1024, seed: int = 5):
    """The values the histogram counts: ``n`` uniform random integers below ``nbins`` (uint32), seeded."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, nbins, n, dtype=np.uint32)


def measure_histogram(cases: Sequence[dict[str, Any]] | None = None, n: int = HIST_N,
                      progress: bool = True) -> list[dict[str, Any]]:
    """Time every case (one full wave of CTAs: the driver's blocks per SM × SMs, or its active clusters ×
    cluster size; each thread grid-strides over the data): records add ``grid``, ``block``, ``median_ms``,
    ``min_ms``, ``gelems`` (10^9 values counted per second) and ``correct`` (the counts equal NumPy's)."""
    import numpy as np

    from .. import cuda

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(x, **_):
            return x
    cases = list(cases) if cases is not None else histogram_cases()
    prog = cuda.compile_kernel("l02_cluster_histogram")
    sms = int(cuda.device_properties(0)["multiProcessorCount"])
    out = []
    by_bins: dict[int, list] = {}
    for c in cases:
        by_bins.setdefault(c["nbins"], []).append(c)
    for nb, group in tqdm(by_bins.items(), desc="histogram", disable=not progress):
        data = histogram_data(n, nb)
        ref = np.bincount(data, minlength=nb).astype(np.uint32)
        d = cuda.to_device(data)
        hist = cuda.zeros(nb, np.uint32)
        for c in group:
            k = prog.function("hist_" + c["kernel"])
            if c["smem"] > 48 * 1024:
                k.set_max_dynamic_shared_memory(c["smem"])
            args = (d, np.int64(n), hist) + (() if c["kernel"] == "global" else (np.int32(nb),))
            if c["kernel"] == "cluster":
                if c["cluster"] > 8:
                    k.allow_non_portable_cluster_size(True)
                clusters = cuda.occupancy_max_active_clusters(k, c["cluster"] * 8, HIST_BLOCK, c["cluster"], c["smem"])
                grid, cl = clusters * c["cluster"], c["cluster"]
            else:
                grid, cl = cuda.occupancy_max_active_blocks(k, HIST_BLOCK, c["smem"]) * sms, None
            if grid == 0:
                out.append(dict(c, grid=0, block=HIST_BLOCK, correct=None, median_ms=None, min_ms=None, gelems=None))
                continue
            hist.copy_from_host(np.zeros(nb, np.uint32))
            cuda.launch(k, grid, HIST_BLOCK, *args, shared_mem=c["smem"], cluster=cl)
            cuda.synchronize()
            ok = bool((hist.to_host() == ref).all())
            t = cuda.time_kernel(k, grid, HIST_BLOCK, *args, shared_mem=c["smem"], cluster=cl, warmup=1, repeats=5)
            out.append(dict(c, n=n, grid=grid, block=HIST_BLOCK, median_ms=t.median_ms, min_ms=t.min_ms,
                            gelems=n / (t.median_ms * 1e6), correct=ok))
        d.free()
        hist.free()
    return out


#: the asm bug zoo: (kernel, its corrected twin, what the bug is)
ASM_ZOO = (("count_dead", "count_live", "no volatile"),
           ("reread_stale", "reread_fresh", 'no "memory" clobber'),
           ("accumulate_write_only", "accumulate_read_write", '"=r" on an operand that is read'))


def asm_zoo_run(be, kernel: str) -> "np.ndarray":
    """Run one kernel of ``l02_asm_zoo.cu`` on backend ``be`` (``h100lab.emu`` or ``h100lab.cuda``) with fixed
    inputs and return what it computed: the counter after 2 × 64 increments (``count_*``), each thread's
    1000·(new − old) + (old − before) for 32 threads (``reread_*``: 1000 when right), each thread's
    100·t + 5 for 32 threads (``accumulate_*``)."""
    import numpy as np

    k = be.compile_kernel("l02_asm_zoo").function(kernel)
    if kernel.startswith("count"):
        c = be.zeros(1, np.uint32)
        be.launch(k, 2, 64, c)
        be.synchronize()
        return c.to_host()
    if kernel.startswith("reread"):
        p, o = be.to_device(np.arange(32, dtype=np.uint32)), be.zeros(32, np.uint32)
        be.launch(k, 1, 32, p, o)
        be.synchronize()
        return o.to_host()
    x, acc = be.to_device(np.full(32, 5, np.int32)), be.to_device(100 * np.arange(32, dtype=np.int32))
    be.launch(k, 1, 32, x, acc)
    be.synchronize()
    return acc.to_host()


def measure_asm_zoo() -> list[dict[str, Any]]:
    """Every kernel of :data:`ASM_ZOO` run on the GPU: ``{"kernel", "twin_of", "bug", "output"}``."""
    from .. import cuda

    out = []
    for bad, good, bug in ASM_ZOO:
        for name, role in ((bad, "bug"), (good, "fix")):
            out.append({"kernel": name, "role": role, "bug": bug, "output": asm_zoo_run(cuda, name).tolist()})
    return out


#: the accesses of ``l02_swizzle_read.cu``: mode -> (what lane t reads, width in bytes, swizzled)
SWIZZLE_MODES = {0: ("2 B column, plain", 2, False), 1: ("2 B column, SWIZZLE_128B", 2, True),
                 2: ("16 B column, plain", 16, False), 3: ("16 B column, SWIZZLE_128B", 16, True)}
SWIZZLE_METRIC = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"


def run_swizzle_read() -> int:
    """Launch ``swizzle_read`` once per mode of :data:`SWIZZLE_MODES` (what Nsight Compute profiles)."""
    import numpy as np

    from .. import cuda

    k = cuda.compile_kernel("l02_swizzle_read").function("swizzle_read")
    out = cuda.zeros(32, np.uint32)
    for mode in SWIZZLE_MODES:
        cuda.launch(k, 1, 32, np.int32(mode), out)
        cuda.synchronize()
        if out.to_host().tolist() != [64 * t for t in range(32)]:
            raise RuntimeError(f"swizzle_read mode {mode} read the wrong elements: {out.to_host()[:8]}")
    return len(SWIZZLE_MODES)


def swizzle_records(launches: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``l02/swizzle_read`` records from parsed Nsight Compute launches (one per mode, in order)."""
    mine = [x for x in launches if "swizzle_read" in x["kernel"]]
    if len(mine) != len(SWIZZLE_MODES):
        raise ValueError(f"expected {len(SWIZZLE_MODES)} launches of swizzle_read, Nsight Compute reported {len(mine)}")
    return [{"mode": m, "access": SWIZZLE_MODES[m][0], "width": SWIZZLE_MODES[m][1], "swizzled": SWIZZLE_MODES[m][2],
             "wavefronts": int(round(x["metrics"][SWIZZLE_METRIC]))} for m, x in zip(SWIZZLE_MODES, mine)]


def measure_swizzle_read(ncu: str | None = None) -> list[dict[str, Any]]:
    """Run :func:`run_swizzle_read` under Nsight Compute (clocks left alone) and return its records."""
    from .l01 import find_ncu, parse_ncu_csv

    ncu = ncu or find_ncu()
    if ncu is None:
        raise FileNotFoundError("Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute")
    cmd = [ncu, "--clock-control", "none", "--kernel-name", "swizzle_read", "--metrics", SWIZZLE_METRIC, "--csv",
           sys.executable, "-m", "h100lab.measure.l02", "--swizzle-run"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"ncu failed ({res.returncode}): {res.stderr[-2000:]}{res.stdout[-2000:]}")
    return swizzle_records(parse_ncu_csv(res.stdout))


#: the steps ``--only`` can name, in the order a full run takes them
STEPS = ("occupancy", "placement", "residency", "sregs", "ring", "pack", "spaces", "histogram", "asm", "swizzle",
         "sass")


def ptx_snapshot(name: str = "l02_axpy") -> str:
    """The PTX NVRTC emits for ``kernels/<name>.cu`` without the debug-line directives (``.loc``/``.file``,
    whose file paths depend on the machine): the text committed as ``h100lab/cuda/snapshots/<name>.ptx``."""
    from .. import cuda

    ptx = cuda.compile_kernel(name).ptx
    keep = [ln for ln in ptx.splitlines() if not ln.strip().startswith((".loc", ".file"))]
    text = "\n".join(keep).strip() + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def _arguments(ap) -> None:
    ap.add_argument("--only", help=f"comma-separated steps to run alone: {', '.join(STEPS)}")
    ap.add_argument("--swizzle-run", action="store_true",
                    help="launch the swizzle_read modes and exit (what Nsight Compute profiles)")


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l02", argv, __doc__.splitlines()[0], "a small subset of the occupancy cases", _arguments)
    if s is None:
        return 2
    args, meta = s.args, s.meta
    if args.swizzle_run:
        run_swizzle_read()
        return 0
    only = set(STEPS) if not args.only else {x.strip() for x in args.only.split(",") if x.strip()}
    if only - set(STEPS):
        print(f"--only: unknown steps {sorted(only - set(STEPS))}; choose from {', '.join(STEPS)}", file=sys.stderr)
        return 2
    from .. import data
    from ..validation import l02 as checks

    got: dict[str, Any] = {}
    if "occupancy" in only:
        cases = (occupancy_cases(QUICK["shapes"], QUICK["blocks"], QUICK["targets"]) if args.quick
                 else occupancy_cases())
        got["occ"] = measure_occupancy(cases)
        data.write("l02/cluster_occupancy", got["occ"], meta)
    if "placement" in only:
        got["placement"], got["gmap"] = measure_placement()
        data.write("l02/gpc_map", got["gmap"], meta)
        data.write("l02/placement", got["placement"], meta)
    for step, key, name, fn in (("residency", "residency", "l02/cluster_residency", measure_residency),
                                ("sregs", "sregs", "l02/cluster_sregs", measure_sregs),
                                ("ring", "ring", "l02/dsmem_ring", measure_ring),
                                ("pack", "pack", "l02/pack", measure_pack),
                                ("spaces", "spaces", "l02/spaces", measure_spaces)):
        if step in only:
            got[key] = fn()
            data.write(name, got[key], meta)
    if "histogram" in only:
        hist = measure_histogram()
        data.write("l02/cluster_histogram", hist, meta)
        res = checks.check_histogram(hist)
        print(f"cluster histogram: {res.cases} cases, {res.mismatches} mismatches — {res.note}")
    if "asm" in only:
        zoo = measure_asm_zoo()
        data.write("l02/asm_zoo", zoo, meta)
        res = checks.check_asm_zoo(zoo)
        print(f"asm zoo: {res.cases} kernels, {res.mismatches} mismatches — {res.note}")
    if "swizzle" in only:
        from .l01 import find_ncu

        if find_ncu():
            sw = measure_swizzle_read()
            data.write("l02/swizzle_read", sw, meta)
            res = checks.check_swizzle_read(sw)
            print(f"swizzle read: {res.cases} accesses, {res.mismatches} mismatches — {res.note}")
        else:
            print("swizzle read: skipped (Nsight Compute's ncu not found)")
    if "sass" in only:
        for p in dump_sass(data.data_dir() / "l02"):
            print(f"wrote {p}")
    if {"occupancy", "placement", "sregs", "ring", "pack", "spaces"} <= only:
        lay = checks.measured_grouping(got["gmap"])
        print(f"cluster domains (SMs, from %smid): virtual GPCs {lay.vgpc_sms} + {lay.singleton_tpcs} singleton TPCs")
        for title, res in checks.run_on(occ=got["occ"], gmap=got["gmap"], placement=got["placement"],
                                        sregs=got["sregs"], ring=got["ring"], pack=got["pack"], spaces=got["spaces"],
                                        residency=got.get("residency")):
            print(f"{title}: {res.cases} cases, {res.mismatches} mismatches{' — ' + res.note if res.note else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
