"""Lesson 1 model-vs-silicon checks: device properties, occupancy, shared-memory bank latency.

Datasets come from ``python -m h100lab.measure.l01`` (see that module). Each check returns a
:class:`~h100lab.validation.CheckResult`; :func:`run_on` runs them on in-memory records (used by the
measurement script to report at once).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..data import Dataset
from ..occupancy import occupancy
from ..specs import H200_SXM, compare, from_properties, get
from . import CheckResult, silicon_check

__all__ = ["check_device", "device_rows", "check_occupancy", "check_bank_latency", "check_bank_wavefronts", "model_wavefronts",
           "bank_wavefront_table", "bank_wavefront_report", "BANK_WAVEFRONT_SHOWN", "model_blocks", "run_on", "reference_spec", "hardware_report",
           "LADDER_RUNGS", "ladder_rows", "check_ladder", "roofline_rows", "check_roofline_kernels", "ladder_report"]

_SPEC_FIELDS = ("sm_count", "l2_bytes", "memory_bus_bits", "memory_clock_mhz", "boost_clock_mhz", "warp_size",
                "max_threads_per_block", "max_threads_per_sm", "max_warps_per_sm", "max_blocks_per_sm",
                "regs_per_sm", "regs_per_block", "smem_per_sm", "smem_per_block_optin", "smem_per_block_default",
                "smem_reserved_per_block", "constant_bytes", "compute_capability", "hbm_bytes",
                "persisting_l2_max_bytes", "access_policy_max_window_bytes")


def reference_spec(props: dict[str, Any]):
    """The product spec a device should match: by name (H200, H100 PCIe, else H100 SXM)."""
    name = str(props.get("name", "")).upper()
    if "H200" in name:
        return H200_SXM
    return get("H100_PCIE") if "PCIE" in name else get("H100_SXM")


def device_rows(props: dict[str, Any], ref=None) -> list[dict[str, Any]]:
    """The comparison rows of one device: every field of the spec table the reference product states
    (a field the reference leaves ``None``, not measured for that product, is skipped) and the HBM bandwidth
    within 1 %."""
    ref = ref or reference_spec(props)
    dev = from_properties(props, ref)
    fields = tuple(f for f in _SPEC_FIELDS if getattr(ref, f) is not None)
    return compare(dev, ref, fields) + compare(dev, ref, ("hbm_bandwidth",), rtol=0.01)


def check_device(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every ``cudaDeviceProp`` number the spec table states equals the spec's (HBM bandwidth within 1 %);
    ``totalGlobalMem``, ``persistingL2CacheMaxSize`` and ``accessPolicyMaxWindowSize`` included."""
    bad, cases = [], 0
    for props in records:
        rows = device_rows(props)
        cases += len(rows)
        bad += [dict(r, device=props.get("name")) for r in rows if not r["equal"]]
    return CheckResult(cases, len(bad), bad[:5], note=f"compared with {reference_spec(records[0]).name}"
                       if records else "")


def model_blocks(r: dict[str, Any]) -> int:
    """The model's active blocks per SM for one ``l01/occupancy`` record."""
    return occupancy(r["block_size"], r["num_regs"], r["dynamic_smem"], H200_SXM, static_smem=r["static_smem"],
                     max_dynamic_smem=r["attr_max_dynamic_smem"], carveout=r["carveout"]).active_blocks


def check_occupancy(records: Sequence[dict[str, Any]]) -> CheckResult:
    """``occupancy(...)`` equals ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` for every record
    (a driver error counts as 0 blocks)."""
    bad = []
    for r in records:
        api = 0 if r.get("api_blocks") is None else r["api_blocks"]
        m = model_blocks(r)
        if m != api:
            bad.append({k: r[k] for k in ("block_size", "num_regs", "static_smem", "dynamic_smem",
                                          "attr_max_dynamic_smem", "carveout")} | {"api": api, "model": m})
    regs = sorted({r["num_regs"] for r in records})
    errors = sum(1 for r in records if r.get("api_blocks") is None)
    return CheckResult(len(records), len(bad), bad[:5],
                       note=f"register counts {regs[0]}..{regs[-1]} ({len(regs)} kernels)"
                            + (f"; {errors} driver errors counted as 0" if errors else "") if records else "")


