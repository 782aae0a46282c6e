"""Packed changes that compaction has not reached, kept together in large anonymous mappings
rather than as a bytes object each.

A start's burst of writes leaves minutes of history until compaction drops it: millions of
packed changes of a hundred or two bytes. As objects of their own they would fill the pools of
Python's small-object allocator among the objects that live on, and when compaction freed them
the pools, and so the memory, would stay the process's. Here they fill mappings of
`SEGMENT_BYTES` in revision order, and a mapping is returned to the system whole once
compaction has passed its last change (`release`); the few changes that live on are copied out
before (see `MvccState`).
"""

from __future__ import annotations

import mmap
import struct
from collections import deque

SEGMENT_BYTES = 1 << 20
"""The size of a mapping; a change larger than one is not kept here."""

Ref = int
"""Where a change is kept: the number of its mapping times `SEGMENT_BYTES` plus its offset in
the mapping (an int takes a sixth of the memory of a change's bytes)."""

_RECORD = struct.Struct("<IQ")
"""What precedes a change: its length and its revision."""


class Segments:
    def __init__(self, size: int = SEGMENT_BYTES) -> None:
        self._size = size
        self._mappings: deque[mmap.mmap] = deque()
        self._last_revisions: deque[int] = deque()
        """Of the change kept last in each mapping."""
        self._first = 0
        """The number of the first of `_mappings`."""
        self._end = size
        """Where the next change goes in the last mapping (its size: none yet)."""

    def __len__(self) -> int:
        """How many mappings are held."""
        return len(self._mappings)

    def add(self, change: bytes, revision: int) -> Ref | None:
        """Keep `change`, made at `revision` (after any kept before); None if it is too large."""
        start = self._end + _RECORD.size
        end = start + len(change)
        if end > self._size:
            if _RECORD.size + len(change) > self._size:
                return None
            self._mappings.append(mmap.mmap(-1, self._size))
            self._last_revisions.append(revision)
            self._end, start = 0, _RECORD.size
            end = start + len(change)
        mapping = self._mappings[-1]
        ref = (self._first + len(self._mappings) - 1) * self._size + self._end
        _RECORD.pack_into(mapping, self._end, len(change), revision)
        mapping[start:end] = change
        self._last_revisions[-1] = revision
        self._end = end
        return ref

    def get(self, ref: Ref) -> bytes:
        """The change kept at `ref` (a copy)."""
        mapping, offset = self._locate(ref)
        length, _ = _RECORD.unpack_from(mapping, offset)
        start = offset + _RECORD.size
        return mapping[start : start + length]

    def revision(self, ref: Ref) -> int:
        """The revision of the change kept at `ref`."""
        mapping, offset = self._locate(ref)
        return _RECORD.unpack_from(mapping, offset)[1]  # type: ignore[no-any-return]

    def release(self, revision: int) -> None:
        """Unmap the mappings whose changes were all made at or before `revision`: nothing may
        refer to them any more."""
        while self._last_revisions and self._last_revisions[0] <= revision:
            self._mappings.popleft().close()
            self._last_revisions.popleft()
            self._first += 1
        if not self._mappings:
            self._end = self._size

    def _locate(self, ref: Ref) -> tuple[mmap.mmap, int]:
        number, offset = divmod(ref, self._size)
        if number < self._first:
            raise LookupError(f"segment {number} was released")
        return self._mappings[number - self._first], offset
