"""h100lab.tma.bulk: raw cp.async.bulk, completion through mbarriers and bulk groups, multicast, reductions."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab import tma
from h100lab.sync.mbarrier import MBarrier
from h100lab.sync.smem import SharedMemory


def cta(rank=0, size=64 * 1024):
    return SharedMemory(size, cta_rank=rank)


def gmem_with(n=1 << 16):
    return tma.GlobalMemory.holding(np.arange(n, dtype=np.uint32))


def test_global_to_shared_completes_the_phase():
    s, g = cta(), gmem_with()
    bar = MBarrier(s, 0)
    bar.init(1)
    bar.arrive_expect_tx(4096)
    assert not bar.test_wait_parity(0)
    op = tma.bulk_copy_global_to_shared(s, 1024, g, g.base + 64, 4096, 0)
    assert op.state == "complete" and op.nbytes == 4096 and op.delivered_bytes == 4096
    assert bar.test_wait_parity(0)                     # tx back to 0 and no arrival pending: phase 0 done
    assert np.array_equal(s.array[1024:1024 + 4096].view(np.uint32), np.arange(16, 16 + 1024))


def test_deferred_copy_and_source_hazard():
    s, g = cta(), gmem_with()
    MBarrier(s, 0).init(1)
    op = tma.bulk_copy_global_to_shared(s, 1024, g, g.base, 256, 0, deferred=True)
    assert op.state == "issued" and (s.array[1024:1280] == 0).all()
    g.write(g.base, np.zeros(4, np.uint32))            # the source changes before the copy reads it
    with pytest.raises(tma.BulkHazard, match="undefined"):
        op.complete()


@pytest.mark.parametrize("dst,src,size,frag", [(1024, 0, 100, "multiple of 16"), (1032, 0, 64, "destination"),
                                               (1024, 8, 64, "source"), (1024, 0, 0, "positive")])
def test_raw_copy_rules(dst, src, size, frag):
    s, g = cta(), gmem_with()
    MBarrier(s, 0).init(1)
    with pytest.raises(tma.BulkCopyError, match=frag):
        tma.bulk_copy_global_to_shared(s, dst, g, g.base + src, size, 0)


def test_copy_over_a_live_mbarrier_is_refused():
    s, g = cta(), gmem_with()
    MBarrier(s, 64).init(1)
    with pytest.raises(ValueError, match="mbarrier"):
        tma.bulk_copy_global_to_shared(s, 0, g, g.base, 128, 64)


def test_outside_allocation_is_illegal():
    s, g = cta(), gmem_with(64)
    MBarrier(s, 0).init(1)
    with pytest.raises(tma.BulkCopyError, match="illegal address"):
        tma.bulk_copy_global_to_shared(s, 1024, g, g.base + 128, 256, 0)


def test_shared_to_cluster_signals_the_destination_barrier():
    a, b = cta(0), cta(1)
    a.write(2048, np.arange(64, dtype=np.uint8))
    bar = MBarrier(b, 8)
    bar.init(1)
    bar.arrive_expect_tx(64)
    tma.bulk_copy_shared_to_cluster(a, 2048, b, 4096, 64, 8)
    assert bar.test_wait_parity(0) and np.array_equal(b.array[4096:4160], np.arange(64))


def test_bulk_groups_wait_and_read():
    s, g = cta(), tma.GlobalMemory(1 << 16)
    grp = tma.BulkGroups()
    s.write(0, np.full(256, 1, np.uint8))
    tma.bulk_copy_shared_to_global(g, g.base, s, 0, 256, grp)
    grp.commit_group()
    s.write(256, np.full(256, 2, np.uint8))
    tma.bulk_copy_shared_to_global(g, g.base + 256, s, 256, 256, grp)
    grp.commit_group()
    assert grp.pending == 2 and (g.array[:512] == 0).all()
    grp.wait_group(1)                      # the older group is done, the newer may still be pending
    assert (g.array[:256] == 1).all() and (g.array[256:512] == 0).all() and grp.pending == 1
    grp.wait_group(0, read=True)           # sources read: shared memory may be reused ...
    s.write(256, np.full(256, 9, np.uint8))
    grp.wait_group(0)                      # ... and the data written is what was read
    assert (g.array[256:512] == 2).all() and grp.pending == 0
    with pytest.raises(ValueError):
        grp.wait_group(-1)
    grp.commit_group()                     # an empty group is fine
    assert grp.pending == 0


def test_reusing_a_store_source_too_early_is_a_hazard():
    s, g = cta(), tma.GlobalMemory(1 << 16)
    grp = tma.BulkGroups()
    tma.bulk_copy_shared_to_global(g, g.base, s, 0, 128, grp)
    grp.commit_group()
    s.write(0, np.ones(16, np.uint8))      # no wait_group.read before reuse
    with pytest.raises(tma.BulkHazard):
        grp.wait_group(0)


def test_multicast_delivers_to_the_mask_and_each_barrier():
    cluster = [cta(r) for r in range(4)]
    g = gmem_with()
    for r in (1, 3):
        bar = MBarrier(cluster[r], 0)
        bar.init(1)
        bar.arrive_expect_tx(1024)
    l2 = tma.L2Cache(1 << 20)
    op = tma.bulk_copy_multicast(cluster, 2048, g, g.base, 1024, 0, 0b1010, issuer=0, l2=l2)
    assert op.destinations == (1, 3) and op.delivered_bytes == 2048 and op.hbm_bytes == 1024
    for r in (1, 3):
        assert MBarrier(cluster[r], 0).test_wait_parity(0)
        assert np.array_equal(cluster[r].array[2048:3072].view(np.uint32), np.arange(256))
    assert (cluster[0].array == 0).all() and (cluster[2].array == 0).all()   # the issuer need not receive


@given(mask=st.integers(1, (1 << 16) - 1), n=st.integers(1, 16))
def test_mask_ranks(mask, n):
    if mask.bit_length() > n:
        with pytest.raises(tma.BulkCopyError, match="cluster has"):
            tma.mask_ranks(mask, n)
    else:
        r = tma.mask_ranks(mask, n)
        assert sum(1 << i for i in r) == mask


def test_mask_errors():
    with pytest.raises(tma.BulkCopyError, match="no CTA"):
        tma.mask_ranks(0, 4)
    with pytest.raises(tma.BulkCopyError, match="16-bit"):
        tma.mask_ranks(1 << 16, 16)


def test_tensor_load_tx_and_multicast():
    x = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    g = tma.GlobalMemory.holding(x)
    tm = tma.encode_tiled("BFLOAT16", 2, g.base, [64, 64], [128], [64, 16], [1, 1], swizzle="128B",
                          l2_promotion="L2_256B")
    s = cta()
    bar = MBarrier(s, 0)
    bar.init(1)
    bar.arrive_expect_tx(tm.tx_bytes)
    l2 = tma.L2Cache(1 << 20)
    op = tma.tensor_load(tm, g, [0, 60], s, 1024, 0, l2=l2)   # 4 of 16 rows in bounds
    assert bar.test_wait_parity(0) and op.nbytes == 2048
    assert op.hbm_bytes == 512               # rows 60..63: two 256-B promotion blocks
    assert np.array_equal(s.array[1024:1024 + tm.smem_bytes], tma.load(tm, x, [0, 60]))
    cluster = [cta(r) for r in range(2)]
    for c in cluster:
        b = MBarrier(c, 0)
        b.init(1)
        b.arrive_expect_tx(tm.tx_bytes)
    op = tma.tensor_load_multicast(tm, g, [0, 0], cluster, 2048, 0, 0b11, l2=tma.L2Cache(1 << 20))
    assert op.delivered_bytes == 2 * tm.tx_bytes and op.hbm_bytes == tm.tx_bytes
    assert all(MBarrier(c, 0).test_wait_parity(0) for c in cluster)
    assert np.array_equal(cluster[0].array[2048:4096], cluster[1].array[2048:4096])
    with pytest.raises(tma.TmaFault):
        tma.tensor_load(tm, g, [0, 0], s, 1024 + 64, 0)


def test_tensor_store_and_reduce_through_groups():
    x = np.arange(32 * 32, dtype=np.uint32).reshape(32, 32)
    g = tma.GlobalMemory.holding(x)
    tm = tma.encode_tiled("UINT32", 2, g.base, [32, 32], [128], [32, 8], [1, 1])
    s = cta()
    s.write(1024, np.ones(32 * 8, np.uint32))
    grp = tma.BulkGroups()
    tma.tensor_reduce(tm, s, 1024, g, [0, 8], "add", grp)
    tma.tensor_store(tm, s, 1024, g, [0, 24], grp)
    grp.commit_group()
    grp.wait_group(0)
    y = g.view(g.base, x.nbytes).view(np.uint32).reshape(32, 32)
    assert np.array_equal(y[8:16], x[8:16] + 1) and (y[24:32] == 1).all() and np.array_equal(y[:8], x[:8])
    with pytest.raises(ValueError, match="negative"):
        tma.tensor_store(tm, s, 1024, g, [0, -1], grp)
    with pytest.raises(tma.TmaFault):
        tma.tensor_store(tm, s, 1040, g, [0, 0], grp)
    with pytest.raises(ValueError, match="PTX"):
        tma.tensor_reduce(tm, s, 1024, g, [0, 0], "mul", grp)


def test_bulk_reduce_rules_and_semantics():
    s, d = cta(0), cta(1)
    s.write(0, np.array([1, 2, 3, 4], np.uint32))
    d.write(256, np.array([10, 10, 10, 10], np.uint32))
    bar = MBarrier(d, 8)
    bar.init(1)
    bar.arrive_expect_tx(16)
    tma.bulk_reduce("shared::cluster", "max", "u32", s, 0, 16, dst_smem=d, dst=256, mbar=8)
    assert list(d.array[256:272].view(np.uint32)) == [10, 10, 10, 10] and bar.test_wait_parity(0)
    g, grp = tma.GlobalMemory(1024), tma.BulkGroups()
    s.write(64, np.array([1.5, 2.5, 0, 0, 0, 0, 0, 0], np.float16))
    tma.bulk_reduce("global", "add", "f16", s, 64, 16, gmem=g, dst=g.base, groups=grp, noftz=True)
    grp.commit_group(); grp.wait_group(0)
    assert list(g.array[:4].view(np.float16)) == [1.5, 2.5]
    for args, frag in [(("global", "add", "f16"), "noftz"), (("shared::cluster", "add", "f32"), "not .f32"),
                       (("shared::cluster", "mul", "u32"), "no .mul"), (("global", "and", "b32"), "gmem")]:
        with pytest.raises(tma.BulkCopyError, match=frag):
            tma.bulk_reduce(*args, s, 0, 16)
    with pytest.raises(tma.BulkCopyError, match="destination CTA"):
        tma.bulk_reduce("shared::cluster", "add", "u32", s, 0, 16)


def test_prefetch_warms_l2():
    x = np.zeros((64, 64), np.float32)
    tm = tma.encode_tiled("FLOAT32", 2, 1 << 20, [64, 64], [256], [32, 8], [1, 1], l2_promotion="L2_128B")
    l2 = tma.L2Cache(1 << 20)
    assert tma.prefetch_tensor(l2, tm, [0, 0]) == 8 * 128
    assert l2.read_segments(tma.global_segments(tm, [0, 0]), promotion=128).hbm_bytes == 0
    assert tma.prefetch_bulk(l2, 1 << 21, 256) == 256 and tma.prefetch_bulk(l2, 1 << 21, 256) == 0
    with pytest.raises(tma.BulkCopyError):
        tma.prefetch_bulk(l2, 8, 256)
    del x


def test_global_memory_helpers():
    g = tma.GlobalMemory(256)
    g.write(g.base + 16, np.arange(4, dtype=np.uint8))
    assert list(g.read(g.base + 16, 4)) == [0, 1, 2, 3] and g.view(g.base + 250).size == 6
    with pytest.raises(ValueError):
        tma.GlobalMemory(0)
    with pytest.raises(tma.BulkCopyError):
        g.read(g.base - 1, 4)
    assert "GlobalMemory(256 B" in repr(g)
