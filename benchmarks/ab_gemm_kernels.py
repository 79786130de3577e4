"""Issue 17: is the first bf16 table's build slower because of its kernel or its harness? One process, today's
harness (``bench_gemm.TorchCuda``: the same inputs, tensor maps, grid and CUDA-event timing), two kernels: the
capstone's ``l08_gemm.cu`` as it was at ``--old-rev`` (the first table's build, efb78df: no bias / ReLU parameters,
so it is launched with the ten parameters it has) and as it is now. Sides alternate within each configuration,
the order flipping every round; both sides' outputs are compared bit for bit (the same arithmetic: they must agree).

    python3 benchmarks/ab_gemm_kernels.py --old-source OLD.cu --out res/ab_kernels.json
    python3 benchmarks/ab_gemm_kernels.py --old-source OLD.cu --ncu-launches    # two launches per side (for ncu)
    python3 benchmarks/ab_gemm_kernels.py --merge RES                # -> data/l08/gemm_bench_kernels.json

``--merge`` reads a device run's folder (``ab_kernels.json``; ``ncu.csv``: Nsight Compute's raw page of the
``--ncu-launches`` run, ``--clock-control none``; ``smi_trace.csv``; ``log.txt`` with each step's return code)
and writes the dataset: records ``kernel_ab_time``, ``kernel_ab_match`` and ``kernel_ab_ncu`` (the counters of
:data:`NCU_METRICS` per profiled launch).

Writes one record per (shape, variant, side, round): median and min ms of ``--repeats`` launches after
``--warmup``; a ``match`` record per (shape, variant) with the bitwise comparison. Every CUDA call is checked
(h100lab.cuda raises on a failure)."""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gemm import TorchCuda  # noqa: E402

from h100lab.measure import smi  # noqa: E402

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (1280, 3840, 8192))
VARIANTS = ("pingpong", "cooperative_n128", "pingpong_n128_inflight", "cooperative", "cooperative_n128_inflight",
            "pingpong_inflight")
#: the 16384³ pair: the largest difference the A/B run of the two trees saw (cooperative_n128) and a control
BIG = ((16384, 16384, 16384), ("cooperative_n128", "cooperative"))


class TwoKernels(TorchCuda):
    """Today's harness with a second build of the capstone: ``side`` ``old`` compiles ``old_source``."""

    def __init__(self, old_source: str):
        super().__init__()
        self.old_source = old_source

    def old_kernel(self, variant: str):
        key = ("old", variant)
        if key not in self._kernels:
            v = self.cap.variant(variant)
            prog = self.cuda.compile(self.old_source, name="l08_gemm_old.cu", options=list(v.options))
            self._kernels[key] = prog.function("gemm_bf16")
        return self._kernels[key]

    def side(self, side: str, variant: str, A, B, C, M: int, N: int, K: int, sms: int):
        """A callable that launches one side's kernel once (tensor maps encoded once)."""
        import numpy as np

        if side == "new":
            return self.ours(variant, A, B, C, M, N, K, sms=sms)
        v = self.cap.variant(variant)
        if v.tma_store or v.dtype != "bf16":
            raise ValueError(f"{variant}: the old build is compared in its direct-store bf16 forms only")
        k = self.old_kernel(variant)
        ma, mb = self.cap.tensor_maps(self.cuda, v, A.data_ptr(), B.data_ptr(), M, N, K)
        grid = self.cap.grid_size(v, M, N, sms)
        k.set_max_dynamic_shared_memory(v.smem_bytes)
        args = (ma, mb, np.uint64(C.data_ptr()), np.int32(M), np.int32(N), np.int32(K), np.float32(1.0),
                np.float32(0.0), np.int32(8), np.int32(0))
        return lambda: self.cuda.launch(k, grid, self.cap.THREADS, *args, shared_mem=v.smem_bytes)


def configurations(big: bool = True):
    for s in SHAPES:
        for v in VARIANTS:
            yield s, v
    if big:
        for v in BIG[1]:
            yield BIG[0], v


