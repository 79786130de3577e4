"""Widget: synchronous against asynchronous execution — copy latency, compute time per tile and the
number of buffers as sliders; a timeline of each and the achieved utilisation (chapter 3)."""
from __future__ import annotations

from ..sim.pipeline import PipelineConfig, analytic, simulate
from ..sim.timing import default_timing

__all__ = ["compare_sync_async", "describe_comparison", "pipeline_explorer"]


def compare_sync_async(latency_ns: float, compute_ns: float, stages: int, tile_kib: int = 16,
                       iters: int = 12) -> dict:
    """Simulate the blocking single-warp loop and the ``stages``-buffer producer/consumer pipeline with
    the timing table's copy latency replaced by ``latency_ns``."""
    t = default_timing().with_values(tma_latency_ns=float(latency_ns), source="widget slider")
    base = dict(iters=iters, tile_bytes=int(tile_kib) * 1024, compute_ns=float(compute_ns))
    sync_cfg = PipelineConfig(synchronous=True, **base)
    async_cfg = PipelineConfig(stages=int(stages), **base)
    return {"sync": simulate(sync_cfg, t), "async": simulate(async_cfg, t),
            "closed_form": analytic(async_cfg, t), "timing": t}


def describe_comparison(r: dict) -> str:
    """HTML summary: time per tile and utilisation of both, and the closed form's verdict."""
    s, a, c = r["sync"], r["async"], r["closed_form"]
    return (f"synchronous: {s.total_ns:,.0f} ns in all, utilisation {s.utilization:.0%} — "
            f"asynchronous with {a.config.stages} buffer(s): {a.total_ns:,.0f} ns, utilisation "
            f"{a.utilization:.0%}. Steady state (closed form): {c.period_ns:,.0f} ns per tile, "
            f"{c.bound}-bound; {c.buffers_needed} buffer(s) hide the latency.")


def draw_comparison(r: dict):
    """Two timelines on one time axis: blocking loop above, pipeline below."""
    from ..viz.style import figure, label
    from ..viz.timeline import draw_gantt

    fig, (ax1, ax2) = figure(2, 1, figsize=(7.5, 4.8), sharex=True)
    end = max(r["sync"].total_ns, r["async"].total_ns)
    draw_gantt(ax1, r["sync"].trace, legend=False)
    draw_gantt(ax2, r["async"].trace, legend=True)
    ax1.set_xlim(0, end * 1.02)
    label(ax1, "time (ns)", "lane (warp or unit)", f"synchronous: utilisation {r['sync'].utilization:.0%}")
    label(ax2, "time (ns)", "lane (warp or unit)",
          f"asynchronous, {r['async'].config.stages} buffer(s): utilisation {r['async'].utilization:.0%}")
    return fig


def pipeline_explorer(latency_ns: float = 600.0, compute_ns: float = 400.0, stages: int = 2):
    """Sliders for latency, compute time and buffers over :func:`compare_sync_async`."""
    import ipywidgets as W

    from .base import Explorer

    ctl = {"latency_ns": W.FloatSlider(value=latency_ns, min=0, max=2000, step=50, description="latency (ns)"),
           "compute_ns": W.FloatSlider(value=compute_ns, min=50, max=2000, step=50, description="compute (ns)"),
           "stages": W.IntSlider(value=stages, min=1, max=8, description="buffers")}
    return Explorer(ctl, compare_sync_async, draw_comparison, title="Synchronous vs asynchronous",
                    describe=describe_comparison)
