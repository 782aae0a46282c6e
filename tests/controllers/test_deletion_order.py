"""Which surplus pods a ReplicaSet deletes first: v1.32's ActivePodsWithRanks order, one rule
at a time, each deciding only when the rules before it tie."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import format_time
from pinnace.controllers.controller_utils import (
    POD_DELETION_COST,
    active_pods_to_delete,
    pods_to_delete,
)

NOW = 1_800_000_000.0


def pod(
    name: str,
    node: str = "n1",
    phase: str = "Running",
    ready_since: float | None = NOW - 3600,
    created: float | None = NOW - 7200,
    restarts: int = 0,
    cost: str | None = None,
    **extra: Any,
) -> Object:
    status: dict[str, Any] = {
        "phase": phase,
        "containerStatuses": [{"name": "app", "restartCount": restarts}],
    }
    if ready_since is not None:
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_since)}
        status["conditions"] = [ready]
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if created is not None:
        metadata["creationTimestamp"] = format_time(created)
    if cost is not None:
        metadata["annotations"] = {POD_DELETION_COST: cost}
    spec: dict[str, Any] = {"nodeName": node} if node else {}
    return {"metadata": metadata, "spec": spec, "status": {**status, **extra}}


def first(*pods: Object, related: tuple[Object, ...] = ()) -> str:
    [victim] = pods_to_delete(list(pods), related, 1, NOW)
    return victim["metadata"]["name"]


def test_an_unassigned_pod_goes_before_an_assigned_one() -> None:
    assert first(pod("assigned", phase="Pending"), pod("unassigned", node="", phase="Pending")) == (
        "unassigned"
    )


def test_pending_goes_before_unknown_before_running() -> None:
    running, unknown = pod("running"), pod("unknown", phase="Unknown", ready_since=None)
    assert first(running, unknown) == "unknown"
    assert first(running, unknown, pod("pending", phase="Pending", ready_since=None)) == "pending"


def test_a_pod_not_ready_goes_before_a_ready_one_despite_its_restarts() -> None:
    assert first(pod("ready", restarts=9), pod("unready", ready_since=None)) == "unready"


def test_a_lower_deletion_cost_goes_first_even_from_a_quiet_node() -> None:
    cheap = pod("cheap", node="n2", cost="-5")
    crowded = (pod("a", cost="10"), pod("b", cost="10"))
    assert first(*crowded, cheap, related=(*crowded, cheap)) == "cheap"


@pytest.mark.parametrize("cost", ["+5", "007", "1_000", "5 ", "abc", "-", "2147483648"])
def test_a_deletion_cost_kubernetes_cannot_read_counts_as_zero(cost: str) -> None:
    assert first(pod("one", cost="1"), pod("unreadable", cost=cost)) == "unreadable"


def test_the_pod_with_more_related_pods_on_its_node_goes_first() -> None:
    quiet, busy = pod("quiet", node="n2", ready_since=NOW - 1), pod("busy", node="n1")
    neighbours = (busy, pod("other-rs-pod", node="n1"), quiet)
    assert first(quiet, busy, related=neighbours) == "busy"
    # Finished pods are not counted on their node.
    done = pod("done", node="n1", phase="Succeeded")
    assert first(quiet, busy, related=(busy, done, quiet)) == "quiet"


def test_the_more_recently_ready_goes_first_by_powers_of_two_of_its_age() -> None:
    assert first(pod("long-ready", ready_since=NOW - 5000), pod("new", ready_since=NOW - 5)) == (
        "new"
    )
    # 70 s and 100 s ago are both 2^36 ns old or so: the same bucket, decided by uid.
    assert first(pod("b", ready_since=NOW - 70), pod("a", ready_since=NOW - 100)) == "a"


def test_more_restarts_go_first_and_a_sidecar_s_restarts_only_break_ties() -> None:
    assert first(pod("steady", restarts=1), pod("crashy", restarts=4)) == "crashy"
    spec_sidecar = [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]
    flaky_sidecar = pod(
        "flaky-sidecar", initContainerStatuses=[{"name": "proxy", "restartCount": 7}]
    )
    flaky_sidecar["spec"]["initContainers"] = spec_sidecar
    assert first(pod("plain"), flaky_sidecar) == "flaky-sidecar"
    assert first(pod("crashy", restarts=1), flaky_sidecar) == "crashy"
    # An init container that is not a sidecar has finished: its restarts do not count.
    init_retried = pod("init-retried", initContainerStatuses=[{"name": "setup", "restartCount": 7}])
    init_retried["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    assert first(pod("a-plain"), init_retried) == "a-plain"


def test_the_newer_pod_goes_first_and_one_without_a_creation_time_before_all() -> None:
    assert first(pod("old", created=NOW - 90_000), pod("young", created=NOW - 50)) == "young"
    assert first(pod("young", created=NOW - 50), pod("timeless", created=None)) == "timeless"


def test_a_job_orders_by_exact_times_without_deletion_cost_or_buckets() -> None:
    """The Job controller sorts by ActivePods: the same first rules, then the more recently
    ready and the newer by their exact times; no deletion cost, no node ranks."""

    def job_first(*pods: Object) -> str:
        [victim] = active_pods_to_delete(list(pods), 1)
        return victim["metadata"]["name"]

    assert job_first(pod("b", ready_since=NOW - 70), pod("a", ready_since=NOW - 100)) == "b"
    assert job_first(pod("b", created=NOW - 70), pod("a", created=NOW - 100)) == "b"
    assert job_first(pod("costly", cost="100", ready_since=NOW - 1), pod("cheap", cost="-100")) == (
        "costly"
    )
    assert job_first(pod("ready"), pod("pending", phase="Pending", ready_since=None)) == "pending"
    assert job_first(pod("steady"), pod("crashy", restarts=2)) == "crashy"
