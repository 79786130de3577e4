"""Emulator benchmark (a report, not a timed test).

    python benchmarks/bench_emu.py

Reports warp-instructions per second of :mod:`h100lab.emu` on one core for a compute-bound kernel (an integer
LCG and an FMA chain in registers) and a memory-bound kernel (a grid-stride copy with 128-bit loads), and the
emulated wall time of chapter-sized launches of the book's kernels (goals from the emulator issue: at least
250 k, ideally 1 M warp-instructions/s; under 5 s per chapter launch). Best of three runs each.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COMPUTE = r"""
extern "C" __global__ void compute(unsigned* out, float* fout, int iters) {
    unsigned v = threadIdx.x; float f = threadIdx.x * 0.5f;
    for (int i = 0; i < iters; ++i) { v = v * 1664525u + 1013904223u; f = fmaf(f, 0.999f, 1.0f); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v; fout[blockIdx.x * blockDim.x + threadIdx.x] = f;
}
"""
MEMORY = r"""
extern "C" __global__ void copy4(const uint4* __restrict__ src, uint4* __restrict__ dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
}
"""


def _best(fn, repeats=3):
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    from h100lab import emu
    from h100lab.measure import l03

    rows = []
    k = emu.compile(COMPUTE, name="compute.cu").function("compute")
    o, fo = emu.zeros(4 * 128, np.uint32), emu.zeros(4 * 128, np.float32)
    km = emu.compile(MEMORY, name="copy4.cu").function("copy4")
    n = 1 << 16
    src, dst = emu.to_device(np.arange(4 * n, dtype=np.uint32)), emu.zeros(4 * n, np.uint32)
    for fuse in (True, False):
        tag = "" if fuse else ", fuse=False"
        t, st = _best(lambda: emu.launch(k, 4, 128, o, fo, np.int32(500), fuse=fuse))
        rows.append((f"compute-bound (LCG + FMA loop, 16 warps x 500 it.{tag})", st.instructions, t))
        t, st = _best(lambda: emu.launch(km, 16, 128, src, dst, np.int32(n), fuse=fuse))
        assert (dst.to_host() == np.arange(4 * n)).all()
        rows.append((f"memory-bound (grid-stride ld/st.global.v4, 1 MiB{tag})", st.instructions, t))
    print(f"{'kernel':60s} {'warp-instr':>10s} {'seconds':>8s} {'warp-instr/s':>13s}")
    for name, n_i, sec in rows:
        print(f"{name:60s} {n_i:10d} {sec:8.3f} {n_i / sec:13,.0f}")

    print("\nchapter-sized launches of the book's kernels")
    rng = np.random.default_rng(3)
    srcb = rng.integers(0, 256, 1 << 20, dtype=np.uint8)
    d = emu.to_device(srcb)
    kk = emu.compile_kernel("l03_bulk_pipeline").function("bulk_pipeline")
    kk.set_max_dynamic_shared_memory(l03.shared_bytes(4, 16384))
    sums, stats = emu.zeros(2, np.uint64), emu.zeros(10, np.uint64)
    t, st = _best(lambda: emu.launch(kk, 2, 96, d, np.int64(64), np.int32(16384), np.int32(4), np.int32(16),
                                     np.int32(4), sums, stats, shared_mem=l03.shared_bytes(4, 16384)), 1)
    print(f"  l03_bulk_pipeline (2 CTAs, 4 stages x 16 KiB, 16 tiles, work 4): {t:.2f} s, "
          f"{st.instructions} warp-instructions, {st.instructions / t:,.0f}/s")
    kv = emu.compile_kernel("smoke_vector_add").function("vector_add")
    x = np.arange(1 << 16, dtype=np.float32)
    a, b, c = emu.to_device(x), emu.to_device(x), emu.zeros(1 << 16, np.float32)
    t, st = _best(lambda: emu.launch(kv, 256, 256, a, b, c, np.int32(1 << 16)), 1)
    print(f"  smoke_vector_add (65,536 elements): {t:.2f} s, {st.instructions / t:,.0f} warp-instructions/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
