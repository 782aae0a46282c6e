"""Retrying a read-modify-write that lost a race, as client-go's retry.RetryOnConflict."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from pinnace.api.status import StatusError
from pinnace.clock import Clock

T = TypeVar("T")

CONFLICT_ATTEMPTS = 5
CONFLICT_DELAY = 0.010
"""client-go's retry.DefaultRetry: 5 steps 10 ms apart (its 10 % jitter is left out so a
simulation stays reproducible)."""


def is_conflict(error: StatusError) -> bool:
    return error.code == 409 and error.reason == "Conflict"


async def retry_on_conflict(
    clock: Clock,
    attempt: Callable[[], Awaitable[T]],
    attempts: int = CONFLICT_ATTEMPTS,
    delay: float = CONFLICT_DELAY,
) -> T:
    """`attempt()`, run again after `delay` while it fails with 409 Conflict; the last
    conflict is raised once `attempts` are spent. Other errors are raised at once."""
    for _ in range(attempts - 1):
        try:
            return await attempt()
        except StatusError as e:
            if not is_conflict(e):
                raise
        await clock.sleep(delay)
    return await attempt()
