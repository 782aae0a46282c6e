"""Settled keys: those whose one retained version lies at or before the compacted revision,
which is most keys of a large cluster (running pods, Events, the objects nobody changes).

They are kept in sorted blocks of `BLOCK` to twice as many keys, as an LSM tree keeps its
tables: a block's keys are one bytes string (their common prefix, then what each key adds to
it) and their revisions and objects' JSON one deflated payload. Objects alike (a pod's Events,
pods of one node or ReplicaSet) sit side by side and deflate against each other: a key costs
~100 bytes here, where a dict entry, a string and a packed record of its own took ~330.

Reading a key inflates its block (~30 µs for 16 pods); the last 16 blocks read stay inflated. A
key leaves when it is written again (its entry is marked gone; a block is rebuilt once half
its keys are gone) and keys join in sorted batches, each block they fall in rebuilt once.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from itertools import pairwise

from pinnace.store.codec import Codec
from pinnace.store.sortedkeys import after_prefix

BLOCK = 16
"""Keys per block built; a block grows to twice as many before it is split."""
INFLATED = 16
"""Blocks kept inflated, the last read."""
_SEPARATOR = "\0"
"""Between the parts of a block's keys. Keys holding it are never settled (`settles`)."""
_SEPARATOR_BYTE = _SEPARATOR.encode()

_PIECE = 472
"""A block's payload is kept in pieces Python's small-object allocator serves (512 bytes with
the bytes object's header): they then take the room a start's burst of changes leaves when
compaction frees it, where larger objects would come from the C allocator, beside it."""

Entry = tuple[str, int, bytes]
"""A settled key, the revision of its version and its object's JSON text."""


def settles(key: str) -> bool:
    """Whether the key can be kept here."""
    return _SEPARATOR not in key


class _Block:
    __slots__ = ("gone", "names", "payload")

    def __init__(self, names: bytes, payload: tuple[bytes, ...]) -> None:
        self.names = names
        """UTF-8: the keys' common prefix, then each key's rest, separated by `_SEPARATOR`."""
        self.payload = payload
        """`Codec.pack_block` of each key's revision (8 bytes), the end offset of its JSON
        text (4 bytes), then the texts one after the other; cut in `_PIECE` bytes pieces."""
        self.gone = 0
        """Bit k is set once key k has left."""


class _Contents:
    """A block's payload inflated."""

    __slots__ = ("ends", "revisions", "text")

    def __init__(self, block: _Block, n: int, codec: Codec) -> None:
        raw = codec.inflate(b"".join(block.payload))
        header = struct.calcsize(f"<{n}Q{n}I")
        fields = struct.unpack_from(f"<{n}Q{n}I", raw)
        self.revisions = fields[:n]
        self.ends = fields[n:]
        self.text = memoryview(raw)[header:]

    def entry(self, k: int) -> tuple[int, bytes]:
        start = self.ends[k - 1] if k else 0
        return self.revisions[k], bytes(self.text[start : self.ends[k]])


def _names(block: _Block) -> list[str]:
    """The block's common prefix, then each key's rest."""
    return block.names.decode().split(_SEPARATOR)


def _size(block: _Block) -> int:
    """How many keys the block was built with, without decoding them."""
    return block.names.count(_SEPARATOR_BYTE)


def _position(names: list[str], key: str, after: bool) -> int:
    """How many of the block's keys are less than `key` (or, `after`, at most `key`)."""
    prefix = names[0]
    if key.startswith(prefix):
        rest = key[len(prefix) :]
        return (bisect_right if after else bisect_left)(names, rest, 1) - 1
    return 0 if key < prefix else len(names) - 1


