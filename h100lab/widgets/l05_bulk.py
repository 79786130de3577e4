"""Widgets of lesson 5: the multicast explorer and the dynamic-shared-memory planner."""
from __future__ import annotations

from ..tma import L2Cache, encode_tiled, plan_smem
from ..tma.pipeline import simulate_multicast

__all__ = ["multicast_result", "describe_multicast", "multicast_explorer", "plan_result", "describe_plan",
           "smem_planner", "parse_mask"]


def parse_mask(text) -> int:
    """``"0b1010"``, ``"0xA"``, ``"10"`` or an int → the 16-bit ``ctaMask``."""
    return int(text, 0) if isinstance(text, str) else int(text)


def multicast_result(cluster: int = 4, mask: str = "0b1111", stages: int = 2, iters: int = 6,
                     box_rows: int = 64) -> dict:
    """The explorer's compute function: the multicast pipeline and its unicast baseline (one load per
    receiving CTA) on the same BF16 boxes (64 × ``box_rows``, 128B swizzle), each with a cold L2 model."""
    tm = encode_tiled("BFLOAT16", 2, 1 << 20, [64, 4096], [128], [64, int(box_rows)], [1, 1], swizzle="128B")
    m = parse_mask(mask)
    kw = dict(stages=int(stages), iters=int(iters), compute_ns=1500.0)
    mc = simulate_multicast(int(cluster), m, tm, l2=L2Cache(1 << 24), **kw)
    uc = simulate_multicast(int(cluster), m, tm, l2=L2Cache(1 << 24), multicast=False, **kw)
    return {"multicast": mc, "unicast": uc, "map": tm}


def describe_multicast(r: dict) -> str:
    mc, uc = r["multicast"], r["unicast"]
    return (f"receivers {list(mc.receivers)}: {mc.delivered_bytes // 1024} KiB delivered; multicast requests "
            f"{mc.l2_request_bytes // 1024} KiB from L2 (saving {100 * mc.saving:.0f} %), one load per CTA requests "
            f"{uc.l2_request_bytes // 1024} KiB; HBM reads {mc.hbm_bytes // 1024} vs {uc.hbm_bytes // 1024} KiB; "
            f"time {mc.total_ns / 1000:.1f} vs {uc.total_ns / 1000:.1f} µs")


def draw_multicast(r: dict):
    """Bytes of both runs (top), the multicast run's timeline (bottom)."""
    from ..viz.l05_bulk import draw_multicast_bytes, draw_timeline
    from ..viz.style import figure

    lanes = sorted({x.lane or x.actor for x in r["multicast"].trace if x.t1 > x.t0})
    fig, (a, b) = figure(2, 1, figsize=(9, 3.4 + 0.4 * len(lanes)), gridspec_kw={"height_ratios": [3, 0.4 * len(lanes)]})
    draw_multicast_bytes([r["multicast"], r["unicast"]], ax=a)
    draw_timeline(r["multicast"].trace, title="multicast pipeline (simulated)", ax=b)
    return fig


def multicast_explorer(cluster: int = 4, mask: str = "0b1111"):
    """Controls: cluster size, ctaMask, stages, boxes streamed, box rows."""
    import ipywidgets as W

    from .base import Explorer

    ctl = {
        "cluster": W.Dropdown(options=[2, 4, 8, 16], value=cluster, description="cluster"),
        "mask": W.Text(value=mask, description="ctaMask", continuous_update=False),
        "stages": W.IntSlider(value=2, min=1, max=4, description="stages"),
        "iters": W.IntSlider(value=6, min=1, max=16, description="boxes"),
        "box_rows": W.Dropdown(options=[16, 32, 64, 128, 256], value=64, description="box rows"),
    }
    return Explorer(ctl, multicast_result, draw_multicast, title="Multicast explorer", describe=describe_multicast)


def plan_result(barriers: int = 2, tile_kb: int = 16, swizzle: str = "128B", stages: int = 3,
                base_alignment: int = 1024) -> dict:
    """The planner's compute function: barriers first, ``stages`` copies of an A and a B tile."""
    tb = int(tile_kb) * 1024
    p = plan_smem(int(barriers), [("A", tb, swizzle), ("B", tb, swizzle)], stages=int(stages),
                  base_alignment=int(base_alignment))
    return {"plan": p}


def describe_plan(r: dict) -> str:
    p = r["plan"]
    verdict = "fits" if p.fits() else "does NOT fit"
    return (f"{p.dynamic_bytes} B of dynamic shared memory (launch argument), {verdict} in 227 KB; "
            f"{'needs' if p.needs_opt_in() else 'no'} opt-in above 48 KB; tiles at "
            + ", ".join(f"{r.name}@{r.offset}" for r in p.regions if r.kind == "tile"))


def smem_planner():
    """Controls: barriers, tile size (KB), swizzle (sets the tile alignment), stages, assumed base alignment."""
    import ipywidgets as W

    from ..viz.l05_bulk import draw_smem_plan
    from .base import Explorer

    ctl = {
        "barriers": W.IntSlider(value=2, min=1, max=16, description="mbarriers"),
        "tile_kb": W.Dropdown(options=[4, 8, 16, 32], value=16, description="tile (KB)"),
        "swizzle": W.Dropdown(options=["NONE", "32B", "64B", "128B"], value="128B", description="swizzle"),
        "stages": W.IntSlider(value=3, min=1, max=8, description="stages"),
        "base_alignment": W.Dropdown(options=[16, 128, 1024], value=1024, description="base align"),
    }
    return Explorer(ctl, plan_result, lambda r: draw_smem_plan(r["plan"]), title="Dynamic shared memory planner",
                    describe=describe_plan)
