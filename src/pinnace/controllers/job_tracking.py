"""The pods whose tracking finalizer the Job controller asked to remove and has not yet seen
gone (uidTrackingExpectations): until it sees them, it does not count them again."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


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