def check_bank_latency(records: Sequence[dict[str, Any]], tolerance: float = 0.5) -> CheckResult:
    """Latency orders as the model's wavefronts, within each access width.

    A record mismatches when it is faster, by more than ``tolerance`` cycles per load, than a record
    of the same width with fewer wavefronts (an inversion), or when the width's most conflicted
    pattern is not slower than its least conflicted one by at least one cycle per extra 8 wavefronts
    (bank conflicts that cost nothing would contradict the model).
    """
    bad = []
    for w in sorted({r["width"] for r in records}):
        rs = [r for r in records if r["width"] == w]
        for r in rs:
            fewer = [q["cycles_per_load"] for q in rs if q["model_wavefronts"] < r["model_wavefronts"]]
            if fewer and r["cycles_per_load"] < max(fewer) - tolerance:
                bad.append({"name": r["name"], "width": w, "wavefronts": r["model_wavefronts"],
                            "cycles": r["cycles_per_load"], "slowest_with_fewer": max(fewer)})
        lo = min(rs, key=lambda r: (r["model_wavefronts"], r["cycles_per_load"]))
        hi = max(rs, key=lambda r: (r["model_wavefronts"], -r["cycles_per_load"]))
        extra = hi["model_wavefronts"] - lo["model_wavefronts"]
        if extra and hi["cycles_per_load"] - lo["cycles_per_load"] < extra / 8:
            bad.append({"name": hi["name"], "width": w, "wavefronts": hi["model_wavefronts"],
                        "cycles": hi["cycles_per_load"], "least_conflicted": lo["cycles_per_load"]})
    one = [r["cycles_per_load"] for r in records if r["width"] == 4 and r["model_wavefronts"] == 1]
    extra = [(r["cycles_per_load"] - min(one)) / (r["model_wavefronts"] - 1) for r in records
             if one and r["width"] == 4 and r["model_wavefronts"] > 1]
    note = (f"32-bit loads: {min(one):.1f} cycles at 1 wavefront, about {sorted(extra)[len(extra) // 2]:.1f} "
            "more per extra wavefront") if one and extra else ""
    return CheckResult(len(records), len(bad), bad[:5], note=note)


def model_wavefronts(r: dict[str, Any]):
    """The model's :class:`~h100lab.memory.banks.BankAccess` for one ``l01/bank_wavefronts`` record
    (``active`` is the 32-bit lane mask, bit t = lane t)."""
    from ..memory.banks import wavefronts

    return wavefronts(r["offsets"], r["width"], r["op"], active=[bool((r["active"] >> t) & 1) for t in range(32)])


def check_bank_wavefronts(records: Sequence[dict[str, Any]]) -> CheckResult:
    """``wavefronts(offsets, width, op)`` equals Nsight Compute's
    ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`` exactly for every record
    (hopper-spec-facts §2). The note also counts the records whose ``l1tex__data_bank_conflicts``
    counter equals the model's ``conflicts`` (wavefronts - ideal) — informative, not checked."""
    bad, same_conflicts = [], 0
    for r in records:
        m = model_wavefronts(r)
        same_conflicts += int(m.conflicts == r["bank_conflicts"])
        if int(m) != r["wavefronts"] or r.get("other_op_wavefronts", 0) != 0:
            bad.append({"name": r["name"], "width": r["width"], "op": r["op"], "active": hex(r["active"]),
                        "model": int(m), "measured": r["wavefronts"],
                        "other_op": r.get("other_op_wavefronts", 0)})
    note = (f"{len({(r['name'], r['width']) for r in records})} patterns x ld/st; bank-conflict counter equals "
            f"the model's conflicts in {same_conflicts}/{len(records)}") if records else ""
    return CheckResult(len(records), len(bad), bad[:5], note=note)


def bank_wavefront_table(records: Sequence[dict[str, Any]], names: Sequence[str] | None = None) -> list[dict]:
    """Rows (pattern, width, op, model, measured wavefronts, conflicts) for the chapter's table."""
    out = []
    for r in records:
        if names is not None and r["name"] not in names:
            continue
        m = model_wavefronts(r)
        out.append({"pattern": r["name"], "width (B)": r["width"], "op": r["op"],
                    "model wavefronts": int(m), "ncu wavefronts": r["wavefronts"],
                    "model conflicts": m.conflicts, "ncu bank conflicts": r["bank_conflicts"]})
    return out


