"""The store for simulated mode: all in memory, no threads, no I/O, no waiting.

A write commits at once and never suspends, except to let watchers catch up when one of them
holds more than half its buffer: a simulation that writes in a tight loop would otherwise end
every watch that shares its event loop.
"""

from __future__ import annotations

import asyncio

from pinnace.store.base import Build, MvccStore
from pinnace.store.interface import Object


class MemoryStore(MvccStore):
    async def _write(self, key: str, build: Build) -> Object:
        self._check_open()
        state = self._state
        event = build(state.latest(key), state.revision + 1)
        if self._commit(event):
            await asyncio.sleep(0)
        return event.object

    async def close(self) -> None:
        self._close_watches()
