"""The wgmma probe kernels of lessons 6 and 7 are C++ template instances; they were measured on the H200
(data/l06, data/l07) as generated code, one hand-expanded kernel per form. Their helpers, and those of the lesson 3
and 5 timing kernels and of l07_fp8_gemm.cu, were later moved into headers (h100lab/wgmma_probe.cuh,
h100lab/mbarrier.cuh) and templates. This proves the GPU runs the same thing as the version that was measured: for
every entry point, the PTX (NVRTC, sm_90a) of the file now and of that version (read from git history) is the same
instruction sequence once virtual register numbers and labels are renamed in order of appearance (line tables
``.loc``, register declarations and comments are not instructions)."""
import re
import subprocess
from pathlib import Path

import pytest

from h100lab import nvrtc

ROOT = Path(__file__).resolve().parent.parent
#: kernel file -> the commit of the version that data/ was measured with (or, for files whose helpers moved later,
#: the last commit before the move, itself proven or measured)
MEASURED = {
    "l06_wgmma_probe": "5d57b02228efdf9863f0470e5254e6acab168dba",
    "l07_sparse_probe": "8a7eb98ea3c9c7de1a8b74fb3542021d7cf7e798",
    "l07_sparse_probe_more": "8a7eb98ea3c9c7de1a8b74fb3542021d7cf7e798",
    "l07_wgmma_timing": "cf2dece2071902ad784b3431bda0ac0591064459",
    "l07_wgmma_deps": "17a302987a292665b895125e2ecd75ec5aa478f8",   # data/l07/wgmma_depth (the run-time-depth wgmma_deps run used its parent)
    # the version before their helpers moved into h100lab/mbarrier.cuh and l07_fp8_gemm's kernels into templates
    "l03_tma_latency": "391b4c0773acab588ec66674c20327d4b7c4f522",
    "l03_stream": "391b4c0773acab588ec66674c20327d4b7c4f522",
    "l03_sync_cost": "391b4c0773acab588ec66674c20327d4b7c4f522",
    "l05_copy_tune": "391b4c0773acab588ec66674c20327d4b7c4f522",
    "l05_multicast_pipeline": "391b4c0773acab588ec66674c20327d4b7c4f522",
    "l07_fp8_gemm": "391b4c0773acab588ec66674c20327d4b7c4f522",
}

pytestmark = pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason="needs NVRTC")

_REG = re.compile(r"%(rd|r|fd|f|p|rs|hh|h|b)(\d+)\b")
_LABEL = re.compile(r"\$L__\w+")


def _entries(ptx: str) -> dict[str, list[str]]:
    """PTX lines of each ``.entry`` (PTX ISA §11.1), header to closing brace."""
    out, name = {}, None
    for line in ptx.splitlines():
        m = re.match(r"^\.(?:visible|weak)\s+\.entry\s+(\w+)\(", line)
        if m:
            name, out[m.group(1)] = m.group(1), []
        if name is not None:
            out[name].append(line)
            if line == "}":
                name = None
    return out


def _instructions(body: list[str]) -> list[str]:
    """The entry's directives and instructions, registers numbered per class and labels in order of appearance."""
    lines = []
    for ln in body:
        s = ln.split("//")[0].strip()
        if s and not s.startswith((".loc", ".reg")):
            lines.append(re.sub(r"\s+", " ", s))
    targets = {t for ln in lines if not ln.endswith(":") for t in _LABEL.findall(ln)}
    lines = [ln for ln in lines if not (ln.endswith(":") and ln[:-1] not in targets)]
    regs: dict[tuple[str, str], int] = {}
    labels: dict[str, int] = {}

    def reg(m):
        key = (m.group(1), m.group(2))
        if key not in regs:
            regs[key] = sum(1 for c, _ in regs if c == m.group(1))
        return f"%{m.group(1)}{regs[key]}"

    return [_LABEL.sub(lambda m: "L%d" % labels.setdefault(m.group(0), len(labels)), _REG.sub(reg, ln))
            for ln in lines]


def _measured_source(name: str) -> str:
    rev = MEASURED[name]
    try:
        return subprocess.run(["git", "show", f"{rev}:h100lab/cuda/kernels/{name}.cu"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"the measured version of {name}.cu is not in this checkout's git history ({e})")


def test_normalisation_tells_programs_apart():
    src = nvrtc.kernel_source("l07_sparse_probe_more")
    form = '(SPARSE_PARAMS)\n{ SPARSE_SS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", '
    changed = src.replace(form + "0,", form + "1,", 1)      # sp_ss_n64_f32_tf32_s0 with sparsity selector 1
    assert changed != src
    a, b = (_entries(nvrtc.compile(s, name="x.cu").ptx)["sp_ss_n64_f32_tf32_s0"] for s in (src, changed))
    assert _instructions(a) != _instructions(b)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MEASURED))
def test_template_instances_compile_to_the_measured_ptx(name):
    old = _entries(nvrtc.compile(_measured_source(name), name=f"{name}.cu").ptx)
    new = _entries(nvrtc.compile_kernel(name).ptx)
    assert list(new) == list(old), "the entry points (names and order) changed"
    for entry in old:
        assert _instructions(new[entry]) == _instructions(old[entry]), f"{entry}: the PTX differs"