#: patterns the chapter's table shows (one per rule: strides, broadcast, pairs, phases, padding, swizzle)
BANK_WAVEFRONT_SHOWN = ("stride 1 words", "stride 2 words", "column of a 32x32 tile", "column, padded to 33 words",
                        "stride 1 x 8 B", "8 B pairs (t^1) share", "8 B broadcast", "stride 1 x 16 B",
                        "16 B pairs (t^1) share", "16 B column of 128 B rows", "16 B column, SWIZZLE_128B",
                        "8 B pairs share, odd lanes off", "16 B stride 1, odd lanes off")


def bank_wavefront_report(live: bool | None = None) -> dict[str, Any]:
    """Model vs Nsight Compute wavefronts for the chapter, from the best source available.

    The committed ``l01/bank_wavefronts`` dataset when present; else, when ``live`` (default: a GPU and
    Nsight Compute's ``ncu`` are both present), a fresh measurement; else ``source`` None with the
    ``command`` that makes the dataset. Returns ``{"source", "where", "records", "check", "rows",
    "command"}``; ``rows`` are :func:`bank_wavefront_table` rows of :data:`BANK_WAVEFRONT_SHOWN`.
    """
    from .. import data

    command = "python -m h100lab.measure.l01 --bank-wavefronts"
    if data.available("l01/bank_wavefronts"):
        ds = data.load("l01/bank_wavefronts")
        recs, where, source = ds.records, ds.describe(), "dataset"
    else:
        from .. import cuda
        from ..measure import l01 as m

        if live is None:
            live = cuda.available() and m.find_ncu() is not None
        if not live:
            return {"source": None, "command": command}
        recs, meta = m.measure_bank_wavefronts(cuda.run_metadata(command))
        where, source = f"this GPU ({meta['gpu']}, live, {meta['ncu_version']})", "live"
    return {"source": source, "where": where, "records": recs, "check": check_bank_wavefronts(recs),
            "rows": bank_wavefront_table(recs, BANK_WAVEFRONT_SHOWN), "command": command}


@silicon_check("Device properties equal the spec table", lesson=1, dataset="l01/device_properties")
def _device(ds: Dataset) -> CheckResult:
    return check_device(ds.records)


@silicon_check("Occupancy: model equals cudaOccupancyMaxActiveBlocksPerMultiprocessor", lesson=1,
               dataset="l01/occupancy")
def _occupancy(ds: Dataset) -> CheckResult:
    return check_occupancy(ds.records)


@silicon_check("Shared-memory load latency orders as the model's wavefronts", lesson=1, dataset="l01/bank_latency")
def _banks(ds: Dataset) -> CheckResult:
    return check_bank_latency(ds.records)


@silicon_check("Shared-memory wavefronts: model equals Nsight Compute's counters", lesson=1,
               dataset="l01/bank_wavefronts")
def _bank_wavefronts(ds: Dataset) -> CheckResult:
    return check_bank_wavefronts(ds.records)


def run_on(device: Sequence[dict], occ: Sequence[dict], banks: Sequence[dict]) -> list[tuple[str, CheckResult]]:
    """Run the three checks on in-memory records."""
    return [("device properties", check_device(device)), ("occupancy", check_occupancy(occ)),
            ("bank latency", check_bank_latency(banks))]


def hardware_report(live: bool | None = None, occupancy_cases: Sequence[dict] | None = None) -> dict[str, Any]:
    """What the chapter's "On real hardware" section shows, from the best source available.

    ``live`` (default: whenever ``h100lab.cuda.available()``) measures now — the device's properties,
    a quick occupancy grid and the bank-latency patterns; otherwise the committed datasets are read.
    Returns ``{"source": "live" | "dataset" | None, "where", "device_rows", "device", "occupancy",
    "banks", "bank_records", "command"}``; ``source`` None means neither a GPU nor the datasets exist.
    """
    from .. import data

    command = "python -m h100lab.measure.l01"
    if live is None:
        from .. import cuda

        live = cuda.available()
    if live:
        from .. import cuda
        from ..measure import l01 as m

        dev = m.measure_device()
        cases = occupancy_cases if occupancy_cases is not None else m.occupancy_cases(
            m.QUICK["variants"], m.QUICK["blocks"], m.QUICK["dynamic"], m.QUICK["carveouts"],
            optin_limit=int(dev[0].get("sharedMemPerBlockOptin", m.SMEM_OPTIN)))
        occ = m.measure_occupancy(cases, progress=False)
        banks = m.measure_banks(repeats=3)
        where = f"this GPU ({dev[0].get('name')}, live)"
        source = "live"
    else:
        names = ("l01/device_properties", "l01/occupancy", "l01/bank_latency")
        if not all(data.available(n) for n in names):
            return {"source": None, "command": command}
        dss = [data.load(n) for n in names]
        dev, occ, banks = (d.records for d in dss)
        where = dss[0].describe()
        source = "dataset"
    ref = reference_spec(dev[0])
    rows = device_rows(dev[0], ref)
    return {"source": source, "where": where, "reference": ref.name, "device_rows": rows,
            "device": check_device(dev), "occupancy": check_occupancy(occ), "occupancy_records": occ,
            "banks": check_bank_latency(banks), "bank_records": banks, "command": command}


