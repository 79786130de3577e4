"""Lesson 2: distributed shared memory (mapa, loads/stores/atomics, barrier.cluster), state spaces, banks."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab.cluster import (EXITED, NOT_STARTED, BarrierError, ClusterBarrier, ClusterSharedMemory, DsmemError,
                             PeerNotRunning, RankError, SharedAddressError, ring_exchange)
from h100lab.memory.spaces import (SHARED_RESERVED, STATE_SPACES, AddressMap, AddressSpaceError, UnmappedAddress,
                                   bank, bank_conflict_degree, cluster_address, split_cluster_address, state_space,
                                   tile_banks)


def running(n=4, smem=256):
    cs = ClusterSharedMemory(n, smem)
    for r in range(n):
        cs.start(r)
    return cs


V = SHARED_RESERVED          # window offset of a CTA's first shared variable (0x400 on an H200)


# ------------------------------------------------------------------------------------------- DSMEM

def test_mapa_takes_a_rank_and_reaches_the_peer():
    cs = running()
    a = cs.mapa(0, cs.address(0, V + 0x10), 3)
    assert a == (3 << 24) | 0x410                  # the H200's encoding: rank in bits 24+, offset below
    assert cs.getctarank(0, a) == 3 and a & 0xFFFFFF == V + 0x10
    cs.st(0, a, 1234)
    assert cs.ld(3, cs.address(3, V + 0x10)) == 1234   # the peer sees it at its own address
    assert cs.ld(1, cs.mapa(1, cs.address(1, V + 0x10), 3)) == 1234   # and any CTA can read it through mapa
    assert cs.mem[3, V + 0x10:V + 0x14].tolist() == [0xD2, 0x04, 0, 0]   # little-endian bytes


def test_the_hardware_addresses_of_the_ring_kernel():
    # data/l02/dsmem_ring.json, cluster of 3: cvta.to.shared of the slot and mapa to the right neighbour
    cs = running(3)
    assert [cs.address(r) for r in range(3)] == [0x400, 0x1000400, 0x2000400]
    assert [cs.mapa(r, cs.address(r), (r + 1) % 3) for r in range(3)] == [0x1000400, 0x2000400, 0x400]


@given(st.integers(1, 16), st.data())
def test_mapa_round_trip(n, data):
    cs = running(n)
    src = data.draw(st.integers(0, n - 1))
    dst = data.draw(st.integers(0, n - 1))
    off = V + data.draw(st.integers(0, 63)) * 4
    a = cs.mapa(src, cs.address(src, off), dst)
    assert cs.getctarank(src, a) == dst
    assert split_cluster_address(a) == (dst, off) and a == cluster_address(dst, off)
    # mapa to its own rank gives the CTA's own address back: .shared::cta lies inside .shared::cluster
    assert cs.mapa(dst, cs.address(dst, off), dst) == cs.address(dst, off)
    cs.st(dst, cs.address(dst, off), 7)
    assert cs.ld(src, a) == 7


def test_atomics_on_a_peer():
    cs = running(2)
    a = cs.mapa(0, cs.address(0, V + 0x20), 1)
    own1 = cs.address(1, V + 0x20)
    assert cs.atom(0, "add", a, 5) == 0
    assert cs.atom(1, "add", own1, 2) == 5
    assert cs.atom(0, "cas", a, 99, compare=7) == 7 and cs.ld(1, own1) == 99
    assert cs.atom(0, "max", a, 3) == 99
    w = cs.address(0, V + 0x40)
    cs.st(0, w, 0xFFFFFFFF)
    assert cs.atom(0, "add", w, 1) == 0xFFFFFFFF and cs.ld(0, w) == 0      # wraps modulo 2^32
    f = cs.address(0, V + 0x48)
    cs.st(0, f, 1.5, ".f32")
    assert cs.atom(0, "add", f, 2.25, ".f32") == 1.5 and cs.ld(0, f, ".f32") == 3.75
    with pytest.raises(DsmemError, match="not defined for .f32"):
        cs.atom(0, "and", f, 1, ".f32")


@pytest.mark.parametrize("call,exc,rule", [
    (lambda cs: cs.mapa(0, V, 4), RankError, "0 <= rank < %cluster_nctarank = 4"),
    (lambda cs: cs.mapa(0, V, -1), RankError, "outside the cluster"),
    (lambda cs: cs.ld(0, V + 0x3), SharedAddressError, "not aligned"),
    (lambda cs: cs.ld(0, V + 0x100), SharedAddressError, "beyond CTA 0's 256 B"),
    (lambda cs: cs.ld(0, 0x10), SharedAddressError, "reserves per block"),
    (lambda cs: cs.mapa(0, cluster_address(2, V), 1), SharedAddressError, "belongs to CTA 2"),
    (lambda cs: cs.ld(0, cluster_address(5, V)), RankError, "names rank 5"),
    (lambda cs: cs.atom(0, "cas", V, 1), DsmemError, "needs the compare value"),
])
def test_bad_dsmem_operations_name_the_rule(call, exc, rule):
    with pytest.raises(exc, match=re.escape(rule)):
        call(running())


def test_writing_into_a_cta_that_has_not_started_or_has_exited():
    cs = ClusterSharedMemory(2, 64)
    cs.start(0)
    with pytest.raises(PeerNotRunning, match="before it has started") as e:
        cs.st(0, cs.mapa(0, cs.address(0), 1), 1)
    assert e.value.target == 1 and e.value.state == NOT_STARTED
    cs.start(1)
    cs.exit(1)
    with pytest.raises(PeerNotRunning, match="after it has exited") as e:
        cs.ld(0, cs.mapa(0, cs.address(0), 1))
    assert e.value.state == EXITED
    with pytest.raises(DsmemError, match="only a running CTA"):
        cs.ld(1, cs.address(1))


def test_cluster_barrier_phases():
    b = ClusterBarrier(2, threads_per_cta=2)
    b.arrive(0, 0)
    b.arrive(0, 1)
    b.arrive(1, 0)
    assert not b.wait(0, 0) and b.phase == 0
    b.arrive(1, 1)
    assert b.phase == 1 and all(b.wait(r, t) for r in (0, 1) for t in (0, 1))
    with pytest.raises(BarrierError, match="waits without having arrived"):
        b.wait(0, 0)
    b.arrive(0, 0)
    with pytest.raises(BarrierError, match="arrives twice"):
        b.arrive(0, 0)
    # exited threads no longer count
    b.arrive(0, 1)
    b.arrive(1, 0)
    b.thread_exit(1, 1)
    assert b.phase == 2


@pytest.mark.parametrize("n", [2, 4, 8, 16])
@pytest.mark.parametrize("mode", ["push", "pull"])
@pytest.mark.parametrize("schedule", ["greedy", "round-robin"])
def test_ring_exchange_with_barriers_always_works(n, mode, schedule):
    t = ring_exchange(n, mode=mode, schedule=schedule)
    assert t.ok and t.received == tuple(100 + (r - 1) % n for r in range(n))


def test_missing_barriers_are_caught():
    t = ring_exchange(4, sync_start=False)
    assert not t.ok and t.error_type == "PeerNotRunning" and "before it has started" in t.error
    t = ring_exchange(4, mode="pull", sync_exit=False)
    assert not t.ok and "after it has exited" in t.error
    assert t.events[-1].op == "error" and t.events[-1].remote == 3
    # the same race can go unnoticed under another interleaving: a race, not a guaranteed failure
    assert ring_exchange(4, sync_start=False, schedule="round-robin").ok


@given(st.permutations(list(range(6))))
def test_ring_exchange_order_does_not_matter_with_barriers(order):
    assert ring_exchange(6, order=order).ok


def test_ring_exchange_bad_input():
    with pytest.raises(RankError, match="1 to 16 CTAs"):
        ring_exchange(17)
    with pytest.raises(DsmemError, match="permutation"):
        ring_exchange(3, order=[0, 0, 1])
    with pytest.raises(DsmemError, match="'push' or 'pull'"):
        ring_exchange(3, mode="both")


# -------------------------------------------------------------------------------------- state spaces

def test_state_space_table():
    assert set(STATE_SPACES) == {".reg", ".sreg", ".const", ".global", ".local", ".param", ".shared::cta",
                                 ".shared::cluster", ".tex"}
    assert state_space(".shared") is STATE_SPACES[".shared::cta"]
    assert not state_space(".reg").addressable and state_space(".const").access == "RO"
    with pytest.raises(AddressSpaceError, match="not a PTX state space"):
        state_space(".texture")


def test_cvta_round_trips_and_isspacep():
    m = AddressMap(cta_rank=1, cluster_size=4, smem_bytes=1024)
    own = cluster_address(1, V + 0x40)                   # what cvta.to.shared gives in the CTA of rank 1
    g = m.cvta(".shared::cta", own)
    assert g == AddressMap.SHARED_BASE + 0x1000440
    assert m.isspacep(".shared::cta", g) and m.isspacep(".shared::cluster", g)
    assert not m.isspacep(".global", g) and m.space_of(g) == ".shared::cta"
    assert m.cvta_to(".shared::cta", g) == own == m.cvta_to(".shared::cluster", g)   # the rank bits stay
    assert m.cvta(".shared::cluster", own) == g
    peer = m.cvta(".shared::cluster", cluster_address(3, V + 0x40))
    assert m.isspacep(".shared::cluster", peer) and not m.isspacep(".shared::cta", peer)
    assert m.space_of(peer) == ".shared::cluster"
    loc = m.cvta(".local", 0x10)
    assert m.space_of(loc) == ".local" and m.cvta_to(".local", loc) == 0x10
    glob = AddressMap.GLOBAL_BASE + 0x1000
    assert m.cvta(".global", glob) == glob and m.space_of(glob) == ".global"


def test_the_h200_spaces_records():
    # data/l02/spaces.json: clusters of 2; block 1 is rank 1, its peer rank 0
    m = AddressMap(cta_rank=1, cluster_size=2)
    g = m.cvta(".shared::cta", cluster_address(1, V))
    assert g == 0x7F9001000400 and m.cvta_to(".shared::cta", g) == 0x1000400
    assert m.cvta(".shared::cluster", cluster_address(0, V)) == 0x7F9000000400


@given(st.sampled_from([".local", ".const", ".param", ".shared::cta"]), st.integers(0, 1023), st.integers(0, 3))
def test_cvta_inverse(space, off, rank):
    m = AddressMap(cta_rank=rank, cluster_size=4, smem_bytes=1024)
    a = cluster_address(rank, V + off) if space == ".shared::cta" else off
    g = m.cvta(space, a)
    assert m.isspacep(space, g) and m.cvta_to(space, g) == a
    others = [s for s in (".local", ".const", ".param", ".shared::cta", ".global") if s != space]
    assert not any(m.isspacep(s, g) for s in others)


def test_a_shared_address_is_not_a_generic_pointer():
    m = AddressMap()
    shared_address = m.cvta_to(".shared::cta", m.cvta(".shared::cta", 0x400))
    assert shared_address == 0x400
    with pytest.raises(UnmappedAddress, match="outside every state-space window.*not a generic pointer"):
        m.space_of(shared_address)


@pytest.mark.parametrize("call,rule", [
    (lambda m: m.cvta_to(".shared::cta", AddressMap.GLOBAL_BASE), "not in the .shared::cta window"),
    (lambda m: m.cvta(".reg", 0), "no window in the generic address space"),
    (lambda m: m.isspacep(".tex", 0), "no window"),
    (lambda m: m.cvta(".local", 1 << 40), "outside .local"),
    (lambda m: m.cvta(".shared::cluster", cluster_address(9, 0)), "outside this cluster of 2"),
    (lambda m: m.cvta(".shared::cta", cluster_address(1, V)), "not of the executing CTA (rank 0"),
    (lambda m: m.cvta(".shared::cluster", cluster_address(1, 1 << 20)), "beyond the CTA's"),
    (lambda m: AddressMap(cta_rank=3, cluster_size=2), "outside the cluster"),
    (lambda m: cluster_address(16, 0), "outside the cluster"),
    (lambda m: split_cluster_address(1 << 32), "not a 32-bit shared address"),
])
def test_bad_addresses_name_the_rule(call, rule):
    with pytest.raises(AddressSpaceError, match=re.escape(rule)):
        call(AddressMap(cluster_size=2))


# -------------------------------------------------------------------------------------------- banks

def test_every_column_of_a_64x64_bf16_tile_is_one_bank():
    banks = tile_banks(64, 64, 2)
    assert banks.shape == (64, 64)
    assert all(len(set(banks[:, c])) == 1 for c in range(64))       # 128-B rows = 32 banks x 4 B
    assert banks[0, 0] == banks[1, 0] == 0 and banks[5, 2] == 1
    column = 4 * 0 + np.arange(32) * 128                             # a warp reads column 0, rows 0..31
    assert bank_conflict_degree(column) == 32
    assert bank_conflict_degree(np.arange(32) * 4) == 1
    assert bank_conflict_degree(np.zeros(32, int)) == 1              # broadcast


@given(st.integers(0, 1 << 20))
def test_bank_formula(a):
    assert bank(a) == (a >> 2) & 31


def test_window_table_and_tile_offsets():
    rows = AddressMap(cta_rank=1, cluster_size=2, smem_bytes=512).window_table()
    spaces = {r["space"]: r for r in rows}
    assert spaces[".shared::cta"]["size"] == V + 512
    assert spaces[".shared::cta"]["base"] == spaces[".shared::cluster"]["base"] + (1 << 24)
    assert spaces[".shared::cluster"]["size"] == 2 << 24
    assert all(r["end"] == r["base"] + r["size"] for r in rows)
    from h100lab.memory.spaces import tile_byte_offsets
    off = tile_byte_offsets(4, 8, 2, row_pitch=20, base=64)
    assert off[2, 3] == 64 + 40 + 6
    with pytest.raises(AddressSpaceError, match="shorter than a row"):
        tile_byte_offsets(4, 8, 2, row_pitch=10)
