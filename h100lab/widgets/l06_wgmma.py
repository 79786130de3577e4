"""Widgets of lesson 6 (WGMMA): the fragment explorer, the descriptor builder and the swizzle / K-advance
visualiser. Each is an :class:`~h100lab.widgets.base.Explorer` over a compute function that asks
:mod:`h100lab.tensorcore` (PTX ISA §9.7.15.5.1: register fragments, the matrix descriptor and the gather it
implies) and a drawing function in :mod:`h100lab.viz.l06_wgmma`."""
from __future__ import annotations

import numpy as np

from ..tensorcore import descriptor as dsc
from ..tensorcore import fragments, shapes

__all__ = ["fragment_result", "describe_fragment", "fragment_explorer", "TILE_ROWS", "tile_image",
           "descriptor_result", "describe_descriptor", "descriptor_builder", "kstep_result", "describe_kstep",
           "kstep_explorer", "OPERANDS"]

#: the fragment explorer's operands: label -> (kind, type)
OPERANDS = {"D, .f32 accumulator": ("D", "f32"), "D, .f16 accumulator": ("D", "f16"),
            "A in registers (RS), .bf16": ("A", "bf16"), "A in registers (RS), .tf32": ("A", "tf32"),
            "A in registers (RS), .e4m3": ("A", "e4m3")}


