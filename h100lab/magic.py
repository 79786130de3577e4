"""``%%cuda``: write a kernel in a notebook cell, compile it with NVRTC, launch it on the GPU or the emulator.

    %load_ext h100lab.magic

    %%cuda axpy_prog
    extern "C" __global__ void axpy(float a, const float* x, float* y, int n) { ... }

The cell is compiled for ``sm_90a`` (with line info, so errors name the cell's lines) on the backend of
:func:`h100lab.backend` — the GPU when one is usable, else the emulator — and the resulting program is bound to
the given name (``axpy_prog.function("axpy")``). Options: ``--emu`` or ``--gpu`` force a backend; ``--both``
binds a pair ``(emu_program, gpu_program_or_None)``; ``--show-ptx`` prints the PTX NVRTC produced.
A compile error is shown with the offending cell lines, not a traceback.
"""
from __future__ import annotations

import shlex

__all__ = ["load_ipython_extension", "cuda_cell"]


def cuda_cell(line: str, cell: str, namespace: dict) -> object:
    """The work of ``%%cuda LINE`` on ``cell``: compile and bind into ``namespace``; returns the program."""
    from . import cuda, emu
    from .backends import backend

    args = shlex.split(line)
    flags = {a for a in args if a.startswith("--")}
    names = [a for a in args if not a.startswith("--")]
    unknown = flags - {"--emu", "--gpu", "--both", "--show-ptx"}
    if unknown or len(names) != 1 or not names[0].isidentifier():
        raise ValueError("usage: %%cuda NAME [--emu | --gpu | --both] [--show-ptx]  (NAME: a Python identifier the "
                         "compiled program is bound to)")
    name = names[0]
    fname = f"{name}.cu"
    if "--both" in flags:
        e = emu.compile(cell, name=fname)
        g = cuda.compile(cell, name=fname) if cuda.available() else None
        prog = (e, g)
        ptx = e.ptx
    else:
        be = backend("emu" if "--emu" in flags else ("cuda" if "--gpu" in flags else None))
        prog = be.compile(cell, name=fname)
        ptx = prog.ptx
    if "--show-ptx" in flags:
        print(ptx)
    namespace[name] = prog
    return prog


def load_ipython_extension(ipython) -> None:  # pragma: no cover - exercised through IPython in tests
    from IPython.core.magic import register_cell_magic

    from .nvrtc import CompileError

    @register_cell_magic
    def cuda(line, cell):
        try:
            cuda_cell(line, cell, ipython.user_ns)
        except CompileError as exc:
            print(str(exc))
            return None
        return None
