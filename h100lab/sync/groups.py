"""Bulk async-groups: ``cp.async.bulk.commit_group`` and ``cp.async.bulk.wait_group{.read} N``.

Rules [PTX §9.7.9.25.6.1–2 (PTX 9.1 numbering: §9.7.9.27.2.1–2 in the reference facts §6)]:

* a bulk copy issued with ``.bulk_group`` completion is *uncommitted* until the issuing thread
  executes ``cp.async.bulk.commit_group``, which batches **all** of that thread's uncommitted
  bulk_group copies into a new per-thread group — an empty group if there are none;
* ``cp.async.bulk.wait_group N`` returns once at most the ``N`` most recent groups are pending and all
  older groups of the thread are complete (``N = 0``: all of them); a complete op has read its
  sources, written its destination and made the writes visible to the executing thread;
* ``.read`` waits only until the ops of those groups have finished *reading their sources*, so the
  source buffer may be overwritten — nothing is promised about the destination;
* there is no ordering between the ops inside one group.

The counting exercise "how many groups are pending after this sequence" assumes nothing completes
on its own — only a wait forces completion — which is :func:`pending_after`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable

__all__ = ["GroupError", "BulkGroups", "pending_after"]


class GroupError(ValueError):
    """A bulk async-group operation with an invalid operand."""


@dataclass
class BulkGroups:
    """One thread's bulk async-groups (groups are per thread, PTX §9.7.9.25.6.1)."""

    uncommitted: list = field(default_factory=list)
    groups: list = field(default_factory=list)      # group index -> list of op ids
    read_done: set = field(default_factory=set)
    done: set = field(default_factory=set)

    def issue(self, op: Hashable) -> None:
        """A ``cp.async.bulk ... .bulk_group`` was issued by this thread: it joins the uncommitted set."""
        self.uncommitted.append(op)

    def commit(self) -> int:
        """``cp.async.bulk.commit_group``: batch the uncommitted ops (possibly none) into a new group;
        returns the group's index (0, 1, 2, … per thread)."""
        self.groups.append(self.uncommitted)
        self.uncommitted = []
        return len(self.groups) - 1

    def group_of(self, op: Hashable) -> int:
        """The index of the group holding ``op`` (−1 if uncommitted)."""
        for i, g in enumerate(self.groups):
            if op in g:
                return i
        return -1

    def complete(self, op: Hashable, *, read_only: bool = False) -> None:
        """Op ``op`` finished reading its source (``read_only``) or finished completely."""
        self.read_done.add(op)
        if not read_only:
            self.done.add(op)

    def _group_done(self, g: list, read: bool) -> bool:
        s = self.read_done if read else self.done
        return all(op in s for op in g)

    def pending(self, *, read: bool = False) -> int:
        """Committed groups not yet complete (or, with ``read``, not yet done reading)."""
        return sum(not self._group_done(g, read) for g in self.groups)

    @staticmethod
    def _check_n(n: int) -> None:
        if not isinstance(n, int) or n < 0:
            raise GroupError(f"cp.async.bulk.wait_group N = {n!r}: N is a non-negative integer constant "
                             f"(PTX §9.7.9.25.6.2)")

    def waits_for(self, n: int, *, read: bool = False) -> list:
        """The ops ``wait_group{.read} n`` must still wait for: the unfinished ops of every group
        except the ``n`` most recent (PTX §9.7.9.25.6.2)."""
        self._check_n(n)
        s = self.read_done if read else self.done
        older = self.groups[:max(0, len(self.groups) - n)]
        return [op for g in older for op in g if op not in s]

    def satisfied(self, n: int, *, read: bool = False) -> bool:
        """Whether ``wait_group{.read} n`` would return now."""
        return not self.waits_for(n, read=read)

    def covered_group(self, n: int) -> int:
        """The newest group index that ``wait_group n`` guarantees complete (−1: none)."""
        self._check_n(n)
        return max(-1, len(self.groups) - 1 - n)


def pending_after(sequence: Iterable) -> int:
    """Committed bulk async-groups still pending after ``sequence``, when nothing completes except
    what a wait forces. Items: ``"cp"`` (issue a bulk_group copy), ``"commit"``, ``("wait", N)`` or
    ``"wait N"`` (PTX §9.7.9.25.6.1–2)."""
    bg = BulkGroups()
    k = 0
    for item in sequence:
        if isinstance(item, str) and item.startswith("wait"):
            parts = item.split()
            if len(parts) != 2:
                raise GroupError(f"{item!r}: write a wait as 'wait N'")
            item = ("wait", int(parts[1]))
        if item == "cp":
            bg.issue(k)
            k += 1
        elif item == "commit":
            bg.commit()
        elif isinstance(item, tuple) and len(item) == 2 and item[0] == "wait":
            for op in bg.waits_for(item[1]):
                bg.complete(op)
            # empty groups older than the N most recent also count as complete
        else:
            raise GroupError(f"unknown item {item!r}: use 'cp', 'commit' or ('wait', N)")
    return bg.pending()
