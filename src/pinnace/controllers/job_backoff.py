"""The delay before a Job replaces failed pods, as kube-controller-manager (v1.32) computes it:
10 s after the latest failure, doubling with each failure since the last success, at most
10 minutes. The record lives in the controller's memory, as in Kubernetes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import parse_time

DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


@dataclass(frozen=True)
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def after(self, succeeded: Iterable[Object], failed: Iterable[Object]) -> BackoffRecord:
        """The record once the newly finished pods are taken into account: a success resets
        the count to the failures that finished after the latest success."""
        failed_times = sorted(finished_time(p) for p in failed)
        succeeded_times = sorted(finished_time(p) for p in succeeded)
        if not succeeded_times:
            if not failed_times:
                return self
            return BackoffRecord(
                self.failures_after_last_success + len(failed_times), failed_times[-1]
            )
        later = [t for t in failed_times if t > succeeded_times[-1]]
        return BackoffRecord(len(later), later[-1] if later else None)

    def remaining(self, now: float) -> float:
        """Seconds until pods may be created again (0: now)."""
        return remaining_delay(self.failures_after_last_success, self.last_failure_time, now)


def remaining_delay(failures: int, last_failure_time: float | None, now: float) -> float:
    """Seconds left of the back-off after `failures` consecutive failures, the latest at
    `last_failure_time` (0: none left)."""
    if failures == 0 or last_failure_time is None:
        return 0.0
    delay = DEFAULT_POD_FAILURE_BACKOFF
    for _ in range(1, failures):
        delay *= 2
        if delay >= MAX_POD_FAILURE_BACKOFF:
            delay = MAX_POD_FAILURE_BACKOFF
            break
    return max(0.0, delay - (now - last_failure_time))


def _time(text: str | None) -> float | None:
    return parse_time(text) if text else None


def finished_time(pod: Object) -> float:
    """When the pod finished: its containers' latest finishedAt when all have terminated,
    else when it turned not Ready, else when it was deleted (less the grace period), else
    when it was created."""
    status = pod.get("status") or {}
    times = [
        _time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for s in status.get("containerStatuses") or []
    ]
    if times and all(t is not None for t in times):
        return max(t for t in times if t is not None)
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "False":
            since = _time(c.get("lastTransitionTime"))
            if since is not None:
                return since
    meta = pod["metadata"]
    deleted = _time(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - (meta.get("deletionGracePeriodSeconds") or 0)
    return _time(meta.get("creationTimestamp")) or 0.0