class SettledKeys:
    def __init__(self, block: int = BLOCK, codec: Codec | None = None) -> None:
        """`block`: keys per block built (tests make it small, to split and merge often);
        `codec`: what packs the blocks (a new one by default)."""
        self._block = block
        self._codec = codec if codec is not None else Codec()
        self._firsts: list[str] = []  # the first key each block was built with
        self._blocks: list[_Block] = []
        self._live: list[int] = []  # per block, how many of its keys have not left
        self._len = 0
        # The blocks read last, inflated, by id (each entry keeps its block, so the id stays
        # its own): a key read often, as the namespace of every create is, stays at hand.
        self._inflated: OrderedDict[int, tuple[_Block, _Contents]] = OrderedDict()
        # The last key looked for and where it was found (None: not settled), until the blocks
        # change: a write looks its key up to read it, then again to take it out.
        self._found: tuple[str, tuple[int, int] | None] | None = None

    def __len__(self) -> int:
        return self._len

    def get(self, key: str) -> tuple[int, bytes] | None:
        """The revision and JSON text of the key, if it is settled."""
        found = self._find(key)
        if found is None:
            return None
        i, k = found
        return self._contents(self._blocks[i]).entry(k)

    def pop(self, key: str) -> tuple[int, bytes] | None:
        """Remove the key if it is settled, returning what `get` would."""
        found = self._find(key)
        if found is None:
            return None
        i, k = found
        block = self._blocks[i]
        entry = self._contents(block).entry(k)
        self._found = None
        block.gone |= 1 << k
        self._len -= 1
        self._live[i] -= 1
        if self._live[i] * 2 <= _size(block):
            self._replace(i, self._entries(i))
        return entry

    def add(self, entries: list[Entry]) -> None:
        """Settle keys, none of them settled already, given in key order."""
        if not entries:
            return
        if not self._blocks:
            self._replace(0, entries, removing=0)
            return
        # Each block is rebuilt once with the keys that fall in it (before the first block's
        # first key: in the first); from the last block back, so that indexes stay valid.
        firsts = self._firsts
        end = len(entries)
        while end:
            i = max(bisect_right(firsts, entries[end - 1][0]) - 1, 0)
            start = end - 1
            while start and (i == 0 or entries[start - 1][0] >= firsts[i]):
                start -= 1
            merged = self._entries(i) + entries[start:end]
            merged.sort()
            self._replace(i, merged)
            end = start

    def scan(self, prefix: str, start_after: str | None = None) -> Iterator[Entry]:
        """The settled keys starting with `prefix` (and greater than `start_after`), in order.

        The keys must not change while the iterator is in use.
        """
        after = start_after is not None and start_after >= prefix
        start = start_after if start_after is not None and after else prefix
        i = max(bisect_right(self._firsts, start) - 1, 0)
        first = _position(_names(self._blocks[i]), start, after) if self._blocks else 0
        while i < len(self._blocks):
            block = self._blocks[i]
            names = _names(block)
            contents = None
            for k in range(first, len(names) - 1):
                key = names[0] + names[k + 1]
                if not key.startswith(prefix):
                    return
                if block.gone >> k & 1:
                    continue
                if contents is None:
                    contents = self._contents(block)
                yield key, *contents.entry(k)
            i += 1
            first = 0

    def count(self, prefix: str, start_after: str | None = None) -> int:
        """How many keys `scan(prefix, start_after)` yields, inflating nothing."""
        if start_after is not None and start_after >= prefix:
            first = self._rank(start_after, after=True)
        else:
            first = self._rank(prefix, after=False)
        end = after_prefix(prefix)
        return max(0, (self._rank(end, after=False) if end is not None else self._len) - first)

    def _rank(self, key: str, after: bool) -> int:
        """How many settled keys are less than `key` (or, `after`, at most `key`)."""
        i = bisect_right(self._firsts, key) - 1
        if i < 0:
            return 0
        block = self._blocks[i]
        p = _position(_names(block), key, after)
        return sum(self._live[:i]) + p - (block.gone & ((1 << p) - 1)).bit_count()

    def _find(self, key: str) -> tuple[int, int] | None:
        """Which block holds the key and where in it, if the key is settled."""
        found = self._found
        if found is not None and found[0] == key:
            return found[1]
        where = self._search(key)
        self._found = (key, where)
        return where

    def _search(self, key: str) -> tuple[int, int] | None:
        i = bisect_right(self._firsts, key) - 1
        if i < 0:
            return None
        block = self._blocks[i]
        names = _names(block)
        prefix = names[0]
        if not key.startswith(prefix):
            return None
        rest = key[len(prefix) :]
        k = bisect_left(names, rest, 1)
        if k == len(names) or names[k] != rest or block.gone >> (k - 1) & 1:
            return None
        return i, k - 1

    def _contents(self, block: _Block) -> _Contents:
        inflated = self._inflated
        found = inflated.get(id(block))
        if found is not None:
            inflated.move_to_end(id(block))
            return found[1]
        contents = _Contents(block, _size(block), self._codec)
        inflated[id(block)] = (block, contents)
        if len(inflated) > INFLATED:
            inflated.popitem(last=False)
        return contents

    def _entries(self, i: int) -> list[Entry]:
        """The keys of block i that have not left, with their revisions and texts."""
        block = self._blocks[i]
        names = _names(block)
        contents = self._contents(block)
        return [
            (names[0] + names[k + 1], *contents.entry(k))
            for k in range(len(names) - 1)
            if not block.gone >> k & 1
        ]

    def _replace(self, i: int, entries: list[Entry], removing: int = 1) -> None:
        """Put blocks made of `entries` in place of the `removing` blocks from i."""
        self._found = None
        size = self._block
        n = len(entries)
        chunks = 1 if n <= 2 * size else n // size
        bounds = [n * c // chunks for c in range(chunks + 1)] if n else [0]
        blocks = [_build(entries[a:b], self._codec) for a, b in pairwise(bounds)]
        self._len += n - sum(self._live[i : i + removing])
        self._firsts[i : i + removing] = [entries[a][0] for a in bounds[:-1]]
        self._blocks[i : i + removing] = blocks
        self._live[i : i + removing] = [b - a for a, b in pairwise(bounds)]


def _build(entries: list[Entry], codec: Codec) -> _Block:
    # Character by character, not path components: the keys share more than their folders.
    prefix = os.path.commonprefix([entries[0][0], entries[-1][0]])  # noqa: RUF071
    names = _SEPARATOR.join([prefix, *(key[len(prefix) :] for key, _, _ in entries)])
    n = len(entries)
    ends = []
    end = 0
    for _, _, text in entries:
        end += len(text)
        ends.append(end)
    header = struct.pack(f"<{n}Q{n}I", *(revision for _, revision, _ in entries), *ends)
    texts = [text for _, _, text in entries]
    payload = codec.pack_block(b"".join([header, *texts]), texts[0])
    pieces = tuple(payload[i : i + _PIECE] for i in range(0, len(payload), _PIECE))
    return _Block(names.encode(), pieces)
