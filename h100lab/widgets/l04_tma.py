"""Widgets of lesson 4: the swizzle explorer and the descriptor builder."""
from __future__ import annotations

from ..memory.banks import wavefronts
from ..tma import column_addresses, encode_tiled, verdict
from ..tma.descriptor import TensorMap

__all__ = ["swizzle_result", "describe_swizzle", "swizzle_explorer", "parse_ints", "descriptor_result",
           "describe_descriptor", "descriptor_builder", "draw_descriptor"]

_SPAN = {"NONE": 128, "32B": 32, "64B": 64, "128B": 128}
_SIZE = {"UINT8": 1, "BFLOAT16": 2, "FLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8}


def _map(dtype: str, swizzle: str, inner_bytes: int, rows: int) -> TensorMap:
    size = _SIZE[dtype]
    return encode_tiled(dtype, 2, 0, [max(64, inner_bytes // size) * 4, 256], [max(64, inner_bytes // size) * 4 * size],
                        [inner_bytes // size, rows], [1, 1], swizzle=swizzle)


def swizzle_result(swizzle: str = "128B", dtype: str = "BFLOAT16", inner_bytes: int = 128, rows: int = 16,
                   dst: int = 0) -> dict:
    """The explorer's compute function: the tensor map of a ``rows``-row box whose rows are ``inner_bytes``
    long, and the wavefronts of reading one 16-byte column of it (and one 4-byte column) with this swizzle
    and without it. Raises ``ValueError`` (shown in the widget) for a box the driver would refuse."""
    tm = _map(dtype, swizzle, int(inner_bytes), int(rows))
    plain = _map(dtype, "NONE", int(inner_bytes), int(rows))
    res = []
    pairs = ((swizzle, tm),) if swizzle == "NONE" else ((swizzle, tm), ("NONE", plain))
    for name, m in pairs:
        for width in (16, 4):
            addrs = column_addresses(m, 0, width=width, dst=dst if name == swizzle else 0)
            acc = wavefronts(addrs, width)
            res.append({"name": f"{name}, {width} B", "width": width, "wavefronts": int(acc), "ideal": acc.ideal})
    return {"map": tm, "dst": int(dst), "reads": res}


def describe_swizzle(r: dict) -> str:
    tm = r["map"]
    best = {x["name"]: x["wavefronts"] for x in r["reads"]}
    parts = ", ".join(f"{k}: {v}" for k, v in best.items())
    return (f"{tm.rows} rows × {tm.row_bytes} B, pitch {tm.row_pitch} B, footprint {tm.smem_bytes} B; "
            f"column-read wavefronts — {parts}")


def swizzle_explorer(swizzle: str = "128B", dtype: str = "BFLOAT16", inner_bytes: int = 128, rows: int = 16):
    """Controls: swizzle mode, element type, box row width (bytes), box rows, destination offset."""
    import ipywidgets as W

    from ..viz.l04_tma import draw_smem_image
    from .base import Explorer

    ctl = {
        "swizzle": W.Dropdown(options=["NONE", "32B", "64B", "128B"], value=swizzle, description="swizzle"),
        "dtype": W.Dropdown(options=list(_SIZE), value=dtype, description="dtype"),
        "inner_bytes": W.Dropdown(options=[16, 32, 64, 128, 256], value=inner_bytes, description="row (B)"),
        "rows": W.IntSlider(value=rows, min=1, max=32, description="box rows"),
        "dst": W.Dropdown(options=[0, 128, 256, 384, 512, 1024], value=0, description="dst offset"),
    }
    return Explorer(ctl, swizzle_result, lambda r: draw_smem_image(r["map"], r["dst"]), title="Swizzle explorer",
                    describe=describe_swizzle)


def parse_ints(text) -> list[int]:
    """``"256, 128"`` → ``[256, 128]`` (also accepts lists and ``0x`` / ``2**k`` free integers)."""
    if isinstance(text, (list, tuple)):
        return [int(v) for v in text]
    out = []
    for part in str(text).replace(";", ",").split(","):
        p = part.strip()
        if not p:
            continue
        if "**" in p:
            b, e = p.split("**")
            out.append(int(b) ** int(e))
        else:
            out.append(int(p, 0))
    return out


def descriptor_result(dtype="BFLOAT16", global_dim="256, 128", global_strides="512", box_dim="64, 32",
                      element_strides="1, 1", interleave="NONE", swizzle="128B", l2_promotion="L2_128B",
                      oob_fill="NONE", address_offset: int = 0) -> dict:
    """The builder's compute function: the driver's verdict (:func:`h100lab.tma.verdict`) and, when
    accepted, the tensor map. The rank is the number of ``global_dim`` entries."""
    gd = parse_ints(global_dim)
    args = dict(dtype=dtype, rank=len(gd), global_address=(1 << 20) + int(address_offset), global_dim=gd,
                global_strides=parse_ints(global_strides), box_dim=parse_ints(box_dim),
                element_strides=parse_ints(element_strides), interleave=interleave, swizzle=swizzle,
                l2_promotion=l2_promotion, oob_fill=oob_fill)
    v = verdict(**args)
    tm = None
    if v.ok:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tm = encode_tiled(**args)
    return {"verdict": v, "map": tm, "args": args}


def describe_descriptor(r: dict) -> str:
    v = r["verdict"]
    colour = "#009E73" if v.ok else "#D55E00"
    text = f"<b style='color:{colour}'>{v.result}</b> "
    text += r["map"].describe() if v.ok else v.rule
    for w in v.doc_warnings:
        text += f"<br><i>documentation:</i> {w}"
    return text


def descriptor_builder(**initial):
    """A form with the parameters of ``cuTensorMapEncodeTiled`` that validates as you type."""
    import ipywidgets as W

    from ..tma.enums import DATA_TYPES
    from .base import Explorer

    v = dict(dtype="BFLOAT16", global_dim="256, 128", global_strides="512", box_dim="64, 32",
             element_strides="1, 1", interleave="NONE", swizzle="128B", l2_promotion="L2_128B", oob_fill="NONE",
             address_offset=0) | initial
    types = [d.short for d in DATA_TYPES.values()]
    ctl = {
        "dtype": W.Dropdown(options=types, value=v["dtype"], description="dataType"),
        "global_dim": W.Text(value=v["global_dim"], description="globalDim", continuous_update=False),
        "global_strides": W.Text(value=v["global_strides"], description="globalStrides", continuous_update=False),
        "box_dim": W.Text(value=v["box_dim"], description="boxDim", continuous_update=False),
        "element_strides": W.Text(value=v["element_strides"], description="elemStrides", continuous_update=False),
        "interleave": W.Dropdown(options=["NONE", "16B", "32B"], value=v["interleave"], description="interleave"),
        "swizzle": W.Dropdown(options=["NONE", "32B", "64B", "128B", "128B_ATOM_32B"], value=v["swizzle"],
                              description="swizzle"),
        "l2_promotion": W.Dropdown(options=["NONE", "L2_64B", "L2_128B", "L2_256B"], value=v["l2_promotion"],
                                   description="l2Promotion"),
        "oob_fill": W.Dropdown(options=["NONE", "NAN_REQUEST_ZERO_FMA"], value=v["oob_fill"], description="oobFill"),
        "address_offset": W.IntText(value=v["address_offset"], description="addr + B"),
    }
    return Explorer(ctl, descriptor_result, draw_descriptor, title="Tensor-map builder (the sm_90 driver's verdict)",
                    describe=describe_descriptor)


def draw_descriptor(r: dict):
    """The builder's figure: the box in its tensor when the driver accepts the map, else the verdict."""
    from ..viz.l04_tma import draw_box_in_tensor, draw_verdict

    tm = r["map"]
    if tm is None or tm.rank < 2:
        return draw_verdict(r["verdict"], tm)
    return draw_box_in_tensor(tm, [0] * tm.rank, title=f"CUDA_SUCCESS: {tm.smem_bytes} B of shared memory, "
                                                      f"{tm.tx_bytes} B per copy")
