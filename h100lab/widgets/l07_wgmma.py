"""Widgets of lesson 7 (WGMMA part 2): the FP8 number line, the quantisation lab, the 2:4 sparsity packer and the
commit/wait timeline. Each is an :class:`~h100lab.widgets.base.Explorer` over a compute function that asks the
model — :mod:`h100lab.tensorcore.quant` (``cvt.rn.satfinite`` to e4m3/e5m2, PTX ISA §9.7.9.21; scaling recipes),
:mod:`h100lab.tensorcore.sparsity` (``wgmma.mma_async.sp`` metadata, §9.7.15.6) and
:mod:`h100lab.tensorcore.timing` (``wgmma.commit_group`` / ``wait_group``, §9.7.15.7) — and a drawing function in
:mod:`h100lab.viz.l07_wgmma`. Nothing here rounds, packs or times by itself."""
from __future__ import annotations

import numpy as np

from ..tensorcore import quant, sparsity, timing

__all__ = ["fp8_line_result", "describe_fp8_line", "fp8_number_line", "quant_result", "describe_quant",
           "quantisation_lab", "packer_result", "describe_packer", "sparsity_packer", "timeline_result",
           "describe_timeline", "commit_wait_timeline", "timing_params", "DATA_KINDS", "PACKER_TYPES"]

DATA_KINDS = ("weights", "activations", "gradients")
PACKER_TYPES = ("f16", "bf16", "tf32", "e4m3")


# ------------------------------------------------------------------------------------------------
# FP8 number line

def _positive_values(fmt: str) -> np.ndarray:
    """Every finite positive value of the format (codes 0x01 .. 0x7F, NaN / inf dropped)."""
    v = quant.decode_fp8(np.arange(1, 128, dtype=np.uint8), fmt).astype(np.float64)
    return v[np.isfinite(v)]


def fp8_line_result(fmt: str = "e4m3", log2_scale: int = 0, value: float = 300.0) -> dict:
    """What ``cvt.rn.satfinite.{fmt}`` does to ``value / s`` with the dequantisation scale ``s = 2**log2_scale``:
    the code, the value it stands for (times s), its relative error, whether it saturated; and for the number line
    the positive values of both formats times s."""
    s = float(2.0 ** int(log2_scale))
    x = np.float32(value)
    code = int(quant.cvt_fp8(np.array([x / np.float32(s)], np.float32), fmt)[0])
    back = float(quant.decode_fp8(np.array([code], np.uint8), fmt)[0]) * s
    top = quant.FP8_MAX[fmt] * s
    grid = {f: _positive_values(f) * s for f in ("e4m3", "e5m2")}
    return {"fmt": fmt, "scale": s, "value": float(x), "code": code, "dequantised": back,
            "rel_error": abs(back - float(x)) / abs(float(x)) if x else 0.0, "saturated": abs(float(x)) > top,
            "max": top, "min_subnormal": float(grid[fmt][0]), "grid": grid}


def describe_fp8_line(r: dict) -> str:
    sat = " — <b>saturated</b> to the largest finite value" if r["saturated"] else ""
    return (f".{r['fmt']}, scale s = {r['scale']:g}: {r['value']:g} / s → code 0x{r['code']:02X} → "
            f"{r['dequantised']:g} (relative error {r['rel_error']:.3g}){sat}; representable magnitudes "
            f"{r['min_subnormal']:.3g} … {r['max']:g}")


def fp8_number_line(fmt: str = "e4m3", log2_scale: int = 0, value: float = 300.0):
    """Controls: format, log2 of the scale, the value to convert."""
    import ipywidgets as W

    from ..viz.l07_wgmma import draw_fp8_line
    from .base import Explorer

    ctl = {"fmt": W.Dropdown(options=["e4m3", "e5m2"], value=fmt, description="format"),
           "log2_scale": W.IntSlider(value=log2_scale, min=-8, max=8, description="log2 s"),
           "value": W.FloatSlider(value=value, min=0.0, max=1000.0, step=25.0, description="x")}
    return Explorer(ctl, fp8_line_result, draw_fp8_line, title="FP8 number line", describe=describe_fp8_line)


# ------------------------------------------------------------------------------------------------
# quantisation lab

_LAB: dict = {}


def _lab_tensor(kind: str) -> np.ndarray:
    if kind not in DATA_KINDS:
        raise ValueError(f"data {kind!r}: one of {DATA_KINDS}")
    if kind not in _LAB:
        _LAB[kind] = quant.real_looking(np.random.default_rng(7), (256, 512), kind)
    return _LAB[kind]


