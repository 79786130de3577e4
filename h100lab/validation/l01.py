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
           "bank_wavefront_table", "bank_wavefront_report", "BANK_WAVEFRONT_SHOWN", "model_blocks", "run_on", "reference_spec", "hardware_report"]

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
