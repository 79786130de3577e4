"""Widget: the hazard lab — remove a fence or a barrier from the three-warp producer/consumer program
and see what the hazard checker reports (chapter 3)."""
from __future__ import annotations

from collections import Counter

from ..sim.programs import STEPS, ProgramRun, run_program

__all__ = ["lab_result", "describe_lab", "hazard_lab"]


def lab_result(remove=()) -> ProgramRun:
    """Run the program without the steps in ``remove`` and check it (:func:`run_program`)."""
    return run_program(tuple(remove))


def describe_lab(run: ProgramRun) -> str:
    """HTML: what was removed, hazards by kind and the first few in full."""
    if not run.hazards:
        return "removed: nothing" if not run.removed else f"removed: {', '.join(run.removed)} — no hazards"
    kinds = Counter(h.kind for h in run.hazards)
    lines = "".join(f"<li>{h}</li>" for h in run.hazards[:4])
    more = f"<li>… and {len(run.hazards) - 4} more</li>" if len(run.hazards) > 4 else ""
    return (f"removed: {', '.join(run.removed)} — {len(run.hazards)} hazard(s): "
            + ", ".join(f"{k} × {v}" for k, v in sorted(kinds.items())) + f"<ul>{lines}{more}</ul>")


def draw_lab(run: ProgramRun):
    """The program's timeline with its hazards drawn as arrows."""
    from ..viz.timeline import gantt

    title = "complete program" if not run.removed else "without " + ", ".join(run.removed)
    return gantt(run.trace, hazards=run.hazards[:8], title=title, figsize=(7.5, 3.8))


def hazard_lab(remove=()):
    """A multiple selection of synchronisation steps to remove."""
    import ipywidgets as W

    from .base import Explorer

    ctl = {"remove": W.SelectMultiple(options=list(STEPS), value=tuple(remove), rows=len(STEPS),
                                      description="remove")}
    return Explorer(ctl, lab_result, draw_lab, title="Hazard lab", describe=describe_lab)
