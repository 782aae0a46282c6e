"""Events recorded through events.k8s.io/v1 as client-go's tools/events library records them
(kube-scheduler v1.32's): the fields written, what a core/v1 reader sees, and repeats as a
series whose count is written at the first repeat, every 30 minutes, and a last time once
the series has been quiet for 6 minutes. Time runs on the virtual clock past each timer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import EVENTS, PODS, Cluster, pod

from pinnace.api.events import EVENT_V1
from pinnace.api.objects import Object
from pinnace.client.events_v1 import EventBroadcaster, Recorder

START = "2025-01-01T00:00:00.000000Z"


class Recording:
    """A cluster, a broadcaster on `host-1` with its passes running, and a pod to report on."""

    def __init__(self, cluster: Cluster, pod_name: str = "web") -> None:
        self.cluster = cluster
        self.broadcaster = EventBroadcaster(cluster.client, "host-1")
        self.recorder: Recorder = self.broadcaster.new_recorder("default-scheduler")
        self.passes = cluster.loop.create_task(self.broadcaster.run())
        self.pod = cluster.run(cluster.client.create(PODS, "default", pod(pod_name)))

    def failed(self, note: str = "0/1 nodes are available: 1 Insufficient cpu.") -> None:
        self.recorder.eventf(self.pod, None, "Warning", "FailedScheduling", "Scheduling", note)

    def wait(self, seconds: float) -> None:
        self.cluster.run(asyncio.sleep(seconds))
        self.cluster.run(self.broadcaster.flush())

    def v1(self) -> list[Object]:
        """The Events as an events.k8s.io/v1 client lists them, oldest name first."""
        listed = self.cluster.run(self.cluster.client.list(EVENTS, "default"))["items"]
        names = sorted(e["metadata"]["name"] for e in listed)
        return [self.cluster.run(self.cluster.client.get(EVENT_V1, "default", n)) for n in names]

    def core(self) -> list[Object]:
        listed = self.cluster.run(self.cluster.client.list(EVENTS, "default"))["items"]
        return sorted(listed, key=lambda e: e["metadata"]["name"])

    def close(self) -> None:
        self.passes.cancel()


@pytest.fixture
def recording(cluster: Cluster) -> Iterator[Recording]:
    r = Recording(cluster)
    yield r
    r.close()


def series(event: Object) -> Any:
    return event.get("series")


def test_an_event_carries_the_new_apis_fields(recording: Recording) -> None:
    recording.failed()
    recording.wait(0)
    [event] = recording.v1()
    m = recording.pod["metadata"]
    assert event["eventTime"] == START
    assert (event["reportingController"], event["reportingInstance"]) == (
        "default-scheduler",
        "default-scheduler-host-1",
    )
    assert (event["action"], event["reason"], event["type"]) == (
        "Scheduling",
        "FailedScheduling",
        "Warning",
    )
    assert event["note"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert event["regarding"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "web",
        "uid": m["uid"],
        "apiVersion": "v1",
        "resourceVersion": m["resourceVersion"],
    }
    assert "related" not in event and "series" not in event
    assert event["metadata"]["name"] == f"web.{1735689600 * 10**9:x}"
    assert event["deprecatedSource"] == {}
    assert "deprecatedCount" not in event
    assert event["deprecatedFirstTimestamp"] is None
    assert event["deprecatedLastTimestamp"] is None


def test_a_core_reader_sees_no_source_timestamps_or_count(recording: Recording) -> None:
    recording.failed()
    recording.wait(0)
    [event] = recording.core()
    assert event["source"] == {}
    assert event["reportingComponent"] == "default-scheduler"
    assert event["reportingInstance"] == "default-scheduler-host-1"
    assert event["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert event["eventTime"] == START
    for absent in ("firstTimestamp", "lastTimestamp", "count", "series"):
        assert not event.get(absent), absent


def test_a_related_object_is_referenced(recording: Recording) -> None:
    preemptor = recording.cluster.run(
        recording.cluster.client.create(PODS, "default", pod("important"))
    )
    recording.recorder.eventf(
        recording.pod, preemptor, "Normal", "Preempted", "Preempting", "Preempted by pod x"
    )
    recording.wait(0)
    [event] = recording.v1()
    assert event["related"]["name"] == "important"
    assert event["related"]["uid"] == preemptor["metadata"]["uid"]
    assert recording.core()[0]["related"] == event["related"]


def test_the_first_repeat_is_written_at_once_as_a_series_keeping_the_first_note(
    recording: Recording,
) -> None:
    recording.failed("first")
    recording.wait(10)
    recording.failed("second")  # the note is not part of the key: a repeat
    recording.wait(0)
    [event] = recording.v1()
    assert event["note"] == "first"
    assert series(event) == {"count": 2, "lastObservedTime": "2025-01-01T00:00:10.000000Z"}
    assert event["eventTime"] == START


def test_later_repeats_are_written_once_the_series_is_quiet_for_six_minutes(
    recording: Recording,
) -> None:
    recording.failed()
    recording.wait(1)
    recording.failed()
    recording.wait(1)
    recording.failed()
    recording.wait(1)
    recording.failed()  # the 4th, at 3 s
    recording.wait(0)
    assert series(recording.v1()[0])["count"] == 2  # counted in memory only
    # The finish pass runs every 6 minutes from the start: at 6:00 the series was seen
    # 5:57 ago; at 12:00, more than 6 minutes ago, it is written a last time and forgotten.
    recording.wait(356)
    assert series(recording.v1()[0])["count"] == 2
    recording.wait(361)
    assert series(recording.v1()[0]) == {
        "count": 4,
        "lastObservedTime": "2025-01-01T00:00:03.000000Z",
    }
    recording.failed()  # forgotten: a new Event
    recording.wait(0)
    assert [series(e) for e in recording.v1()] == [
        {"count": 4, "lastObservedTime": "2025-01-01T00:00:03.000000Z"},
        None,
    ]


def test_a_busy_series_is_written_every_thirty_minutes(recording: Recording) -> None:
    recording.wait(30)
    for _ in range(40):  # once a minute from 0:30 on: never quiet for 6 minutes
        recording.failed()
        recording.wait(60)
    [event] = recording.v1()
    # The refresh pass runs at the start and every 30 minutes: at 30:00 the count was 30.
    assert series(event) == {"count": 30, "lastObservedTime": "2025-01-01T00:29:30.000000Z"}


def test_an_event_not_repeated_is_forgotten_after_six_minutes(recording: Recording) -> None:
    recording.failed()
    recording.wait(300)
    recording.failed()  # 5 minutes on: still a repeat
    recording.wait(0)
    assert [series(e)["count"] for e in recording.v1()] == [2]
    other = Recording(recording.cluster, "db")
    other.recorder.eventf(other.pod, None, "Normal", "Scheduled", "Binding", "bound")
    other.wait(0)
    other.wait(720)  # past the finish passes at 6:00 and 12:00
    other.recorder.eventf(other.pod, None, "Normal", "Scheduled", "Binding", "bound")
    other.wait(0)
    scheduled = [e for e in other.v1() if e["reason"] == "Scheduled"]
    assert [series(e) for e in scheduled] == [None, None]  # two singletons
    other.close()


def test_a_new_version_of_the_object_is_a_new_event(recording: Recording) -> None:
    recording.failed()
    recording.pod = recording.cluster.run(
        recording.cluster.client.patch(
            PODS, "default", "web", {"metadata": {"labels": {"tier": "web"}}}
        )
    )
    recording.failed()
    recording.wait(0)
    assert [series(e) for e in recording.v1()] == [None, None]


def test_a_series_whose_event_is_gone_is_created_again(recording: Recording) -> None:
    recording.failed()
    recording.wait(0)
    [event] = recording.v1()
    recording.cluster.run(
        recording.cluster.client.delete(EVENTS, "default", event["metadata"]["name"])
    )
    recording.failed()
    recording.wait(0)
    [again] = recording.v1()
    assert again["metadata"]["name"] == event["metadata"]["name"]
    assert (again["note"], series(again)["count"]) == (event["note"], 2)


def test_an_unknown_type_is_not_recorded(recording: Recording) -> None:
    recording.recorder.eventf(recording.pod, None, "Odd", "Scheduled", "Binding", "bound")
    recording.wait(0)
    assert recording.v1() == []
