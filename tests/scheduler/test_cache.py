"""The cache: assume -> bind -> confirm, forget on a failed bind; no pod placed twice and no
node over-committed by decisions taken before their binds are confirmed."""

import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import Cache, PodInfo, Scheduler
from pinnace.scheduler.cache import CacheError
from pinnace.scheduler.plugins import default_profile


def node(name: str, cpu: str = "1") -> dict:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "10"}}}


def pod(name: str, cpu: str = "600m", node_name: str = "") -> dict:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_assume_accounts_the_pod_and_forget_gives_it_back() -> None:
    cache = Cache()
    cache.add_node(node("n"))
    info = PodInfo.from_pod(pod("p"))
    cache.assume(info, "n")
    assert cache.table.node_info(0).requested["cpu"] == 600
    with pytest.raises(CacheError, match="pod ns/p is in the cache, so can't be assumed"):
        cache.assume(info, "n")
    cache.forget(info)
    assert cache.table.node_info(0).requested["cpu"] == 0
    assert not cache.knows("ns/p")


def test_confirmation_replaces_the_assumed_pod_once() -> None:
    cache = Cache()
    cache.add_node(node("n"))
    cache.assume(PodInfo.from_pod(pod("p")), "n")
    cache.add_pod(PodInfo.from_pod(pod("p", node_name="n")))
    assert not cache.is_assumed("ns/p") and cache.node_of("ns/p") == "n"
    assert cache.table.node_info(0).requested == {
        "cpu": 600,
        "memory": 0,
        "ephemeral-storage": 0,
        "pods": 1,
    }
    cache.remove_pod("ns/p")
    assert cache.table.node_info(0).requested["pods"] == 0


def test_decisions_before_binds_confirm_never_overcommit_a_node() -> None:
    bindings: list[dict] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bindings.append)], clock)
        scheduler.add_node(node("n"))
        scheduler.add_pod(pod("a"))
        scheduler.add_pod(pod("b"))
        first, second = scheduler.schedule_pending()
    assert first.node_name == "n"
    assert second.node_name is None
    assert second.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    )
    assert [b["metadata"]["name"] for b in bindings] == ["a"]


def test_a_pod_already_assumed_or_bound_is_never_scheduled_again() -> None:
    bindings: list[dict] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bindings.append)], clock)
        scheduler.add_node(node("n", cpu="4"))
        scheduler.add_pod(pod("a"))
        assert scheduler.schedule_one().node_name == "n"
        scheduler.add_pod(pod("a"))  # the informer replays the pending pod
        assert scheduler.schedule_pending() == []
        scheduler.update_pod(pod("a"), pod("a", node_name="n"))  # the bind is confirmed
        assert scheduler.schedule_pending() == []
    assert len(bindings) == 1


def test_a_failed_bind_forgets_the_pod_and_retries_after_backoff() -> None:
    calls: list[dict] = []

    def refuse_once(binding: dict) -> None:
        calls.append(binding)
        if len(calls) == 1:
            raise RuntimeError('Operation cannot be fulfilled on pods/binding "a": conflict')

    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(refuse_once)], clock)
        scheduler.add_node(node("n"))
        scheduler.add_pod(pod("a"))
        failed = scheduler.schedule_one()
        assert failed.node_name is None and failed.reason == "FailedScheduling"
        assert failed.message == 'Operation cannot be fulfilled on pods/binding "a": conflict'
        assert scheduler.table.node_info(0).requested["cpu"] == 0
        assert scheduler.schedule_one() is None, "backing off for 1 s"
        clock.advance(1)
        assert scheduler.schedule_one().node_name == "n"
    assert calls[1]["target"] == {"kind": "Node", "name": "n"}


def test_a_bound_pod_seen_again_is_read_again_for_what_changed() -> None:
    """The scheduler keeps what it read of an assumed pod when the binding comes back, and
    reads anew whatever else changed: a bound pod updated later counts its new requests."""
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(lambda binding: None)], clock)
        scheduler.add_node(node("n", cpu="2"))
        pending = pod("p")
        scheduler.add_pod(pending)
        (placed,) = scheduler.schedule_pending()
        assert placed.node_name == "n"
        bound = {**pending, "spec": {**pending["spec"], "nodeName": "n"}}
        bound["status"] = {"conditions": [{"type": "PodScheduled", "status": "True"}]}
        scheduler.update_pod(pending, bound)
        assert scheduler.cache.pod("ns/p") == PodInfo.from_pod(bound)
        assert scheduler.cache.table.node_info(0).requested["cpu"] == 600
        grown = pod("p", cpu="1500m", node_name="n")
        grown["metadata"]["labels"] = {"app": "web"}
        scheduler.update_pod(bound, grown)
        assert scheduler.cache.pod("ns/p") == PodInfo.from_pod(grown)
        assert scheduler.cache.table.node_info(0).requested["cpu"] == 1500
        resized = {
            **grown,
            "status": {
                "containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "1800m"}}}]
            },
        }
        scheduler.update_pod(grown, resized)
        assert scheduler.cache.pod("ns/p") == PodInfo.from_pod(resized)
        assert scheduler.cache.table.node_info(0).requested["cpu"] == 1800


def test_a_confirmed_pod_with_anti_affinity_still_keeps_others_off_its_node() -> None:
    """Confirming an assumed pod leaves its node's amounts alone; the terms of a pod with
    (anti-)affinity are read again, so they hold for the pods that come after."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "host"}
            ]
        }
    }
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(lambda binding: None)], clock)
        for name in ("n1", "n2"):
            scheduler.add_node(
                {**node(name, cpu="4"), "metadata": {"name": name, "labels": {"host": name}}}
            )
        first = pod("a")
        first["metadata"]["labels"] = {"app": "web"}
        first["spec"]["affinity"] = anti
        scheduler.add_pod(first)
        (placed,) = scheduler.schedule_pending()
        bound = {**first, "spec": {**first["spec"], "nodeName": placed.node_name}}
        scheduler.update_pod(first, bound)
        assert scheduler.cache.pod("ns/a") == PodInfo.from_pod(bound)
        assert (
            scheduler.cache.table.node_info(scheduler.table.index[placed.node_name]).requested[
                "cpu"
            ]
            == 600
        )
        second = pod("b")
        second["metadata"]["labels"] = {"app": "web"}
        scheduler.add_pod(second)
        (other,) = scheduler.schedule_pending()
        assert other.node_name not in (None, placed.node_name)
