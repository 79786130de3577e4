"""Widget: compare the three Hopper products on a chosen quantity (chapter 0)."""
from __future__ import annotations

from ..specs import ALL

__all__ = ["QUANTITIES", "compare_products", "product_explorer"]

#: quantity name -> (unit, function of a DeviceSpec)
QUANTITIES = {
    "enabled SMs": ("count", lambda s: s.sm_count),
    "L2 cache": ("MiB", lambda s: s.l2_bytes / 2**20),
    "HBM capacity": ("GiB", lambda s: s.hbm_bytes / 2**30),
    "HBM bandwidth": ("TB/s", lambda s: s.hbm_bandwidth / 1e12),
    "BF16 dense tensor throughput": ("TFLOP/s", lambda s: s.dense_tflops["bf16"]),
    "FP8 dense tensor throughput": ("TFLOP/s", lambda s: s.dense_tflops["fp8"]),
    "FP32 SIMT throughput": ("TFLOP/s", lambda s: s.fp32_simt_tflops),
    "NVLink bandwidth": ("GB/s", lambda s: s.nvlink_bandwidth / 1e9),
}


def compare_products(quantity: str) -> dict:
    """``{"quantity", "unit", "values": {device name: value}}`` for one quantity of every product."""
    if quantity not in QUANTITIES:
        raise ValueError(f"unknown quantity {quantity!r}; choose one of {sorted(QUANTITIES)}")
    unit, f = QUANTITIES[quantity]
    return {"quantity": quantity, "unit": unit, "values": {s.name: float(f(s)) for s in ALL}}


def product_explorer(quantity: str = "HBM bandwidth"):
    """A dropdown of quantities and a bar chart of the three products."""
    import ipywidgets as W

    from ..viz.products import product_bars
    from .base import Explorer

    ctl = {"quantity": W.Dropdown(options=list(QUANTITIES), value=quantity, description="quantity")}
    return Explorer(ctl, compare_products,
                    lambda r: product_bars(r["values"], r["quantity"], r["unit"]),
                    title="Hopper products side by side",
                    describe=lambda r: ", ".join(f"{k}: {v:,.4g} {r['unit']}" for k, v in r["values"].items()))
