"""Lesson 6 measurements: wgmma fragments, descriptor gathers, ldmatrix/stmatrix, tensor-core numerics.

``python -m h100lab.measure.l06 [--out DIR] [--quick]`` writes (``h100lab.data``, metadata: GPU, driver, CUDA,
date, command):

* ``l06/fragments``: accumulator and RS A-fragment layouts — random A through an identity B (D = A exactly) for
  bf16 N=64/256, f16 accumulators, tf32, e4m3 and s8 (SS and RS forms of ``l06_wgmma_probe.cu``);
* ``l06/descriptors``: which shared-memory byte every operand element is read from — an f16 iota image (the
  halfword index, as two launches: index % 2048 and index // 2048, both exact in f16) read through descriptors
  for every swizzle mode, K-major A (LBO, SBO, base offset, K-advance varied) and MN-major A and B;
* ``l06/ldmatrix``: ``ldmatrix``/``stmatrix`` .x1/.x2/.x4 (.trans) registers and stored bytes for random rows;
* ``l06/gemm``: the SS and RS 64×64×64 GEMM tiles of ``l06_wgmma_gemm.cu``;
* ``l06/numerics``: every wgmma type combination (26 probe forms) on random inputs of several kinds (normal
  values, the whole exponent range with subnormals, sprinkled Inf/NaN, cancellation, signed zeros, chains of 4
  wgmmas, scale-d = 0): ≥ 12,288 outputs per form. Inputs are not stored — each record holds the seed that
  regenerates them (:func:`build_case`) and the raw D registers, zlib-compressed.

Every case is run by :func:`run_case` on any backend with the ``h100lab.cuda`` calls (``h100lab.emu`` too — the
tests replay the cases on the emulator) and predicted by :func:`model_case` from :mod:`h100lab.tensorcore`; one
failing case is recorded with its error and does not stop the others.
"""
from __future__ import annotations

import sys
import time
import traceback
from typing import Any, Sequence

import numpy as np

from . import begin

__all__ = ["PROBE_FORMS", "fragment_cases", "descriptor_cases", "numerics_cases", "ldmatrix_cases", "gemm_cases",
           "build_case", "model_case", "run_case", "run_cases", "main", "IMAGE_ALIGN"]

IMAGE_ALIGN = 1024
#: the probe kernels of l06_wgmma_probe.cu: name -> (n, dtype, atype, btype, a_source, trans_a, trans_b, scale_a, sat)
PROBE_FORMS: dict[str, tuple] = {}
for _n, _nn, _d, _a, _b, _ta, _tb, _sa, _sat in [
        ("ss_n64_f32_bf16", 64, "f32", "bf16", "bf16", 0, 0, 1, 0),
        ("ss_n64_f32_bf16_nega", 64, "f32", "bf16", "bf16", 0, 0, -1, 0),
        ("ss_n256_f32_bf16", 256, "f32", "bf16", "bf16", 0, 0, 1, 0),
        ("ss_n64_f32_f16", 64, "f32", "f16", "f16", 0, 0, 1, 0),
        ("ss_n64_f32_f16_ta", 64, "f32", "f16", "f16", 1, 0, 1, 0),
        ("ss_n64_f32_f16_tb", 64, "f32", "f16", "f16", 0, 1, 1, 0),
        ("ss_n64_f16_f16", 64, "f16", "f16", "f16", 0, 0, 1, 0),
        ("ss_n64_f32_tf32", 64, "f32", "tf32", "tf32", 0, 0, 1, 0)] + [
        (f"ss_n64_{d}_{a}_{b}", 64, d, a, b, 0, 0, 1, 0) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")
        for d in ("f32", "f16")] + [
        (f"ss_n64_s32_{a}_{b}", 64, "s32", a, b, 0, 0, 1, 0) for a in ("s8", "u8") for b in ("s8", "u8")] + [
        ("ss_n64_s32_s8_s8_sat", 64, "s32", "s8", "s8", 0, 0, 1, 1), ("ss_n64_s32_b1", 64, "s32", "b1", "b1", 0, 0, 1, 0)]:
    PROBE_FORMS[_n] = (_nn, _d, _a, _b, "ss", _ta, _tb, _sa, _sat)
