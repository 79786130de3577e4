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
  throughput: many per group, groups in flight) — the calibration data of :mod:`h100lab.tensorcore.timing`;
* ``l07/sparse_meta``: the decisive metadata probe (:func:`meta_cases`): every 4-bit metadata value, valid and
  invalid, on designed inputs (one non-zero stored value per row, B the identity) for every tf32 form and f16 as
  the control, each launch twice — each output names what reached one K position
  (:func:`h100lab.validation.l07.meta_rules` turns them into the rule table);
* ``l07/wgmma_deps``: clock64 cycles of ``l07_wgmma_deps.cu`` (:func:`dep_cases`): groups of 1–16 wgmmas on one
  chained accumulator, on 2 or 4 independent accumulator sets, or overwriting their accumulator (scale-d = 0),
  at wait depths 0–3, the same 1024 wgmmas each.

* ``l07/wgmma_depth``: the same with the wait depth compiled in (:func:`depth_cases`: no run-time switch);
* ``l07/zero_align``: does a product with a zero factor take part in the tensor core's alignment
  (:func:`zero_align_cases`, dense tf32 and bf16 through ``l06_wgmma_probe.cu``)?

``--only sparse_meta,wgmma_deps`` measures just the datasets named.

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
           "timing_cases", "meta_cases", "meta_probe_inputs", "META_PROBES", "META_FORMS", "dep_cases", "DEP_FORMS",
           "depth_cases", "DEPTH_FORMS", "zero_align_cases", "numerics_model", "ZERO_EXPONENT_MEASURED", "build_sparse", "model_outputs", "run_case", "run_cases", "main", "FP8_PAIRS",
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


def sparse_module(form: str) -> str:
    """The kernel file of a sparse form: tf32 and RS forms live in ``l07_sparse_probe_more.cu`` so that a JIT
    refusal there cannot lose the SS forms of ``l07_sparse_probe.cu``."""
    n, d, a, b, src, sel = SPARSE_FORMS[form]
    return "l07_sparse_probe_more" if (src == "rs" or a == "tf32") else "l07_sparse_probe"


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


#: the metadata probes (:func:`meta_cases`): inputs designed so that each output names the stored value(s) that
#: reached one K position — ``meta_basis`` one non-zero stored value per row, ``meta_all`` every stored value
#: non-zero and different
META_PROBES = ("meta_basis", "meta_all")
#: the forms the metadata probes run on: every tf32 form of the random cases, and f16 as the control (its invalid
#: codes are modelled)
META_FORMS = ("ss_n64_f32_tf32_s0", "ss_n64_f32_tf32_s1", "rs_n64_f32_tf32_s1", "ss_n64_f32_f16_s0")
#: B's columns 16..31 (tf32) / 32..47 (f16) are the identity scaled by 2^BIG_EXP: an element that lands as a
#: subnormal still shows (the product is a normal f32) unless the tensor core flushes it
BIG_EXP = 100