def quant_result(kind: str = "activations", fmt: str = "e4m3", granularity: str = "block_1x128") -> dict:
    """Quantise → dequantise a seeded 256 × 512 tensor (:func:`h100lab.tensorcore.quant.real_looking`) with
    every scaling granularity (:func:`~h100lab.tensorcore.quant.scaling_errors`); the chosen one's per-element
    relative errors for the histogram."""
    x = _lab_tensor(kind)
    table = quant.scaling_errors(x, fmt)
    q, s = quant.quantize(x, fmt, granularity)
    y = quant.dequantize(q, s, fmt, granularity)
    nz = x != 0
    rel = np.abs(y[nz].astype(np.float64) - x[nz]) / np.abs(x[nz])
    return {"kind": kind, "fmt": fmt, "granularity": granularity, "table": table, "rel": rel,
            "scales": int(np.asarray(s).size), "amax": float(np.abs(x).max())}


def describe_quant(r: dict) -> str:
    e = r["table"][r["granularity"]]
    best = min(r["table"], key=lambda g: r["table"][g]["rel_rms"])
    return (f"{r['kind']} → .{r['fmt']}, {r['granularity']} scaling ({r['scales']} scale factors): relative RMS "
            f"error {e['rel_rms']:.4f}, {100 * e['underflow']:.2f} % of the non-zeros flushed to 0; lowest error "
            f"here: {best}")


def quantisation_lab(kind: str = "activations", fmt: str = "e4m3", granularity: str = "block_1x128"):
    """Controls: data distribution, FP8 format, scaling granularity."""
    import ipywidgets as W

    from ..viz.l07_wgmma import draw_quant
    from .base import Explorer

    ctl = {"kind": W.Dropdown(options=list(DATA_KINDS), value=kind, description="data"),
           "fmt": W.Dropdown(options=["e4m3", "e5m2"], value=fmt, description="format"),
           "granularity": W.Dropdown(options=list(quant.GRANULARITIES), value=granularity, description="scales")}
    return Explorer(ctl, quant_result, draw_quant, title="Quantisation lab", describe=describe_quant)


# ------------------------------------------------------------------------------------------------
# sparsity packer

