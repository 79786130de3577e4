"""SASS of the book's kernels, with no GPU: NVRTC's ``sm_90a`` cubin (:mod:`h100lab.nvrtc`) through ``nvdisasm``.

What it answers: did two builds of a kernel run the same machine code where it matters? The timing datasets of
``data/l08`` were measured on different days from different commits of ``l08_gemm.cu``; where the source changed
outside the k-block loop (the fused epilogue's bias and ReLU, the FP8 form), the loop itself may or may not have
moved. :func:`mainloop_fingerprint` reduces a disassembly to the opcode sequences (guards and modifiers kept,
registers, immediates, addresses and labels dropped) of the basic blocks that hold a tensor-core or an mbarrier
instruction (``HGMMA``, ``SYNCS``: ``wgmma.mma_async``, ``mbarrier.*`` in PTX) — the producer's and the consumers'
loops — and hashes them. Two builds with the same fingerprint issue the same instructions in the same order in those
blocks; register allocation may differ (it is not part of the fingerprint), and so may everything outside them — which
can matter: the first bf16 table's build and today's share their main loops, yet run some forms 4–27 % apart side by
side (``data/l08/gemm_bench_builds``). Equal fingerprints rule the loops out as the cause; they do not make two
builds the same kernel.

``nvdisasm`` comes from the CUDA toolkit on ``PATH`` or from the ``nvidia-cuda-nvdisasm`` wheel
(:func:`nvdisasm_path`); without it :func:`disassemble` raises :class:`FileNotFoundError`.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

__all__ = ["nvdisasm_path", "nvdisasm_version", "disassemble", "basic_blocks", "mainloop_fingerprint",
           "MAINLOOP_MARKERS"]

#: opcodes whose basic blocks make up a kernel's main loops: the consumers' (``HGMMA``: ``wgmma.mma_async``)
#: and the producer's (``UTMALDG``: ``cp.async.bulk.tensor`` loads)
MAINLOOP_MARKERS = ("HGMMA", "UTMALDG")

_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_INSTR = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/\s*)?(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")


def nvdisasm_path() -> str | None:
    """``nvdisasm`` on ``PATH``, else the one of an installed ``nvidia-cuda-nvdisasm`` wheel
    (``site-packages/nvidia/cu13/bin`` or ``cu12``), else None."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    for root in sys.path:
        for cu in ("cu13", "cu12"):
            p = Path(root or ".", "nvidia", cu, "bin", "nvdisasm")
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
    return None


def nvdisasm_version() -> str:
    """The release line of ``nvdisasm --version`` (e.g. ``Cuda compilation tools, release 13.0, V13.0.88``).
    Raises FileNotFoundError without ``nvdisasm``."""
    tool = nvdisasm_path()
    if tool is None:
        raise FileNotFoundError("nvdisasm: not on PATH and no nvidia-cuda-nvdisasm wheel installed")
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
    lines = [x for x in out.splitlines() if "release" in x]
    return lines[-1].strip() if lines else out.strip().splitlines()[-1]


def disassemble(cubin: bytes, function: str | None = None) -> str:
    """``nvdisasm -c`` of a cubin: every function's code, or only ``function``'s (its ``.text.<function>``
    section). Raises FileNotFoundError without ``nvdisasm``, RuntimeError (its message) when it fails and KeyError
    when the cubin has no such function."""
    tool = nvdisasm_path()
    if tool is None:
        raise FileNotFoundError("nvdisasm: not on PATH and no nvidia-cuda-nvdisasm wheel installed")
    if not cubin:
        raise ValueError("an empty cubin: compile for a real architecture (sm_90a), not a compute_ target")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "k.cubin")
        path.write_bytes(cubin)
        res = subprocess.run([tool, "-c", str(path)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"nvdisasm failed (rc {res.returncode}): {res.stderr.strip()[:400]}")
    if function is None:
        return res.stdout
    parts = re.split(r"(?m)^\s*\.section\s+", res.stdout)
    for part in parts[1:]:
        if part.startswith(f".text.{function},") or part.startswith(f".text.{function}\t"):
            return ".section " + part
    raise KeyError(f"the cubin has no function {function!r}")


def basic_blocks(sass: str) -> list[tuple[str, list[str]]]:
    """The basic blocks of an ``nvdisasm -c`` listing in order, each ``(label, opcodes)``: a block starts at a
    ``.L_x_N:`` label (the code before the first label is ``"entry"``); an opcode keeps its guard predicate
    (``@P0``, ``@!UPT``) and modifiers (``HGMMA.64x256x16.F32.BF16``) and drops its operands."""
    blocks: list[tuple[str, list[str]]] = []
    for line in sass.splitlines():
        m = _LABEL.match(line)
        if m:
            blocks.append((m.group(1), []))
            continue
        if ";" not in line:
            continue
        code = line.split(";")[0]
        code = re.sub(r"^\s*/\*[0-9a-f]+\*/", "", code)
        m = _INSTR.match(code)
        if not m:
            continue
        if not blocks:
            blocks.append(("entry", []))
        guard = (m.group(1) or "").strip()
        blocks[-1][1].append((guard + " " if guard else "") + m.group(2))
    return blocks


def mainloop_fingerprint(sass: str, markers: Sequence[str] = MAINLOOP_MARKERS) -> dict:
    """The main loops of a kernel's SASS (module docstring): ``{"sha256", "multiset_sha256", "blocks",
    "instructions", "hgmma"}`` — the hash of the opcode sequences of every basic block (:func:`basic_blocks`)
    holding an opcode that starts with one of ``markers``, in order; the same with each block's opcodes sorted
    (equal when two builds differ only in how the scheduler ordered a block's instructions); how many such blocks,
    their instructions, and their ``HGMMA``s. Raises ValueError when no block holds a marker (not a TMA-fed
    tensor-core kernel, or not SASS)."""
    chosen = [ops for _, ops in basic_blocks(sass)
              if any(op.split(" ")[-1].startswith(tuple(markers)) for op in ops)]
    if not chosen:
        raise ValueError(f"no basic block holds {'/'.join(markers)}: not the SASS of a tensor-core kernel")
    text = "\n".join("|".join(ops) for ops in chosen)
    bag = "\n".join("|".join(sorted(ops)) for ops in chosen)
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(),
            "multiset_sha256": hashlib.sha256(bag.encode()).hexdigest(), "blocks": len(chosen),
            "instructions": sum(map(len, chosen)),
            "hgmma": sum(op.split(" ")[-1].startswith("HGMMA") for ops in chosen for op in ops)}


def function_fingerprint(sass: str) -> dict:
    """A whole function's SASS: ``{"sha256", "instructions", "stg"}`` — the hash of its opcode sequence (every basic
    block of :func:`basic_blocks` in order, guards and modifiers kept, operands dropped), its instructions and its
    global stores (``STG``). Equal hashes: the two builds compile to the same instructions in the same order."""
    ops = [op for _, block in basic_blocks(sass) for op in block]
    return {"sha256": hashlib.sha256("|".join(ops).encode()).hexdigest(), "instructions": len(ops),
            "stg": sum(op.split(" ")[-1].startswith("STG") for op in ops)}