# ------------------------------------------------------------------------------------------------
# The latency/bandwidth ladder and the roofline kernel (l01/latency_ladder, l01/roofline_kernels)

#: which measurement stands for which rung: (level, kind of record, kernel, working set in bytes or None)
LADDER_RUNGS = (("registers", "fma_chain", None), ("shared memory", "chase_shared", None),
                ("L1", "chase_ca", 16 << 10), ("L2", "chase_cg", 4 << 20), ("HBM", "chase_cg", 1 << 30))


def _rung(records: Sequence[dict[str, Any]], kernel: str, size: int | None) -> dict[str, Any] | None:
    for r in records:
        if r.get("kind") == "latency" and r["kernel"] == kernel and (size is None or r["bytes"] == size):
            return r
    return None


def ladder_rows(records: Sequence[dict[str, Any]], spec=None, roofline: Sequence[dict[str, Any]] | None = None
                ) -> list[dict[str, Any]]:
    """The ladder table: for each level its capacity (the spec), the latency the H200 measured (cycles and ns
    of one dependent step) and the bandwidth — the spec-derived one (:mod:`h100lab.memory.ladder`) beside the
    measured one. The register rung's measured bandwidth comes from the roofline kernel's compute-bound end
    (FMA operand bytes: 12 per FMA per lane) when ``roofline`` records are given."""
    from ..memory.ladder import levels

    spec = spec or H200_SXM
    model = {lv.name: lv for lv in levels(spec)}
    bw = {r["level"]: r["gbps"] * 1e9 for r in records if r.get("kind") == "bandwidth"}
    if roofline:
        top = max((r for r in roofline if r.get("k", 0) >= 256 and r.get("correct", True)),
                  key=lambda r: r["tflops"], default=None)
        if top is not None:
            bw["registers"] = top["tflops"] * 1e12 / 2 * 12
    rows = []
    for level, kernel, size in LADDER_RUNGS:
        r = _rung(records, kernel, size)
        m = model[level]
        rows.append({"level": level, "capacity per SM": m.capacity_per_sm, "capacity (GPU)": m.capacity_gpu,
                     "latency (cycles)": r["cycles_per_step"] if r else None,
                     "latency (ns)": r["ns_per_step"] if r else None,
                     "bandwidth, model (B/s)": m.bandwidth, "bandwidth, H200 (B/s)": bw.get(level),
                     "working set (B)": r["bytes"] if r and size else None})
    return rows


