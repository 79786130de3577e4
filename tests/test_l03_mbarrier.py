"""Lesson 3: the mbarrier state machine (h100lab.sync.mbarrier) and shared memory (h100lab.sync.smem)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.sync import mbarrier as mb
from h100lab.sync.mbarrier import MAX_COUNT, MAX_TX, MBarrier, MBarrierError, MBarrierState
from h100lab.sync.smem import SMEM_MAX_PER_BLOCK, SharedMemory, SharedMemoryError


def fresh(count=2, addr=0, size=1024):
    smem = SharedMemory(size)
    bar = MBarrier(smem, addr)
    bar.init(count)
    return smem, bar


# ---- the sequences measured on an H200 (reference facts §7 [HW]) -------------------------------------
def test_h200_parity_after_init_and_arrivals():
    _, b = fresh(2)
    assert (b.test_wait_parity(0), b.test_wait_parity(1)) == (False, True)
    b.arrive()
    assert (b.test_wait_parity(0), b.test_wait_parity(1)) == (False, True)
    b.arrive()
    assert (b.test_wait_parity(0), b.test_wait_parity(1)) == (True, False)
    assert b.phase == 1 and b.pending == 2


def test_h200_negative_tx_then_expect_completes_the_phase():
    _, b = fresh(2)
    b.arrive(), b.arrive()                   # now in phase 1
    b.complete_tx(64)                         # complete before expect: tx = -64
    b.arrive(), b.arrive()
    assert b.tx_count == -64 and b.pending == 0 and not b.test_wait_parity(1)
    b.expect_tx(64)                           # tx back to 0 completes the phase by itself
    assert b.test_wait_parity(1) and b.phase == 0 and b.pending == 2 and b.tx_count == 0


def test_h200_expect_tx_holds_phase_until_bytes_land():
    _, b = fresh(2)
    b.arrive_expect_tx(32)
    b.arrive()
    assert b.pending == 0 and b.tx_count == 32 and not b.test_wait_parity(0)
    b.complete_tx(32)
    assert b.test_wait_parity(0)


def test_h200_arrive_drop_lowers_later_phases():
    _, b = fresh(2)
    b.arrive_drop()
    b.arrive()
    assert b.phase == 1 and b.expected == 1 and b.pending == 1
    b.arrive()                                 # next phase completes with a single arrive
    assert b.phase == 0


def test_h200_pending_count_of_nocomplete_tokens():
    _, b = fresh(5)
    tok = b.arrive(2, no_complete=True)
    assert MBarrier.pending_count(tok) == 5
    tok = b.arrive(1, no_complete=True)
    assert MBarrier.pending_count(tok) == 3
    with pytest.raises(MBarrierError, match="pending_count"):
        MBarrier.pending_count(b.arrive())


def test_expect_tx_accumulates():
    s = mb.init(1)
    s, _ = mb.arrive_expect_tx(mb.expect_tx(s, 4096), 4096)
    assert s.tx == 8192 and s.pending == 0 and s.phase == 0
    assert mb.complete_tx(mb.complete_tx(s, 4096), 4096).phase == 1


def test_state_tokens_and_test_wait():
    _, b = fresh(1)
    tok = b.arrive()                           # completes phase 0
    assert mb.token_phase(tok) == 0 and b.test_wait(tok) and b.try_wait(tok)
    tok2 = b.arrive_expect_tx(16)              # phase 1, still waiting for 16 bytes
    assert not b.test_wait(tok2)
    b.complete_tx(16)
    assert b.test_wait(tok2)


# ---- ranges and undefined behaviour raise ------------------------------------------------------------
@pytest.mark.parametrize("count", [0, -1, MAX_COUNT + 1, 2.0, True])
def test_init_count_range(count):
    with pytest.raises(MBarrierError, match="2\\^20|integer"):
        mb.init(count)


def test_numpy_integers_are_accepted():
    s = mb.init(np.int64(3))
    assert s.expected == 3 and isinstance(s.expected, int)


def test_arrive_beyond_pending_raises():
    _, b = fresh(1)
    b.arrive_expect_tx(16)                     # pending 0, waiting on tx
    with pytest.raises(MBarrierError, match="pending"):
        b.arrive()


def test_tx_range():
    s = mb.init(1)
    with pytest.raises(MBarrierError, match="tx"):
        mb.expect_tx(s, MAX_TX + 1)
    s = mb.expect_tx(s, MAX_TX)
    with pytest.raises(MBarrierError, match="tx-count"):
        mb.expect_tx(s, 1)
    with pytest.raises(MBarrierError, match="tx-count"):
        mb.complete_tx(mb.complete_tx(mb.init(1), MAX_TX), 1)


def test_nocomplete_that_completes_raises():
    with pytest.raises(MBarrierError, match="noComplete"):
        mb.arrive(mb.init(1), no_complete=True)


def test_arrive_drop_below_one_raises():
    with pytest.raises(MBarrierError, match="minimum 1"):
        mb.arrive_drop(mb.init(1))


def test_parity_operand():
    with pytest.raises(MBarrierError, match="0 or 1"):
        mb.test_wait_parity(mb.init(1), 2)


def test_use_before_init_and_after_inval():
    smem = SharedMemory(64)
    b = MBarrier(smem, 8)
    with pytest.raises(MBarrierError, match="before mbarrier.init"):
        b.arrive()
    b.init(1)
    b.inval()
    with pytest.raises(MBarrierError, match="after mbarrier.inval"):
        b.test_wait_parity(0)
    b.init(3)                                  # the memory may hold a new barrier after inval
    assert b.expected == 3


def test_reinit_live_barrier_raises():
    _, b = fresh(2)
    with pytest.raises(MBarrierError, match="inval it first"):
        b.init(2)


@pytest.mark.parametrize("addr", [4, 12, 1020, 1024, -8])
def test_alignment_and_window(addr):
    with pytest.raises(MBarrierError):
        MBarrier(SharedMemory(1024), addr)


def test_plain_access_over_live_barrier_raises():
    smem, b = fresh(1, addr=16)
    with pytest.raises(SharedMemoryError, match="valid mbarrier"):
        smem.write(12, np.zeros(8, np.uint8))
    with pytest.raises(SharedMemoryError, match="valid mbarrier"):
        smem.read(20, 4)
    smem.write(24, np.arange(8, dtype=np.uint8))   # beside it is fine
    b.inval()
    smem.write(16, np.zeros(8, np.uint8))           # after inval the bytes are plain memory again
    assert smem.live_objects() == {}


def test_remote_cta_rules():
    smem = SharedMemory(64, cta_rank=1)
    b = MBarrier(smem, 0)
    with pytest.raises(MBarrierError, match="executing CTA"):
        b.init(2, rank=0)
    b.init(2, rank=1)
    assert b.arrive(rank=0) is None                 # remote arrive: no token (PTX §9.7.13.15.8)
    with pytest.raises(MBarrierError, match="only"):
        b.test_wait_parity(0, rank=0)
    assert b.pending == 1


def test_shared_memory_window():
    with pytest.raises(SharedMemoryError):
        SharedMemory(SMEM_MAX_PER_BLOCK + 1)
    smem = SharedMemory(128)
    with pytest.raises(SharedMemoryError, match="outside"):
        smem.read(120, 16)
    smem.write(0, np.array([1, 2], np.uint32))
    assert smem.read(0, 8).view(np.uint32).tolist() == [1, 2]
    assert "SharedMemory(128 B" in repr(smem)


def test_state_lives_in_the_bytes():
    smem, b = fresh(3, addr=40)
    b.arrive_expect_tx(100)
    word = int.from_bytes(bytes(smem.bytes[40:48]), "little")
    assert mb.decode(word) == MBarrierState(0, 2, 3, 100) == b.state
    assert b.word == word and "pending 2/3" in repr(b)


# ---- properties ---------------------------------------------------------------------------------------
states = st.builds(MBarrierState, st.integers(0, 1), st.integers(0, MAX_COUNT), st.integers(1, MAX_COUNT),
                   st.integers(-MAX_TX, MAX_TX))


@given(states)
def test_encode_decode_roundtrip(s):
    assert mb.decode(mb.encode(s)) == s
    assert 0 <= mb.encode(s) < 1 << 64


class Reference:
    """An independent, deliberately plain model of PTX §9.7.13.15.5–7, for comparison."""

    def __init__(self, n):
        self.phase, self.pending, self.expected, self.tx = 0, n, n, 0

    def copy(self):
        r = Reference(1)
        r.phase, r.pending, r.expected, r.tx = self.phase, self.pending, self.expected, self.tx
        return r

    def check(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected

    def apply(self, op, c, b) -> bool:
        """Apply ``op``; False if it leaves the documented ranges (the model must then raise)."""
        if op in ("arrive", "drop"):
            if op == "drop":
                self.expected -= c
                if self.expected < 1:
                    return False
            self.pending -= c
            if self.pending < 0:
                return False
        elif op in ("expect", "arrive_tx"):
            self.tx += b
            self.check()
            if op == "arrive_tx":
                self.pending -= 1
                if self.pending < 0:
                    return False
        else:
            self.tx -= b
        self.check()
        return True


ops = st.lists(st.tuples(st.sampled_from(["arrive", "drop", "expect", "complete", "arrive_tx"]),
                         st.integers(1, 3), st.integers(0, 256)), max_size=40)
_FN = {"arrive": lambda s, c, b: mb.arrive(s, c)[0], "drop": lambda s, c, b: mb.arrive_drop(s, c)[0],
       "expect": lambda s, c, b: mb.expect_tx(s, b), "complete": lambda s, c, b: mb.complete_tx(s, b),
       "arrive_tx": lambda s, c, b: mb.arrive_expect_tx(s, b)[0]}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), ops)
def test_matches_reference_model(n, seq):
    s, ref = mb.init(n), Reference(n)
    for op, c, b in seq:
        nxt = ref.copy()
        if not nxt.apply(op, c, b):
            with pytest.raises(MBarrierError):
                _FN[op](s, c, b)
            continue
        s, ref = _FN[op](s, c, b), nxt
        assert (s.phase, s.pending, s.expected, s.tx) == (ref.phase & 1, ref.pending, ref.expected, ref.tx)
        # the parity rule: a wait on the parity of the phase just completed succeeds, on the current one not
        assert mb.test_wait_parity(s, (ref.phase - 1) & 1) and not mb.test_wait_parity(s, ref.phase & 1)
        assert 0 <= s.pending <= MAX_COUNT and 1 <= s.expected <= MAX_COUNT and abs(s.tx) <= MAX_TX


@given(st.integers(1, 6), st.lists(st.integers(1, 3), max_size=20))
def test_word_and_state_level_agree(n, counts):
    w, s = mb.word_init(n), mb.init(n)
    for c in counts:
        if c > s.pending:
            with pytest.raises(MBarrierError):
                mb.word_arrive(w, c)
            break
        w, tw = mb.word_arrive(w, c)
        s, ts = mb.arrive(s, c)
        assert mb.decode(w) == s and tw == ts
