"""FP8 (e4m3 / e5m2) conversion and quantisation: the bits ``cvt`` makes on the H200, and the scaling recipes
used to fit tensors into 8 bits (per tensor, delayed, per row / column, per block as DeepSeek-V3 / DeepGEMM).

Conversion — PTX ISA §9.7.9.21 ``cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32,f16x2}``, as the H200 does it
(``data/l01/cvt_bits``, every input class; hopper-spec-facts §10.2):

* round to nearest even (subnormals included) through ``ml_dtypes`` (``float8_e4m3fn``, ``float8_e5m2``);
* ``.satfinite``: |x| above the largest finite value, ±inf included, gives ±max (e4m3 448 = 0x7E, e5m2 57344 =
  0x7B) — rounding first (e5m2: 61440 rounds up to 2^16, then saturates), never e5m2's inf;
* NaN (any sign or payload) gives the canonical **positive** NaN 0x7F in both formats;
* ``.relu``: negative results become +0 (NaN stays 0x7F);
* packing (x2): ``cvt … d, a, b`` puts ``cvt(a)`` in the **high** byte, ``cvt(b)`` in the low byte
  (:func:`pack_x2`); from ``.f16x2`` the upper half goes to the high byte.

Scaling: a quantised tensor is ``q = cvt(x / s)`` with dequantisation scale ``s = amax / fmt_max`` per group
(tensor, row, column, 1 × 128 or 128 × 128 block); :class:`DelayedScaling` takes ``amax`` from a history of
earlier steps (Transformer Engine's recipe), so a growing tensor saturates until the history catches up.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FP8_MAX", "cvt_fp8", "cvt_fp8_f16", "decode_fp8", "pack_x2", "unpack_x2", "amax", "quantize",
           "dequantize", "DelayedScaling", "errors", "real_looking", "GRANULARITIES", "scaling_errors"]

FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}
_NP = {}


def _dt(fmt: str):
    if fmt not in FP8_MAX:
        raise ValueError(f"FP8 format .{fmt}: .e4m3 or .e5m2 (PTX ISA §5.2.3 alternate floating-point formats)")
    if not _NP:
        import ml_dtypes
        _NP.update(e4m3=ml_dtypes.float8_e4m3fn, e5m2=ml_dtypes.float8_e5m2)
    return _NP[fmt]


def cvt_fp8(x, fmt: str = "e4m3", relu: bool = False) -> np.ndarray:
    """``cvt.rn.satfinite{.relu}.{fmt}`` of each f32 value of ``x`` (float32 array, or raw uint32 bits) → uint8
    codes, as the H200 converts (module docstring)."""
    a = np.asarray(x)
    v = a.view(np.float32) if a.dtype == np.uint32 else a.astype(np.float32)
    m = np.float32(FP8_MAX[fmt])
    nan = np.isnan(v)
    with np.errstate(invalid="ignore"):
        c = np.clip(np.where(nan, 0, v), -m, m)       # saturate before rounding = round then saturate
        if relu:
            c = np.where(c < 0, np.float32(0), c)
            c = np.where(c == 0, np.float32(0), c)    # -0 → +0
    out = c.astype(_dt(fmt)).view(np.uint8)
    return np.where(nan, np.uint8(0x7F), out).astype(np.uint8)


def cvt_fp8_f16(h, fmt: str = "e4m3", relu: bool = False) -> np.ndarray:
    """The same from f16 sources (``.f16x2`` halves given as raw uint16 or float16)."""
    a = np.asarray(h)
    v = a.view(np.float16) if a.dtype == np.uint16 else a.astype(np.float16)
    return cvt_fp8(v.astype(np.float32), fmt, relu)


def decode_fp8(codes, fmt: str = "e4m3") -> np.ndarray:
    """uint8 codes → float32 values (e4m3 0x7F/0xFF NaN; e5m2 0x7C/0xFC ±inf)."""
    return np.asarray(codes, np.uint8).view(_dt(fmt)).astype(np.float32)


def pack_x2(a, b, fmt: str = "e4m3", relu: bool = False) -> np.ndarray:
    """``cvt.rn.satfinite{.relu}.{fmt}x2.f32 d, a, b`` → uint16: ``cvt(a)`` in bits 15:8, ``cvt(b)`` in 7:0
    (PTX ISA §9.7.9.21 semantics; checked on the H200, data/l01/cvt_bits)."""
    return ((cvt_fp8(a, fmt, relu).astype(np.uint16) << 8) | cvt_fp8(b, fmt, relu)).astype(np.uint16)


def unpack_x2(d, fmt: str = "e4m3") -> tuple[np.ndarray, np.ndarray]:
    """(high element, low element) float32 values of packed uint16 pairs (``cvt.rn.f16x2.{fmt}x2``: the high byte
    becomes the upper f16)."""
    d = np.asarray(d, np.uint16)
    return decode_fp8((d >> 8).astype(np.uint8), fmt), decode_fp8((d & 0xFF).astype(np.uint8), fmt)


# ------------------------------------------------------------------------------------------------
# scaling

GRANULARITIES = ("tensor", "row", "col", "block_1x128", "block_128x128")


def _blocks(shape, granularity: str, block=None):
    R, C = shape
    if granularity == "tensor":
        return R, C
    if granularity == "row":
        return 1, C
    if granularity == "col":
        return R, 1
    if granularity == "block_1x128":
        return 1, block or 128
    if granularity == "block_128x128":
        return block or 128, block or 128
    raise ValueError(f"granularity {granularity!r}: one of {GRANULARITIES}")


def amax(x, granularity: str = "tensor", block: int | None = None) -> np.ndarray:
    """max |x| per group: (R/br, C/bc) array (partial blocks at the edges count as blocks)."""
    x = np.asarray(x, np.float64)
    br, bc = _blocks(x.shape, granularity, block)
    R, C = x.shape
    nr, nc = -(-R // br), -(-C // bc)
    pad = np.zeros((nr * br, nc * bc))
    pad[:R, :C] = np.abs(x)
    return pad.reshape(nr, br, nc, bc).max(axis=(1, 3))


def _expand(s, shape, br, bc):
    R, C = shape
    return np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[:R, :C]


def quantize(x, fmt: str = "e4m3", granularity: str = "tensor", block: int | None = None,
             amax_value=None, pow2: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(codes uint8 like x, scales float32 per group): ``s = amax / FP8_MAX[fmt]`` (``pow2``: rounded up to a
    power of two, so the scaling is exact), ``q = cvt_fp8(x / s)``; an all-zero group gets s = 1.
    ``amax_value`` overrides the measured amax (delayed scaling)."""
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise ValueError("quantize takes a 2-D tensor (rows × columns)")
    br, bc = _blocks(x.shape, granularity, block)
    am = amax(x, granularity, block) if amax_value is None else np.broadcast_to(np.asarray(amax_value, np.float64),
                                                                                amax(x, granularity, block).shape)
    s = np.where(am > 0, am / FP8_MAX[fmt], 1.0)
    if pow2:
        s = np.exp2(np.ceil(np.log2(s)))
    s = s.astype(np.float32)
    q = cvt_fp8((x / _expand(s, x.shape, br, bc)).astype(np.float32), fmt)
    return q, s


