"""Did the lesson-8 timing tables run the same k-block loops, and at which commit did the kernel's code change? The capstone's bf16 forms, built from ``l08_gemm.cu``
as it was at the commits the tables were measured from and as it is now, compared by the SASS of their main loops
(:func:`h100lab.sass.mainloop_fingerprint`: the basic blocks holding ``HGMMA`` or ``UTMALDG``). No GPU: NVRTC's
``sm_90a`` cubin and ``nvdisasm`` (on PATH or the ``nvidia-cuda-nvdisasm`` wheel).

    python benchmarks/mainloop_sass.py --out data          # -> data/l08/mainloop_sass.json

Needs the git history (``git show REV:h100lab/cuda/kernels/l08_gemm.cu``). A rev whose kernel headers differ from
the working tree's is refused: NVRTC would compile it against today's headers.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from h100lab import nvrtc, sass  # noqa: E402
from h100lab.design import capstone  # noqa: E402

KERNEL = "h100lab/cuda/kernels/l08_gemm.cu"
#: the headers l08_gemm.cu includes (h100lab/cuda/include)
HEADERS = ("h100lab/cuda/include/h100lab/tensormap.cuh",)
#: the bf16 tables and the commit of l08_gemm.cu each was measured from (its commit message or meta says which)
MEASURED_FROM = {
    "l08/gemm_bench": ("efb78df", "commit c91776e: 'device command of g08b, kernel = efb78df's l08_gemm.cu'"),
    "l08/gemm_bench_tmastore": ("efb78df", "commit c91776e, the same run as l08/gemm_bench"),
    "l08/gemm_bench_repeats": ("025c7ae", "its meta 'ran': 'from HEAD 025c7ae'"),
    "l08/gemm_bench_tmastore_repeats": ("03cf443", "its meta 'ran': 'from HEAD 03cf443'"),
}
#: the variants of those tables (l08/gemm_bench's seven, l08/gemm_bench_tmastore's TMA-store forms)
VARIANTS = ("cooperative", "cooperative_inflight", "cooperative_n128", "cooperative_n128_inflight", "pingpong",
            "pingpong_inflight", "pingpong_n128_inflight", "cooperative_inflight_tmastore",
            "cooperative_n128_inflight_tmastore")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def source_at(rev: str | None, path: str) -> str:
    """A file of the repository at ``rev`` (None: the working tree)."""
    return (ROOT / path).read_text() if rev is None else _git("show", f"{rev}:{path}")


def _sources(rev: str | None) -> str:
    """``l08_gemm.cu`` at ``rev``; refused (SystemExit) when a header it includes differs there from the working
    tree's (NVRTC would build that rev against today's header)."""
    for h in HEADERS:
        if source_at(rev, h) != source_at(None, h):
            raise SystemExit(f"{h} differs at {rev}: NVRTC would build that rev against today's header")
    return source_at(rev, KERNEL)


def _build(src: str, variant: str) -> str:
    """The SASS of ``gemm_bf16`` built from ``src`` with ``variant``'s options (NVRTC, sm_90a; nvdisasm)."""
    c = nvrtc.compile(src, name="l08_gemm.cu", options=list(capstone.variant(variant).options))
    return sass.disassemble(c.cubin, "gemm_bf16")


def fingerprints(rev: str | None) -> list[dict]:
    """One record per variant of :data:`VARIANTS`: the main loops of ``gemm_bf16`` built from ``rev``'s kernel."""
    src = _sources(rev)
    return [dict(kind="mainloop", rev=rev or "worktree", variant=name, options=list(capstone.variant(name).options),
                 **sass.mainloop_fingerprint(_build(src, name))) for name in VARIANTS]


#: the variants whose whole gemm_bf16 is fingerprinted at every commit of the kernel (the forms the two builds of the
#: first bf16 table run apart, data/l08/gemm_bench_builds)
HISTORY_VARIANTS = ("pingpong", "cooperative_n128")
#: the first commit of the kernel's history walked (the first bf16 table's build)
HISTORY_FROM = "efb78df"


def function_history(first: str = HISTORY_FROM) -> list[dict]:
    """One record per commit that changed ``l08_gemm.cu`` from ``first`` to HEAD (oldest first) and variant of
    :data:`HISTORY_VARIANTS`: ``kind`` ``function``, the sha256 of the whole ``gemm_bf16``'s opcode sequence
    (:func:`h100lab.sass.basic_blocks`, every block), its instructions and global stores (``STG``)."""
    revs = _git("log", "--format=%h", f"{first}^..HEAD", "--", KERNEL).split()[::-1]
    out = []
    for rev in revs:
        src = _sources(rev)
        for name in HISTORY_VARIANTS:
            out.append(dict(kind="function", rev=rev, variant=name, **sass.function_fingerprint(_build(src, name))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data", help="the data folder (writes l08/mainloop_sass.json)")
    args = ap.parse_args(argv)
    revs = list(dict.fromkeys(r for r, _ in MEASURED_FROM.values()))
    records = [r for rev in revs + [None] for r in fingerprints(rev)] + function_history()
    head = _git("rev-parse", "--short", "HEAD").strip()
    meta = {"command": "python benchmarks/mainloop_sass.py --out data", "date": datetime.date.today().isoformat(),
            "gpu": "none (compiled and disassembled, not run)", "compute_capability": "9.0 (target sm_90a)",
            "driver": "none", "cuda": f"NVRTC {nvrtc.version()}",
            "nvrtc": nvrtc.version(), "nvdisasm": sass.nvdisasm_version(), "arch": "sm_90a", "entry": "gemm_bf16",
            "markers": list(sass.MAINLOOP_MARKERS), "head": head, "kernel": KERNEL,
            "measured_from": {k: {"rev": r, "evidence": e} for k, (r, e) in MEASURED_FROM.items()},
            "note": "no GPU: NVRTC cubins disassembled; 'worktree' is the kernel at 'head' (uncommitted changes "
                    "included); every rev built by this one NVRTC (the timed runs used the NVRTC their meta names), "
                    "so equal fingerprints say the sources' main loops compile alike; sha256 over the opcode sequences (guards and modifiers kept, operands dropped) of "
                    "the basic blocks holding a marker, multiset_sha256 the same with each block sorted; kind "
                    "'function': the whole gemm_bf16 of HISTORY_VARIANTS at every commit of the kernel since "
                    f"{HISTORY_FROM}"}
    path = Path(args.out, "l08", "mainloop_sass.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "records": records}, indent=1) + "\n")
    same = {v: len({r["sha256"] for r in records if r["variant"] == v and r["kind"] == "mainloop"}) == 1
            for v in VARIANTS}
    hist = [r for r in records if r["kind"] == "function"]
    changed = [r["rev"] for a, r in zip(hist, hist[len(HISTORY_VARIANTS):]) if a["sha256"] != r["sha256"]]
    print(f"wrote {path}: {len(records)} records; one main loop across {revs} and the worktree: "
          f"{sum(same.values())} of {len(VARIANTS)} variants", {v: s for v, s in same.items() if not s},
          f"; whole function changed at {sorted(set(changed))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
