"""Which offset of a partition may be committed (BRK-6).

Records of one partition are taken in their order and may finish in any order (parallel
take-in). The committed offset is the *next* record to read, so it may only move to
``offset + 1`` of the last record of the contiguous finished prefix: with 40 unfinished and
41, 42 durable, the commit stays at 40; when 40 is durable it jumps to 43.
"""

from __future__ import annotations

from collections import deque


class PartitionProgress:
    """The offsets taken from one partition in the current assignment, and which are durable."""

    def __init__(self) -> None:
        self._taken: deque[int] = deque()
        self._finished: set[int] = set()
        self.committable: int | None = None  # the offset to commit next, once the prefix moves

    def take(self, offset: int) -> None:
        if self._taken and offset <= self._taken[-1]:
            raise ValueError(f"offset {offset} taken after {self._taken[-1]}: a partition is read in order")
        self._taken.append(offset)

    def finish(self, offset: int) -> int | None:
        """Record ``offset`` as durable; the new committable offset if the prefix moved, else None."""
        self._finished.add(offset)
        moved = None
        while self._taken and self._taken[0] in self._finished:
            done = self._taken.popleft()
            self._finished.discard(done)
            moved = done + 1
        if moved is not None:
            self.committable = moved
        return moved

    @property
    def unfinished(self) -> int:
        return len(self._taken)

    @property
    def first_unfinished(self) -> int | None:
        return self._taken[0] if self._taken else None
