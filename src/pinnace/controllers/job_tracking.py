"""Counting a Job's finished pods through their tracking finalizer: the pods whose finalizer
the controller asked to remove and has not yet seen gone (uidTrackingExpectations: until it
sees them, it does not count them again), and the move of uncounted uids to the counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.objects import Object


@dataclass
class FinalizerExpectations:
    _by_key: dict[str, set[str]] = field(default_factory=dict)

    def expect(self, key: str, uids: Iterable[str]) -> None:
        self._by_key.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        uids = self._by_key.get(key)
        if uids is not None:
            uids.discard(uid)

    def expected(self, key: str) -> set[str]:
        return set(self._by_key.get(key, ()))

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)


def set_omitempty(status: Object, name: str, value: Any) -> None:
    """Set an omitempty status field."""
    if value:
        status[name] = value
    else:
        status.pop(name, None)


def count_uncounted(status: Object, with_finalizer: set[str]) -> bool:
    """Move the uncounted uids whose pod lost its finalizer to the succeeded and failed
    counters (cleanUncountedPodsWithoutFinalizers). Returns whether anything moved."""
    uncounted = status["uncountedTerminatedPods"]
    moved = False
    for name in ("succeeded", "failed"):
        uids = uncounted.get(name) or []
        left = [u for u in uids if u in with_finalizer]
        if len(left) != len(uids):
            moved = True
            set_omitempty(status, name, status.get(name, 0) + len(uids) - len(left))
            set_omitempty(uncounted, name, left)
    return moved
