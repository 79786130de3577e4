"""Lesson 7 measurements: sparse wgmma, FP8 GEMM tiles with per-block scales and two-level accumulation, the
stmatrix + TMA-store epilogue, FP8 accumulation truncation, wgmma issue/latency timing.

``python -m h100lab.measure.l07 [--out DIR] [--quick]`` writes (``h100lab.data``, metadata: GPU, driver, CUDA,
date, command):

* ``l07/sparse``: ``wgmma.mma_async.sp`` for every sparse type (``l07_sparse_probe.cu``, :data:`SPARSE_FORMS`) on
  random inputs (≥ 12,288 outputs per form), metadata with garbage in the lanes sp-sel does not name, metadata in
  either index order, Inf/NaN inputs, chains of 4, scale-d = 0 and **invalid** metadata codes;
* ``l07/fp8_gemm``: the 64 × 64 FP8 GEMM tile of ``l07_fp8_gemm.cu`` for each FP8 pairing — per-block scales
  (1 × ``32·interval`` for A, one per k-block for B) and promotion to f32 every ``interval`` wgmmas — raw f32
  accumulators and the bf16 tile it stores through stmatrix + TMA (≥ 12,288 outputs per pairing);
* ``l07/epilogue``: f32 accumulators → bf16 / f16 / e4m3 → stmatrix into a swizzled staging tile → TMA store;
* ``l07/fp8_accumulation``: long chains of FP8 wgmmas (K up to 2048) on designed inputs through the lesson-6 probe
  kernels: how many bits the chained accumulator keeps;
* ``l07/wgmma_timing``: clock64 cycles of wgmma chains per type and N (latency: one wgmma per group, wait 0;
  throughput: many per group, groups in flight) — the calibration data of :mod:`h100lab.tensorcore.timing`.

Every case is a plain dict (inputs regenerated from its seed); :func:`run_case` runs it on ``h100lab.cuda`` or
``h100lab.emu``, :func:`model_outputs` predicts it from :mod:`h100lab.tensorcore`; one failing case is recorded with
its error and never loses the others; each dataset is written as soon as it is measured.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Sequence

import numpy as np

from . import begin

__all__ = ["SPARSE_FORMS", "sparse_cases", "fp8_gemm_cases", "epilogue_cases", "accumulation_cases",
           "timing_cases", "build_sparse", "model_outputs", "run_case", "run_cases", "main", "FP8_PAIRS",
           "TIMING_FORMS"]

#: name -> (n, dtype, atype, btype, a_source, sp_sel) of the kernels sp_<name> in l07_sparse_probe.cu
SPARSE_FORMS: dict[str, tuple] = {}
for _n, _nn, _d, _a, _b, _src, _sel in [
        ("ss_n64_f32_f16_s0", 64, "f32", "f16", "f16", "ss", 0), ("ss_n64_f32_f16_s1", 64, "f32", "f16", "f16", "ss", 1),
        ("ss_n64_f16_f16_s0", 64, "f16", "f16", "f16", "ss", 0),
        ("ss_n64_f32_bf16_s0", 64, "f32", "bf16", "bf16", "ss", 0),
        ("ss_n64_f32_bf16_s1", 64, "f32", "bf16", "bf16", "ss", 1),
        ("ss_n256_f32_bf16_s0", 256, "f32", "bf16", "bf16", "ss", 0),
        ("ss_n64_f32_tf32_s0", 64, "f32", "tf32", "tf32", "ss", 0),
        ("ss_n64_f32_tf32_s1", 64, "f32", "tf32", "tf32", "ss", 1)] + [
        (f"ss_n64_f32_{a}_{b}_s0", 64, "f32", a, b, "ss", 0) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")] + [
        ("ss_n64_f16_e4m3_e4m3_s0", 64, "f16", "e4m3", "e4m3", "ss", 0)] + [
        (f"ss_n64_s32_{a}_{b}_s0", 64, "s32", a, b, "ss", 0) for a in ("s8", "u8") for b in ("s8", "u8")] + [
        ("rs_n64_f32_bf16_s0", 64, "f32", "bf16", "bf16", "rs", 0),
        ("rs_n64_f32_tf32_s1", 64, "f32", "tf32", "tf32", "rs", 1),
        ("rs_n64_f32_e4m3_e4m3_s0", 64, "f32", "e4m3", "e4m3", "rs", 0),
        ("rs_n64_s32_s8_s8_s0", 64, "s32", "s8", "s8", "rs", 0)]:
    SPARSE_FORMS[_n] = (_nn, _d, _a, _b, _src, _sel)

FP8_PAIRS = [(a, b) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
IMAGE_ALIGN = 1024


def _sspec(form: str):
    from ..tensorcore import sparsity
    n, d, a, b, src, sel = SPARSE_FORMS[form]
    return sparsity.sparse_spec(n, d, a, b, src, sp_sel=sel)


# ------------------------------------------------------------------------------------------------
# sparse cases

def sparse_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Per form: ``normal`` (3 CTAs), ``garbage`` (random bits in the sp-meta registers the selector does not
    name), ``unordered`` (2:4 indices in either order), ``special`` (Inf/NaN in A and B, also at pruned
    positions), ``chain4``, ``scaled0`` and ``invalid`` (invalid nibbles: 2:4 codes naming one position twice,
    tf32 codes other than 0b0100/0b1110)."""
    out = []
    for i, form in enumerate(SPARSE_FORMS):
        sp = _sspec(form)
        kinds = ["normal", "garbage", "invalid", "chain4", "scaled0"]
        if sp.atype != "tf32":
            kinds.append("unordered")
        if sp.is_float:
            kinds.append("special")
        if quick:
            kinds = kinds[:3]
        for j, kind in enumerate(kinds):
            out.append(dict(id=f"sp_{form}_{kind}", kind="sparse", form=form, input=kind,
                            steps=4 if kind == "chain4" else 1, scale_d=0 if kind == "scaled0" else 1,
                            grid=3 if kind == "normal" else 1, seed=7000 + 100 * i + j))
    return out


