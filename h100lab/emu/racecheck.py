"""Shared-memory race detection (``racecheck=True``), like compute-sanitizer's racecheck tool.

PTX §8 "Memory Consistency Model": two accesses to the same location by different threads, at least one a
write, that are not ordered by synchronisation form a data race, and the values read are undefined. The
checker keeps a vector clock per warp (FastTrack's happens-before, Flanagan & Freund 2009): arriving on a
barrier (``bar.sync``/``bar.arrive``, ``barrier.cluster.arrive``, ``mbarrier.arrive``) *releases* the warp's
clock into the barrier; returning from the matching wait *acquires* it. Each shared-memory byte remembers the
warp that last wrote it and that warp's clock then; a read or write by another warp that has not acquired that
clock is a race: write→read, write→write, and read→write (each byte keeps the set of warps of its own CTA that
read it since the last write, with their clocks; reads through DSMEM by other CTAs are not in that set). Granularity is the warp: lanes
of one warp are ordered by the warp's program order ([model]: Volta+ lanes of a diverged warp are not, but
the emulator runs them in order).

Strong operations (PTX §8.4, §8.8 "Release and acquire patterns"): ``ld``/``st`` with ``.relaxed``,
``.acquire``, ``.release`` or ``.volatile`` are *strong*; two strong accesses to the same bytes never race
with each other (they are morally strong: [model] the checker does not compare their scopes or sizes), while a
strong access still races with an unordered weak one. A ``st.release`` releases the warp's clock into the
location it writes, an ``ld.acquire`` acquires what the location's release stores put there (every release
store to it so far: [model] the emulator's loads read the latest store). The fence patterns count too: a
``fence.sc``/``fence.acq_rel`` followed by a strong store releases the clock the warp had at the fence; a strong
load followed by a fence acquires at the fence.
"""
from __future__ import annotations

import numpy as np

from .errors import RaceError

__all__ = ["RaceChecker"]


class RaceChecker:
    def __init__(self):
        self.vc: dict[int, dict[int, int]] = {}
        self.sync: dict = {}
        self.mem: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.fenced: dict[int, dict[int, int]] = {}   # warp → its clock at its last fence (release pattern)
        self.loaded: dict[int, set] = {}               # warp → locations read by strong loads since its last fence

    @staticmethod
    def _loc(cta, idx):
        return ("location", cta.linear, int(np.asarray(idx).reshape(-1)[0]))

    def fence(self, w) -> None:
        """``fence.sc``/``fence.acq_rel``: acquire what the strong loads since the last fence read; remember
        the clock for the strong stores after it."""
        i = self._id(w)
        for key in self.loaded.pop(i, ()):
            self.acquire(w, key)
        c = self._clock(w)
        self.fenced[i] = dict(c)
        c[i] += 1

    @staticmethod
    def _id(w) -> int:
        return w.cta.linear * 64 + w.wid

    def _clock(self, w) -> dict:
        i = self._id(w)
        c = self.vc.get(i)
        if c is None:
            c = self.vc[i] = {i: 1}
        return c

    def release(self, w, key) -> None:
        c = self._clock(w)
        s = self.sync.setdefault(key, {})
        for k, v in c.items():
            if s.get(k, 0) < v:
                s[k] = v
        c[self._id(w)] += 1

    def acquire(self, w, key) -> None:
        c = self._clock(w)
        for k, v in self.sync.get(key, {}).items():
            if c.get(k, 0) < v:
                c[k] = v

    def _arrays(self, cta):
        a = self.mem.get(cta.linear)
        if a is None:
            n = cta.smem.size
            a = self.mem[cta.linear] = {"who": np.full(n, -1, np.int64), "when": np.zeros(n, np.int64),
                                        "readers": np.zeros(n, np.uint64), "rclock": {},
                                        "strong": np.zeros(n, bool)}
        return a

    def _race(self, w, cta, idx, sel, writer, what, prev):
        off = int(np.asarray(idx)[sel].reshape(-1)[0])
        wcta, wwarp = divmod(int(writer), 64)
        raise RaceError(
            f"data race on shared memory: this {what} of offset 0x{off:x} (CTA rank {cta.rank}) is not ordered "
            f"after the {prev} by warp {wwarp}" + (f" of CTA {wcta}" if wcta != cta.linear else "") +
            " — no barrier (bar.sync / __syncthreads, an mbarrier wait, barrier.cluster) and no release/acquire pair (st.release → ld.acquire, or a fence.acq_rel before a strong store and after a strong load) lies between them "
            "(PTX §8 Memory Consistency Model: a data race leaves the value undefined)", w.where_text())

    def _check_writer(self, w, cta, idx, what, strong=False):
        a = self._arrays(cta)
        me = self._id(w)
        ws = a["who"][idx]
        other = (ws >= 0) & (ws != me)
        if strong:
            other &= ~a["strong"][idx]
        if not other.any():
            return
        c = self._clock(w)
        when = a["when"][idx]
        for writer in np.unique(ws[other]):
            sel = ws == writer
            if (when[sel] > c.get(int(writer), 0)).any():
                self._race(w, cta, idx, sel, writer, what, "write")

    def read(self, w, cta, idx, sem=None) -> None:
        self._check_writer(w, cta, idx, "read" if sem is None else f"ld.{sem}", sem is not None)
        a = self._arrays(cta)
        if sem == "acquire":
            self.acquire(w, self._loc(cta, idx))
        if sem is not None:
            if sem != "acquire":
                self.loaded.setdefault(self._id(w), set()).add(self._loc(cta, idx))
            return
        if w.wid < 64:
            a["readers"][idx] |= np.uint64(1 << w.wid)
            rc = a["rclock"].get(w.wid)
            if rc is None:
                rc = a["rclock"][w.wid] = np.zeros(cta.smem.size, np.int64)
            rc[idx] = self._clock(w)[self._id(w)]

    def write(self, w, cta, idx, sem=None) -> None:
        self._check_writer(w, cta, idx, "write" if sem is None else f"st.{sem}", sem is not None)
        if sem == "release":
            self.release(w, self._loc(cta, idx))
        elif sem is not None and self._id(w) in self.fenced:
            s = self.sync.setdefault(self._loc(cta, idx), {})
            for k, v in self.fenced[self._id(w)].items():
                if s.get(k, 0) < v:
                    s[k] = v
        a = self._arrays(cta)
        rs = np.bitwise_or.reduce(a["readers"][idx], axis=None)
        if rs:
            c = self._clock(w)
            base = cta.linear * 64
            for r in range(64):
                if r != w.wid and int(rs) >> r & 1:
                    sel = (a["readers"][idx] >> np.uint64(r)) & np.uint64(1) == 1
                    rc = a["rclock"][r][idx]
                    if (sel & (rc > c.get(base + r, 0))).any():
                        self._race(w, cta, idx, sel & (rc > c.get(base + r, 0)), base + r, "write", "read")
        a["readers"][idx] = 0
        a["who"][idx] = self._id(w)
        a["when"][idx] = self._clock(w)[self._id(w)]
        a["strong"][idx] = sem is not None
