"""Widget: the occupancy explorer (threads, registers, shared memory, carveout -> blocks/SM and the
limiting resource, drawn as an SM's register file, shared memory and warp slots filling up)."""
from __future__ import annotations

from ..occupancy import Occupancy, occupancy
from ..specs import ALL, H100_SXM

__all__ = ["occupancy_result", "describe_occupancy", "occupancy_explorer"]


def occupancy_result(threads: int = 256, regs: int = 64, smem_kb: float = 0.0, carveout: int = -1,
                     device: str = H100_SXM.name) -> Occupancy:
    """The explorer's compute function: :func:`h100lab.occupancy.occupancy` with shared memory in KB."""
    spec = {s.name: s for s in ALL}[device]
    return occupancy(int(threads), int(regs), int(round(smem_kb * 1024)), spec, carveout=int(carveout))


def describe_occupancy(o: Occupancy) -> str:
    """One line of HTML: the answer and why."""
    return (f"<b>{o.active_blocks} blocks/SM, {o.active_warps} warps, occupancy {o.occupancy:.0%}</b> — "
            f"{o.reason}")


def occupancy_explorer(threads: int = 256, regs: int = 64, smem_kb: float = 0.0, carveout: int = -1):
    """Sliders for block size, registers per thread, dynamic shared memory (KB) and carveout preference."""
    import ipywidgets as W

    from ..viz.occupancy import draw_occupancy
    from .base import Explorer

    ctl = {
        "threads": W.IntSlider(value=threads, min=32, max=1024, step=32, description="threads/block"),
        "regs": W.IntSlider(value=regs, min=16, max=255, step=1, description="regs/thread"),
        "smem_kb": W.FloatSlider(value=smem_kb, min=0, max=227, step=0.5, description="smem KB"),
        "carveout": W.Dropdown(options=[("default", -1), ("0 %", 0), ("25 %", 25), ("50 %", 50), ("100 %", 100)],
                               value=carveout, description="carveout"),
        "device": W.Dropdown(options=[s.name for s in ALL], value=H100_SXM.name, description="device"),
    }
    return Explorer(ctl, occupancy_result, draw_occupancy, title="Occupancy explorer", describe=describe_occupancy)
