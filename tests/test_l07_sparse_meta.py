"""The sparse gather for every metadata value (h100lab.tensorcore.sparsity.gather_b, PTX ISA §9.7.15.6): valid codes
pick whole B rows, invalid tf32 codes splice a B element from 16-bit halves (measured on the H200), and the metadata
probe's analysis (h100lab.validation.l07.meta_rules) reads the rule back from designed inputs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from h100lab.tensorcore import numerics, sparsity


def _b(rng, K, N=8):
    return rng.integers(0, 1 << 32, (K, N), dtype=np.uint64).astype(np.uint32)


@given(st.integers(0, 2**31))
@settings(max_examples=25, deadline=None)
def test_valid_codes_gather_whole_rows(seed):
    rng = np.random.default_rng(seed)
    for atype in ("tf32", "f16", "e4m3"):
        kept, grp = sparsity.granularity(atype)
        K = sparsity.sparse_k(atype)
        vals = np.zeros((4, K // 2), np.uint32)
        nib = sparsity.random_sparse(rng, 4, atype, vals, ascending=bool(seed & 1))
        b = _b(rng, K)
        rows = sparsity.gather_b(b, nib, atype)
        dense = sparsity.decompress(np.arange(4 * K // 2).reshape(4, K // 2) + 1, nib, atype)
        for m in range(4):
            k = [int(np.flatnonzero(dense[m] == j + 1)[0]) for j in m * K // 2 + np.arange(K // 2)]
            assert (rows[m] == b[k]).all()


def test_invalid_tf32_codes_splice_b_from_halves():
    b = np.array([[0x11112222], [0x33334444]], np.uint32)            # one pair: halves 2222 1111 4444 3333
    cases = {0b0100: 0x11112222, 0b1110: 0x33334444, 0b0110: 0x11114444, 0b1000: 0x44442222,
             0b0000: 0x22222222, 0b1111: 0x33333333, 0b1100: 0x33332222, 0b0001: 0x22221111}
    for v, want in cases.items():
        got = sparsity.gather_b(b, np.array([[v]]), "tf32")
        assert int(got[0, 0, 0]) == want, f"0b{v:04b}"


def test_invalid_2_4_codes_send_both_values_to_one_row():
    b = np.arange(4 * 3, dtype=np.uint16).reshape(4, 3)
    got = sparsity.gather_b(b, np.array([[0b1010]]), "f16")
    assert (got[0] == b[[2, 2]]).all()


def test_mma_sp_raises_for_invalid_by_default_and_computes_the_hardware_reading_on_request():
    rng = np.random.default_rng(3)
    vals = numerics.from_float(rng.standard_normal((64, 8)), "tf32")
    b = numerics.from_float(rng.standard_normal((16, 8)), "tf32")
    nib = np.full((64, 8), 0b0100, np.uint8)
    nib[5, 3] = 0b0110
    with pytest.raises(sparsity.SparsityError, match="0b0110.*PTX ISA"):
        sparsity.mma_sp(vals, nib, b, atype="tf32")
    d = sparsity.mma_sp(vals, nib, b, atype="tf32", invalid="hardware")
    spliced = (b[6] & 0xFFFF0000) | (b[7] & 0xFFFF)                     # high half of B[6], low half of B[7]
    b_row = b[[0, 2, 4, 6, 8, 10, 12, 14]].copy()
    b_row[3] = spliced
    want = numerics.mma(vals[5:6], b_row, None, atype="tf32", btype="tf32", dtype="f32")[0]
    assert (d[5] == want).all()
    ok = np.ones(64, bool)
    ok[5] = False
    assert (d[ok] == sparsity.mma_sp(vals, np.full((64, 8), 0b0100, np.uint8), b, atype="tf32")[ok]).all()


def _fake_record(c, behaves_as):
    """A sparse_meta record whose 'silicon' reads nibble v as the gather code behaves_as(v) (second launch the same)."""
    from h100lab.measure import l07
    from h100lab.measure.l04 import pack
    from h100lab.tensorcore import fragments

    b = l07.build_sparse(c)
    sp = b["spec"]
    regs = []
    for g in range(c["grid"]):
        nib = b["nib"][g][0]
        v = c.get("nibbles", range(16))[g]
        d = sparsity.mma_sp(b["vals"][g][0], np.where(nib == v, behaves_as(v), nib), b["B"][g][0].T, None,
                            atype=sp.atype, btype=sp.btype, dtype=sp.dtype, invalid="hardware",
                            model=l07.numerics_model(sp.atype, sp.dtype, zero_rule=True))
        regs.append(fragments.accumulator_registers(d, sp.n, sp.dtype).astype(np.uint32))
    d = np.concatenate(regs).reshape(-1)
    return dict(c, ok=True, d=pack(d.view(np.uint8)), d1=pack(d.view(np.uint8)))


@pytest.mark.parametrize("i", [0, 7])
def test_meta_rules_reads_the_gather_rule_back(i):
    from h100lab.measure import l07
    from h100lab.validation import l07 as v07

    c = dict(l07.meta_cases()[i], grid=4, nibbles=[4, 6, 8, 14])
    rows = v07.meta_rules([_fake_record(c, lambda v: v)])
    assert [r["codes"] for r in rows] == [[4], [6], [8], [14]] and all(r["deterministic"] for r in rows)
    # a machine that read 0b0110 as 0b1110 (and everything else as the rule says) is told apart
    rows = v07.meta_rules([_fake_record(c, lambda v: 0b1110 if v == 0b0110 else v)])
    assert 0b1110 in rows[1]["codes"] and 0b0110 not in rows[1]["codes"]
    assert [r["codes"] for r in rows[::3]] == [[4], [14]]
