"""Packed changes that compaction has not reached, kept together in large anonymous mappings
rather than as a bytes object each.

A start's burst of writes leaves minutes of history until compaction drops it: millions of
packed changes of a hundred or two bytes. As objects of their own they would fill the pools of
Python's small-object allocator among the objects that live on, and when compaction freed them
the pools, and so the memory, would stay the process's. Here they fill mappings of
`SEGMENT_BYTES`, and a mapping is returned to the system whole as soon as no change in it is
kept any more (`drop`), while compaction goes.
"""

from __future__ import annotations

import mmap
import struct

SEGMENT_BYTES = 1 << 20
"""The size of a mapping; a change larger than one is not kept here."""
_FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
"""A mapping's pages made at once, in one call, rather than one fault at a time as changes
reach them (it is filled all the same), and private (a shared mapping's pages cost more to
fault in): 1.3 us of CPU for the pages of a pod's 3 KB, where faulting them in took 2.5."""

Ref = int
"""Where a change is kept: the number of its mapping times `SEGMENT_BYTES` plus its offset in
the mapping (an int takes a sixth of the memory of a change's bytes)."""

_RECORD = struct.Struct("<IQ")
"""What precedes a change: its length and its revision."""


class Segments:
    def __init__(self, size: int = SEGMENT_BYTES) -> None:
        self._size = size
        self._mappings: dict[int, _Mapping] = {}
        self._last = -1
        """The number of the mapping changes are added to."""
        self._end = size
        """Where the next change goes in that mapping (its size: none yet)."""

    def __len__(self) -> int:
        """How many mappings are held."""
        return len(self._mappings)

    def add(self, change: bytes, revision: int) -> Ref | None:
        """Keep `change`, made at `revision`, until it is dropped; None if it is too large."""
        start = self._end + _RECORD.size
        end = start + len(change)
        if end > self._size:
            if _RECORD.size + len(change) > self._size:
                return None
            self._next_mapping()
            start = _RECORD.size
            end = start + len(change)
        mapping = self._mappings[self._last]
        ref = self._last * self._size + self._end
        _RECORD.pack_into(mapping.memory, self._end, len(change), revision)
        mapping.memory[start:end] = change
        mapping.kept += 1
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
        return _RECORD.unpack_from(mapping, offset)[1]

    def drop(self, ref: Ref) -> None:
        """The change at `ref` is no longer kept: nothing may read it any more."""
        number = ref // self._size
        mapping = self._mappings[number]
        mapping.kept -= 1
        if not mapping.kept and number != self._last:
            self._release(number)

    def _next_mapping(self) -> None:
        last = self._mappings.get(self._last)
        if last is not None and not last.kept:
            self._release(self._last)
        self._last += 1
        self._mappings[self._last] = _Mapping(self._size)
        self._end = 0

    def _release(self, number: int) -> None:
        self._mappings.pop(number).memory.close()

    def _locate(self, ref: Ref) -> tuple[mmap.mmap, int]:
        number, offset = divmod(ref, self._size)
        mapping = self._mappings.get(number)
        if mapping is None:
            raise LookupError(f"segment {number} was released")
        return mapping.memory, offset


class _Mapping:
    __slots__ = ("kept", "memory")

    def __init__(self, size: int) -> None:
        self.memory = mmap.mmap(-1, size, flags=_FLAGS)
        self.kept = 0
        """How many changes it keeps: it is unmapped when none is left."""
