"""``python -m h100lab.cuda [--json]``: what the real-GPU backend finds on this machine.

Prints the versions that matter (Python, cuda-python's bindings and cuda.core, NVRTC, the driver and the
CUDA version it supports), whether a Hopper GPU is usable and why not, and compiles every shipped kernel
for sm_90a. Exit status 1 when a kernel does not compile, else 0 (no GPU is not an error here).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any, Sequence

__all__ = ["environment", "main"]


def _version(mod: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:
        return None


def environment(compile_kernels: bool = True) -> dict[str, Any]:
    """A plain dict describing the backend's environment (see the module docstring)."""
    from . import compiler, device

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "cuda-bindings": _version("cuda-bindings"),
        "cuda-core": _version("cuda-core"),
        "cuda-pathfinder": _version("cuda-pathfinder"),
        "nvidia-cuda-nvrtc": _version("nvidia-cuda-nvrtc") or _version("nvidia-cuda-nvrtc-cu12"),
        "numpy": _version("numpy"),
        "compiler_unavailable_reason": compiler.compiler_unavailable_reason(),
        "gpu_unavailable_reason": device.unavailable_reason(),
    }
    if env["compiler_unavailable_reason"] is None:
        env["nvrtc"] = compiler.nvrtc_version()
        env["include_dirs"] = list(compiler.include_dirs())
        if compile_kernels:
            results = {}
            for name in compiler.list_kernels():
                try:
                    p = compiler.compile_kernel(name)
                    results[name] = f"ok ({len(p.cubin)} B cubin, kernels {p.entry_points()})"
                except Exception as exc:
                    results[name] = f"FAILED: {exc}"
            env["kernels"] = results
    if env["gpu_unavailable_reason"] is None:
        meta = device.run_metadata("python -m h100lab.cuda")
        env.update({k: meta[k] for k in ("gpu", "compute_capability", "sm_count", "driver", "cuda")})
    return env


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m h100lab.cuda", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    a = p.parse_args(argv)
    env = environment()
    if a.json:
        print(json.dumps(env, indent=1, sort_keys=True))
    else:
        for k, v in env.items():
            if k == "kernels":
                print("kernels:")
                for name, res in v.items():
                    print(f"  {name}: {res}")
            else:
                print(f"{k}: {v}")
    failed = [k for k, v in env.get("kernels", {}).items() if not v.startswith("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
