"""Widgets of lesson 2's clusters: cluster placement on the cluster domains, and the DSMEM ring exchange stepped CTA by CTA."""
from __future__ import annotations

from ..specs import H200_SXM

__all__ = ["placement_result", "placement_explorer", "ring_result", "ring_explorer"]


def placement_result(cluster_size: int, blocks_per_sm: int, spec=H200_SXM) -> dict:
    """``{"capacity", "placement"}``: how many clusters of ``cluster_size`` fit with ``blocks_per_sm`` CTAs per
    SM (:func:`h100lab.cluster.cluster_capacity`, ``cudaOccupancyMaxActiveClusters``) and one full wave of
    them on the cluster domains (:func:`h100lab.cluster.place_clusters`)."""
    from ..cluster import cluster_capacity, place_clusters

    cap = cluster_capacity(cluster_size, 128, blocks=blocks_per_sm, non_portable=cluster_size > 8, spec=spec)
    return {"capacity": cap, "placement": place_clusters(cap.clusters, cluster_size, blocks_per_sm, spec)}


def _describe_placement(r: dict) -> str:
    c = r["capacity"]
    return (f"<b>{c.clusters}</b> clusters of {c.cluster_size} = {c.ctas} CTAs of {c.slots} CTA slots "
            f"({100 * c.slot_efficiency:.1f} %); idle SMs: {c.idle_sms}"
            + (" — layout assumed, see h100lab.cluster.gpc" if c.assumed else ""))


def placement_explorer(cluster_size: int = 8, blocks_per_sm: int = 1):
    """Sliders for cluster size (1–16) and CTAs per SM; the figure shows one wave on the cluster domains."""
    import ipywidgets as W

    from ..viz.cluster import gpc_map
    from .base import Explorer

    ctl = {"cluster_size": W.IntSlider(value=cluster_size, min=1, max=16, description="cluster size"),
           "blocks_per_sm": W.IntSlider(value=blocks_per_sm, min=1, max=8, description="CTAs per SM")}
    return Explorer(ctl, placement_result, lambda r: gpc_map(r["placement"]),
                    title="Clusters on the cluster domains of an H200", describe=_describe_placement)


def ring_result(cluster_size: int, mode: str, sync_start: bool, sync_exit: bool, schedule: str, step: int) -> dict:
    """The :func:`h100lab.cluster.ring_exchange` trace for the controls, and the step shown (clamped)."""
    from ..cluster import ring_exchange

    t = ring_exchange(cluster_size, mode=mode, sync_start=sync_start, sync_exit=sync_exit, schedule=schedule)
    return {"trace": t, "step": max(0, min(step, len(t.events) - 1))}


def _describe_ring(r: dict) -> str:
    t, k = r["trace"], r["step"]
    lines = [f"{e.step:>3}  CTA {e.rank}: {e.detail}" for e in t.events[max(0, k - 5):k + 1]]
    verdict = (f"<span style='color:#D55E00'>{t.error_type}: {t.error}</span>" if t.error else
               ("every CTA received its left neighbour's value" if t.ok else ""))
    return "<pre>" + "\n".join(lines) + "</pre>" + verdict


def ring_explorer(cluster_size: int = 4, mode: str = "push"):
    """Controls for the ring exchange (size, push/pull, which cluster barriers, interleaving) and a step slider."""
    import ipywidgets as W

    from ..viz.cluster import ring_diagram
    from .base import Explorer

    ctl = {"cluster_size": W.IntSlider(value=cluster_size, min=2, max=16, description="CTAs"),
           "mode": W.Dropdown(options=["push", "pull"], value=mode, description="mode"),
           "sync_start": W.Checkbox(value=True, description="barrier after start"),
           "sync_exit": W.Checkbox(value=True, description="barrier before exit"),
           "schedule": W.Dropdown(options=["greedy", "round-robin"], value="greedy", description="interleaving"),
           "step": W.IntSlider(value=999, min=0, max=999, description="step")}
    return Explorer(ctl, ring_result, lambda r: ring_diagram(r["trace"], r["step"]),
                    title="DSMEM ring exchange, one instruction at a time", describe=_describe_ring)
