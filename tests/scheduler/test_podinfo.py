"""PodInfo.updated reads a newer version of a pod as from_pod does, keeping what it read
before only where that is unchanged."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pinnace.scheduler.podinfo import PodInfo


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": "p", "uid": "u1", "labels": {"a": "1"}},
        "spec": {
            "nodeName": "",
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
        "status": {"phase": "Pending"},
    }


def _bound(pod: dict[str, Any]) -> None:
    pod["spec"]["nodeName"] = "node-1"
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]


def _running(pod: dict[str, Any]) -> None:
    pod["status"]["phase"] = "Running"
    pod["status"]["containerStatuses"] = [{"name": "c", "ready": True, "restartCount": 0}]


def _resized(pod: dict[str, Any]) -> None:
    pod["status"]["containerStatuses"] = [
        {"name": "c", "resources": {"requests": {"cpu": "300m"}}, "restartCount": 0}
    ]


def _resize_infeasible(pod: dict[str, Any]) -> None:
    _resized(pod)
    pod["status"]["resize"] = "Infeasible"


def _relabelled(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"] = {"a": "2"}


def _restarted(pod: dict[str, Any]) -> None:
    _resized(pod)
    pod["status"]["containerStatuses"][0]["restartCount"] = 1


@pytest.mark.parametrize(
    "change", [_bound, _running, _resized, _resize_infeasible, _relabelled, _restarted]
)
def test_updated_reads_what_from_pod_reads(change: Callable[[dict[str, Any]], None]) -> None:
    for before in (_pod(), _resized_pod()):
        after = copy.deepcopy(before)
        change(after)
        assert PodInfo.from_pod(before).updated(after) == PodInfo.from_pod(after)


def _resized_pod() -> dict[str, Any]:
    pod = _pod()
    _resized(pod)
    return pod


def test_a_status_change_alone_keeps_what_was_read() -> None:
    pod = _pod()
    running = copy.deepcopy(pod)
    _running(running)
    info = PodInfo.from_pod(pod)
    assert info.updated(running).images is info.images  # not read again
