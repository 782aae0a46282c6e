"""The back-off between tries of a failing volume set-up, as the v1.32 volume manager's
(pkg/volume/util/nestedpendingoperations with exponentialbackoff): after a failure a volume is
not tried again for 0.5 s, then for twice as long after each further failure, up to 2 min 2 s;
a success forgets it."""

from __future__ import annotations

from collections.abc import Iterable

INITIAL_DURATION_BEFORE_RETRY = 0.5
MAX_DURATION_BEFORE_RETRY = 122.0


class MountBackoff:
    """One pod's failing volumes: each its wait and when it last failed."""

    __slots__ = ("_failed",)

    def __init__(self) -> None:
        self._failed: dict[str, tuple[float, float]] = {}

    def waiting(self, now: float) -> set[str]:
        """The volumes not to be tried yet (SafeToRetry fails)."""
        return {v for v, (wait, at) in self._failed.items() if now < at + wait}

    def failed(self, volume: str, now: float) -> None:
        previous = self._failed.get(volume)
        wait = INITIAL_DURATION_BEFORE_RETRY if previous is None else 2 * previous[0]
        self._failed[volume] = (min(wait, MAX_DURATION_BEFORE_RETRY), now)

    def forget(self, volumes: Iterable[str]) -> None:
        for volume in volumes:
            self._failed.pop(volume, None)

    def next_try(self) -> float | None:
        """When the first waiting volume may be tried again."""
        return min((at + wait for wait, at in self._failed.values()), default=None)
