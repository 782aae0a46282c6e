"""A sorted set of string keys with cheap inserts and ordered range scans.

A plain sorted list costs a memmove of the whole list per insert, which shows at a million
keys; keys are kept instead in sorted chunks of bounded size (the layout of the
`sortedcontainers` package), so an insert moves at most one chunk.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator

_CHUNK = 512
"""Chunks split in two when they grow past twice this."""


class SortedKeys:
    def __init__(self) -> None:
        self._chunks: list[list[str]] = []
        self._maxes: list[str] = []  # last key of each chunk
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def add(self, key: str) -> None:
        """Insert `key`, which must not be present."""
        maxes = self._maxes
        if not maxes:
            self._chunks.append([key])
            maxes.append(key)
            self._len = 1
            return
        i = bisect_left(maxes, key)
        if i == len(maxes):
            i -= 1
            self._chunks[i].append(key)
            maxes[i] = key
        else:
            insort(self._chunks[i], key)
        self._len += 1
        chunk = self._chunks[i]
        if len(chunk) > 2 * _CHUNK:
            self._chunks[i : i + 1] = [chunk[:_CHUNK], chunk[_CHUNK:]]
            maxes[i : i + 1] = [chunk[_CHUNK - 1], chunk[-1]]

    def stored(self, key: str) -> str:
        """The string kept for `key`, which must be present."""
        chunk = self._chunks[bisect_left(self._maxes, key)]
        return chunk[bisect_left(chunk, key)]

    def remove(self, key: str) -> None:
        """Remove `key`, which must be present."""
        i = bisect_left(self._maxes, key)
        chunk = self._chunks[i]
        del chunk[bisect_left(chunk, key)]
        self._len -= 1
        if chunk:
            self._maxes[i] = chunk[-1]
        else:
            del self._chunks[i]
            del self._maxes[i]

    def count(self, prefix: str, start_after: str | None = None) -> int:
        """How many keys `scan(prefix, start_after)` yields, without visiting them."""
        if start_after is not None and start_after >= prefix:
            first = self._rank(start_after, bisect_right)
        else:
            first = self._rank(prefix, bisect_left)
        end = after_prefix(prefix)
        return max(0, (self._rank(end, bisect_left) if end is not None else self._len) - first)

    def _rank(self, key: str, bisect: Callable[[list[str], str], int]) -> int:
        """How many keys come before `key` (bisect_left) or before and at it (bisect_right)."""
        i = bisect(self._maxes, key)
        if i == len(self._chunks):
            return self._len
        return sum(len(chunk) for chunk in self._chunks[:i]) + bisect(self._chunks[i], key)

    def scan(self, prefix: str, start_after: str | None = None) -> Iterator[str]:
        """Keys starting with `prefix` (and greater than `start_after`), in order.

        The set must not change while the iterator is in use.
        """
        if start_after is not None and start_after >= prefix:
            i = bisect_right(self._maxes, start_after)
            j = bisect_right(self._chunks[i], start_after) if i < len(self._chunks) else 0
        else:
            i = bisect_left(self._maxes, prefix)
            j = bisect_left(self._chunks[i], prefix) if i < len(self._chunks) else 0
        chunks = self._chunks
        while i < len(chunks):
            chunk = chunks[i]
            for k in range(j, len(chunk)):
                key = chunk[k]
                if not key.startswith(prefix):
                    return
                yield key
            i += 1
            j = 0


def after_prefix(prefix: str) -> str | None:
    """The least string greater than every string starting with `prefix` (None if none is)."""
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            return prefix[:-1] + chr(last + 1)
        prefix = prefix[:-1]
    return None