for _n, _a in (("rs_n64_f32_bf16", "bf16"), ("rs_n64_f32_tf32", "tf32"), ("rs_n64_f32_e4m3_e4m3", "e4m3"),
               ("rs_n64_s32_s8_s8", "s8")):
    PROBE_FORMS[_n] = (64, "s32" if _a == "s8" else "f32", _a, _a, "rs", 0, 0, 1, 0)

_ES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "b1": 1}
_RAWT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _spec(form: str):
    from ..tensorcore import shapes
    n, d, a, b, src, ta, tb, sa, sat = PROBE_FORMS[form]
    return shapes.spec(n, d, a, b, src, satfinite=bool(sat), scale_a=sa, trans_a=ta, trans_b=tb)


# ------------------------------------------------------------------------------------------------
# input generation

def _floats(rng, fmt: str, shape, kind: str) -> np.ndarray:
    """Raw bits of ``fmt`` for input kind ``normal`` / ``wide`` / ``special`` / ``zeros``."""
    from ..tensorcore import numerics
    nb, eb, fb, bias, has_inf = numerics.FORMATS[fmt]
    size = int(np.prod(shape))
    if kind == "wide":                    # every finite code, subnormals included (no NaN/Inf)
        raw = rng.integers(0, 1 << nb, size, dtype=np.uint64)
        E = (raw >> np.uint64(fb)) & np.uint64((1 << eb) - 1)
        top = (1 << eb) - 1
        if fmt == "e4m3":
            bad = (E == top) & ((raw & np.uint64((1 << fb) - 1)) == (1 << fb) - 1)
            raw = np.where(bad, raw ^ np.uint64(1), raw)
        else:
            raw = np.where(E == top, raw ^ np.uint64(1 << fb), raw)
        out = raw.astype(_RAWT[max(1, nb // 8)])
    else:
        lo, hi = {"e4m3": (-6, 6), "e5m2": (-10, 10), "f16": (-10, 10)}.get(fmt, (-20, 20))
        v = rng.choice([-1.0, 1.0], size) * np.ldexp(1 + rng.random(size), rng.integers(lo, hi, size))
        if kind == "zeros":
            v = np.where(rng.random(size) < 0.5, v, np.where(rng.random(size) < 0.5, 0.0, -0.0))
        out = numerics.from_float(v, fmt).astype(_RAWT[max(1, nb // 8)])
        if kind == "special":
            sel = rng.random(size) < 0.004
            nan = numerics.from_float(np.array([np.nan]), fmt)[0]
            inf = numerics.from_float(np.array([np.inf]), fmt)[0] if has_inf else nan
            out = np.where(sel, np.where(rng.random(size) < 0.5, inf, nan), out)
    return out.reshape(shape)


def _operands(rng, sp, kind: str):
    """(A (M×K), B (N×K), C (M×N)) raw bits for a numerics case."""
    M, N, K = 64, sp.n, sp.k
    if sp.atype in ("s8", "u8", "b1"):
        if sp.atype == "b1":
            A = rng.integers(0, 2, (M, K)).astype(np.uint8)
            B = rng.integers(0, 2, (N, K)).astype(np.uint8)
        else:
            A = rng.integers(0, 256, (M, K), dtype=np.uint8)
            B = rng.integers(0, 256, (N, K), dtype=np.uint8)
        big = kind == "special"
        C = (rng.integers(-2**31, 2**31, (M, N)) if big else rng.integers(-2**20, 2**20, (M, N))).astype(np.int64)
        if big:
            C = np.where(rng.random((M, N)) < 0.5, np.sign(C) * (2**31 - rng.integers(0, 3000, (M, N))), C)
        return A, B, (C & 0xFFFFFFFF).astype(np.uint32)
    ak = kind if kind != "cancel" else "normal"
    A = _floats(rng, sp.atype, (M, K), ak)
    B = _floats(rng, sp.btype, (N, K), ak)
    if kind == "cancel":                  # pairs of products that cancel up to a few low bits
        A[:, 1::2] = A[:, 0::2] ^ np.array(1 << (8 * _ES[sp.atype] - 1), A.dtype)
        B[:, 1::2] = B[:, 0::2] ^ np.array(rng.integers(0, 2, B[:, 0::2].shape), B.dtype)
    cf = "f16" if sp.dtype == "f16" else "f32"
    C = _floats(rng, cf, (M, N), "normal" if kind in ("cancel",) else ak)
    return A, B, C


def _place_k(img, off, mat, fmt, swz="none"):
    """Write an R×K operand K-major at image offset ``off`` in the canonical layout; returns its descriptor."""
    from ..tensorcore import descriptor as dsc
    rows, k = mat.shape
    dt = "u8" if fmt == "b1" else fmt
    cols = k // 8 if fmt == "b1" else k
    lbo, sbo = dsc.canonical_lbo_sbo("K", swz, dt, rows)
    d = dsc.MatrixDescriptor(off, lbo, sbo, 0, swz)
    adr = dsc.addresses(d, "K", rows, cols, dt)
    es = _ES[fmt]
    data = np.packbits(mat.astype(np.uint8), axis=1, bitorder="little") if fmt == "b1" else mat
    raw = np.ascontiguousarray(data.astype(_RAWT[es])).view(np.uint8).reshape(rows, cols, es)
    img[(adr[..., None] + np.arange(es))] = raw
    return d


def _operand_bytes(sp, rows):
    k = sp.k // 8 if sp.atype == "b1" else sp.k
    return rows * k * _ES[sp.atype]


# ------------------------------------------------------------------------------------------------
# cases: plain dicts (JSON), inputs regenerated from the seed by build_case

def numerics_cases(quick: bool = False) -> list[dict[str, Any]]:
    """For every probe form: kinds normal/wide/special/cancel/zeros (floats) or normal/special (integers), one
    chain of 4 wgmmas, one scale-d = 0 case; 3 CTAs each (≥ 12,288 outputs per form)."""
    out = []
    for i, form in enumerate(PROBE_FORMS):
        sp = _spec(form)
        kinds = ["normal", "special"] if not sp.is_float else ["normal", "wide", "special", "cancel", "zeros"]
        if quick:
            kinds = kinds[:2]
        for j, kind in enumerate(kinds):
            out.append(dict(id=f"num_{form}_{kind}", kind="numerics", form=form, input=kind, steps=1, scale_d=1,
                            grid=3 if kind == "normal" else 1, seed=1000 * i + j))
        out.append(dict(id=f"num_{form}_chain4", kind="numerics", form=form, input="normal", steps=4, scale_d=1,
                        grid=1, seed=1000 * i + 50))
        out.append(dict(id=f"num_{form}_scaled0", kind="numerics", form=form, input="normal", steps=1, scale_d=0,
                        grid=1, seed=1000 * i + 60))
    return out


def fragment_cases() -> list[dict[str, Any]]:
    """Random A through an identity B (D[m][n] = A[m][n] for n < K): the accumulator layout and, for the RS forms,
    the A-fragment layout."""
    forms = ["ss_n64_f32_bf16", "ss_n256_f32_bf16", "ss_n64_f16_f16", "ss_n64_f32_tf32", "ss_n64_f32_e4m3_e4m3",
             "ss_n64_s32_s8_s8", "ss_n64_s32_b1", "rs_n64_f32_bf16", "rs_n64_f32_tf32", "rs_n64_f32_e4m3_e4m3",
             "rs_n64_s32_s8_s8"]
    return [dict(id=f"frag_{f}", kind="fragment", form=f, steps=1, scale_d=1, grid=1, seed=77 + i)
            for i, f in enumerate(forms)]


def descriptor_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Descriptors over an f16 iota image: K-major A for every swizzle with canonical and odd LBO/SBO, base
    offsets, K-advances; MN-major A (imm-trans-a) and B (imm-trans-b). ``part`` 0: index % 2048, 1: index // 2048."""
    rows = []
    for swz, S in (("none", 16), ("32B", 32), ("64B", 64), ("128B", 128)):
        if swz == "none":
            variants = [(0, 1024, 128, 0), (0, 2048, 256, 0), (16, 512, 128, 0), (0, 128, 256, 0)]
        else:
            variants = [(0, 16, 8 * S, 0), (0, 4096, 8 * S, 0), (0, 16, 16 * S, 0)]
            variants += [(32 * j, 16, 8 * S, 0) for j in (1, 2, 3) if 32 * j < S]
            variants += [(128, 16, 8 * S, 1), (384 % (8 * S), 16, 8 * S, 3 % (S // 16)), (384 % (8 * S), 16, 8 * S, 0)]
        for start, lbo, sbo, bo in variants:
            rows.append(("K", "ss_n64_f32_f16", swz, start, lbo, sbo, bo))
        mn = [(0, 8 * S, 8 * S, 0), (0, 8 * S, 16 * S, 0)] if swz != "none" else [(0, 1024, 128, 0), (0, 2048, 256, 0)]
        for start, lbo, sbo, bo in mn:
            rows.append(("MN", "ss_n64_f32_f16_ta", swz, start, lbo, sbo, bo))
            rows.append(("MNB", "ss_n64_f32_f16_tb", swz, start, lbo, sbo, bo))
    rows = list(dict.fromkeys(rows))
    if quick:
        rows = rows[::3]
    out = []
    for i, (major, form, swz, start, lbo, sbo, bo) in enumerate(rows):
        for part in (0, 1):
            out.append(dict(id=f"desc_{major}_{swz}_{start}_{lbo}_{sbo}_{bo}_p{part}", kind="descriptor", form=form,
                            major=major, swizzle=swz, start=start, lbo=lbo, sbo=sbo, base_offset=bo, part=part,
                            steps=1, scale_d=0, grid=1, seed=i))
    return out


def ldmatrix_cases() -> list[dict[str, Any]]:
    """Every ldmatrix/stmatrix mode with random distinct rows and with conflict-heavy rows."""
    out = []
    for mode in (1, 2, 4, 9, 10, 12):
        for pat in ("random", "column"):
            out.append(dict(id=f"ldsm_{mode}_{pat}", kind="ldmatrix", mode=mode, pattern=pat, seed=mode * 10 + len(pat)))
    return out


def gemm_cases() -> list[dict[str, Any]]:
    return [dict(id=f"gemm_{k}_{s}", kind="gemm", kernel=k, seed=s) for k in ("gemm_ss", "gemm_rs") for s in (1, 2)]


def build_case(c: dict[str, Any]) -> dict[str, Any]:
    """The kernel inputs of a wgmma probe case: ``img`` (grid × image bytes), ``descs`` (grid·steps·2 uint64, start
    addresses relative to the image), ``a_regs`` (RS: (grid·128·steps·4) uint32 or None), ``c_in`` (grid·128·d_regs)
    and the model's inputs per CTA (``A`` list per step, ``B``, ``C``)."""
    from ..tensorcore import descriptor as dsc, fragments, numerics
    sp = _spec(c["form"])
    rng = np.random.default_rng(c["seed"])
    steps, grid = c["steps"], c["grid"]
    abytes, bbytes = _operand_bytes(sp, 64), _operand_bytes(sp, sp.n)
    if c["kind"] == "descriptor":
        return _build_descriptor(c, sp)
    per = -(-(steps * (abytes + bbytes)) // IMAGE_ALIGN) * IMAGE_ALIGN
    imgs, descs, aregs, cins, As, Bs, Cs = [], [], [], [], [], [], []
    for g in range(grid):
        img = np.zeros(per, np.uint8)
        Ag, Bg = [], []
        if c["kind"] == "fragment":
            A, _, C = _operands(rng, sp, "normal")
            if sp.atype in ("s8", "u8"):
                A = rng.integers(0, 256, A.shape, dtype=np.uint8)
            B = np.zeros((sp.n, sp.k), A.dtype)
            one = numerics.from_float(np.array([1.0]), sp.btype)[0] if sp.is_float else 1
            B[np.arange(min(sp.n, sp.k)), np.arange(min(sp.n, sp.k))] = one
            C = np.zeros_like(C)
            Ag, Bg = [A], [B]
        else:
            _, _, C = _operands(rng, sp, c["input"])
            for s in range(steps):
                A, B, _ = _operands(rng, sp, c["input"])
                Ag.append(A)
                Bg.append(B)
        for s in range(steps):
            off = s * (abytes + bbytes)
            da = _place_k(img, off, Ag[s], sp.atype)
            db = _place_k(img, off + abytes, Bg[s], sp.btype)
            descs += [da.encode(), db.encode()]
        if sp.a_source == "rs":
            for s in range(steps):
                aregs.append(fragments.pack_a_fragment(Ag[s].astype(np.uint32), sp.atype))
        vals = fragments.accumulator_registers(C, sp.n, sp.dtype)
        cins.append(vals.astype(np.uint32))
        imgs.append(img)
        As.append(Ag)
        Bs.append(Bg)
        Cs.append(C)
    a_regs = None
    if aregs:   # layout [cta][thread][step][4]
        a = np.stack(aregs).reshape(grid, steps, 128, 4).transpose(0, 2, 1, 3)
        a_regs = np.ascontiguousarray(a).reshape(-1).astype(np.uint32)
    return dict(spec=sp, img=np.concatenate(imgs), img_bytes=per, descs=np.array(descs, np.uint64),
                a_regs=a_regs, c_in=np.concatenate(cins).reshape(-1), A=As, B=Bs, C=Cs)


def _build_descriptor(c, sp):
    from ..tensorcore import descriptor as dsc, numerics
    region = 16384
    img = np.zeros(region + 4096, np.uint8)
    h = np.arange(region // 2)
    img[:region].view(np.uint16)[:] = numerics.from_float((h % 2048) if c["part"] == 0 else (h // 2048), "f16")
    d = dsc.MatrixDescriptor(c["start"], c["lbo"], c["sbo"], c["base_offset"], c["swizzle"])
    ident_a = np.zeros((64, 16), np.uint16)
    ident_a[np.arange(16), np.arange(16)] = 0x3C00
    ident_b = np.zeros((64, 16), np.uint16)          # B as N × K: B[k][n] = 1 iff k == n
    ident_b[np.arange(16), np.arange(16)] = 0x3C00
    if c["major"] == "MNB":
        da = _place_k(img, region, ident_a, "f16")
        descs = [da.encode(), d.encode()]
    else:
        db = _place_k(img, region, ident_b, "f16")
        descs = [d.encode(), db.encode()]
    c_in = np.zeros(128 * sp.d_regs, np.uint32)
    return dict(spec=sp, img=img, img_bytes=img.size, descs=np.array(descs, np.uint64), a_regs=None, c_in=c_in)


def model_case(c: dict[str, Any], built: dict[str, Any] | None = None) -> np.ndarray:
    """The raw D registers (grid × 128 × d_regs uint32) the model predicts, reading the same image through the
    same descriptors (:func:`h100lab.tensorcore.gather`, :func:`~h100lab.tensorcore.mma`)."""
    from ..tensorcore import descriptor as dsc, fragments, numerics
    b = built or build_case(c)
    sp = b["spec"]
    grid, steps = c["grid"], c["steps"]
    per = b["img_bytes"]
    outs = []
    for g in range(grid):
        img = b["img"][g * per:(g + 1) * per]
        cr = b["c_in"].reshape(grid, 128, sp.d_regs)[g]
        if sp.dtype == "f16":
            vals = np.stack([cr & 0xFFFF, cr >> 16], axis=2).reshape(128, sp.n // 2).astype(np.uint16)
        else:
            vals = cr
        D = fragments.accumulator_to_matrix(vals, sp.n)
        for s in range(steps):
            da = dsc.MatrixDescriptor.decode(int(b["descs"][(g * steps + s) * 2]))
            db = dsc.MatrixDescriptor.decode(int(b["descs"][(g * steps + s) * 2 + 1]))
            Bm = dsc.gather(img, db, "MN" if sp.trans_b else "K", sp.n, sp.k, sp.btype).T
            if sp.a_source == "rs":
                regs = b["a_regs"].reshape(grid, 128, steps, 4)[g, :, s]
                Am = fragments.unpack_a_fragment(regs, sp.atype).astype(_RAWT[_ES[sp.atype]])
            else:
                Am = dsc.gather(img, da, "MN" if sp.trans_a else "K", 64, sp.k, sp.atype)
            sd = bool(c["scale_d"]) if s == 0 else True
            D = numerics.mma(Am, Bm, D, atype=sp.atype, btype=sp.btype, dtype=sp.dtype, scale_d=sd,
                             scale_a=sp.scale_a, scale_b=sp.scale_b, satfinite=sp.satfinite)
        out = fragments.accumulator_registers(D, sp.n, sp.dtype)
        outs.append(out.astype(np.uint32))
    return np.stack(outs)


def _ldsm_inputs(c):
    rng = np.random.default_rng(c["seed"])
    src = rng.integers(0, 256, 4096, dtype=np.uint8)
    if c["pattern"] == "random":
        addr = rng.permutation(256)[:32] * 16
    else:                                   # 8 rows 128 B apart (one bank group): worst case
        addr = (np.arange(32) % 8) * 128 + (np.arange(32) // 8) * 16
    st = rng.permutation(256)[:32] * 16
    return src, addr.astype(np.uint32), st.astype(np.uint32)


def _gemm_inputs(c):
    from ..tensorcore import numerics
    rng = np.random.default_rng(c["seed"])
    A = numerics.from_float(rng.standard_normal((64, 64)), "bf16")
    Bt = numerics.from_float(rng.standard_normal((64, 64)), "bf16")
    return A, Bt


def model_other(c: dict[str, Any]) -> dict[str, np.ndarray]:
    """Model outputs of an ldmatrix or gemm case."""
    from ..tensorcore import fragments, mma
    if c["kind"] == "ldmatrix":
        src, addr, st = _ldsm_inputs(c)
        num, tr = c["mode"] & 7, bool(c["mode"] & 8)
        R = fragments.ldmatrix(src, addr, num, tr)
        regs = np.zeros((32, 4), np.uint32)
        regs[:, :num] = R
        z = np.zeros(4096, np.uint8)
        fragments.stmatrix(z, st, R, num, tr)
        return {"regs": regs.reshape(-1), "stored": z}
    A, Bt = _gemm_inputs(c)
    D = np.zeros((64, 64), np.uint32)
    for k in range(4):
        D = mma(A[:, 16 * k:16 * k + 16], Bt[:, 16 * k:16 * k + 16].T, D, atype="bf16")
    return {"d": D.reshape(-1)}


# ------------------------------------------------------------------------------------------------
# running on a backend (h100lab.cuda or h100lab.emu)

def run_case(backend, c: dict[str, Any], programs: dict | None = None) -> dict[str, np.ndarray]:
    """Run one case on ``backend`` (a module with compile_kernel/to_device/empty/launch/synchronize); returns its
    outputs as uint32/uint8 arrays."""
    programs = programs if programs is not None else {}

    def fn(prog, name):
        if prog not in programs:
            programs[prog] = backend.compile_kernel(prog)
        return programs[prog].function(name)

    if c["kind"] == "ldmatrix":
        src, addr, st = _ldsm_inputs(c)
        regs = backend.zeros(128, np.uint32)
        dst = backend.zeros(4096, np.uint8)
        backend.launch(fn("l06_wgmma_gemm", "ldsm_probe"), 1, 32, backend.to_device(src), backend.to_device(addr),
                       backend.to_device(st), np.int32(c["mode"]), regs, dst)
        backend.synchronize()
        return {"regs": regs.to_host().reshape(-1), "stored": dst.to_host().reshape(-1)}
    if c["kind"] == "gemm":
        A, Bt = _gemm_inputs(c)
        D = backend.zeros(64 * 64, np.uint32)
        backend.launch(fn("l06_wgmma_gemm", c["kernel"]), 1, 128, backend.to_device(A), backend.to_device(Bt), D,
                       shared_mem=17 * 1024)
        backend.synchronize()
        return {"d": D.to_host().reshape(-1)}
    b = build_case(c)
    sp = b["spec"]
    k = fn("l06_wgmma_probe", f"probe_{c['form']}")
    out = backend.zeros(c["grid"] * 128 * sp.d_regs, np.uint32)
    a_regs = backend.to_device(b["a_regs"]) if b["a_regs"] is not None else np.uint64(0)
    backend.launch(k, c["grid"], 128, backend.to_device(b["img"]), np.int32(b["img_bytes"]),
                   backend.to_device(b["descs"]), np.int32(c["steps"]), a_regs, backend.to_device(b["c_in"]),
                   np.int32(c["scale_d"]), out, shared_mem=b["img_bytes"] + IMAGE_ALIGN)
    backend.synchronize()
    return {"d": out.to_host().reshape(-1)}


def model_outputs(c: dict[str, Any]) -> dict[str, np.ndarray]:
    if c["kind"] in ("ldmatrix", "gemm"):
        return model_other(c)
    return {"d": model_case(c).reshape(-1)}


def run_cases(backend, cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records: each case with its outputs (packed) or, when it failed, its error — never losing the others."""
    from .l04 import pack
    programs: dict = {}
    recs = []
    for c in cases:
        try:
            o = run_case(backend, c, programs)
            recs.append(dict(c, ok=True, **{k: pack(np.ascontiguousarray(v).view(np.uint8)) for k, v in o.items()}))
        except Exception as exc:     # one failing probe must not lose the others' data
            recs.append(dict(c, ok=False, error=f"{type(exc).__name__}: {exc}"[:2000]))
            print(f"   {c['id']}: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
            if "context" in str(exc).lower() or "ILLEGAL" in str(exc):
                traceback.print_exc()
    return recs


def main(argv: Sequence[str] | None = None) -> int:
    s = begin("l06", argv, __doc__.splitlines()[0], "fewer numerics and descriptor cases")
    if s is None:
        return 2
    args, meta = s.args, s.meta
    from .. import cuda, data

    sets = [("l06/fragments", fragment_cases()), ("l06/descriptors", descriptor_cases(args.quick)),
            ("l06/ldmatrix", ldmatrix_cases()), ("l06/gemm", gemm_cases()),
            ("l06/numerics", numerics_cases(args.quick))]
    status = 0
    for name, cases in sets:
        t0 = time.time()
        try:
            recs = run_cases(cuda, cases)
            data.write(name, recs, meta)
        except Exception as exc:
            print(f"   {name}: not written: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
            continue
        bad = sum(1 for r in recs if not r["ok"])
        status |= bool(bad)
        try:
            from ..validation import l06 as v
            res = v.check(recs)
            print(f"   {name}: {len(recs)} cases ({bad} failed to run) in {time.time() - t0:.1f} s; model vs silicon: "
                  f"{res.cases} compared, {res.mismatches} mismatches {res.examples[:2] if res.mismatches else ''}")
        except Exception as exc:
            print(f"   {name}: written; model comparison failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
