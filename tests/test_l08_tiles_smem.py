"""h100lab.design.tiles.smem_bytes_per_clock: the shared-memory bytes per clock an SS wgmma mainloop needs at the
tensor core's dense rate (wgmma operand reads + TMA stage writes) against the 128 B/clk of 32 banks x 4 B (CUDA C++
Programming Guide §20.4.3, h100lab.specs). The kernel-side half of the model (wgmma counts, bytes the TMA moved)
is checked on the emulator in tests/test_l08_fp8_emu.py::test_square_bit_exact."""
import pytest

from h100lab.design import capstone as cap
from h100lab.design import tiles
from h100lab.specs import FLOP_PER_SM_PER_CLOCK, H200_SXM
from h100lab.tensorcore.timing import RATE


def _v(name):
    return cap.variant(name)


def test_limit_is_the_banks():
    t = tiles.smem_bytes_per_clock("bf16", 128, 256)
    assert t.limit == H200_SXM.smem_banks * H200_SXM.smem_bank_bytes


def test_tensor_cycles_are_the_wgmma_rate():
    """A tile's cycles per stage = its m64nNkK wgmmas x 64·N·K / rate (lesson 7's tensor-core rates: N/2 cycles for
    every dense m64nNkK form), and MACs / (FLOP_PER_SM_PER_CLOCK / 2)."""
    for name in ("cooperative_inflight_tmastore", "cooperative_n128_inflight_tmastore", *cap.FP8_VARIANTS):
        v = _v(name)
        t = tiles.smem_bytes_per_clock(v.dtype, v.bm, v.bn)
        k = 16 if v.dtype == "bf16" else 32                             # the wgmma K of the type
        per_wgmma = 64 * v.bn * k / RATE[v.dtype]
        assert per_wgmma == v.bn / 2
        assert t.tensor_cycles == (v.bm // 64) * (v.bk // k) * per_wgmma
        key = "bf16" if v.dtype == "bf16" else "fp8"
        assert t.tensor_cycles == v.bm * v.bn * v.bk / (FLOP_PER_SM_PER_CLOCK[key] / 2)


def test_writes_are_the_stage():
    """The TMA writes one ring stage (h100lab.design.capstone.Variant.stage_bytes) per stage's tensor cycles."""
    for v in list(cap.FP8_VARIANTS.values()) + [cap.VARIANTS["cooperative"], cap.VARIANTS["cooperative_n128"]]:
        t = tiles.smem_bytes_per_clock(v.dtype, v.bm, v.bn)
        assert t.writes * t.tensor_cycles == v.stage_bytes


def test_reads_per_wgmma():
    """Each m64nN wgmma reads 64 rows of A and N of B over its K bytes: a 128 x 256 tile with m64n128 wgmmas reads
    B twice as often per A byte as with m64n256 ones."""
    one = tiles.smem_bytes_per_clock("bf16", 128, 256)
    two = tiles.smem_bytes_per_clock("bf16", 128, 256, wgmma_n=128)
    assert two.writes == one.writes and two.tensor_cycles == one.tensor_cycles
    assert two.reads * two.tensor_cycles == 2 * 2 * (64 + 128) * 128
    assert one.reads * one.tensor_cycles == 2 * 1 * (64 + 256) * 128


def test_per_clock_is_independent_of_the_stage_depth_in_k():
    for bk_bytes in (32, 64, 128, 256):
        a = tiles.smem_bytes_per_clock("e4m3", 128, 192, bk_bytes=bk_bytes)
        b = tiles.smem_bytes_per_clock("e4m3", 128, 192)
        assert a.reads == pytest.approx(b.reads) and a.writes == pytest.approx(b.writes)


def test_fp8_needs_what_bf16_needs_for_the_same_tile():
    """Twice the MAC rate on half the bytes per element: the same tile moves the same bytes per clock, so FP8's
    128 x 128 tile needs what bf16's 128 x 128 tile needs, more than bf16's 128 x 256 (the book's default, which
    needs exactly the 128 B/clk)."""
    for bm, bn in ((128, 128), (128, 192), (256, 128), (128, 256)):
        f, b = tiles.smem_bytes_per_clock("e4m3", bm, bn), tiles.smem_bytes_per_clock("bf16", bm, bn)
        assert f.total == pytest.approx(b.total) and f.tensor_cycles == b.tensor_cycles
    bf16 = tiles.smem_bytes_per_clock("bf16", 128, 256)
    assert bf16.total == bf16.limit and bf16.bound == 1.0


def test_the_fp8_candidates_rank_as_the_arithmetic_says():
    """128 x 128 needs the most of the FP8 forms (only 80 % of the tensor rate could be fed); 128 x 192 the least;
    256 x 128 in between (it halves A's TMA bytes per FLOP but not the wgmma reads)."""
    need = {(v.bm, v.bn): tiles.smem_bytes_per_clock(v.dtype, v.bm, v.bn) for v in cap.FP8_VARIANTS.values()}
    assert need[(128, 128)].total > need[(256, 128)].total > need[(128, 192)].total > need[(128, 128)].limit
    assert need[(128, 128)].bound == pytest.approx(need[(128, 128)].limit / need[(128, 128)].total)
    assert need[(256, 128)].reads == need[(128, 128)].reads             # the same m64n128k32 wgmmas
    assert need[(256, 128)].writes < need[(128, 128)].writes


@pytest.mark.parametrize("args, match", [(("fp16", 128, 128), "dtype"), (("bf16", 96, 128), "multiple of the wgmma M"),
                                         (("bf16", 128, 260), "wgmma N"), (("e4m3", 128, 192, 128), "whole number")])
def test_rules(args, match):
    with pytest.raises(tiles.TileError, match=match):
        tiles.smem_bytes_per_clock(*args)