def meta_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The decisive metadata probe: for each form of :data:`META_FORMS` and each input kind of
    :data:`META_PROBES`, one launch of 16 CTAs — CTA ``v`` gives every row the metadata nibble ``v`` (all 16 values,
    valid and invalid) in the groups :func:`meta_probe_inputs` says (``nibbles``, optional: the value of each CTA) —
    run twice (``repeat``: is the H200 deterministic there?)."""
    out = []
    for i, form in enumerate(META_FORMS):
        for j, kind in enumerate(META_PROBES):
            out.append(dict(id=f"meta_{form}_{kind}", kind="sparse", form=form, input=kind, steps=1, scale_d=0,
                            grid=16, repeat=2, seed=7700 + 10 * i + j))
    return out[:2] if quick else out


def _tag_values(atype: str, half: int) -> np.ndarray:
    """Raw bits of the stored value of slot j (0..half-1), each half of it recognisable wherever it lands.

    tf32 (32-bit, tensor core reads the top 19 bits): high half ``0x3F80 | j << 4`` (1 + j/8, i.e. 1.0 … 1.875);
    low half ``0x4010 | j << 7`` — read as a low half it only sets the tf32 bit 14 (value + 2^-9 of the
    binade), moved into a high half it is 2^(1+j) × (1 + 2^-3): each half tells its slot by itself.
    f16: ``0x3C00 + (j << 6)`` (1 + j/16)."""
    j = np.arange(half, dtype=np.uint32)
    if atype == "tf32":
        return ((0x3F80 | (j << 4)) << 16) | (0x4010 | (j << 7))
    return (0x3C00 + (j << 6)).astype(np.uint16)


def meta_probe_inputs(sp, v: int, kind: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(packed A (64, K/2), B (N, K) K-major, nibbles (64, G)) of CTA ``v`` of a metadata probe.

    Rows: ``j = m % (K/2)`` names a stored slot, ``r = m // (K/2)`` what the other groups hold. ``meta_basis``:
    only slot j is non-zero (:func:`_tag_values`); ``meta_all``: every slot holds its tag. Nibbles: rows with
    even r give every group the nibble ``v``; odd r only the group of slot j, the others a valid code (position
    0, or 1 when r % 4 == 3). B (K × N, the 64 × N form): columns 0..K-1 the identity (output n = the sum of what
    reached K position n), columns K..2K-1 the identity × 2^BIG_EXP (subnormals made visible; tf32 only — f16
    has no room), the rest random normal values (a random check of the rule found)."""
    from ..tensorcore import numerics, sparsity
    from .l06 import _floats

    kept, grp = sparsity.granularity(sp.atype)
    half, K, N = sp.packed_k, sp.k, sp.n
    G = K // grp
    m = np.arange(64)
    j, r = m % half, m // half
    tags = _tag_values(sp.atype, half)
    vals = np.broadcast_to(tags, (64, half)).copy()
    if kind == "meta_basis":
        vals = np.where(np.arange(half)[None, :] == j[:, None], vals, 0).astype(vals.dtype)
    valid = np.where((r % 4 == 3)[:, None], 0b1110 if kept == 1 else 0b1100, 0b0100 if kept == 1 else 0b0100)
    mine = (np.arange(G)[None, :] == (j // kept)[:, None])
    nib = np.where((r % 2 == 0)[:, None] | mine, v, np.broadcast_to(valid, (64, G))).astype(np.uint8)
    Bt = _floats(rng, sp.btype, (K, N), "normal")              # (K, N)
    one = numerics.from_float(np.ones(1), sp.btype)[0]
    Bt[:, :K] = np.where(np.eye(K, dtype=bool), one, 0)
    if sp.atype == "tf32":
        big = numerics.from_float(np.array([2.0 ** BIG_EXP]), sp.btype)[0]
        Bt[:, K:2 * K] = np.where(np.eye(K, dtype=bool), big, 0)
    return vals, np.ascontiguousarray(Bt.T), nib


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
        if kind in META_PROBES:
            C = np.zeros((64, N), np.uint16 if sp.dtype == "f16" else np.uint32)
        elif sp.atype in ("s8", "u8"):
            C = rng.integers(-2**20, 2**20, (64, N)).astype(np.int64)
            C = (C & 0xFFFFFFFF).astype(np.uint32)
        else:
            C = _floats(rng, "f16" if sp.dtype == "f16" else "f32", (64, N), "normal")
        vg, ng, bg = [], [], []
        for s in range(steps):
            if kind in META_PROBES:
                vals, B, nib = meta_probe_inputs(sp, c.get("nibbles", range(16))[g], kind, rng)
            elif sp.atype in ("s8", "u8"):
                vals = rng.integers(0, 256, (64, half), dtype=np.uint8)
                B = rng.integers(0, 256, (N, K), dtype=np.uint8)
            else:
                vals = _floats(rng, sp.atype, (64, half), fk)
                B = _floats(rng, sp.btype, (N, K), fk)
            if kind not in META_PROBES:
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
        vals_c = fragments.accumulator_registers(C, N, sp.dtype)
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


#: the exponent a zero factor contributes to the tensor core's alignment as measured (data/l07/sparse_meta,
#: l07/zero_align: none — the product takes no part); lesson 6's numerics.AccumulatorModel default is -126
ZERO_EXPONENT_MEASURED = -(1 << 20)


def numerics_model(atype: str, dtype: str, zero_rule: bool = False):
    """The accumulator model the predictions use: :func:`h100lab.tensorcore.numerics.default_model`, or with
    ``zero_rule`` that model with :data:`ZERO_EXPONENT_MEASURED` (no difference once the default has it)."""
    from dataclasses import replace
    from ..tensorcore import numerics
    m = numerics.default_model(atype, dtype)
    return replace(m, zero_exponent=min(m.zero_exponent, ZERO_EXPONENT_MEASURED)) if zero_rule else m


def model_sparse(c: dict[str, Any], built: dict[str, Any] | None = None, zero_rule: bool = False) -> np.ndarray:
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
                                model=numerics_model(sp.atype, sp.dtype, zero_rule),
                                invalid="hardware" if c["input"] in ("invalid",) + META_PROBES else "raise")
        out = fragments.accumulator_registers(D, sp.n, sp.dtype)
        outs.append(out.astype(np.uint32))
    return np.stack(outs).reshape(-1)


def _run_sparse(backend, c, fn):
    b = build_sparse(c)
    sp = b["spec"]
    k = fn(sparse_module(c["form"]), f"sp_{c['form']}")
    if b["img_bytes"] + IMAGE_ALIGN > 48 * 1024:
        k.set_max_dynamic_shared_memory(b["img_bytes"] + IMAGE_ALIGN)
    res = {}
    for rep in range(c.get("repeat", 1)):      # repeat: the same launch again (is the output deterministic?)
        out = backend.zeros(c["grid"] * 128 * sp.d_regs, np.uint32)
        a_regs = backend.to_device(b["a_regs"]) if b["a_regs"] is not None else np.uint64(0)
        backend.launch(k, c["grid"], 128, backend.to_device(b["img"]),
                       np.int32(b["img_bytes"]), backend.to_device(b["descs"]), np.int32(c["steps"]), a_regs,
                       backend.to_device(b["meta"]), backend.to_device(b["c_in"]), np.int32(c["scale_d"]), out,
                       shared_mem=b["img_bytes"] + IMAGE_ALIGN)
        backend.synchronize()
        res["d" if rep == 0 else f"d{rep}"] = out.to_host().reshape(-1)
    return res


# ------------------------------------------------------------------------------------------------
# FP8 GEMM tiles and epilogues

def fp8_gemm_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Per FP8 pairing: K = 512 with promotion every 4 wgmmas (1 × 128 scales, 3 CTAs: 12,288 outputs), every 1
    and 16 (one-level: one window); K = 2048 every 4 and every 64 (the long-K truncation, 1 CTA each)."""
    out = []
    for i, (a, b) in enumerate(FP8_PAIRS):
        rows = [(512, 4, 3), (512, 1, 1), (512, 16, 1), (2048, 4, 1), (2048, 64, 1)]
        if quick:
            rows = rows[:1]
        for j, (K, it, grid) in enumerate(rows):
            out.append(dict(id=f"fp8_{a}_{b}_k{K}_i{it}", kind="fp8_gemm", atype=a, btype=b, K=K, interval=it,
                            grid=grid, seed=9000 + 10 * i + j))
    return out


def _fp8_inputs(c):
    """Real-looking activations (outlier channels) × weights, quantised per 1 × (32·interval) block (A, per row)
    and per block of the tile (B), as DeepSeek-V3 scales them."""
    from ..tensorcore import quant
    rng = np.random.default_rng(c["seed"])
    K, it, grid = c["K"], c["interval"], c["grid"]
    W = K // (32 * it)
    A, B, SA, SB = [], [], [], []
    for g in range(grid):
        x = quant.real_looking(rng, (64, K), "activations")
        wt = quant.real_looking(rng, (64, K), "weights")
        qa, sa = quant.quantize(x, c["atype"], "block_1x128", block=32 * it)      # (64, W)
        qb = np.zeros((64, K), np.uint8)
        sb = np.zeros(W, np.float32)
        for w in range(W):
            blk = wt[:, w * 32 * it:(w + 1) * 32 * it]
            q, s = quant.quantize(blk, c["btype"], "tensor")
            qb[:, w * 32 * it:(w + 1) * 32 * it] = q
            sb[w] = s.reshape(-1)[0]
        A.append(qa)
        B.append(qb)
        SA.append(sa.astype(np.float32).reshape(64, W))
        SB.append(sb)
    return A, B, SA, SB


def _tmap(backend, buf, out: str, rows: int):
    es, swz, row_bytes = {"bf16": (2, "128B", 128), "f16": (2, "128B", 128), "e4m3": (1, "64B", 64)}[out]
    dt = "CU_TENSOR_MAP_DATA_TYPE_UINT8" if es == 1 else "CU_TENSOR_MAP_DATA_TYPE_UINT16"
    return backend.encode_tiled(dt, 2, buf, [64, rows], [row_bytes], [64, 64], [1, 1],
                                "CU_TENSOR_MAP_INTERLEAVE_NONE", f"CU_TENSOR_MAP_SWIZZLE_{swz}",
                                "CU_TENSOR_MAP_L2_PROMOTION_NONE", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


def _run_fp8_gemm(backend, c, fn):
    A, B, SA, SB = _fp8_inputs(c)
    grid = c["grid"]
    acc = backend.zeros(grid * 128 * 32, np.uint32)
    tile = backend.zeros(grid * 64 * 128, np.uint8)
    tm = _tmap(backend, tile, "bf16", 64 * grid)
    backend.launch(fn("l07_fp8_gemm", f"fp8_gemm_{c['atype']}_{c['btype']}"), grid, 128,
                   backend.to_device(np.concatenate(A).reshape(-1)), backend.to_device(np.concatenate(B).reshape(-1)),
                   backend.to_device(np.concatenate(SA).reshape(-1)), backend.to_device(np.concatenate(SB).reshape(-1)),
                   np.int32(c["K"]), np.int32(c["interval"]), acc, tm, np.int32(1), shared_mem=16384 + 8192 + 1024)
    backend.synchronize()
    return {"acc": acc.to_host().reshape(-1), "tile": tile.to_host().reshape(-1)}


def model_fp8_gemm(c) -> dict[str, np.ndarray]:
    """Raw f32 accumulators in the kernel's (CTA, thread, register) order and the bf16 tile bytes."""
    from ..tensorcore import accumulate, epilogue, fragments
    A, B, SA, SB = _fp8_inputs(c)
    accs, tiles = [], []
    for g in range(c["grid"]):
        D = accumulate.fp8_gemm(A[g], B[g], SA[g], SB[g], atype=c["atype"], btype=c["btype"],
                                interval=c["interval"])
        accs.append(fragments.matrix_to_accumulator(D.view(np.uint32), 64))
        tiles.append(epilogue.epilogue(D, "bf16").tile.reshape(-1))
    return {"acc": np.concatenate(accs).reshape(-1).astype(np.uint32), "tile": np.concatenate(tiles)}


def epilogue_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Each output type on accumulators of normal magnitude and on a wide range (overflow of bf16/f16/e4m3
    included, NaN and ±inf sprinkled)."""
    out = []
    for i, o in enumerate(("bf16", "f16", "e4m3")):
        for j, kind in enumerate(("normal", "wide")):
            out.append(dict(id=f"epi_{o}_{kind}", kind="epilogue", out=o, input=kind, grid=2, seed=9500 + 10 * i + j))
    return out[::2] if quick else out


def _epi_inputs(c):
    rng = np.random.default_rng(c["seed"])
    n = c["grid"] * 64 * 64
    if c["input"] == "normal":
        v = rng.standard_normal(n) * 4
    else:
        v = rng.choice([-1, 1], n) * np.exp2(rng.uniform(-30, 20, n))
        sp = rng.random(n)
        v = np.where(sp < 0.01, np.inf, np.where(sp < 0.02, -np.inf, np.where(sp < 0.03, np.nan, v)))
    return v.astype(np.float32).reshape(c["grid"], 64, 64)


def _run_epilogue(backend, c, fn):
    from ..tensorcore import fragments
    D = _epi_inputs(c)
    acc = np.concatenate([fragments.matrix_to_accumulator(D[g].view(np.uint32), 64) for g in range(c["grid"])])
    row_bytes = 64 if c["out"] == "e4m3" else 128
    tile = backend.zeros(c["grid"] * 64 * row_bytes, np.uint8)
    tm = _tmap(backend, tile, c["out"], 64 * c["grid"])
    backend.launch(fn("l07_fp8_gemm", f"epilogue_{c['out']}"), c["grid"], 128,
                   backend.to_device(acc.reshape(-1).astype(np.uint32)), tm, shared_mem=8192 + 1024)
    backend.synchronize()
    return {"tile": tile.to_host().reshape(-1)}


def model_epilogue(c) -> dict[str, np.ndarray]:
    from ..tensorcore import epilogue
    D = _epi_inputs(c)
    return {"tile": np.concatenate([epilogue.epilogue(D[g], c["out"]).tile.reshape(-1) for g in range(c["grid"])])}


# ------------------------------------------------------------------------------------------------
# FP8 accumulation truncation: long chains through the lesson-6 probe kernels

def accumulation_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Chains of m64n64k32 FP8 wgmmas on one accumulator (K = 32·steps): ``ones`` (A, B = ±1 and small powers of
    two: the sum grows while small terms fall below the 13-bit window), ``normal`` random values; f32 and f16 D."""
    out = []
    for i, (form, steps, inp) in enumerate([("ss_n64_f32_e4m3_e4m3", 16, "grow"), ("ss_n64_f32_e4m3_e4m3", 48, "grow"),
                                            ("ss_n64_f32_e5m2_e4m3", 16, "grow"), ("ss_n64_f32_e4m3_e4m3", 32, "normal"),
                                            ("ss_n64_f16_e4m3_e4m3", 16, "grow"), ("ss_n64_f32_e5m2_e5m2", 32, "normal")]):
        out.append(dict(id=f"acc_{form}_s{steps}_{inp}", kind="accumulation", form=form, steps=steps, input=inp,
                        seed=9800 + i))
    return out[:2] if quick else out


def build_accumulation(c):
    """Inputs of a chain case for ``l06_wgmma_probe.cu``'s ``probe_<form>``: per step an A (64 × 32) and B (64 × 32)
    K-major image, zero C, scale-d = 0 on the first wgmma. ``grow``: positive values ``(1 + m/8)·2^-u`` with u
    mostly 0 — the sum grows, so later small products fall below the accumulator's 13-bit window."""
    from ..tensorcore import numerics
    from . import l06
    sp = l06._spec(c["form"])
    rng = np.random.default_rng(c["seed"])
    steps = c["steps"]
    per = -(-(steps * 2 * 64 * 32) // IMAGE_ALIGN) * IMAGE_ALIGN
    img = np.zeros(per, np.uint8)
    descs, As, Bs = [], [], []
    for s_ in range(steps):
        if c["input"] == "grow":
            def vals(shape):
                u = np.where(rng.random(shape) < 0.7, 0, rng.integers(1, 10, shape))
                return (1 + rng.integers(0, 8, shape) / 8) * np.exp2(-u.astype(float))
            A = numerics.from_float(vals((64, 32)), sp.atype)
            B = numerics.from_float(vals((64, 32)), sp.btype)
        else:
            A = l06._floats(rng, sp.atype, (64, 32), "normal")
            B = l06._floats(rng, sp.btype, (64, 32), "normal")
        off = s_ * 2 * 64 * 32
        descs += [l06._place_k(img, off, A, sp.atype).encode(), l06._place_k(img, off + 2048, B, sp.btype).encode()]
        As.append(A)
        Bs.append(B)
    return dict(spec=sp, img=img, img_bytes=per, descs=np.array(descs, np.uint64), A=As, B=Bs,
                c_in=np.zeros(128 * sp.d_regs, np.uint32))


#: the dense forms of the zero-alignment probe (l06_wgmma_probe.cu's probe_<form>): the types whose inputs reach
#: 2^127, where a zero factor's exponent could matter in the alignment
ZERO_FORMS = ("ss_n64_f32_tf32", "ss_n64_f32_bf16")


def zero_align_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Does a product with a zero factor take part in the tensor core's alignment (``numerics.AccumulatorModel.
    zero_exponent``)? Per form of :data:`ZERO_FORMS`: ``zero_a`` — each row one real product ``A[m,0]·B[0,n]``
    (exponents 0 down to -126 across the columns) and zeros in A where B holds 2^120; ``zero_b`` — the same with
    the zeros in B and 2^120 in A. If a zero counted with exponent -126, the huge partner would put it at 2^-6 and
    cut every real product below 2^-31."""
    out = []
    for i, form in enumerate(ZERO_FORMS):
        for j, kind in enumerate(("zero_a", "zero_b")):
            out.append(dict(id=f"zero_{form}_{kind}", kind="zero_align", form=form, input=kind, steps=1,
                            seed=9900 + 10 * i + j))
    return out[:1] if quick else out


def build_zero_align(c):
    """Inputs of a zero-alignment case in the layout of :func:`build_accumulation` (one step, zero C, scale-d 0)."""
    from ..tensorcore import numerics
    from . import l06
    sp = l06._spec(c["form"])
    K, N = sp.k, sp.n
    m = np.arange(64)[:, None]
    n = np.arange(N)[None, :]
    a = np.zeros((64, K))
    b = np.zeros((K, N))
    a[:, 0] = 1 + m[:, 0] / 64
    b[0, :] = 1.5 * np.exp2(-2.0 * n[0])                               # real products 2^0 ... 2^-126
    if c["input"] == "zero_a":
        b[1:, :] = 1.75 * 2.0 ** 120                                     # A is zero there
    else:
        a[:, 1:] = 1.75 * 2.0 ** 120                                     # B is zero there
    A = numerics.from_float(a, sp.atype)
    B = numerics.from_float(b, sp.btype)
    per = -(-(2 * 64 * K * l06._ES[sp.atype]) // IMAGE_ALIGN) * IMAGE_ALIGN
    img = np.zeros(per, np.uint8)
    da = l06._place_k(img, 0, A, sp.atype)
    db = l06._place_k(img, 64 * K * l06._ES[sp.atype], np.ascontiguousarray(B.T), sp.btype)
    return dict(spec=sp, img=img, img_bytes=per, descs=np.array([da.encode(), db.encode()], np.uint64), A=[A],
                B=[np.ascontiguousarray(B.T)], c_in=np.zeros(128 * sp.d_regs, np.uint32))


def _run_accumulation(backend, c, fn):
    b = build_zero_align(c) if c["kind"] == "zero_align" else build_accumulation(c)
    sp = b["spec"]
    out = backend.zeros(128 * sp.d_regs, np.uint32)
    k = fn("l06_wgmma_probe", f"probe_{c['form']}")
    if b["img_bytes"] + IMAGE_ALIGN > 48 * 1024:
        k.set_max_dynamic_shared_memory(b["img_bytes"] + IMAGE_ALIGN)
    backend.launch(k, 1, 128, backend.to_device(b["img"]),
                   np.int32(b["img_bytes"]), backend.to_device(b["descs"]), np.int32(c["steps"]), np.uint64(0),
                   backend.to_device(b["c_in"]), np.int32(0), out, shared_mem=b["img_bytes"] + IMAGE_ALIGN)
    backend.synchronize()
    return {"d": out.to_host().reshape(-1)}


def model_accumulation(c, zero_rule: bool = False) -> np.ndarray:
    """The chained :func:`h100lab.tensorcore.numerics.mma` (each D fed back as C), in register order."""
    from ..tensorcore import fragments, numerics
    b = build_zero_align(c) if c["kind"] == "zero_align" else build_accumulation(c)
    sp = b["spec"]
    D = None
    for A, B in zip(b["A"], b["B"]):
        D = numerics.mma(A, B.T, D, atype=sp.atype, btype=sp.btype, dtype=sp.dtype, scale_d=D is not None,
                         model=numerics_model(sp.atype, sp.dtype, zero_rule))
    out = fragments.accumulator_registers(D, 64, sp.dtype)
    return out.astype(np.uint32).reshape(-1)


# ------------------------------------------------------------------------------------------------
# wgmma timing

#: (type, N) of the kernels tim_<type>_n<N> in l07_wgmma_timing.cu
TIMING_FORMS = [(t, n) for t in ("bf16", "tf32", "e4m3", "s8", "sp_bf16") for n in (16, 32, 64, 128, 256)]


def timing_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Per form: latency (1 wgmma per group, wait 0) and throughput (16 per group, 1 group in flight); for bf16
    N = 64 and 256 also every (per_group, depth) in {1, 2, 4} × {0, 1, 2}. ``iters`` groups, 3 launches each."""
    out = []
    for t, n in TIMING_FORMS:
        pats = [(1, 0), (16, 1)]
        if t == "bf16" and n in (64, 256):
            pats += [(g, d) for g in (1, 2, 4) for d in (0, 1, 2) if (g, d) != (1, 0)]
        for g, d in pats:
            out.append(dict(id=f"tim_{t}_n{n}_g{g}_d{d}", kind="timing", type=t, n=n, per_group=g, depth=d,
                            iters=64 if g == 16 else 256, launches=3))
    if quick:
        out = [c for c in out if c["n"] in (64, 256) and c["type"] in ("bf16", "e4m3")]
    return out


def _timing_descs(t, n):
    from ..tensorcore import descriptor as dsc
    at = {"bf16": "bf16", "tf32": "tf32", "e4m3": "e4m3", "s8": "s8", "sp_bf16": "bf16"}[t]
    la, sa = dsc.canonical_lbo_sbo("K", "none", at, 64)
    lb, sb = dsc.canonical_lbo_sbo("K", "none", at, n)
    return dsc.MatrixDescriptor(0, la, sa, 0, "none").encode(), dsc.MatrixDescriptor(8192, lb, sb, 0, "none").encode()


#: (mode, N, accumulator sets, wgmmas per group) of the kernels dep_<mode>_n<N>_a<A>_g<G> in l07_wgmma_deps.cu
DEP_FORMS = [("chain", 64, 1, g) for g in (1, 2, 4, 16)] + [("chain", 64, a, g) for a in (2, 4) for g in (1, 2, 4)] + \
    [("fresh", 64, 1, g) for g in (1, 2, 4)] + [("chain", 128, 1, g) for g in (1, 4, 16)] + \
    [("chain", 128, 2, g) for g in (1, 4)] + [("chain", 256, 1, g) for g in (1, 2, 4, 16)] + \
    [("fresh", 256, 1, g) for g in (1, 4)]
#: wgmmas per launch of every dependency form (iters = DEP_WGMMAS / G groups)
DEP_WGMMAS = 1024


def dep_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Per form of :data:`DEP_FORMS` and wait depth 0..3: ``iters`` = 1024 / G groups (the same work at every
    depth and group size), 3 launches. Record keys as :func:`timing_cases` plus ``mode`` and ``sets``."""
    out = []
    for mode, n, a, g in DEP_FORMS:
        for d in range(4):
            out.append(dict(id=f"dep_{mode}_n{n}_a{a}_g{g}_d{d}", kind="timing_dep", type="bf16", mode=mode, n=n,
                            sets=a, per_group=g, depth=d, iters=DEP_WGMMAS // g, launches=3))
    if quick:
        out = [c for c in out if c["n"] == 64 and c["per_group"] <= 2]
    return out


#: the forms whose wait depth is a compile-time constant: kernels dep_<mode>_n<N>_a<A>_g<G>_d<depth>
DEPTH_FORMS = [("chain", 64, 1, g) for g in (1, 2, 4, 16)] + [("chain", 64, a, g) for a in (2, 4) for g in (1, 2, 4)] + \
    [("fresh", 64, 1, 1)] + [("chain", 128, a, g) for a in (1, 2) for g in (1, 4)] + \
    [("chain", 256, 1, g) for g in (1, 2, 4)] + [("fresh", 256, 1, 1)]


def depth_cases(quick: bool = False) -> list[dict[str, Any]]:
    """:func:`dep_cases` for :data:`DEPTH_FORMS` with the wait depth compiled in (``static``: True; dataset
    ``l07/wgmma_depth``): what the tensor core does without the run-time switch's cost to the warp."""
    out = []
    for mode, n, a, g in DEPTH_FORMS:
        for d in range(4):
            out.append(dict(id=f"dep_{mode}_n{n}_a{a}_g{g}_d{d}_static", kind="timing_dep", type="bf16", mode=mode,
                            n=n, sets=a, per_group=g, depth=d, static=True, iters=DEP_WGMMAS // g, launches=3))
    if quick:
        out = [c for c in out if c["n"] == 64 and c["per_group"] <= 2]
    return out


def _run_deps(backend, c, fn):
    da, db = _timing_descs("bf16", c["n"])
    k = fn("l07_wgmma_deps", f"dep_{c['mode']}_n{c['n']}_a{c['sets']}_g{c['per_group']}" +
           (f"_d{c['depth']}" if c.get("static") else ""))
    cyc = []
    for _ in range(c["launches"]):
        out = backend.zeros(1, np.int64)
        sink = backend.zeros(128, np.uint32)
        backend.launch(k, 1, 128, np.uint64(da), np.uint64(db), np.int32(c["depth"]), np.int32(c["iters"]), out,
                       sink, shared_mem=40960 + 1024)
        backend.synchronize()
        cyc.append(int(out.to_host()[0]))
    return {"cycles": cyc}


def _run_timing(backend, c, fn):
    da, db = _timing_descs(c["type"], c["n"])
    k = fn("l07_wgmma_timing", f"tim_{c['type']}_n{c['n']}")
    cyc = []
    for _ in range(c["launches"]):
        out = backend.zeros(1, np.int64)
        sink = backend.zeros(128, np.uint32)
        backend.launch(k, 1, 128, np.uint64(da), np.uint64(db), np.int32(c["per_group"]), np.int32(c["depth"]),
                       np.int32(c["iters"]), out, sink, shared_mem=40960 + 1024)
        backend.synchronize()
        cyc.append(int(out.to_host()[0]))
    return {"cycles": cyc}


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
    if kind in ("accumulation", "zero_align"):
        return _run_accumulation(backend, c, fn)
    if kind == "timing":
        return _run_timing(backend, c, fn)
    if kind == "timing_dep":
        return _run_deps(backend, c, fn)
    raise ValueError(f"unknown case kind {kind!r}")


def model_outputs(c: dict[str, Any], zero_rule: bool = False) -> dict[str, np.ndarray]:
    """The outputs the model predicts for a case (timing cases: none — they are compared by
    :mod:`h100lab.validation.l07` with the timing model's tolerance); ``zero_rule``: with the measured alignment
    of zero factors (:func:`numerics_model`) for the sparse, chain and zero-alignment cases."""
    kind = c["kind"]
    if kind == "sparse":
        d = model_sparse(c, zero_rule=zero_rule)
        return {"d": d, **{f"d{i}": d for i in range(1, c.get("repeat", 1))}}
    if kind == "fp8_gemm":
        return model_fp8_gemm(c)
    if kind == "epilogue":
        return model_epilogue(c)
    if kind in ("accumulation", "zero_align"):
        return {"d": model_accumulation(c, zero_rule=zero_rule)}
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


def _only(ap):
    ap.add_argument("--only", default="", help="comma-separated datasets to measure (e.g. sparse_meta,wgmma_deps); "
                    "default: all")


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l07", argv, __doc__.splitlines()[0], "fewer cases per dataset", _only)
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import cuda, data

    # (dataset, cases, seconds of case time it may take: the whole run stays well under 4 minutes)
    sets = [("l07/sparse", sparse_cases(args.quick), 50), ("l07/fp8_gemm", fp8_gemm_cases(args.quick), 30),
            ("l07/epilogue", epilogue_cases(args.quick), 10), ("l07/fp8_accumulation", accumulation_cases(args.quick), 15),
            ("l07/wgmma_timing", timing_cases(args.quick), 45), ("l07/sparse_meta", meta_cases(args.quick), 20),
            ("l07/wgmma_deps", dep_cases(args.quick), 40), ("l07/zero_align", zero_align_cases(args.quick), 10),
            ("l07/wgmma_depth", depth_cases(args.quick), 40)]
    only = {f"l07/{x.strip()}" for x in args.only.split(",") if x.strip()}
    unknown = only - {name for name, _, _ in sets}
    if unknown:
        print(f"--only: no dataset {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    status = 0
    for name, cases, budget in sets:
        if only and name not in only:
            continue
        t0 = time.time()
        try:
            recs = run_cases(cuda, cases, budget_s=budget)
            data.write(name, recs, meta)
        except Exception as exc:
            print(f"   {name}: not written: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
            continue
        bad = sum(1 for r in recs if not r["ok"])
        status |= bool(bad)
        # the model comparison (h100lab.validation.l07) runs where the data is committed, not on the GPU's clock
        print(f"   {name}: {len(recs)} cases ({bad} failed to run) in {time.time() - t0:.1f} s", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
