"""PrioritySort (pkg/scheduler/framework/plugins/queuesort): higher spec.priority first, then
the pod that entered the queue (or last failed) earlier."""

from __future__ import annotations

from typing import Any


class PrioritySort:
    name = "PrioritySort"

    def sort_key(self, queued: Any) -> tuple[Any, ...]:
        return (-queued.pod.priority, queued.timestamp)