def fragment_result(n: int = 64, operand: str = "D, .f32 accumulator", thread: int = 0) -> dict:
    """Which elements of the tile thread ``thread`` of the warpgroup holds, in which register: the accumulator D
    of ``m64nN`` (PTX §9.7.15.5.1.1.1) or the A operand of the RS form (§9.7.15.5.1.1.2; ``n`` is then unused:
    A is 64 × K)."""
    kind, typ = OPERANDS[operand]
    t = int(thread)
    if not 0 <= t < fragments.THREADS:
        raise shapes.WgmmaError(f"thread {t}: a warpgroup has threads 0..{fragments.THREADS - 1}")
    labels: dict[tuple[int, int], str] = {}
    if kind == "D":
        sp = shapes.spec(int(n), typ, "f16" if typ == "f16" else "bf16")
        row, col = fragments.accumulator_layout(sp.n)
        cols, regs, values = sp.n, sp.d_regs, sp.d_values
        for r in range(sp.d_values):
            labels[(int(row[t, r]), int(col[t, r]))] = f"{r >> 1}.{r & 1}" if typ == "f16" else str(r)
        owner = np.zeros((shapes.M, cols), int)
        owner[row, col] = (np.arange(fragments.THREADS) // 32)[:, None]
        title = f"{sp.shape} D (.{typ}): thread {t}"
        col_name = "column n"
    else:
        k = shapes.k_of(typ)
        row, kk = fragments.a_fragment_layout(typ)
        G = row.shape[2]
        cols, regs, values = k, 4, 4 * G
        for j in range(4):
            for i in range(G):
                labels[(int(row[t, j, i]), int(kk[t, j, i]))] = f"{j}.{i}" if G > 1 else str(j)
        owner = np.zeros((shapes.M, cols), int)
        owner[row.reshape(fragments.THREADS, -1), kk.reshape(fragments.THREADS, -1)] = \
            (np.arange(fragments.THREADS) // 32)[:, None]
        title = f"A of m64nNk{k} (.{typ}, RS): thread {t}"
        col_name = "k"
    mine = np.zeros((shapes.M, cols), bool)
    for (r_, c_) in labels:
        mine[r_, c_] = True
    return {"kind": kind, "type": typ, "thread": t, "n": int(n), "cols": cols, "registers": regs, "values": values,
            "owner_warp": owner, "mine": mine, "labels": labels, "title": title, "col_name": col_name}


def describe_fragment(r: dict) -> str:
    t = r["thread"]
    rows = sorted({rc[0] for rc in r["labels"]})
    cols = sorted({rc[1] for rc in r["labels"]})
    what = "accumulator values" if r["kind"] == "D" else "A elements"
    return (f"thread {t} = warp {t // 32}, lane {t % 32} (group g = {(t % 32) // 4}, c = {t % 4}): {r['values']} "
            f"{what} in {r['registers']} 32-bit registers; rows {rows}, columns {cols[0]}..{cols[-1]} "
            f"({len(cols)} distinct)")


def fragment_explorer(n: int = 64, operand: str = "D, .f32 accumulator", thread: int = 0):
    """Controls: N, operand (D with an f32 or f16 accumulator, or the RS A operand of one type), thread."""
    import ipywidgets as W

    from ..viz.l06_wgmma import draw_fragment
    from .base import Explorer

    ctl = {
        "n": W.Dropdown(options=[8, 16, 32, 64, 128, 256], value=n, description="N"),
        "operand": W.Dropdown(options=list(OPERANDS), value=operand, description="operand"),
        "thread": W.IntSlider(value=thread, min=0, max=fragments.THREADS - 1, description="thread"),
    }
    return Explorer(ctl, fragment_result, draw_fragment, title="Fragment explorer", describe=describe_fragment)


# ------------------------------------------------------------------------------------------------
# descriptor builder

#: the tile the descriptor builder reads: 64 rows × 64 bf16 (128 B per row), K-major, 128B-swizzled at address 0
TILE_ROWS, TILE_K = 64, 64
_IMAGE_BYTES = 16384
_OUTSIDE = 0xFFFF


def tile_image() -> tuple[np.ndarray, np.ndarray]:
    """(bytes, tile): a 16 KB shared-memory image whose first 8 KB hold the 64 × 64 bf16 tile ``tile[m][k] = 64m + k``
    in the canonical K-major 128B-swizzled layout (PTX §9.7.15.5.1.2.1.3; what the chapter's ``gemm_ss`` kernel and
    a ``SWIZZLE_128B`` TMA load write), the rest ``0xFFFF`` (no element)."""
    tile = (64 * np.arange(TILE_ROWS)[:, None] + np.arange(TILE_K)[None, :]).astype(np.uint16)
    halves = np.full(_IMAGE_BYTES // 2, _OUTSIDE, np.uint16)
    a = dsc.addresses(dsc.MatrixDescriptor(0, 16, 1024, 0, "128B"), "K", TILE_ROWS, TILE_K, "bf16")
    halves[a // 2] = tile
    return halves.view(np.uint8), tile


_FIELDS = [("start", (0, 13)), ("LBO", (16, 29)), ("SBO", (32, 45)), ("base", (49, 51)), ("layout", (62, 63))]


def descriptor_result(swizzle: str = "128B", lbo: int = 16, sbo: int = 1024, kstep: int = 0,
                      base_offset: int = 0) -> dict:
    """The descriptor of K-step ``kstep`` (start = 32·kstep bytes: 16 bf16 of K) of the A operand of an
    ``m64nNk16.bf16`` wgmma over :func:`tile_image`, its 64-bit value and fields, and what it reads: the 64 × 16
    elements :func:`h100lab.tensorcore.gather` returns, compared with ``tile[:, 16·kstep : 16·kstep + 16]``, and
    how often each 16-byte chunk of shared memory was read (PTX §9.7.15.5.1.2.2)."""
    img, tile = tile_image()
    j = int(kstep)
    if not 0 <= j < TILE_K // 16:
        raise shapes.WgmmaError(f"K-step {j}: the tile holds {TILE_K // 16} K-steps of 16 bf16")
    d = dsc.MatrixDescriptor(32 * j, int(lbo), int(sbo), int(base_offset), swizzle)
    got = dsc.gather(img, d, "K", TILE_ROWS, 16, "bf16")
    want = tile[:, 16 * j:16 * j + 16]
    ref = dsc.MatrixDescriptor(32 * j, 16, 1024, 0, "128B")

    def chunks(desc):
        a = dsc.addresses(desc, "K", TILE_ROWS, 16, "bf16")
        out = np.zeros((_IMAGE_BYTES // 128, 8), int)
        np.add.at(out, (a // 128, (a % 128) // 16), 1)
        return out

    reads, meant = chunks(d), chunks(ref) > 0
    last = max(TILE_ROWS, int(np.nonzero(reads.any(axis=1))[0].max()) + 1)
    value = d.encode()
    fields = [{"name": nm, "bits": b, "raw": (value >> b[0]) & ((1 << (b[1] - b[0] + 1)) - 1)} for nm, b in _FIELDS]
    return {"desc": d, "value": value, "fields": fields, "read": got, "want": want, "right": got == want,
            "chunk_reads": reads[:last], "chunk_want": meant[:last], "outside": int((got == _OUTSIDE).sum())}


def describe_descriptor(r: dict) -> str:
    d = r["desc"]
    n_ok = int(r["right"].sum())
    return (f"0x{r['value']:016x}: start {d.start} B, LBO {d.lbo} B, SBO {d.sbo} B, base offset {d.base_offset}, "
            f"layout {d.swizzle}: {n_ok} of {r['right'].size} elements right"
            + (f", {r['outside']} read from outside the tile" if r["outside"] else ""))


def descriptor_builder(swizzle: str = "128B", lbo: int = 16, sbo: int = 1024):
    """Controls: layout type (swizzle), LBO, SBO, K-step (start address) and base offset."""
    import ipywidgets as W

    from ..viz.l06_wgmma import draw_descriptor
    from .base import Explorer

    ctl = {
        "swizzle": W.Dropdown(options=["none", "32B", "64B", "128B"], value=swizzle, description="layout"),
        "lbo": W.Dropdown(options=[16, 128, 1024, 4096], value=lbo, description="LBO (B)"),
        "sbo": W.Dropdown(options=[128, 512, 1024, 2048], value=sbo, description="SBO (B)"),
        "kstep": W.IntSlider(value=0, min=0, max=3, description="K-step"),
        "base_offset": W.IntSlider(value=0, min=0, max=7, description="base offset"),
    }
    return Explorer(ctl, descriptor_result, draw_descriptor, title="Descriptor builder", describe=describe_descriptor)


# ------------------------------------------------------------------------------------------------
# swizzle / K-advance visualiser

def kstep_result(swizzle: str = "128B", kstep: int = 0, dtype: str = "bf16") -> dict:
    """One swizzle atom of a K-major operand (8 rows × swizzle-width bytes, 1024-aligned): for every stored 16-byte
    chunk, the logical chunk of its row it holds; and the chunks K-step ``kstep`` reads when the descriptor's start
    address is advanced by its 32 bytes of K (one wgmma's K of ``dtype``; CuTe ``DescriptorIterator``), the swizzle
    then applied to the advanced address (PTX §9.7.15.5.1.2)."""
    S = dsc.SWIZZLE_BYTES[swizzle]
    if swizzle == "none":
        raise shapes.WgmmaError("the interleaved (no-swizzle) layout has no swizzle atom: choose 32B, 64B or 128B")
    k = shapes.k_of(dtype)
    es = dsc._elem_bytes(dtype)
    step = k * es
    j = int(kstep)
    if step * j >= S:
        raise shapes.WgmmaError(f"K-step {j} starts {step * j} B into a {S}-byte swizzled row: the row holds "
                                f"{S // step} K-step(s) of .{dtype}; the next K lies in the next atom along K")
    full = dsc.addresses(dsc.MatrixDescriptor(0, 16, 8 * S, 0, swizzle), "K", 8, S // es, dtype)
    logical = np.zeros((8, S // 16), int)
    for y in range(8):
        for kk in range(0, S // es, 16 // es):
            a = int(full[y, kk])
            logical[a // S, (a % S) // 16] = kk * es // 16
    d = dsc.MatrixDescriptor(step * j, 16, 8 * S, 0, swizzle)
    a = dsc.addresses(d, "K", 8, k, dtype)
    hit = np.zeros((8, S // 16), bool)
    hit[a // S, (a % S) // 16] = True
    return {"swizzle": swizzle, "kstep": j, "dtype": dtype, "step_bytes": step, "logical": logical, "hit": hit,
            "start_field": d.encode() & 0x3FFF, "addresses": a,
            "title": f"{swizzle} atom, .{dtype} K-step {j}: start + {step * j} B"}


def describe_kstep(r: dict) -> str:
    rows = [sorted(int(x) for x in np.nonzero(r["hit"][y])[0]) for y in range(r["hit"].shape[0])]
    return (f"K-step {r['kstep']} of .{r['dtype']} is {r['step_bytes']} B of K per row; descriptor start field "
            f"{r['start_field']} (16-byte units); stored chunks read in rows 0-7: {rows}")


def kstep_explorer(swizzle: str = "128B"):
    """Controls: swizzle mode, K-step, element type."""
    import ipywidgets as W

    from ..viz.l06_wgmma import draw_kstep
    from .base import Explorer

    ctl = {
        "swizzle": W.Dropdown(options=["32B", "64B", "128B"], value=swizzle, description="swizzle"),
        "kstep": W.IntSlider(value=0, min=0, max=3, description="K-step"),
        "dtype": W.Dropdown(options=["bf16", "tf32", "e4m3"], value="bf16", description="type"),
    }
    return Explorer(ctl, kstep_result, draw_kstep, title="Swizzle and K-advance", describe=describe_kstep)
