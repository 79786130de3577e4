"""Kernel design (lesson 8): the models behind a fast Hopper GEMM, one module per job.

* :mod:`~h100lab.design.ring` — an S-stage ring of full/empty mbarriers with phase bits, its prologue / steady
  state / drain, and the ABA ambiguity when a waiter skips a phase;
* :mod:`~h100lab.design.registers` — the 64 K-register file, ``setmaxnreg`` splits per warpgroup;
* :mod:`~h100lab.design.tiles` — tile, stage and RS/SS choices from the shared-memory and register limits;
* :mod:`~h100lab.design.schedule` — persistent tile schedulers (static with rasterization and swizzle, grouped
  GEMM, a first Stream-K), wave quantization, an L2-reuse estimate per tile order;
* :mod:`~h100lab.design.epilogue` — epilogue fusion: the operation list, register cost, bytes saved;
* :mod:`~h100lab.design.capstone` — the capstone GEMM kernel's variants, launch and bit-exact reference.

Submodules are imported on use (``from h100lab.design import ring``), so ``import h100lab`` stays fast.
"""
import importlib

__all__ = ["ring", "registers", "tiles", "schedule", "epilogue", "capstone"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'h100lab.design' has no attribute {name!r}")
