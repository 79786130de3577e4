"""NVRTC compile checks, no GPU needed: every shipped kernel compiles for sm_90a; errors name source lines."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab import cuda

pytestmark = pytest.mark.skipif(cuda.compiler_unavailable_reason() is not None,
                                reason=f"NVRTC unusable: {cuda.compiler_unavailable_reason()}")

KERNELS = cuda.list_kernels()


def test_kernels_are_shipped():
    assert {"smoke_vector_add", "smoke_ids", "smoke_cluster_ring", "smoke_dynamic_smem", "smoke_tma_load"} <= set(KERNELS)


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_compiles_for_sm_90a(name):
    prog = cuda.compile_kernel(name)
    assert prog.cubin[:4] == b"\x7fELF", "NVRTC gives an ELF cubin for a real architecture"
    assert re.search(r"^\.target sm_90a\b", prog.ptx, re.M)
    entries = prog.entry_points()
    assert entries, f"{name}.cu defines no __global__ function"
    mangled = [e for e in entries if e.startswith("_Z")]
    assert not mangled, f"{name}.cu: kernels {mangled} are not extern \"C\"; Program.function finds plain names"


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_starts_with_its_header(name):
    info = cuda.kernel_info(name)
    assert len(info.header.split()) >= 5, f"{name}.cu: the header says too little: {info.header!r}"
    if name.startswith("l"):
        assert info.lesson is not None and 1 <= info.lesson <= 12


@pytest.mark.parametrize("name", KERNELS)
def test_kernels_include_only_what_nvrtc_finds(name):
    src = cuda.kernel_source(name)
    for inc in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', src, re.M):
        assert inc.startswith(("cuda/", "h100lab/")), f"{name}.cu includes {inc}: NVRTC has no such header"


def test_compile_gives_ptx_and_cubin_and_no_log():
    p = cuda.compile(cuda.kernel_source("smoke_vector_add"), name="v.cu")
    assert p.arch == "sm_90a" and p.entry_points() == ["vector_add"]
    assert "--gpu-architecture=sm_90a" in p.options and "-lineinfo" in p.options
    assert p.log.strip() == ""


def test_compile_kernel_is_cached():
    assert cuda.compile_kernel("smoke_vector_add") is cuda.compile_kernel("smoke_vector_add")


def test_compute_target_gives_ptx_only():
    p = cuda.compile(cuda.kernel_source("smoke_vector_add"), arch="compute_90a")
    assert p.cubin == b"" and ".entry vector_add" in p.ptx
    with pytest.raises(ValueError, match="PTX only"):
        p.function("vector_add")


def test_tensormap_header_gives_the_128_byte_64_aligned_parameter():
    src = ('#include <h100lab/tensormap.cuh>\n'
           'extern "C" __global__ void k(const __grid_constant__ CUtensorMap m, unsigned* o) { o[0] = m.opaque[0]; }\n')
    ptx = cuda.compile(src).ptx
    assert re.search(r"\.param \.align 64 \.b8 k_param_0\[128\]", ptx), ptx


def test_front_end_error_names_the_source_line():
    src = 'extern "C" __global__ void k(int* a) {\n    int x = 1;\n    a[0] = undefined_name;\n}\n'
    with pytest.raises(cuda.CompileError) as ei:
        cuda.compile(src, name="bad.cu")
    e = ei.value
    assert e.result == "NVRTC_ERROR_COMPILATION"
    assert [(s.line, s.text.strip()) for s in e.lines] == [(3, "a[0] = undefined_name;")]
    assert "undefined_name" in str(e) and "line 3" in str(e)


def test_inline_ptx_error_maps_back_to_the_source_line():
    src = ('extern "C" __global__ void k(unsigned* a) {\n    unsigned s;\n'
           '    asm volatile("mov.u32 %0, %%no_such_register;" : "=r"(s));\n    a[0] = s;\n}\n')
    with pytest.raises(cuda.CompileError) as ei:
        cuda.compile(src, name="bad_ptx.cu")
    lines = ei.value.lines
    assert lines and all(s.line == 3 for s in lines)
    assert any("no_such_register" in s.ptx_text for s in lines)
    assert all(s.message.startswith("ptxas error") for s in lines)


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=0, max_value=40))
def test_error_line_is_exact_wherever_it_is(k):
    src = 'extern "C" __global__ void k(int* a) {\n' + "    a[0] = 0;\n" * k + "    a[1] = nope;\n}\n"
    with pytest.raises(cuda.CompileError) as ei:
        cuda.compile(src, name="shift.cu")
    assert [s.line for s in ei.value.lines] == [k + 2]


def test_bad_option_is_a_compile_error_naming_it():
    with pytest.raises(cuda.CompileError, match="--no-such-option"):
        cuda.compile(cuda.kernel_source("smoke_vector_add"), options=("--no-such-option",))


@pytest.mark.parametrize("arch", ["sm90a", "hopper", "sm_9", "sm_90x", ""])
def test_bad_arch_is_rejected(arch):
    with pytest.raises(ValueError, match="--gpu-architecture"):
        cuda.compile("", arch=arch)


def test_missing_header_is_reported():
    with pytest.raises(cuda.CompileError, match=r"open source file \"cstdio\""):
        cuda.compile('#include <cstdio>\nextern "C" __global__ void k() {}\n')


def test_kernel_source_rejects_unknown_and_odd_names():
    with pytest.raises(ValueError, match="no kernel"):
        cuda.kernel_source("no_such_kernel")
    with pytest.raises(ValueError, match="letters, digits"):
        cuda.kernel_source("../etc/passwd")


def test_kernel_info_of_a_smoke_kernel():
    info = cuda.kernel_info("smoke_vector_add")
    assert info.lesson is None and info.header.startswith("Used by:")


def test_nvrtc_version_is_major_minor():
    assert re.fullmatch(r"\d+\.\d+", cuda.nvrtc_version())
