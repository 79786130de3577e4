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
* and, when ``cuobjdump`` or ``nvdisasm`` is on ``PATH``, ``l02/l02_axpy.sass`` and
  ``l02/l02_dsmem_ring.sass`` (text) in the data folder.

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
           "SPACES_FIELDS"]

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


def dump_sass(folder: Path, kernels: Sequence[str] = ("l02_axpy", "l02_dsmem_ring")) -> list[Path]:
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


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l02", argv, __doc__.splitlines()[0], "a small subset of the occupancy cases")
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import data

    cases = (occupancy_cases(QUICK["shapes"], QUICK["blocks"], QUICK["targets"]) if args.quick
             else occupancy_cases())
    occ = measure_occupancy(cases)
    data.write("l02/cluster_occupancy", occ, meta)
    placement, gmap = measure_placement()
    data.write("l02/gpc_map", gmap, meta)
    data.write("l02/placement", placement, meta)
    residency = measure_residency()
    data.write("l02/cluster_residency", residency, meta)
    sregs = measure_sregs()
    data.write("l02/cluster_sregs", sregs, meta)
    ring = measure_ring()
    data.write("l02/dsmem_ring", ring, meta)
    pack = measure_pack()
    data.write("l02/pack", pack, meta)
    spaces = measure_spaces()
    data.write("l02/spaces", spaces, meta)
    for p in dump_sass(data.data_dir() / "l02"):
        print(f"wrote {p}")
    from ..validation import l02 as checks

    lay = checks.measured_grouping(gmap)
    print(f"cluster domains (SMs, from %smid): virtual GPCs {lay.vgpc_sms} + {lay.singleton_tpcs} singleton TPCs")
    for title, res in checks.run_on(occ=occ, gmap=gmap, placement=placement, sregs=sregs, ring=ring, pack=pack,
                                    spaces=spaces, residency=residency):
        print(f"{title}: {res.cases} cases, {res.mismatches} mismatches{' — ' + res.note if res.note else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
