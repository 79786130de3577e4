"""Widget: an mbarrier stepper — buttons for arrive / expect_tx / complete_tx / arrive_drop, the
counts, the phase and what ``try_wait.parity`` would return after every step (chapter 3)."""
from __future__ import annotations

from ..sync.mbarrier import run_ops

__all__ = ["stepper_result", "describe_steps", "mbarrier_stepper"]


def stepper_result(count: int, ops: str) -> list:
    """The steps of :func:`h100lab.sync.mbarrier.run_ops` for an init count and an op sequence."""
    return run_ops(int(count), ops)


def describe_steps(steps) -> str:
    """HTML: the state after the last step and the two parity waits."""
    s = steps[-1]
    w0, w1 = s.waits
    return (f"after <code>{s.op}</code>: phase {s.phase_number} (parity {s.state.phase}), pending "
            f"{s.state.pending}/{s.state.expected}, tx-count {s.state.tx:+d} B — "
            f"<code>try_wait.parity(0)</code> → {str(w0).lower()}, <code>try_wait.parity(1)</code> → "
            f"{str(w1).lower()}")


def mbarrier_stepper(count: int = 2, ops: str = "arrive.expect_tx 1024; arrive; complete_tx 512; complete_tx 512"):
    """An Explorer over an init count and an editable op sequence, with buttons that append ops."""
    import ipywidgets as W

    from ..viz.mbarrier import steps_figure
    from .base import Explorer

    ctl = {"count": W.IntSlider(value=count, min=1, max=8, description="init count"),
           "ops": W.Textarea(value=ops, description="ops", layout=W.Layout(width="60%", height="70px"))}
    ex = Explorer(ctl, stepper_result, lambda st: steps_figure(st), title="mbarrier stepper",
                  describe=describe_steps)
    nbytes = W.BoundedIntText(value=512, min=16, max=(1 << 20) - 1, step=16, description="bytes",
                              layout=W.Layout(width="160px"))

    def add(op_fn):
        def click(_):
            cur = ctl["ops"].value.strip()
            ctl["ops"].value = (cur + "; " if cur else "") + op_fn()
        return click

    buttons = []
    for text, fn in [("arrive", lambda: "arrive"), ("arrive_drop", lambda: "arrive_drop"),
                     ("expect_tx", lambda: f"expect_tx {nbytes.value}"),
                     ("arrive.expect_tx", lambda: f"arrive.expect_tx {nbytes.value}"),
                     ("complete_tx", lambda: f"complete_tx {nbytes.value}")]:
        b = W.Button(description=text, layout=W.Layout(width="auto"))
        b.on_click(add(fn))
        buttons.append(b)
    reset = W.Button(description="reset", button_style="warning", layout=W.Layout(width="auto"))
    reset.on_click(lambda _: setattr(ctl["ops"], "value", ""))
    ex.buttons = buttons + [reset]
    ex.widget.children = (W.HBox(buttons + [nbytes, reset], layout=W.Layout(flex_flow="row wrap")),
                          *ex.widget.children)
    return ex
