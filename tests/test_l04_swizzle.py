"""h100lab.memory.swizzle: the TMA/GMMA swizzle modes and CuTe's Swizzle<B,M,S>."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab.memory import swizzle as S

MODES = S.TMA_SWIZZLE_MODES


def test_modes_are_cute_swizzles():
    assert str(S.swizzle_of("128B")) == "Swizzle<3,4,3>"
    assert str(S.swizzle_of("CU_TENSOR_MAP_SWIZZLE_64B")) == "Swizzle<2,4,3>"
    assert str(S.swizzle_of("32b")) == "Swizzle<1,4,3>"
    assert S.swizzle_of("NONE")(12345) == 12345


@pytest.mark.parametrize("mode,mask", [("32B", 1), ("64B", 3), ("128B", 7)])
def test_byte_formula(mode, mask):
    # a ^ (((a >> 7) & mask) << 4)   [hopper-spec-facts §4.1]
    a = np.arange(1 << 14)
    assert np.array_equal(S.swizzle_address(a, mode), a ^ (((a >> 7) & mask) << 4))


def test_ptx_table_rows_of_128B():
    # chunk c of 128-byte line r lands in chunk c ^ (r % 8): rows 0 1 2 .. / 1 0 3 2 .. / 2 3 0 1 ..
    for r in range(16):
        row = [(S.swizzle_address(128 * r + 16 * c, "128B") - 128 * r) // 16 for c in range(8)]
        assert row == [c ^ (r % 8) for c in range(8)]
    assert [(S.swizzle_address(128 + 16 * c, "128B") - 128) // 16 for c in range(8)] == [1, 0, 3, 2, 5, 4, 7, 6]


@pytest.mark.parametrize("mode", MODES)
def test_keeps_atom_and_line(mode):
    a = np.arange(4096)
    s = S.swizzle_address(a, mode)
    assert np.array_equal(s & 15, a & 15)          # 16-byte atoms are never split
    assert np.array_equal(s >> 7, a >> 7)          # a byte stays in its 128-byte line
    assert np.array_equal(np.sort(s), a)           # a permutation
    assert np.array_equal(S.unswizzle_address(s, mode), a)


@given(b=st.integers(0, 4), m=st.integers(0, 6), extra=st.integers(0, 3), neg=st.booleans(),
       x=st.integers(0, 1 << 20))
def test_every_swizzle_is_an_involution(b, m, extra, neg, x):
    s = b + extra
    if neg:
        s = -s
        m = max(m, abs(s))  # keep the lower group at non-negative bit positions
    sw = S.Swizzle(b, m, s)
    assert sw(sw(x)) == x
    assert sw.inverse()(sw(x)) == x
    assert sw.yyy_mask & sw.zzz_mask == 0


@given(b=st.integers(1, 3), m=st.integers(0, 5), s=st.integers(1, 4))
def test_bijective_within_period(b, m, s):
    if s < b:
        s = b
    sw = S.Swizzle(b, m, s)
    a = np.arange(sw.period)
    assert np.array_equal(np.sort(sw(a)), a)


def test_negative_shift_moves_bits_up():
    sw = S.Swizzle(2, 4, -3)
    assert sw(0b11_0000) == 0b11_0000 ^ (0b11 << 7)
    assert sw.bit_diagram(10) == ".ZZ.YY...."
    assert sw.zzz_mask == 0b11 << 7 and sw.yyy_mask == 0b11 << 4


def test_bit_diagram_128B():
    assert S.swizzle_of("128B").bit_diagram(10) == "YYYZZZ...."
    assert S.swizzle_of("32B").bit_diagram(8) == "Y..Z...."


def test_sizes_and_alignment():
    assert [S.span_bytes(m) for m in MODES] == [0, 32, 64, 128]
    assert [S.repeat_bytes(m) for m in MODES] == [16, 256, 512, 1024]
    assert [S.pattern_alignment(m) for m in MODES] == [128, 256, 512, 1024]
    assert S.GMMA_LAYOUT_TYPE["CU_TENSOR_MAP_SWIZZLE_128B"] == 1
    assert S.swizzle_of("128B").period == 1024 and S.Swizzle(0, 4, 3).period == 16


@given(base_line=st.integers(0, 64), y=st.integers(0, 31), x=st.integers(0, 7), mode=st.sampled_from(MODES))
def test_chunk_view_with_base_offset_equals_absolute_xor(base_line, y, x, mode):
    # CPG Table 11: element (y, x) of a tile at smem_addr lands in chunk ((y + offset) % n) ^ x
    base = 128 * base_line
    off = S.base_offset(base, mode)
    got = S.swizzle_address(base + 128 * y + 16 * x, mode)
    assert got == base + 128 * y + 16 * S.swizzled_chunk(y, x, mode, off)
    arr = S.swizzled_chunk(np.array([y]), np.array([x]), mode, off)
    assert arr[0] == S.swizzled_chunk(y, x, mode, off)


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="SShift"):
        S.Swizzle(3, 4, 2)
    with pytest.raises(ValueError, match="BBits"):
        S.Swizzle(-1, 4, 3)
    with pytest.raises(ValueError, match="MBase"):
        S.Swizzle(1, -1, 3)
    with pytest.raises(ValueError, match="non-negative"):
        S.Swizzle(3, 4, 3)(-16)
    with pytest.raises(ValueError, match="non-negative"):
        S.Swizzle(3, 4, 3)(np.array([-16]))
    with pytest.raises(ValueError, match="Table 12"):
        S.mode_name("CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B")
    with pytest.raises(ValueError, match="string"):
        S.mode_name(3)
    with pytest.raises(ValueError, match="chunks 0..7"):
        S.swizzled_chunk(0, 8, "128B")
    with pytest.raises(ValueError, match="chunks 0..7"):
        S.swizzled_chunk(np.array([0]), np.array([9]), "64B")
    assert S.swizzled_chunk(3, 5, "NONE") == 5
    assert S.base_offset(384, "128B") == 3 and S.base_offset(384, "64B") == 3 and S.base_offset(384, "NONE") == 0
