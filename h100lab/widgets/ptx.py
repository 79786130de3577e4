"""Widgets of lesson 2's PTX topics: the inline-asm builder and packed registers bit by bit."""
from __future__ import annotations

__all__ = ["asm_result", "asm_explorer", "packing_result", "packing_explorer", "CPP_TYPES"]

#: C++ types offered for operands (some fit, some deliberately do not)
CPP_TYPES = ("default", "int", "unsigned", "unsigned short", "unsigned long long", "float", "double", "uint8_t", "bool")


def asm_result(instruction: str, output_type: str = "default", input_type: str = "default",
               compile_ptx: bool = True) -> dict:
    """The asm statement for a catalogue instruction with the chosen C++ types for its outputs / inputs
    (``"default"``: the natural type), and its compiled PTX when NVRTC is available (``ptx`` None otherwise).
    A constraint/type mismatch raises ``ConstraintError`` (a ValueError: the widget shows it)."""
    from ..ptx import INSTRUCTIONS, statement

    ins = INSTRUCTIONS[instruction]
    ctypes = {}
    for o in ins.operands:
        if o.mode == "imm":
            continue
        t = output_type if o.mode in ("out", "inout") else input_type
        if t != "default":
            ctypes[o.name] = t
    stmt = statement(instruction, ctypes)
    ptx = None
    if compile_ptx:
        try:
            from ..cuda import compiler_unavailable_reason
            if compiler_unavailable_reason() is None:
                ptx = stmt.compiled_ptx()
        except ImportError:
            ptx = None
    return {"instruction": ins, "statement": stmt, "ptx": ptx}


def _describe_asm(r: dict) -> str:
    import html

    s = f"<i>{html.escape(r['instruction'].what)}</i> ({html.escape(r['instruction'].source)})"
    s += "<pre>" + html.escape(r["statement"].text) + "</pre>"
    if r["ptx"]:
        s += "PTX emitted by NVRTC for sm_90a:<pre>" + html.escape(r["ptx"]) + "</pre>"
    return s


def asm_explorer(instruction: str = "cvt.rn.bf16x2.f32"):
    """Pick an instruction and the C++ types of its operands; see the asm statement, its operand numbering and
    (with NVRTC) the PTX the compiler emits."""
    import ipywidgets as W

    from ..ptx import INSTRUCTIONS
    from ..viz.ptx import operand_numbering
    from .base import Explorer

    ctl = {"instruction": W.Dropdown(options=list(INSTRUCTIONS), value=instruction, description="instruction"),
           "output_type": W.Dropdown(options=CPP_TYPES, value="default", description="outputs as"),
           "input_type": W.Dropdown(options=CPP_TYPES, value="default", description="inputs as")}
    return Explorer(ctl, asm_result, lambda r: operand_numbering(r["statement"]),
                    title="Inline-PTX builder", describe=_describe_asm)


def packing_result(type_name: str, element0: float, element1: float) -> dict:
    """The packed register of two values, with each element's bits."""
    from ..ptx import pack, round_trip, ptx_type

    e = ptx_type(type_name).element_type
    return {"type": type_name, "values": (element0, element1), "bits": pack([element0, element1], type_name),
            "held": (round_trip(element0, e), round_trip(element1, e))}


def packing_explorer(type_name: str = ".bf16x2", element0: float = 1.0, element1: float = -2.5):
    """Pick a packed type and two values; see which half each lands in."""
    import ipywidgets as W

    from ..viz.ptx import packed_register
    from .base import Explorer

    ctl = {"type_name": W.Dropdown(options=[".f16x2", ".bf16x2", ".e4m3x2", ".e5m2x2"], value=type_name,
                                   description="type"),
           "element0": W.FloatText(value=element0, description="element 0"),
           "element1": W.FloatText(value=element1, description="element 1")}
    return Explorer(ctl, packing_result, lambda r: packed_register(r["values"], r["type"]),
                    title="Packed registers", describe=lambda r: f"0x{r['bits']:08x} holds {r['held']}")
