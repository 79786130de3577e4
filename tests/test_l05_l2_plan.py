"""h100lab.tma.l2 (sectors, promotion, eviction priorities, createpolicy) and h100lab.tma.smem_plan."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab import tma
from h100lab.tma.l2 import CUTLASS_CACHE_HINTS, L2Cache


def test_promotion_changes_the_bytes_fetched():
    for promo, fetched in [(32, 64), (64, 128), (128, 128), (256, 256)]:
        l2 = L2Cache(1 << 16)
        a = l2.read(4096 + 32, 48, promotion=promo)      # bytes 32..79: sectors 1 and 2 of a line
        assert a.requested_sectors == 2 and a.hbm_bytes == fetched and a.hit_sectors == 0
        assert l2.read(4096 + 32, 48, promotion=promo).hbm_bytes == 0
    with pytest.raises(ValueError, match="promotions"):
        L2Cache(1 << 16).read(0, 16, promotion=96)


def test_promotion_of_a_tensor_map_box():
    tm = tma.encode_tiled("BFLOAT16", 2, 1 << 20, [1024, 64], [2048], [24, 8], [1, 1],
                          swizzle="NONE", l2_promotion="L2_256B")
    segs = tma.global_segments(tm, [0, 0])
    assert segs[0] == ((1 << 20), 48) and len(segs) == 8
    assert L2Cache(1 << 20).read_segments(segs, promotion=256).hbm_bytes == 8 * 256
    assert L2Cache(1 << 20).read_segments(segs, promotion=32).hbm_bytes == 8 * 64
    assert tma.promotion_bytes("CU_TENSOR_MAP_L2_PROMOTION_NONE") == 32


def test_eviction_priorities():
    l2 = L2Cache(4 * 128)                                    # four lines
    last = tma.createpolicy_fractional("evict_last")
    first = tma.createpolicy_fractional("evict_first")
    l2.read(0, 128, policy=last)
    l2.read(128, 128, policy=first)
    l2.read(256, 128)
    l2.read(384, 128)
    assert l2.priority_of(0) == "evict_last" and l2.priority_of(128) == "evict_first"
    l2.read(512, 128)                                        # full: the evict_first line goes
    assert not l2.contains(128) and l2.contains(0) and l2.contains(256)
    l2.read(640, 128)                                        # then the LRU evict_normal line
    assert not l2.contains(256) and l2.contains(0)
    l2.read(384, 128, policy=tma.createpolicy_fractional("evict_unchanged"))
    assert l2.priority_of(384) == "evict_normal" and l2.resident_lines == 4


def test_writes_are_written_back():
    l2 = L2Cache(2 * 128)
    assert l2.write(0, 100) == 4 and l2.hbm_read_bytes == 0
    l2.read(256, 128)
    l2.read(384, 128)                                        # evicts the dirty line
    assert l2.hbm_write_bytes == 128
    l2.write(512, 32)
    assert l2.flush() == 32 and l2.flush() == 0
    assert l2.write(0, 0) == 0 and l2.read(0, 0).requested_sectors == 0
    with pytest.raises(ValueError):
        L2Cache(100)


def test_createpolicy():
    p = tma.createpolicy_fractional("L2::evict_first")
    assert p.cutlass_constant == CUTLASS_CACHE_HINTS["evict_first"] == 0x12F0000000000000
    assert p.ptx() == "createpolicy.fractional.L2::evict_first.b64 policy, 1;"
    half = tma.createpolicy_fractional("evict_last", 0.5, "evict_first")
    prios = [half.priority(128 * i) for i in range(4000)]
    assert 0.45 < prios.count("evict_last") / 4000 < 0.55 and set(prios) == {"evict_last", "evict_first"}
    assert half.cutlass_constant is None and ".L2::evict_first" in half.ptx()
    r = tma.createpolicy_range("evict_last", 1024, 256, 512)
    assert [r.priority(a) for a in (1024, 1280, 1536, 0)] == ["evict_last", "evict_unchanged", "evict_unchanged",
                                                              "evict_unchanged"]
    r2 = tma.createpolicy_range("evict_last", 1024, 256, 512, secondary="evict_first")
    assert r2.priority(1280) == "evict_first" and "createpolicy.range" in r2.ptx()
    with pytest.raises(ValueError, match="fraction"):
        tma.createpolicy_fractional("evict_last", 0.0)
    with pytest.raises(ValueError, match="priority"):
        tma.createpolicy_fractional("evict_sometimes")
    with pytest.raises(ValueError, match="secondary"):
        tma.createpolicy_fractional("evict_last", 1.0, "evict_last")
    with pytest.raises(ValueError, match="primary-size"):
        tma.createpolicy_range("evict_last", 0, 512, 256)


@given(reads=st.lists(st.tuples(st.integers(0, 1 << 14), st.integers(1, 600), st.sampled_from([32, 64, 128, 256])),
                      max_size=40))
def test_l2_invariants(reads):
    l2 = L2Cache(16 * 128)
    for a, n, p in reads:
        acc = l2.read(a, n, promotion=p)
        assert acc.hit_sectors <= acc.requested_sectors
        assert acc.fetched_sectors >= acc.requested_sectors - acc.hit_sectors   # every miss is fetched
        assert acc.fetched_sectors * 32 <= (acc.requested_sectors - acc.hit_sectors) * p
        assert l2.resident_lines <= l2.max_lines
    assert l2.hbm_read_bytes % 32 == 0


def test_plan_barriers_first_then_aligned_tiles():
    plan = tma.plan_smem(1, [("A", 16 * 1024, "128B"), ("B", 8 * 1024, "64B")], stages=2)
    assert plan.offset("bar0") == 0
    assert [r.name for r in plan.regions] == ["bar0", "A[0]", "B[0]", "A[1]", "B[1]"]
    assert plan.offset("A[0]") == 1024 and plan.offset("B[0]") == 1024 + 16384
    assert all(r.offset % r.align == 0 for r in plan.regions)
    assert plan.used_bytes == plan.offset("B[1]") + 8192 and plan.slack == 0 and plan.fits() and plan.needs_opt_in()
    seed = tma.plan_smem(1, [("tile", 4096, 128)])          # the seed's (8 + 127) & ~127 = 128
    assert seed.offset("tile") == 128 and seed.padding_bytes == 120
    unknown = tma.plan_smem(["full", "empty"], [("A", 1024, "128B")], base_alignment=16)
    assert unknown.slack == 1008 and unknown.dynamic_bytes == unknown.used_bytes + 1008
    assert unknown.offset("empty") == 8 and unknown["A"].kind == "tile" and unknown.table()[0][0] == "full"


def test_plan_from_tensor_maps_and_errors():
    tm = tma.encode_tiled("BFLOAT16", 2, 0, [256, 256], [512], [64, 128], [1, 1], swizzle="128B")
    plan = tma.plan_smem(4, [tm], stages=4)
    assert plan["tile2d[3]"].offset == 1024 + 3 * tm.smem_bytes and plan.fits()
    assert tma.plan_smem(1, [("x", 240 * 1024, 128)]).fits() is False
    with pytest.raises(KeyError):
        plan["nope"]
    for bad in [dict(stages=0), dict(base_alignment=24)]:
        with pytest.raises(ValueError):
            tma.plan_smem(1, [("a", 128, 128)], **bad)
    with pytest.raises(ValueError):
        tma.plan_smem(1, [("a", 128)])
    with pytest.raises(ValueError):
        tma.plan_smem(1, [("a", 0, 128)])
    with pytest.raises(ValueError, match="named"):
        tma.plan_smem(1, [("a", 128, 128), ("a", 128, 128)])
    with pytest.raises(ValueError, match="power of two"):
        tma.plan_smem(1, [("a", 128, 96)])
    assert tma.tile_alignment("NONE") == 128
