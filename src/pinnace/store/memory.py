"""The store for simulated mode: all in memory, no I/O, no waiting.

A write commits at once and never suspends, except to let watchers catch up when one of them
holds more than half its buffer: a simulation that writes in a tight loop would otherwise end
every watch that shares its event loop.

With `pack_ahead` (`pinnace up --in-memory`), a thread packs the objects written as they are
committed (`pinnace.store.ahead`), for when they leave the recent changes; without it (a
simulation, which keeps its objects plain, or a test) the store has no thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pinnace.store.ahead import AheadPacker
from pinnace.store.base import Build, MvccStore
from pinnace.store.interface import Object


class MemoryStore(MvccStore):
    def __init__(self, *, pack_ahead: bool = False, **options: Any) -> None:
        """`options`: `MvccStore`'s. `pack_ahead`: pack objects on a thread as they are
        written (only with a codec that deflates: plain text takes no time to pack)."""
        super().__init__(**options)
        self._packer = AheadPacker(self.codec) if pack_ahead and self.codec.deflates else None

    async def _write(self, key: str, build: Build) -> Object:
        self._check_open()
        state = self._state
        event = build(state.latest(key), state.revision + 1)
        packer = self._packer
        if self._commit(event, None if packer is None else packer.pack(event.object)):
            await asyncio.sleep(0)
        return event.object

    async def close(self) -> None:
        if self._packer is not None:
            self._packer.close()
        self._close_watches()