def run(be, rounds: int, warmup: int, repeats: int, log=print) -> list[dict]:
    sms = be.sm_count()
    recs = []
    for i, ((M, N, K), variant) in enumerate(configurations()):
        A, B, _ = be.inputs(M, N, K, seed=i)
        outs = {s: be.torch.empty((M, N), device="cuda", dtype=be.torch.bfloat16) for s in ("old", "new")}
        fns = {s: be.side(s, variant, A, B, outs[s], M, N, K, sms) for s in ("old", "new")}
        for s in ("old", "new"):
            fns[s]()
        be.sync()
        same = bool(be.torch.equal(outs["old"].view(be.torch.int16), outs["new"].view(be.torch.int16)))
        recs.append(dict(kind="match", M=M, N=N, K=K, variant=variant, bitwise_equal=same))
        reps = repeats if M * N * K < 16384 ** 3 else max(10, repeats // 2)
        for r in range(rounds):
            for s in (("old", "new") if r % 2 == 0 else ("new", "old")):
                ms = be.time(fns[s], warmup, reps)
                med = statistics.median(ms)
                recs.append(dict(kind="time", M=M, N=N, K=K, variant=variant, side=s, round=r, median_ms=med,
                                 min_ms=min(ms), samples_ms=[round(x, 5) for x in ms], warmup=warmup, repeats=reps))
                log(f"{M}x{N}x{K} {variant:26s} {s} r{r}: {med:.4f} ms")
    return recs


def ncu_launches(be, shape=(8192, 8192, 8192), variants=("pingpong", "cooperative_n128", "cooperative")) -> None:
    """Two launches per side and variant at ``shape`` (old, new, old, new: ncu profiles each launch)."""
    M, N, K = shape
    A, B, _ = be.inputs(M, N, K, seed=0)
    C = be.torch.empty((M, N), device="cuda", dtype=be.torch.bfloat16)
    for variant in variants:
        fns = {s: be.side(s, variant, A, B, C, M, N, K, be.sm_count()) for s in ("old", "new")}
        for s in ("old", "new", "old", "new"):
            fns[s]()
            be.sync()
            print(f"launched {variant} {s}", flush=True)


#: the Nsight Compute counters kept per profiled launch (raw page names)
NCU_METRICS = ("gpu__time_duration.sum", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.max.per_second",
               "sm__cycles_active.avg", "smsp__inst_executed.sum",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
               "dram__bytes.sum.per_second", "lts__d_sectors_fill_device.avg.pct_of_peak_sustained_elapsed",
               "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
               "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "launch__registers_per_thread")
#: the launches of ``--ncu-launches`` in order: per variant old, new, old, new at 8192³
NCU_ORDER = tuple((v, s) for v in ("pingpong", "cooperative_n128", "cooperative") for s in ("old", "new", "old", "new"))
NCU_COMMAND = ("ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats "
               "--section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats --page raw "
               "--csv -k regex:gemm_bf16 python3 benchmarks/ab_gemm_kernels.py --old-source <efb78df's l08_gemm.cu> "
               "--ncu-launches")


def _ncu_records(path: Path) -> list[dict]:
    import csv

    rows = list(csv.reader(path.open()))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    names, units, data = rows[head], rows[head + 1], rows[head + 2:]
    if len(data) != len(NCU_ORDER):
        raise SystemExit(f"{path}: {len(data)} profiled launches, expected {len(NCU_ORDER)}")
    out = []
    for i, (r, (variant, side)) in enumerate(zip(data, NCU_ORDER)):
        m = {}
        for k in NCU_METRICS:
            j = names.index(k)
            m[k] = float(r[j].replace(",", ""))
        out.append(dict(kind="kernel_ab_ncu", M=8192, N=8192, K=8192, variant=variant, side=side, launch=i,
                        metrics=m, units={k: units[names.index(k)] for k in NCU_METRICS}))
    return out


def merge(res: Path, out: Path, ran: str = "") -> None:
    """The dataset from a device run's folder (see the module docstring)."""
    ab = json.loads((res / "ab_kernels.json").read_text())
    log = (res / "log.txt").read_text()
    rcs = re.findall(r"(\w+) rc (\d+)", log)
    if not rcs or any(rc != "0" for _, rc in rcs):
        raise SystemExit(f"{res}/log.txt: a step failed: {rcs}")
    recs = []
    for r in ab["records"]:
        r = dict(r)
        r["kind"] = {"time": "kernel_ab_time", "match": "kernel_ab_match"}[r["kind"]]
        recs.append(r)
    recs += _ncu_records(res / "ncu.csv")
    meta = dict(ab["meta"])
    meta.update(
        command=("python3 benchmarks/ab_gemm_kernels.py --old-source <git show efb78df:h100lab/cuda/kernels/l08_gemm.cu> "
                 "--out res/ab_kernels.json; then " + NCU_COMMAND + "; python3 benchmarks/ab_gemm_kernels.py --merge res"),
        ncu_command=NCU_COMMAND, ran=ran, return_codes=[rc for _, rc in rcs], steps=[s for s, _ in rcs],
        smi_trace_mhz=smi.clock_range(smi.sm_clock_mhz((res / "smi_trace.csv").read_text())),
        kernels={"old": ab["meta"].get("old_rev", "efb78df"), "new": "the tree's l08_gemm.cu (HEAD 31b11bc)"},
        note=("one process, today's harness (bench_gemm.TorchCuda: inputs, tensor maps, grid, CUDA events with the "
              "GPU kept busy while launches are queued), two kernels: l08_gemm.cu at efb78df (no bias / ReLU "
              "parameters: launched with its ten) and today's; sides alternate per configuration, the order flipping "
              "every round; outputs compared bit for bit; Nsight Compute (--clock-control none: the GPU's own "
              "clocks) profiled two launches per side of three variants at 8192^3"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "records": recs}, indent=1, sort_keys=True) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-source", help="l08_gemm.cu of the old build")
    ap.add_argument("--merge", help="a device run's folder: write --dataset from it")
    ap.add_argument("--ran", default="", help="when and where the device run ran (recorded)")
    ap.add_argument("--dataset", default=str(ROOT / "data/l08/gemm_bench_kernels.json"))
    ap.add_argument("--old-rev", default="efb78df", help="the commit that source is from (recorded)")
    ap.add_argument("--out", help="JSON file for the records")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--ncu-launches", action="store_true")
    a = ap.parse_args(argv)
    if a.merge:
        merge(Path(a.merge), Path(a.dataset), a.ran)
        return 0
    if not a.old_source:
        ap.error("--old-source is needed to run the kernels")
    be = TwoKernels(Path(a.old_source).read_text())
    if a.ncu_launches:
        ncu_launches(be)
        return 0
    recs = run(be, a.rounds, a.warmup, a.repeats)
    meta = be.metadata(" ".join(["python3", "benchmarks/ab_gemm_kernels.py", *(argv or sys.argv[1:])]))
    meta["old_rev"] = a.old_rev
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"meta": meta, "records": recs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
