"""Widget: the roofline explorer across H100 SXM, H100 PCIe and H200 and the tensor-core dtypes."""
from __future__ import annotations

from .. import roofline as rl
from ..specs import ALL

__all__ = ["roofline_result", "describe_roofline", "roofline_explorer"]


def roofline_result(dtype: str = "bf16", sparse: bool = False, intensity: float = 100.0) -> dict:
    """For every device: peak, ridge point and attainable throughput at ``intensity`` FLOP/byte."""
    rows = []
    for s in ALL:
        rows.append({"device": s.name, "peak_tflops": rl.peak_flops(s, dtype, sparse) / 1e12,
                     "ridge": rl.ridge_point(s, dtype, sparse),
                     "attainable_tflops": rl.attainable(intensity, s, dtype, sparse) / 1e12,
                     "bound": "memory" if intensity < rl.ridge_point(s, dtype, sparse) else "compute"})
    return {"dtype": dtype, "sparse": sparse, "intensity": float(intensity), "rows": rows}


def describe_roofline(r: dict) -> str:
    return "; ".join(f"{x['device']}: ridge {x['ridge']:.0f} FLOP/B, {x['attainable_tflops']:.0f} TFLOP/s "
                     f"({x['bound']}-bound)" for x in r["rows"])


def roofline_explorer(dtype: str = "bf16", sparse: bool = False, intensity: float = 100.0):
    """Controls: dtype, dense/sparse, the intensity of a kernel (log slider, FLOP/byte)."""
    import ipywidgets as W

    from ..viz.roofline import draw_rooflines
    from .base import Explorer

    ctl = {
        "dtype": W.Dropdown(options=list(rl.ROOF_DTYPES), value=dtype, description="dtype"),
        "sparse": W.Checkbox(value=sparse, description="2:4 sparse"),
        "intensity": W.FloatLogSlider(value=intensity, base=10, min=-1, max=4, step=0.05, description="FLOP/B"),
    }
    return Explorer(ctl, roofline_result,
                    lambda r: draw_rooflines((r["dtype"],), sparse=r["sparse"], points=[("kernel", r["intensity"])]),
                    title="Roofline explorer", describe=describe_roofline)
