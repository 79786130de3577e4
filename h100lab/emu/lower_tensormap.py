"""Editing a tensor map on the device: ``tensormap.replace`` and ``fence.proxy.tensormap::generic``.

PTX ISA §9.7.9.28 (``tensormap.replace``, sm_90a)::

    tensormap.replace.tile.field1{.ss}.b1024.type [addr], new_val;        field1 = global_address | rank
    tensormap.replace.tile.field2{.ss}.b1024.type [addr], ord, new_val;   field2 = box_dim | global_dim |
                                                                                   global_stride | element_stride
    tensormap.replace.tile.field3{.ss}.b1024.type [addr], new_val;        field3 = elemtype | interleave_layout |
                                                                                   swizzle_mode | fill_mode
    .ss = .global | .shared::cta (generic addressing without it)

writes one field of the 128-byte map at ``addr`` (in global or shared memory). The new values are the
PTX encodings: ``rank`` is the rank minus one; ``elemtype`` counts ``.u8 .u16 .u32 .s32 .u64 .s64 .f16 .f32
.f32.ftz .f64 .bf16 .tf32 .tf32.ftz`` from 0 (not the order of ``CUtensorMapDataType``: ``FLOAT64`` is 8 there,
9 here); ``swizzle_mode`` 0–3 = none, 32B, 64B, 128B; ``interleave_layout`` 0–2 = none, 16B, 32B;
``fill_mode`` 0 = zeros, 1 = OOB-NaN; ``global_stride`` is in bytes, ``ord`` the dimension (stride ``ord``
is the distance between indices of dimension ``ord + 1``). ``swizzle_atomicity`` other than 16 B belongs to
later GPUs and is refused.

The emulator's map (:func:`h100lab.emu.api.encode_tiled`) is a marker and an id; a replace builds the
edited parameters, registers them under a new id and writes that id into the map's bytes. The hardware
checks nothing at replace time, so a map may pass through invalid states while several fields are
edited; the driver's rules (:func:`h100lab.tma.encode_tiled`) are applied when a copy *uses* the map, and
a broken one stops the kernel naming the rule.

Proxies (PTX §9.7.13.4.3 ``fence.proxy.tensormap::generic``; CUDA Programming Guide "Modifying a tensor
map in global memory"): the TMA reads a map through the *tensormap proxy*. A map edited by the generic
proxy (``tensormap.replace``) must be published with ``fence.proxy.tensormap::generic.release.<scope>`` and,
before a copy uses it, acquired with ``fence.proxy.tensormap::generic.acquire.<scope> [addr], 128``. A copy
through an edited map without both raises :class:`~h100lab.emu.errors.ProxyFenceError`.
``prefetch{.space}.tensormap [addr]`` is a hint (a no-op here).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import lower_sync  # noqa: F401  (its fence handler is wrapped below; it must be registered first)
from .errors import ExecutionError, ProxyFenceError
from .lower import HANDLERS, Ctx, register

__all__ = ["PTX_ELEMTYPES", "replace_field", "check_tensormap_use", "resolve", "EDITED", "RELEASED", "CLEAN"]

#: ``tensormap.replace.tile.elemtype`` values (PTX §9.7.9.28, table "Tensormap new_val validity")
PTX_ELEMTYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT32_FTZ",
                 "FLOAT64", "BFLOAT16", "TFLOAT32", "TFLOAT32_FTZ")
_SWIZZLE = ("NONE", "32B", "64B", "128B")
_INTERLEAVE = ("NONE", "16B", "32B")
_FILL = ("NONE", "NAN_REQUEST_ZERO_FMA")

EDITED, RELEASED, CLEAN = "edited", "released", "clean"

_FIELDS = {"global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride", "elemtype",
           "interleave_layout", "swizzle_mode", "swizzle_atomicity", "fill_mode"}
_WITH_ORD = {"box_dim", "global_dim", "global_stride", "element_stride"}


def _params_of(tm) -> dict:
    return {"dtype": tm.dtype, "rank": tm.rank, "global_address": tm.global_address,
            "global_dim": list(tm.global_dim), "global_strides": list(tm.global_strides),
            "box_dim": list(tm.box_dim), "element_strides": list(tm.element_strides), "interleave": tm.interleave,
            "swizzle": tm.swizzle, "l2_promotion": tm.l2_promotion, "oob_fill": tm.oob_fill}


def _set(lst: list, i: int, v: int, fill: int) -> list:
    lst = list(lst)
    while len(lst) <= i:
        lst.append(fill)
    lst[i] = v
    return lst


def replace_field(params: dict, field: str, value: int, ord_: int | None = None) -> dict:
    """The map parameters (``h100lab.tma.encode_tiled``'s keywords) after ``tensormap.replace.tile.<field>``
    with ``new_val = value`` (and ``ord``), in PTX's encodings (module docstring). Raises ``ValueError`` for a
    value PTX does not define."""
    p = dict(params)
    if field not in _FIELDS:
        raise ValueError(f"tensormap.replace has no field .{field} (PTX §9.7.9.28)")
    if field in _WITH_ORD:
        if ord_ is None or not 0 <= ord_ < 5:
            raise ValueError(f"tensormap.replace.tile.{field} takes an ord in 0..4 (the dimension), got {ord_}")
    if field == "global_address":
        p["global_address"] = int(value)
    elif field == "rank":
        if not 0 <= value <= 4:
            raise ValueError(f"tensormap.replace.tile.rank: new_val is the rank minus one (0..4), got {value}")
        p["rank"] = int(value) + 1
    elif field == "box_dim":
        p["box_dim"] = _set(p["box_dim"], ord_, int(value), 1)
    elif field == "global_dim":
        p["global_dim"] = _set(p["global_dim"], ord_, int(value), 1)
    elif field == "global_stride":
        p["global_strides"] = _set(p["global_strides"], ord_, int(value), 16)
    elif field == "element_stride":
        p["element_strides"] = _set(p["element_strides"], ord_, int(value), 1)
    elif field == "elemtype":
        if not 0 <= value < len(PTX_ELEMTYPES):
            raise ValueError(f"tensormap.replace.tile.elemtype {value}: sm_90 defines 0..{len(PTX_ELEMTYPES) - 1} "
                             f"({', '.join(PTX_ELEMTYPES)})")
        p["dtype"] = "CU_TENSOR_MAP_DATA_TYPE_" + PTX_ELEMTYPES[value]
    elif field == "swizzle_mode":
        if not 0 <= value < len(_SWIZZLE):
            raise ValueError(f"tensormap.replace.tile.swizzle_mode {value}: sm_90 has 0..3 (none, 32B, 64B, 128B)")
        p["swizzle"] = "CU_TENSOR_MAP_SWIZZLE_" + _SWIZZLE[value]
    elif field == "interleave_layout":
        if not 0 <= value < len(_INTERLEAVE):
            raise ValueError(f"tensormap.replace.tile.interleave_layout {value}: 0..2 (none, 16B, 32B)")
        p["interleave"] = "CU_TENSOR_MAP_INTERLEAVE_" + _INTERLEAVE[value]
    elif field == "fill_mode":
        if not 0 <= value < len(_FILL):
            raise ValueError(f"tensormap.replace.tile.fill_mode {value}: 0 (zeros) or 1 (OOB-NaN)")
        p["oob_fill"] = "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + _FILL[value]
    elif field == "swizzle_atomicity":
        if value != 0:
            raise ValueError(f"tensormap.replace.tile.swizzle_atomicity {value}: only 0 (16-byte atoms) exists on "
                             "sm_90; 32 B and 64 B atoms belong to later GPUs")
    return p


# ------------------------------------------------------------------------------------------------
# Per-launch state: the tensor maps edited in this launch and how far they are fenced

def _state(launch) -> dict:
    st = getattr(launch, "_tensormap_edits", None)
    if st is None:
        st = launch._tensormap_edits = {}
    return st


def _generic(w, space: str, a: int) -> int:
    """The generic address of a ``.global`` / ``.shared::cta`` / generic operand (the key of an edit)."""
    from .memory import SHARED_BASE

    return SHARED_BASE + a if space == "shared" and a < SHARED_BASE else a


def check_tensormap_use(w, addr: int, where) -> None:
    """Called when a copy reads the map at generic address ``addr``: a map edited in this launch must have
    been released and acquired through the tensormap proxy first."""
    st = getattr(w.cta.launch, "_tensormap_edits", None)
    if not st:
        return
    rec = st.get(int(addr))
    if rec is None or rec["state"] == CLEAN:
        return
    missing = ("fence.proxy.tensormap::generic.release.<scope> after the edit and "
               "fence.proxy.tensormap::generic.acquire.<scope> [map], 128 before the copy"
               if rec["state"] == EDITED else
               "fence.proxy.tensormap::generic.acquire.<scope> [map], 128 before the copy (the release is there)")
    raise ProxyFenceError(
        f"a copy reads the tensor map at 0x{int(addr):x} that {rec['by']} edited with tensormap.replace, without "
        f"{missing}: the TMA reads a map through the tensormap proxy, which does not see generic-proxy writes "
        "until they are fenced (PTX §9.7.13.4.3, §9.7.9.28; CUDA Programming Guide, modifying a tensor map)", where())


@register("tensormap")
def _tensormap(ins, ctx: Ctx):
    mods = ins.mods
    if not mods or mods[0] != "replace":
        raise ExecutionError(f"{ins.full}: only tensormap.replace is emulated (PTX §9.7.9.28)")
    if "tile" not in mods:
        raise ExecutionError(f"{ins.full}: tensormap.replace takes the mode .tile (PTX §9.7.9.28)")
    field = next((m for m in mods if m in _FIELDS), None)
    if field is None:
        raise ExecutionError(f"{ins.full}: no field to replace (PTX §9.7.9.28)")
    space = "global" if "global" in mods else "shared" if "shared::cta" in mods else "generic"
    t = ins.types[0] if ins.types else "b32"
    addr = ctx.addr(ins.ops[0])
    has_ord = field in _WITH_ORD
    if has_ord and len(ins.ops) != 3:
        raise ExecutionError(f"{ins.full}: .{field} takes [addr], ord, new_val (PTX §9.7.9.28)")
    if has_ord and ins.ops[1].kind != "imm":
        raise ExecutionError(f"{ins.full}: ord is an immediate (PTX §9.7.9.28)")
    ordv = int(ins.ops[1].value) if has_ord else None
    gv = ctx.get(ins.ops[-1], "u64" if t == "b64" else "u32")
    where = ctx.where(ins)

    def k(w, m, full):
        from .lower_async import TENSORMAP_MAGIC, tensormap_registry
        from .lower_mem import load, store

        st = _state(w.cta.launch)
        addrs, vals = addr(w), gv(w)
        for ln in np.flatnonzero(m):
            a = np.array([addrs[ln]], np.uint64)
            lanes = np.array([ln])
            try:
                raw = load(w, space, a, lanes, 128, "tensormap.replace").reshape(-1).tobytes()
            except ExecutionError as exc:
                raise type(exc)(exc.rule, f"{w.where_text()}\n{where}") from None
            if raw[:16] != TENSORMAP_MAGIC:
                raise ExecutionError("tensormap.replace: the 128 bytes at the address are not a tensor map made by "
                                     "h100lab.emu.encode_tiled (copy the map there first)",
                                     f"{w.where_text()}\n{where}")
            tid = int.from_bytes(raw[16:24], "little")
            params = _EDITED_PARAMS.get(tid)
            if params is None:
                tm = tensormap_registry.get(tid)
                if tm is None:
                    raise ExecutionError("tensormap.replace: unknown tensor map", f"{w.where_text()}\n{where}")
                params = _params_of(tm)
            try:
                new = replace_field(params, field, int(vals[ln]), ordv)
            except ValueError as exc:
                raise ExecutionError(str(exc), f"{w.where_text()}\n{where}") from None
            nid = _register(new)
            data = np.frombuffer(TENSORMAP_MAGIC + nid.to_bytes(8, "little") + raw[24:], np.uint8)
            store(w, space, a, lanes, data.reshape(1, 128), "tensormap.replace")
            if space == "shared":
                c = w.cta
                off = int(a[0]) & 0xFFFFFF
                c.unfenced[off:off + 128] = 0      # the map's bytes are not data the async proxy reads as such
            gaddr = _generic(w, space, int(a[0]))
            st[gaddr] = {"state": EDITED, "by": w.label}
    return k


_EDITED_PARAMS: dict[int, dict] = {}     #: id → parameters of a map edited on the device (maybe invalid)


def _register(params: dict) -> int:
    """Register edited parameters under a new id: the model map when the driver's rules hold, else the
    broken rule (raised when a copy uses the map)."""
    import warnings

    from ..tma.descriptor import TensorMapError
    from ..tma.descriptor import encode_tiled as model_encode
    from .api import _TMAP_IDS
    from .lower_async import tensormap_registry

    tid = next(_TMAP_IDS)
    _EDITED_PARAMS[tid] = params
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tm = model_encode(params["dtype"], params["rank"], params["global_address"], tuple(params["global_dim"]),
                              tuple(params["global_strides"]), tuple(params["box_dim"]),
                              tuple(params["element_strides"]), params["interleave"], params["swizzle"],
                              params["l2_promotion"], params["oob_fill"])
    except TensorMapError as exc:
        tm = _Invalid(str(exc))
    except (ValueError, TypeError) as exc:
        tm = _Invalid(str(exc))
    tensormap_registry[tid] = tm
    return tid


@dataclasses.dataclass(frozen=True)
class _Invalid:
    """An edited map that breaks a rule of ``cuTensorMapEncodeTiled``."""

    rule: str


def resolve(tm, where):
    """The model map for a copy, or an error naming the rule an edited map breaks (``where()``: the location)."""
    if isinstance(tm, _Invalid):
        raise ExecutionError(f"the tensor map, as edited by tensormap.replace, breaks a rule of "
                             f"cuTensorMapEncodeTiled: {tm.rule} (the hardware checks nothing when a field is "
                             "replaced; a copy through such a map is undefined)", where())
    return tm


# ------------------------------------------------------------------------------------------------
# fence.proxy.tensormap::generic.{release,acquire}.scope — wraps lesson 3's fence handler

_previous_fence = HANDLERS.get("fence")


@register("fence")
def _fence(ins, ctx: Ctx):
    mods = ins.mods
    if not ("proxy" in mods and "tensormap::generic" in mods):
        return _previous_fence(ins, ctx)
    if "release" in mods:
        def release(w, m, full):
            st = getattr(w.cta.launch, "_tensormap_edits", None)
            if st:
                for rec in st.values():
                    if rec["state"] == EDITED:
                        rec["state"] = RELEASED
        return release
    if "acquire" in mods:
        if len(ins.ops) != 2:
            raise ExecutionError(f"{ins.full}: the acquire form names the map: [addr], 128 (PTX §9.7.13.4.3)")
        space = "global" if "global" in mods else "generic"
        addr = ctx.addr(ins.ops[0])
        gsize = ctx.get(ins.ops[1], "u32")
        where = ctx.where(ins)

        def acquire(w, m, full):
            st = getattr(w.cta.launch, "_tensormap_edits", None)
            if int(gsize(w)[0]) != 128:
                raise ExecutionError("fence.proxy.tensormap::generic.acquire: the size operand must be 128 "
                                     "(PTX §9.7.13.4.3)", f"{w.where_text()}\n{where}")
            if not st:
                return
            for ln in np.flatnonzero(m):
                rec = st.get(_generic(w, space, int(addr(w)[ln])))
                if rec is not None and rec["state"] == RELEASED:
                    rec["state"] = CLEAN
        return acquire
    raise ExecutionError(f"{ins.full}: fence.proxy.tensormap::generic is .release or .acquire (PTX §9.7.13.4.3)")
