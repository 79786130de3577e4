"""Widget: the bank-conflict explorer (stride, width, load/store, padding -> lanes coloured by bank,
wavefronts per phase)."""
from __future__ import annotations

from ..memory.banks import bank_access

__all__ = ["bank_pattern", "bank_result", "describe_banks", "bank_explorer"]


def bank_pattern(stride: int = 1, width: int = 4, pad_words: int = 0, base: int = 0) -> list[int]:
    """Lane ``t`` accesses element ``t x stride`` of an array of ``width``-byte elements whose rows of
    32 words carry ``pad_words`` extra words of padding (``pad_words = 1``: the classic 33-word pitch)."""
    if stride < 0 or pad_words < 0 or base < 0:
        raise ValueError("stride, padding and base must be >= 0")
    out = []
    for t in range(32):
        byte = t * stride * width
        word = byte // 4
        out.append(base + 4 * (word + (word // 32) * pad_words) + byte % 4)
    return out


def bank_result(stride: int = 1, width: int = 4, op: str = "ld", pad_words: int = 0) -> dict:
    """The explorer's compute function: ``{"addresses", "access"}`` (a :class:`~h100lab.memory.banks.BankAccess`)."""
    a = bank_pattern(int(stride), int(width), int(pad_words))
    return {"addresses": a, "access": bank_access(a, int(width), op)}


def describe_banks(r: dict) -> str:
    x = r["access"]
    return (f"<b>{int(x)} wavefront{'s' if int(x) != 1 else ''}</b> (ideal {x.ideal}; "
            f"{x.conflicts} extra from bank conflicts); {x.phases} phase{'s' if x.phases != 1 else ''}"
            f"{', pair-uniform' if x.pair_uniform else ''}")


def bank_explorer(stride: int = 2, width: int = 4, op: str = "ld", pad_words: int = 0):
    """Controls: stride (elements), access width (bytes), load/store, padding words per 32-word row."""
    import ipywidgets as W

    from ..viz.banks import draw_bank_access
    from .base import Explorer

    ctl = {
        "stride": W.IntSlider(value=stride, min=0, max=64, description="stride (elems)"),
        "width": W.Dropdown(options=[("32-bit", 4), ("64-bit", 8), ("128-bit", 16)], value=width, description="width"),
        "op": W.Dropdown(options=[("load", "ld"), ("store", "st")], value=op, description="op"),
        "pad_words": W.IntSlider(value=pad_words, min=0, max=8, description="pad words"),
    }
    return Explorer(ctl, bank_result, lambda r: draw_bank_access(r["addresses"], r["access"]),
                    title="Bank-conflict explorer", describe=describe_banks)
