"""Widgets of lesson 8 (kernel design): the pipeline-ring timeline (with the ABA verdict of a wrong parity rule),
the cooperative vs ping-pong consumer timeline, the tile / stage / register calculator and the tile-order heatmap
with its L2-reuse estimate. Each is an :class:`~h100lab.widgets.base.Explorer` over a compute function that asks
:mod:`h100lab.design` and a drawing function in :mod:`h100lab.viz.l08_design`."""
from __future__ import annotations

import numpy as np

from ..design import registers, ring, schedule, tiles

__all__ = ["PARITY_RULES", "pipeline_result", "describe_pipeline", "pipeline_explorer", "consumer_schedule",
           "consumers_result", "describe_consumers", "consumers_explorer", "calculator_result",
           "describe_calculator", "calculator_explorer", "order_result", "describe_order", "order_explorer"]

#: how the consumer of ring slot i picks the parity it waits for on full[i % S]
PARITY_RULES = {"lap & 1 (right)": lambda i, s: (i // s) & 1,
                "slot & 1 (wrong)": lambda i, s: i & 1,
                "always 0 (never flips)": lambda i, s: 0}


def pipeline_result(stages: int = 4, load: float = 600.0, mma: float = 160.0, n: int = 12,
                    rule: str = "lap & 1 (right)") -> dict:
    """The ring timeline of :func:`h100lab.design.ring.timeline` (``n`` slots, load latency and MMA time in
    cycles), and for each slot what ``mbarrier.try_wait.parity`` answers the consumer that uses parity rule
    ``rule`` when it reaches its wait (the previous MMA done): the full barrier's phase then is the number of
    earlier-landed loads of that stage; :func:`h100lab.design.ring.parity_answer` against the truth gives
    ``ok`` / ``wait`` (pending, right) / ``aba`` (says full, data not landed) / ``skipped`` (says empty, data
    there: the waiter waits for a phase two laps on — a stall, then a deadlock)."""
    S, n = int(stages), int(n)
    tl = ring.timeline(S, n, float(load), float(mma))
    pick = PARITY_RULES[rule]
    verdicts = []
    for i in range(n):
        t = tl.mma_end[i - 1] if i else 0.0
        s, lap = i % S, i // S
        phase = sum(1 for j in range(s, n, S) if tl.load_end[j] <= t)      # completed phases of full[s] at t
        said = ring.parity_answer(phase, pick(i, S))
        truth = phase > lap
        verdicts.append(("ok" if truth else "wait") if said == truth else ("aba" if said else "skipped"))
    return {"stages": S, "n": n, "load": float(load), "mma": float(mma), "rule": rule, "timeline": tl,
            "verdicts": verdicts, "first_bad": next((i for i, v in enumerate(verdicts) if v in ("aba", "skipped")),
                                                    None)}


def describe_pipeline(r: dict) -> str:
    tl = r["timeline"]
    bad = r["first_bad"]
    said = ("every wait is answered right" if bad is None else
            f"slot {bad}: {'ABA — the wait returns before the data landed' if r['verdicts'][bad] == 'aba' else 'phase skipped — the data landed but the wait says not'}")
    return (f"{r['stages']} stages, load {r['load']:.0f} cycles, MMA {r['mma']:.0f} cycles: prologue "
            f"{tl.prologue:.0f}, drain {tl.drain:.0f}, total {tl.total:.0f} cycles, tensor-core utilisation "
            f"{100 * tl.utilization:.1f} %; parity rule {r['rule']}: {said}")


def pipeline_explorer(stages: int = 4, load: float = 600.0, mma: float = 160.0):
    """Controls: stages, load latency, MMA time per stage, parity rule."""
    import ipywidgets as W

    from ..viz.l08_design import draw_pipeline
    from .base import Explorer

    ctl = {"stages": W.IntSlider(value=stages, min=1, max=8, description="stages"),
           "load": W.IntSlider(value=int(load), min=0, max=1200, step=100, description="load (cycles)"),
           "mma": W.IntSlider(value=int(mma), min=40, max=400, step=40, description="MMA (cycles)"),
           "rule": W.Dropdown(options=list(PARITY_RULES), value="lap & 1 (right)", description="parity")}
    return Explorer(ctl, pipeline_result, draw_pipeline, title="Pipeline ring", describe=describe_pipeline)


# ------------------------------------------------------------------------------------------------
# cooperative vs ping-pong

def consumer_schedule(variant: str, tiles: int, mainloop: float, epilogue: float) -> list[tuple]:
    """[model] The tensor core's and the consumers' busy intervals for ``tiles`` output tiles of one CTA, the ring
    always full (no load stalls): ``mainloop`` is the MMA time of one 64-row warpgroup tile (the tensor core is
    shared, so it runs one warpgroup's MMAs at a time), ``epilogue`` a warpgroup's epilogue time.

    * cooperative — both consumers work on one 128-row tile: its mainloop takes 2·mainloop on the tensor core,
      then both run the epilogue together (the tensor core idles);
    * ping-pong — consumer c takes tiles c, c + 2, ...; the ordered barrier lets a consumer's mainloop start only
      after the other's mainloop ended, so one's epilogue runs under the other's mainloop.

    Both variants do the same work (``tiles`` 128-row tiles = 2·tiles 64-row ones). Returns (consumer, kind,
    start, end) intervals, kind ``"mma"`` or ``"epi"``."""
    if variant not in ("cooperative", "pingpong") or tiles < 1 or mainloop <= 0 or epilogue < 0:
        raise ValueError("variant 'cooperative' or 'pingpong', tiles >= 1, mainloop > 0, epilogue >= 0")
    out, t = [], 0.0
    if variant == "cooperative":
        for _ in range(int(tiles)):
            for c in (0, 1):
                out.append((c, "mma", t, t + 2 * mainloop))
            t += 2 * mainloop
            for c in (0, 1):
                out.append((c, "epi", t, t + epilogue))
            t += epilogue
        return out
    free = [0.0, 0.0]                 # when each consumer finished its last epilogue
    tc = 0.0                          # when the tensor core (the other's mainloop) is free
    for j in range(2 * int(tiles)):
        c = j & 1
        s = max(free[c], tc)
        out.append((c, "mma", s, s + mainloop))
        tc = s + mainloop
        out.append((c, "epi", tc, tc + epilogue))
        free[c] = tc + epilogue
    return out


def consumers_result(tiles: int = 3, mainloop: float = 100.0, epilogue: float = 40.0) -> dict:
    """Both schedules of :func:`consumer_schedule`, their total time and tensor-core busy fraction."""
    res = {}
    for v in ("cooperative", "pingpong"):
        iv = consumer_schedule(v, int(tiles), float(mainloop), float(epilogue))
        total = max(e for _, _, _, e in iv)
        busy = 2 * int(tiles) * float(mainloop)
        res[v] = {"intervals": iv, "total": total, "busy": busy / total}
    return {"tiles": int(tiles), "mainloop": float(mainloop), "epilogue": float(epilogue), **res}


def describe_consumers(r: dict) -> str:
    c, p = r["cooperative"], r["pingpong"]
    return (f"{r['tiles']} tiles of 128 rows: cooperative {c['total']:.0f} cycles (tensor core busy "
            f"{100 * c['busy']:.1f} %), ping-pong {p['total']:.0f} cycles ({100 * p['busy']:.1f} %)")


def consumers_explorer(tiles: int = 3, mainloop: float = 100.0, epilogue: float = 40.0):
    """Controls: tiles, mainloop time per 64-row tile, epilogue time."""
    import ipywidgets as W

    from ..viz.l08_design import draw_consumers
    from .base import Explorer

    ctl = {"tiles": W.IntSlider(value=tiles, min=1, max=6, description="tiles"),
           "mainloop": W.IntSlider(value=int(mainloop), min=20, max=200, step=20, description="mainloop"),
           "epilogue": W.IntSlider(value=int(epilogue), min=0, max=200, step=20, description="epilogue")}
    return Explorer(ctl, consumers_result, draw_consumers, title="Cooperative vs ping-pong",
                    describe=describe_consumers)


# ------------------------------------------------------------------------------------------------
# tile / stage / register calculator

def calculator_result(bm: int = 128, bn: int = 256, stages: int = 4, pingpong: bool = False,
                      a_source: str = "ss") -> dict:
    """:func:`h100lab.design.tiles.evaluate` for a BM × BN × 64 tile, two consumer warpgroups, and the register
    split :func:`h100lab.design.registers.best_split` gives one producer (40) and two consumers."""
    t = tiles.evaluate(int(bm), int(bn), 64, int(stages), 2, bool(pingpong), a_source)
    sp = registers.best_split(1, 2, producer_regs=40)
    return {"tile": t, "split": sp, "max_stages": tiles.max_stages(int(bm), int(bn), 64),
            "smem_limit": tiles.SMEM_LIMIT}


def describe_calculator(r: dict) -> str:
    t = r["tile"]
    verdict = "fits" if t.fits else "does not fit: " + t.reason
    return (f"{t.bm} x {t.bn} x {t.bk}, {t.stages} stages, {'ping-pong' if t.pingpong else 'cooperative'}, "
            f"{t.a_source.upper()}: {t.smem} B of shared memory (at most {r['max_stages']} stages fit), "
            f"{t.regs} registers per consumer thread of {t.reg_limit}, {t.intensity:.1f} FLOP per byte staged — "
            f"{verdict}")


def calculator_explorer(bm: int = 128, bn: int = 256, stages: int = 4):
    """Controls: BM, BN, stages, ping-pong, A source."""
    import ipywidgets as W

    from ..viz.l08_design import draw_calculator
    from .base import Explorer

    ctl = {"bm": W.Dropdown(options=[64, 128, 192, 256], value=bm, description="BM"),
           "bn": W.Dropdown(options=[64, 128, 192, 256], value=bn, description="BN"),
           "stages": W.IntSlider(value=stages, min=1, max=8, description="stages"),
           "pingpong": W.Checkbox(value=False, description="ping-pong"),
           "a_source": W.Dropdown(options=["ss", "rs"], value="ss", description="A from")}
    return Explorer(ctl, calculator_result, draw_calculator, title="Tile, stage and register calculator",
                    describe=describe_calculator)


# ------------------------------------------------------------------------------------------------
# tile order and L2 reuse

def order_result(tiles_m: int = 16, tiles_n: int = 16, group: int = 8, raster: str = "m", ctas: int = 132,
                 K: int = 8192) -> dict:
    """Position of every tile in :func:`h100lab.design.schedule.static_order` (and its wave), and the L2-reuse
    estimate :func:`h100lab.design.schedule.l2_reuse` for 128 × 256 tiles on ``ctas`` persistent CTAs."""
    order = schedule.static_order(int(tiles_m), int(tiles_n), int(group), raster)
    pos = np.zeros((int(tiles_m), int(tiles_n)), int)
    for t, (m, n) in enumerate(order):
        pos[m, n] = t
    est = schedule.l2_reuse(order, int(ctas), 128, 256, int(K))
    return {"tiles_m": int(tiles_m), "tiles_n": int(tiles_n), "group": int(group), "raster": raster,
            "ctas": int(ctas), "position": pos, "wave": pos // int(ctas), "l2": est,
            "waves": schedule.waves(len(order), int(ctas))}


def describe_order(r: dict) -> str:
    e = r["l2"]
    a, b = e.per_wave[0]
    return (f"{r['tiles_m']} x {r['tiles_n']} tiles, group {r['group']} along {r['raster'].upper()}, "
            f"{r['ctas']} CTAs: first wave reads {a} A panels and {b} B panels; estimated L2 hit rate "
            f"{100 * e.hit_rate:.1f} %, DRAM {e.dram / 2 ** 30:.2f} GiB of {e.requested / 2 ** 30:.2f} GiB requested")


def order_explorer(tiles_m: int = 16, tiles_n: int = 16, group: int = 8):
    """Controls: tile grid, group size, raster direction, CTAs."""
    import ipywidgets as W

    from ..viz.l08_design import draw_order
    from .base import Explorer

    ctl = {"tiles_m": W.IntSlider(value=tiles_m, min=4, max=32, step=4, description="tiles M"),
           "tiles_n": W.IntSlider(value=tiles_n, min=4, max=32, step=4, description="tiles N"),
           "group": W.Dropdown(options=[1, 2, 4, 8, 16], value=group, description="group"),
           "raster": W.Dropdown(options=["m", "n"], value="m", description="raster"),
           "ctas": W.Dropdown(options=[16, 66, 132], value=132, description="CTAs")}
    return Explorer(ctl, order_result, draw_order, title="Tile order and L2 reuse", describe=describe_order)
