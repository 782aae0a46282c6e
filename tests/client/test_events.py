"""Events as client-go's recorder writes them, checked as `kubectl get events -o wide` shows
them (LAST SEEN, TYPE, REASON, OBJECT, SUBOBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT, NAME)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from tests.client.conftest import EVENTS, NODES, PODS, Cluster, pod

from pinnace.api.objects import Object
from pinnace.api.tables import to_table
from pinnace.client.correlator import LRU_CACHE_ENTRIES
from pinnace.client.events import EventRecorder, NameStamps


async def kubectl_get_events(cluster: Cluster, namespace: str = "default") -> list[list[object]]:
    listed = await cluster.client.list(EVENTS, namespace)
    items = sorted(listed["items"], key=lambda e: e["lastTimestamp"])
    table = to_table(EVENTS, items, now=cluster.server.clock.now(), list_meta={})
    return [row["cells"][:9] for row in table["rows"]]


async def events(cluster: Cluster, namespace: str = "default") -> list[Object]:
    return (await cluster.client.list(EVENTS, namespace))["items"]


def test_an_event_names_the_object_and_the_source(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "default-scheduler")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        recorder.event(created, "Normal", "Scheduled", "Successfully assigned default/web to n1")
        await recorder.flush()
        [event] = await events(cluster)
        m = created["metadata"]
        assert event["involvedObject"] == {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "uid": m["uid"],
            "apiVersion": "v1",
            "resourceVersion": m["resourceVersion"],
        }
        assert event["source"] == {"component": "default-scheduler"}
        assert event["reportingComponent"] == "default-scheduler"
        assert event["count"] == 1
        assert event["firstTimestamp"] == event["lastTimestamp"] == "2025-01-01T00:00:00Z"
        assert event["metadata"]["name"].startswith("web.")
        await asyncio.sleep(42)
        assert await kubectl_get_events(cluster) == [
            [
                "42s",
                "Normal",
                "Scheduled",
                "pod/web",
                "",
                "default-scheduler",
                "Successfully assigned default/web to n1",
                "42s",
                1,
            ]
        ]

    cluster.run(scenario())


def test_a_repeated_event_counts_up_in_one_event(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        for _ in range(3):
            recorder.event(created, "Warning", "BackOff", "Back-off restarting failed container")
            await asyncio.sleep(60)
        recorder.event(created, "Normal", "Pulled", "Container image already present")
        await recorder.flush()
        assert await kubectl_get_events(cluster) == [
            [
                "60s",
                "Warning",
                "BackOff",
                "pod/web",
                "",
                "kubelet, node-1",
                "Back-off restarting failed container",
                "3m",
                3,
            ],
            [
                "0s",
                "Normal",
                "Pulled",
                "pod/web",
                "",
                "kubelet, node-1",
                "Container image already present",
                "0s",
                1,
            ],
        ]

    cluster.run(scenario())


def test_the_recorder_remembers_the_last_4096_objects_only(cluster: Cluster) -> None:
    """client-go's correlator caches are LRUs of 4096 entries: a repeat that comes after events
    about 4096 other objects is no longer counted into the earlier event, and a recorder's
    memory stays bounded however many objects it reports on."""
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    def reference(name: str) -> Object:
        meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}

    async def scenario() -> None:
        web = reference("web")
        recorder.event(web, "Normal", "Pulled", "Container image already present")
        recorder.event(web, "Normal", "Pulled", "Container image already present")
        for i in range(LRU_CACHE_ENTRIES):
            recorder.event(reference(f"other-{i}"), "Normal", "Started", "Started container")
        recorder.event(web, "Normal", "Pulled", "Container image already present")
        await recorder.flush()
        counts = sorted(
            e["count"] for e in await events(cluster) if e["involvedObject"]["name"] == "web"
        )
        assert counts == [1, 2]

    cluster.run(scenario())


def test_the_recorder_remembers_the_last_4096_events_of_each_kind_only(cluster: Cluster) -> None:
    """The bound holds however the events spread over objects: 4096 different events about one
    other object make a repeat a new Event too."""
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")
    web, busy = pod("web"), pod("busy")

    async def scenario() -> None:
        recorder.event(web, "Normal", "Pulled", "Container image already present")
        for i in range(LRU_CACHE_ENTRIES):
            recorder.event(busy, "Warning", f"Reason{i}", "Something happened")
        recorder.event(web, "Normal", "Pulled", "Container image already present")
        await recorder.flush()
        counts = [e["count"] for e in await events(cluster) if e["involvedObject"]["name"] == "web"]
        assert counts == [1, 1]

    cluster.run(scenario())


def test_ten_messages_for_one_reason_are_combined(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "default-scheduler")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        for n in range(1, 13):
            recorder.event(created, "Warning", "FailedScheduling", f"0/{n} nodes are available")
            await asyncio.sleep(1)
        await recorder.flush()
        rows = await kubectl_get_events(cluster)
        assert [(r[6], r[8]) for r in rows] == [
            *[(f"0/{n} nodes are available", 1) for n in range(1, 10)],
            ("(combined from similar events): 0/12 nodes are available", 3),
        ]

    cluster.run(scenario())


def test_a_burst_past_25_events_is_dropped_until_the_budget_refills(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "kubelet")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        for _ in range(30):
            recorder.event(created, "Warning", "Unhealthy", "Readiness probe failed")
        await recorder.flush()
        [event] = await events(cluster)
        assert event["count"] == 25
        await asyncio.sleep(300)
        recorder.event(created, "Warning", "Unhealthy", "Readiness probe failed")
        await recorder.flush()
        [event] = await events(cluster)
        assert event["count"] == 31  # as client-go: dropped repeats still count

    cluster.run(scenario())


def test_events_about_cluster_scoped_objects_go_to_default(cluster: Cluster) -> None:
    recorder = EventRecorder(cluster.client, "node-controller")

    async def scenario() -> None:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        created = await cluster.client.create(NODES, "", node)
        recorder.event(created, "Normal", "RegisteredNode", "Node n1 event: Registered Node n1")
        await recorder.flush()
        rows = await kubectl_get_events(cluster)
        assert [r[2:4] for r in rows] == [["RegisteredNode", "node/n1"]]

    cluster.run(scenario())


def test_same_instant_events_about_one_object_are_all_kept(cluster: Cluster) -> None:
    scheduler = EventRecorder(cluster.client, "default-scheduler")
    kubelet = EventRecorder(cluster.client, "kubelet", "n1")
    creates: list[str] = []
    create = cluster.client.create_own  # as the recorders create their Events

    async def counted(kind, namespace, obj, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kind == EVENTS:
            creates.append(obj["metadata"]["name"])
        return await create(kind, namespace, obj, *args, **kwargs)

    cluster.client.create_own = counted  # type: ignore[method-assign]

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        scheduler.event(created, "Normal", "Scheduled", "Successfully assigned default/web to n1")
        kubelet.event(
            created, "Normal", "Pulled", "image present", field_path="spec.containers{app}"
        )
        kubelet.event(created, "Normal", "Started", "Started container app")
        await scheduler.flush()
        await kubelet.flush()
        rows = await kubectl_get_events(cluster)
        assert sorted((r[2], r[4]) for r in rows) == [
            ("Pulled", "spec.containers{app}"),
            ("Scheduled", ""),
            ("Started", ""),
        ]
        # the recorders of one cluster share the names they gave: one create an event
        assert len(creates) == len(set(creates)) == 3

    cluster.run(scenario())


def test_a_repeat_of_an_event_whose_name_was_taken_counts_on_the_name_it_got(
    cluster: Cluster,
) -> None:
    """The recorder remembers the Event as the server stored it: one written under a name moved
    on past another's is the one a repeat patches, not the other."""
    recorder = EventRecorder(cluster.client, "kubelet", "n1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        nanos = round(cluster.server.clock.now() * 1e9)
        taken = {
            "metadata": {"name": f"web.{nanos:x}"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
            "reason": "Other",
            "message": "written by someone else",
        }
        await cluster.client.create(EVENTS, "default", taken)
        recorder.event(created, "Warning", "BackOff", "Back-off restarting failed container")
        await recorder.flush()
        await asyncio.sleep(10)
        recorder.event(created, "Warning", "BackOff", "Back-off restarting failed container")
        await recorder.flush()
        counts = {
            e["metadata"]["name"]: (e["reason"], e.get("count")) for e in await events(cluster)
        }
        assert counts == {f"web.{nanos:x}": ("Other", None), f"web.{nanos + 1:x}": ("BackOff", 2)}

    cluster.run(scenario())


def test_an_unknown_event_type_is_logged_and_dropped(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        with caplog.at_level(logging.ERROR):
            recorder.event(created, "Error", "Failed", "boom")
        await recorder.flush()
        assert await events(cluster) == []

    cluster.run(scenario())
    assert "unsupported event type 'Error'" in caplog.text


def test_an_event_the_store_cannot_take_is_one_log_line(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        await cluster.store.close()  # as when pinnace up stops with events still queued
        with caplog.at_level(logging.ERROR):
            recorder.event(created, "Normal", "Started", "Started container app")
            await recorder.flush()

    cluster.run(scenario())
    [record] = [r for r in caplog.records if "unable to write event" in r.getMessage()]
    assert record.getMessage().endswith("StoreError: the store is closed")
    assert record.exc_info is None


def test_a_stamp_moved_past_the_next_instant_is_not_given_again() -> None:
    stamps = NameStamps()
    given = [stamps.give("default", "web", 1_000) for _ in range(5)]  # 1000..1004
    stamps.taken("default", "web", 1_006)  # a retry moved past a collision
    # The clock's next instant falls among the stamps given: they can still collide.
    later = [stamps.give("default", "web", 1_002) for _ in range(3)]
    assert not set(later) & {*given, 1_006}
