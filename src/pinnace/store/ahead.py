"""Packing a memory store's objects ahead, off the event loop, as the SQLite store's writer
thread packs its batches: a change keeps its object as written while it is among the recent
ones and is packed (`Codec`, mostly deflate, which runs without the GIL) when it leaves them,
or when a later write replaces a live key's held change (a node's Lease, every 10 s). On the
event loop, which every write and watch waits for, that took about a tenth of a live start's
time (`pinnace bench nodes`); here a thread packs each change soon after its commit, and the
store takes the packed form from it when the change leaves the recent ones, or packs it then
itself if the thread has not got to it yet.

The writes of one turn of the event loop are handed to the thread at once, so a start's
thousands of writes a second cost one hand-over a turn, not one each.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor

from pinnace.store.codec import Codec
from pinnace.store.interface import Object


class Ahead:
    """One object's packed form, once the packing thread has made it (None until then, and if
    it could not: the store packs it itself, and says why)."""

    __slots__ = ("packed",)

    def __init__(self) -> None:
        self.packed: bytes | None = None


class AheadPacker:
    """Packs the objects it is given on a thread of its own, a turn of the event loop's at a
    time."""

    def __init__(self, codec: Codec) -> None:
        self._codec = codec
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="pinnace-pack")
        self._turn: list[tuple[Ahead, Object]] = []

    def pack(self, obj: Object) -> Ahead:
        """Where `obj`'s packed form will be. `obj` must not change (a stored object does not)."""
        ahead = Ahead()
        if not self._turn:
            asyncio.get_running_loop().call_soon(self._hand_over)
        self._turn.append((ahead, obj))
        return ahead

    def close(self) -> None:
        """Pack nothing more: what is still queued is dropped (the store packs it if need be)."""
        self._turn = []
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _hand_over(self) -> None:
        turn, self._turn = self._turn, []
        if turn:
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._executor.submit(_pack_all, self._codec, turn)


def _pack_all(codec: Codec, turn: list[tuple[Ahead, Object]]) -> None:
    pack = codec.pack
    for ahead, obj in turn:
        # Not JSON: left to the event loop, where packing raises the error as before.
        with contextlib.suppress(TypeError):
            ahead.packed = pack(obj)