def _dense_row(atype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(values float64 (K,), raw bits (K,)) of one pruned row of A (K of one sparse wgmma), seeded."""
    from ..tensorcore import numerics

    kept, grp = sparsity.granularity(atype)
    K = sparsity.sparse_k(atype)
    rng = np.random.default_rng(int(seed))
    v = np.round(rng.uniform(-8, 8, K) * 2) / 2
    v[v == 0] = 1.0
    mask = np.zeros((K // grp, grp), bool)
    for g in range(K // grp):
        n = kept if rng.random() < 0.8 else kept - 1          # now and then a group with fewer non-zeros
        mask[g, rng.choice(grp, n, replace=False)] = True
    v = np.where(mask.reshape(-1), v, 0.0)
    raw = numerics.from_float(v, atype)
    return numerics.to_float(raw, atype).astype(np.float64), raw


def packer_result(atype: str = "f16", seed: int = 3, row: int = 0) -> dict:
    """One row of a 2:4 (1:2 for tf32) sparse A: the dense K values, the packed values and metadata nibbles
    :func:`~h100lab.tensorcore.sparsity.compress` keeps, and where the nibbles sit in the ``sp-meta`` registers
    (thread, nibble) for sp-sel 0 (:func:`~h100lab.tensorcore.sparsity.metadata_registers`)."""
    from ..tensorcore import numerics

    row = int(row)
    if not 0 <= row < 64:
        raise sparsity.SparsityError(f"row {row}: a sparse wgmma's A has rows 0..63")
    dense, raw = _dense_row(atype, seed)
    vals_raw, nib = sparsity.compress(raw[None, :], atype)
    kept, grp = sparsity.granularity(atype)
    G = nib.shape[1]
    full = np.zeros((64, G), np.uint8)
    full[:] = nib[0]                                            # every row the same pattern: one row is drawn
    regs = sparsity.metadata_registers(full, atype, 0)
    rows, grps = sparsity._reg_map(atype)                       # (thread, nibble) -> (row, group) of the layout
    sel = sparsity.selected_lanes(atype, 0)
    where = []
    for g in range(G):                                          # which (thread, nibble) carries group g of `row`
        t, q = np.argwhere((rows == row) & (grps == g) & sel[:, None])[0]
        where.append((int(t), int(q)))
    return {"atype": atype, "seed": int(seed), "row": row, "dense": dense,
            "values": numerics.to_float(vals_raw[0], atype).astype(np.float64), "nibbles": nib[0].astype(int),
            "kept": kept, "group": grp, "where": where, "register": int(regs[where[0][0]]),
            "k": sparsity.sparse_k(atype)}


def describe_packer(r: dict) -> str:
    t0, q0 = r["where"][0]
    nib = ", ".join(f"0b{n:04b}" for n in r["nibbles"][:4])
    return (f".{r['atype']}: a row of K = {r['k']} keeps {len(r['values'])} values ({r['kept']} of every {r['group']}); "
            f"metadata nibbles {nib} …; row {r['row']}, group 0 is nibble {q0} of thread {t0}'s sp-meta register "
            f"(sp-sel 0), which holds 0x{r['register']:08X}")


def sparsity_packer(atype: str = "f16", seed: int = 3, row: int = 0):
    """Controls: A type, the seed of the pruned row, the row of A (where its metadata sits)."""
    import ipywidgets as W

    from ..viz.l07_wgmma import draw_packer
    from .base import Explorer

    ctl = {"atype": W.Dropdown(options=list(PACKER_TYPES), value=atype, description="A type"),
           "seed": W.IntSlider(value=seed, min=0, max=8, description="pattern"),
           "row": W.IntSlider(value=row, min=0, max=63, step=1, description="row")}
    return Explorer(ctl, packer_result, draw_packer, title="Sparsity packer", describe=describe_packer)


# ------------------------------------------------------------------------------------------------
# commit / wait timeline

_PARAMS: dict = {}


def timing_params() -> tuple[timing.WgmmaTiming, bool]:
    """The timing model's constants: :func:`h100lab.tensorcore.timing.calibrated` (fitted on the documented
    calibration records of ``data/l07/wgmma_depth`` and ``data/l07/wgmma_timing``) when a dataset is present, else
    the priors; and whether they were calibrated."""
    if "p" not in _PARAMS:
        from .. import data
        fitted = any(data.available(n) for n in ("l07/wgmma_depth", "l07/wgmma_timing"))
        _PARAMS["p"] = (timing.calibrated() if fitted else timing.PRIOR, fitted)
    return _PARAMS["p"]


def timeline_result(per_group: int = 2, depth: int = 1, work: int = 200, atype: str = "bf16", n: int = 128,
                    iters: int = 8) -> dict:
    """One warpgroup's loop: ``per_group`` wgmmas, ``commit_group``, ``work`` cycles of other work (the next
    tile's addresses, TMA issue), ``wait_group depth``; after ``iters`` iterations ``wait_group 0``. Simulated by
    :func:`h100lab.tensorcore.timing.simulate`; the utilisation for depths 0..3 for the comparison line."""
    params, calibrated = timing_params()
    per_group, depth, work = int(per_group), int(depth), int(work)

    def program(d):
        prog = []
        for _ in range(iters):
            prog += [("mma", atype, int(n))] * per_group + [("commit",), ("work", work), ("wait", d)]
        return prog + [("wait", 0)]

    tl = timing.simulate(program(depth), params)
    curve = {d: timing.simulate(program(d), params).utilisation for d in range(4)}
    return {"per_group": per_group, "depth": depth, "work": work, "atype": atype, "n": int(n), "iters": iters,
            "timeline": tl, "utilisation": tl.utilisation, "curve": curve, "calibrated": calibrated,
            "exec": timing.exec_cycles(atype, int(n), params), "params": params}


def describe_timeline(r: dict) -> str:
    tag = "timing model calibrated on the H200 subset (model-only elsewhere)" if r["calibrated"] else \
        "timing model with prior constants (model-only)"
    return (f"{r['per_group']} × m64n{r['n']} .{r['atype']} per group, {r['work']} cycles of other work, "
            f"wait_group {r['depth']}: {r['timeline'].cycles:.0f} cycles for {r['iters']} groups, tensor core busy "
            f"{100 * r['utilisation']:.0f} % — {tag}")


def commit_wait_timeline(per_group: int = 2, depth: int = 1, work: int = 200, atype: str = "bf16", n: int = 128):
    """Controls: wgmmas per group, groups left in flight by the wait, other work per iteration, type, N."""
    import ipywidgets as W

    from ..viz.l07_wgmma import draw_timeline
    from .base import Explorer

    ctl = {"per_group": W.IntSlider(value=per_group, min=1, max=4, description="per group"),
           "depth": W.IntSlider(value=depth, min=0, max=3, description="wait N"),
           "work": W.IntSlider(value=work, min=0, max=400, step=100, description="work (cyc)"),
           "atype": W.Dropdown(options=["bf16", "e4m3", "tf32"], value=atype, description="type"),
           "n": W.Dropdown(options=[64, 128, 256], value=n, description="N")}
    return Explorer(ctl, timeline_result, draw_timeline, title="Commit/wait timeline", describe=describe_timeline)
