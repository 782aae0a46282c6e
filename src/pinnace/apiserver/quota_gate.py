"""Keeps a ResourceQuota recount from taking back a charge whose object is not stored yet.

Quota admission charges a create's usage to the namespace's quotas (a write of their status)
before the object is stored, as kube-apiserver's quota evaluator does; the recount
(`AdmissionChain.after_write`) measures the stored objects and writes what it measured.
Between a charge and its object's write the two disagree, and a recount made then would undo
the charge: with a quota of `pods: 2`, a third pod got in. So, per namespace:

- charges are made one at a time, as kube-apiserver's evaluator works through one
  namespace's admissions with one worker at a time;
- a create that charged usage is in flight until its write is over, stored or refused;
- a recount holds the namespace's turn, so no charge starts, and first waits until the
  creates in flight have landed: it then measures every object that was charged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class _Namespace:
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    in_flight: int = 0
    landed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever no charged create is in flight."""
    users: int = 0


class QuotaGate:
    def __init__(self) -> None:
        self._namespaces: dict[str, _Namespace] = {}

    @asynccontextmanager
    async def charge(
        self, namespace: str, charge: Callable[[], Awaitable[bool]]
    ) -> AsyncIterator[bool]:
        """Run `charge` (it answers whether it charged usage) in the namespace's turn; a
        create that charged is in flight until the block, its store write, ends."""
        async with self._entry(namespace) as entry:
            async with entry.turn:
                charged = await charge()
                if charged:
                    entry.in_flight += 1
                    entry.landed.clear()
            try:
                yield charged
            finally:
                if charged:
                    entry.in_flight -= 1
                    if not entry.in_flight:
                        entry.landed.set()

    def idle(self, namespace: str) -> bool:
        """No charge or recount of the namespace holds or waits for its turn, or is in
        flight: a charge would have the turn at once."""
        return namespace not in self._namespaces

    @asynccontextmanager
    async def recount(self, namespace: str) -> AsyncIterator[None]:
        """The namespace's turn, once every charged create in flight has landed."""
        async with self._entry(namespace) as entry, entry.turn:
            while entry.in_flight:
                await entry.landed.wait()
            yield

    @asynccontextmanager
    async def _entry(self, namespace: str) -> AsyncIterator[_Namespace]:
        entry = self._namespaces.get(namespace)
        if entry is None:
            entry = self._namespaces[namespace] = _Namespace()
        entry.users += 1
        try:
            yield entry
        finally:
            entry.users -= 1
            if not entry.users:
                del self._namespaces[namespace]