def _invalid_nibbles(rng, nib, atype):
    from ..tensorcore import sparsity
    nib = nib.copy()
    sel = rng.random(nib.shape) < 0.3
    if atype == "tf32":
        bad = rng.integers(0, 16, nib.shape)
    else:
        bad = np.array(sparsity.INVALID_2_4)[rng.integers(0, 4, nib.shape)]
    return np.where(sel, bad, nib).astype(np.uint8)


def build_sparse(c: dict[str, Any]) -> dict[str, Any]:
    """Kernel inputs of a sparse case: ``img`` (grid × image), ``descs``, ``a_regs`` (RS) or None, ``meta``
    (grid·128·steps uint32), ``c_in``; and the model's inputs per CTA: ``vals``/``nib`` per step, ``B`` per step, ``C``."""
    from ..tensorcore import fragments, sparsity
    from .l06 import _floats, _place_k, _RAWT, _ES

    sp = _sspec(c["form"])
    rng = np.random.default_rng(c["seed"])
    steps, grid, kind = c["steps"], c["grid"], c["input"]
    half, K, N = sp.packed_k, sp.k, sp.n
    es = _ES[sp.atype]
    abytes, bbytes = 64 * half * es, N * K * _ES[sp.btype]
    per = -(-(steps * (abytes + bbytes)) // IMAGE_ALIGN) * IMAGE_ALIGN
    fk = "special" if kind == "special" else "normal"
    imgs, descs, aregs, metas, cins, V, NB, Bs, Cs = [], [], [], [], [], [], [], [], []
    for g in range(grid):
        img = np.zeros(per, np.uint8)
        if sp.atype in ("s8", "u8"):
            C = rng.integers(-2**20, 2**20, (64, N)).astype(np.int64)
            C = (C & 0xFFFFFFFF).astype(np.uint32)
        else:
            C = _floats(rng, "f16" if sp.dtype == "f16" else "f32", (64, N), "normal")
        vg, ng, bg = [], [], []
        for s in range(steps):
            if sp.atype in ("s8", "u8"):
                vals = rng.integers(0, 256, (64, half), dtype=np.uint8)
                B = rng.integers(0, 256, (N, K), dtype=np.uint8)
            else:
                vals = _floats(rng, sp.atype, (64, half), fk)
                B = _floats(rng, sp.btype, (N, K), fk)
            nib = sparsity.random_sparse(rng, 64, sp.atype, vals, ascending=kind != "unordered")
            if kind == "invalid":
                nib = _invalid_nibbles(rng, nib, sp.atype)
            fill = rng.integers(0, 1 << 32, 128, dtype=np.uint64).astype(np.uint32) if kind == "garbage" else 0
            metas.append(sparsity.metadata_registers(nib, sp.atype, sp.sp_sel, fill=fill))
            off = s * (abytes + bbytes)
            da = _place_k(img, off, vals, sp.atype)
            db = _place_k(img, off + abytes, B, sp.btype)
            descs += [da.encode(), db.encode()]
            if sp.a_source == "rs":
                aregs.append(fragments.pack_a_fragment(vals.astype(np.uint32), sp.atype))
            vg.append(vals)
            ng.append(nib)
            bg.append(B)
        vals_c = fragments.matrix_to_accumulator(C, N)
        if sp.dtype == "f16":
            v = vals_c.astype(np.uint32).reshape(128, sp.d_regs, 2)
            vals_c = v[:, :, 0] | (v[:, :, 1] << 16)
        cins.append(vals_c.astype(np.uint32))
        imgs.append(img)
        V.append(vg)
        NB.append(ng)
        Bs.append(bg)
        Cs.append(C)
    meta = np.stack(metas).reshape(grid, steps, 128).transpose(0, 2, 1).reshape(-1).astype(np.uint32)
    a_regs = None
    if aregs:
        a = np.stack(aregs).reshape(grid, steps, 128, 4).transpose(0, 2, 1, 3)
        a_regs = np.ascontiguousarray(a).reshape(-1).astype(np.uint32)
    return dict(spec=sp, img=np.concatenate(imgs), img_bytes=per, descs=np.array(descs, np.uint64), a_regs=a_regs,
                meta=meta, c_in=np.concatenate(cins).reshape(-1), vals=V, nib=NB, B=Bs, C=Cs)


def model_sparse(c: dict[str, Any], built: dict[str, Any] | None = None) -> np.ndarray:
    """The raw D registers (grid·128·d_regs) the model predicts: the packed A and B read back through the same
    descriptors (or A registers), the nibbles read from the sp-meta registers the selector names
    (:func:`~h100lab.tensorcore.sparsity.metadata_from_registers`), :func:`~h100lab.tensorcore.sparsity.mma_sp`
    (``invalid="hardware"`` for the invalid-metadata cases)."""
    from ..tensorcore import descriptor as dsc, fragments, sparsity
    from .l06 import _RAWT, _ES
    b = built or build_sparse(c)
    sp = b["spec"]
    grid, steps, per = c["grid"], c["steps"], b["img_bytes"]
    outs = []
    for g in range(grid):
        img = b["img"][g * per:(g + 1) * per]
        cr = b["c_in"].reshape(grid, 128, sp.d_regs)[g]
        vals = np.stack([cr & 0xFFFF, cr >> 16], axis=2).reshape(128, sp.n // 2).astype(np.uint16) \
            if sp.dtype == "f16" else cr
        D = fragments.accumulator_to_matrix(vals, sp.n)
        for s in range(steps):
            da = dsc.MatrixDescriptor.decode(int(b["descs"][(g * steps + s) * 2]))
            db = dsc.MatrixDescriptor.decode(int(b["descs"][(g * steps + s) * 2 + 1]))
            Bm = dsc.gather(img, db, "K", sp.n, sp.k, sp.btype).T
            if sp.a_source == "rs":
                regs = b["a_regs"].reshape(grid, 128, steps, 4)[g, :, s]
                Am = fragments.unpack_a_fragment(regs, sp.atype).astype(_RAWT[_ES[sp.atype]])
            else:
                Am = dsc.gather(img, da, "K", 64, sp.packed_k, sp.atype)
            nib = sparsity.metadata_from_registers(b["meta"].reshape(grid, 128, steps)[g, :, s], sp.atype, sp.sp_sel)
            sd = bool(c["scale_d"]) if s == 0 else True
            D = sparsity.mma_sp(Am, nib, Bm, D, atype=sp.atype, btype=sp.btype, dtype=sp.dtype, scale_d=sd,
                                invalid="hardware" if c["input"] == "invalid" else "raise")
        out = fragments.matrix_to_accumulator(D, sp.n)
        if sp.dtype == "f16":
            o = out.astype(np.uint32).reshape(128, sp.d_regs, 2)
            out = o[:, :, 0] | (o[:, :, 1] << 16)
        outs.append(out.astype(np.uint32))
    return np.stack(outs).reshape(-1)


def _run_sparse(backend, c, fn):
    b = build_sparse(c)
    sp = b["spec"]
    out = backend.zeros(c["grid"] * 128 * sp.d_regs, np.uint32)
    a_regs = backend.to_device(b["a_regs"]) if b["a_regs"] is not None else np.uint64(0)
    backend.launch(fn("l07_sparse_probe", f"sp_{c['form']}"), c["grid"], 128, backend.to_device(b["img"]),
                   np.int32(b["img_bytes"]), backend.to_device(b["descs"]), np.int32(c["steps"]), a_regs,
                   backend.to_device(b["meta"]), backend.to_device(b["c_in"]), np.int32(c["scale_d"]), out,
                   shared_mem=b["img_bytes"] + IMAGE_ALIGN)
    backend.synchronize()
    return {"d": out.to_host().reshape(-1)}


# ------------------------------------------------------------------------------------------------
# running on a backend (h100lab.cuda or h100lab.emu)

def run_case(backend, c: dict[str, Any], programs: dict | None = None) -> dict[str, np.ndarray]:
    """Run one case on ``backend`` (``h100lab.cuda`` or ``h100lab.emu``); its outputs as arrays."""
    programs = programs if programs is not None else {}

    def fn(prog, name):
        if prog not in programs:
            programs[prog] = backend.compile_kernel(prog)
        return programs[prog].function(name)

    kind = c["kind"]
    if kind == "sparse":
        return _run_sparse(backend, c, fn)
    if kind == "fp8_gemm":
        return _run_fp8_gemm(backend, c, fn)
    if kind == "epilogue":
        return _run_epilogue(backend, c, fn)
    if kind == "accumulation":
        from . import l06
        return l06.run_case(backend, _accum_as_l06(c), programs)
    if kind == "timing":
        return _run_timing(backend, c, fn)
    raise ValueError(f"unknown case kind {kind!r}")


def model_outputs(c: dict[str, Any]) -> dict[str, np.ndarray]:
    """The outputs the model predicts for a case (timing cases: none — they are compared by
    :mod:`h100lab.validation.l07` with the timing model's tolerance)."""
    kind = c["kind"]
    if kind == "sparse":
        return {"d": model_sparse(c)}
    if kind == "fp8_gemm":
        return model_fp8_gemm(c)
    if kind == "epilogue":
        return model_epilogue(c)
    if kind == "accumulation":
        from . import l06
        return {"d": l06.model_case(_accum_as_l06(c)).reshape(-1)}
    return {}


def run_cases(backend, cases: Sequence[dict[str, Any]], budget_s: float | None = None) -> list[dict[str, Any]]:
    """Records: each case with its outputs (packed) or, when it failed, its error — one failing case never loses
    the others. ``budget_s``: cases left when the time is up are recorded as skipped."""
    from .l04 import pack
    programs: dict = {}
    recs = []
    t0 = time.time()
    for c in cases:
        if budget_s is not None and time.time() - t0 > budget_s:
            recs.append(dict(c, ok=False, error="skipped: time budget of the step spent"))
            continue
        try:
            o = run_case(backend, c, programs)
            rec = dict(c, ok=True)
            for k, v in o.items():
                if isinstance(v, np.ndarray):
                    rec[k] = pack(np.ascontiguousarray(v).view(np.uint8))
                else:
                    rec[k] = v
            recs.append(rec)
        except Exception as exc:     # one failing probe must not lose the others' data
            recs.append(dict(c, ok=False, error=f"{type(exc).__name__}: {exc}"[:2000]))
            print(f"   {c['id']}: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
            if "ILLEGAL" in str(exc) or "context" in str(exc).lower():
                # a sticky error poisons the context: the remaining cases of this step would all fail
                for rest in cases[cases.index(c) + 1:]:
                    recs.append(dict(rest, ok=False, error="skipped after a sticky CUDA error"))
                break
    return recs