def dequantize(q, s, fmt: str = "e4m3", granularity: str = "tensor", block: int | None = None) -> np.ndarray:
    """float32 values ``decode(q) · s`` with the scales expanded over their groups."""
    q = np.asarray(q, np.uint8)
    br, bc = _blocks(q.shape, granularity, block)
    return (decode_fp8(q, fmt) * _expand(np.asarray(s, np.float32), q.shape, br, bc)).astype(np.float32)


@dataclass
class DelayedScaling:
    """Per-tensor delayed scaling: the scale of step t comes from ``max(history)`` of the last ``length`` amax
    values (the current step's amax is recorded after quantising). ``saturated`` counts values clipped."""

    fmt: str = "e4m3"
    length: int = 16
    history: list = field(default_factory=list)
    saturated: int = 0

    def step(self, x) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, np.float32)
        cur = float(np.abs(x).max()) if x.size else 0.0
        ref = max(self.history) if self.history else cur
        q, s = quantize(x, self.fmt, "tensor", amax_value=ref)
        self.saturated += int((np.abs(x) > ref * (1 + 2 ** -10)).sum()) if ref > 0 else 0
        self.history = (self.history + [cur])[-self.length:]
        return q, s


def errors(x, xq) -> dict[str, float]:
    """Error of a dequantised tensor ``xq`` against ``x``: relative RMS, max |error| relative to max |x|, the
    fraction of non-zeros flushed to zero (underflow) and of values at ±FP8 max·s (saturation is reported by the
    caller, who knows the scales)."""
    x = np.asarray(x, np.float64)
    y = np.asarray(xq, np.float64)
    d = y - x
    nz = x != 0
    return {"rel_rms": float(np.sqrt((d ** 2).sum() / max((x ** 2).sum(), 1e-300))),
            "max_rel": float(np.abs(d).max() / max(np.abs(x).max(), 1e-300)),
            "underflow": float(((y == 0) & nz).sum() / max(nz.sum(), 1))}


def real_looking(rng, shape=(256, 512), kind: str = "activations") -> np.ndarray:
    """Seeded test tensors shaped like a transformer's: ``weights`` (normal, σ = 0.02), ``activations`` (normal
    rows with a few outlier channels ×50, as LLM activations have), ``gradients`` (log-normal magnitudes over
    ~8 decades, random signs)."""
    R, C = shape
    if kind == "weights":
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)
    if kind == "activations":
        x = rng.standard_normal(shape)
        out = rng.choice(C, max(1, C // 64), replace=False)
        x[:, out] *= 50.0
        return x.astype(np.float32)
    if kind == "gradients":
        return (rng.choice([-1, 1], shape) * np.exp(rng.normal(-9, 3, shape))).astype(np.float32)
    raise ValueError(f"kind {kind!r}: weights, activations or gradients")


def scaling_errors(x, fmt: str = "e4m3", granularities=GRANULARITIES) -> dict[str, dict[str, float]]:
    """:func:`errors` of quantise → dequantise for each granularity (the quantisation lab's table)."""
    return {g: errors(x, dequantize(*quantize(x, fmt, g), fmt, g)) for g in granularities}