def check_ladder(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every chase ended where the host's walk of its chain does; each rung is slower than the one above it
    (registers < shared memory < L1 < L2 < HBM latency) and the streams order the other way (shared memory >
    L2 > HBM bandwidth); no measured bandwidth exceeds the model's ceiling for its level by more than 2 %."""
    from ..memory.ladder import levels

    bad = [dict(kernel=r["kernel"], bytes=r.get("bytes"), why="wrong chase end") for r in records
           if r.get("kind") == "latency" and not r.get("correct", True)]
    lat = [_rung(records, k, s) for _, k, s in LADDER_RUNGS]
    if all(lat):
        steps = [r["cycles_per_step"] for r in lat]
        bad += [{"why": f"{LADDER_RUNGS[i][0]} ({steps[i]:.0f} cycles) not faster than {LADDER_RUNGS[i + 1][0]} "
                        f"({steps[i + 1]:.0f})"} for i in range(len(steps) - 1) if not steps[i] < steps[i + 1]]
    bw = {r["level"]: r["gbps"] * 1e9 for r in records if r.get("kind") == "bandwidth"}
    order = [lv for lv in ("shared memory", "L2", "HBM") if lv in bw]
    bad += [{"why": f"{a} bandwidth not above {b}"} for a, b in zip(order, order[1:]) if not bw[a] > bw[b]]
    model = {lv.name: lv.bandwidth for lv in levels(H200_SXM)}
    bad += [{"why": f"{lv} measured {v / 1e12:.2f} TB/s above the model's {model[lv] / 1e12:.2f}"}
            for lv, v in bw.items() if model.get(lv) and v > 1.02 * model[lv]]
    note = ""
    if all(lat):
        note = ", ".join(f"{lv} {r['cycles_per_step']:.0f}" for (lv, _, _), r in zip(LADDER_RUNGS, lat)) + " cycles"
    return CheckResult(len(records), len(bad), bad[:5], note=note)


def roofline_rows(records: Sequence[dict[str, Any]], spec=None) -> list[dict[str, Any]]:
    """Model vs silicon for the roofline kernel: per K the intensity, the model's time — the larger of the
    bytes over the datasheet HBM bandwidth and the FLOPs over the FP32 peak at the clock the kernel ran at —
    the measured time, and which roof binds."""
    spec = spec or H200_SXM
    rows = []
    for r in records:
        clock = (r.get("clock_ghz") or spec.boost_clock_mhz / 1e3) * 1e9
        peak = spec.sm_count * 2 * spec.fp32_lanes_per_sm * clock
        t_mem, t_math = r["bytes"] / spec.hbm_bandwidth, r["flops"] / peak
        model = max(t_mem, t_math)
        rows.append({"K": r["k"], "intensity (FLOP/B)": r["intensity"], "bound": "memory" if t_mem >= t_math else "compute",
                     "model (ms)": model * 1e3, "H200 (ms)": r["median_ms"], "H200 / model": r["median_ms"] / (model * 1e3),
                     "H200 TB/s": r["gbps"] / 1e3, "H200 TFLOP/s": r["tflops"], "clock (GHz)": r.get("clock_ghz")})
    return rows


def check_roofline_kernels(records: Sequence[dict[str, Any]], tolerance: float = 0.6) -> CheckResult:
    """The kernel's outputs are right, no case beats its roofline (the model's time is a lower bound, 2 %
    slack), and the two ends come within ``tolerance`` of it: the copy (K = 0) reaches at least 60 % of the
    datasheet bandwidth and the most compute-bound case 60 % of the FP32 peak at its clock."""
    rows = roofline_rows(records)
    bad = [dict(k=r["k"], why="wrong output") for r in records if not r.get("correct", True)]
    bad += [dict(k=row["K"], why=f"faster than the roofline ({row['H200 / model']:.2f} x)") for row in rows
            if row["H200 / model"] < 0.98]
    ends = [rows[0], rows[-1]] if rows else []
    bad += [dict(k=row["K"], why=f"only {1 / row['H200 / model']:.0%} of its roofline") for row in ends
            if 1 / row["H200 / model"] < tolerance]
    note = ""
    if rows:
        note = (f"copy at {1 / rows[0]['H200 / model']:.0%} of 4.8 TB/s, K = {rows[-1]['K']} at "
                f"{1 / rows[-1]['H200 / model']:.0%} of the FP32 peak")
    return CheckResult(len(records), len(bad), bad[:5], note=note)


def ladder_report() -> dict[str, Any]:
    """The committed ladder and roofline-kernel datasets with their checks and tables (``source`` None with the
    ``command`` when the ladder dataset is missing)."""
    from .. import data

    command = "python -m h100lab.measure.l01 --only ladder,roofline"
    if not data.available("l01/latency_ladder"):
        return {"source": None, "command": command}
    ds = data.load("l01/latency_ladder")
    rds = data.load("l01/roofline_kernels") if data.available("l01/roofline_kernels") else None
    roof = rds.records if rds else None
    return {"source": "dataset", "where": ds.describe(), "records": ds.records, "check": check_ladder(ds.records),
            "rows": ladder_rows(ds.records, roofline=roof), "roofline": roof,
            "roofline_where": rds.describe() if rds else None,
            "roofline_check": check_roofline_kernels(roof) if roof else None,
            "roofline_rows": roofline_rows(roof) if roof else None, "command": command}


@silicon_check("Latency ladder: each level slower than the one above, chases correct", lesson=1,
               dataset="l01/latency_ladder")
def _ladder(ds: Dataset) -> CheckResult:
    return check_ladder(ds.records)


@silicon_check("Roofline kernel: never faster than the roofline, the ends close to it", lesson=1,
               dataset="l01/roofline_kernels")
def _roofline_kernels(ds: Dataset) -> CheckResult:
    return check_roofline_kernels(ds.records)
