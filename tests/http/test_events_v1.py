"""Events through events.k8s.io/v1, with real kubectl and the official Python client against
`pinnace up`: one storage seen at two group versions, as kube-apiserver v1.32 serves it. An
Event written at either version reads at the other with its fields renamed; writes through
events.k8s.io/v1 take its strict rules; its field selectors take its own labels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop

EVENT_TIME = "2026-01-02T03:04:05.678901Z"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-events-v1"), flags=("--no-scheduler",))
    yield running
    stop(running)


@pytest.fixture(scope="module")
def events(cluster: Cluster) -> client.EventsV1Api:
    return client.EventsV1Api(config.new_client_from_config(str(cluster.kubeconfig)))


@pytest.fixture(scope="module")
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))


def new_style(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": EVENT_TIME,
        "reportingController": "example.com/syncer",
        "reportingInstance": "syncer-1",
        "action": "Reconcile",
        "reason": "Synced",
        "note": "in sync",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default"},
        **fields,
    }


def failure(call: Any, *args: Any) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as caught:
        call(*args)
    return caught.value.status, json.loads(caught.value.body)["message"]


def raw(response: Any) -> Any:
    return json.loads(response.data)


def test_discovery_serves_events_at_both_group_versions(cluster: Cluster) -> None:
    resources = cluster.ok("api-resources", "--no-headers")
    rows = [line.split() for line in resources.splitlines() if line.split()[0] == "events"]
    assert rows == [
        ["events", "ev", "v1", "true", "Event"],
        ["events", "events.k8s.io/v1", "true", "Event"],
    ]


def test_an_event_written_at_either_version_reads_at_the_other(
    events: client.EventsV1Api, core: client.CoreV1Api
) -> None:
    events.create_namespaced_event("default", new_style("made-new"))
    stored = raw(core.read_namespaced_event("made-new", "default", _preload_content=False))
    assert (stored["apiVersion"], stored["message"], stored["reportingComponent"]) == (
        "v1",
        "in sync",
        "example.com/syncer",
    )
    assert stored["source"] == {}
    assert (stored["firstTimestamp"], stored["lastTimestamp"]) == (None, None)
    assert stored["involvedObject"] == {"kind": "Pod", "name": "web", "namespace": "default"}
    assert stored["eventTime"] == EVENT_TIME

    old_style = {
        "metadata": {"name": "made-old"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Pulled",
        "message": "image pulled",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-02T03:04:05Z",
        "lastTimestamp": "2026-01-02T03:04:06Z",
        "count": 2,
        "type": "Normal",
    }
    core.create_namespaced_event("default", old_style)
    seen = raw(events.read_namespaced_event("made-old", "default", _preload_content=False))
    assert {k: v for k, v in seen.items() if k != "metadata"} == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "eventTime": None,
        "reason": "Pulled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
        "note": "image pulled",
        "type": "Normal",
        "deprecatedSource": {"component": "kubelet", "host": "node-1"},
        "deprecatedFirstTimestamp": "2026-01-02T03:04:05Z",
        "deprecatedLastTimestamp": "2026-01-02T03:04:06Z",
        "deprecatedCount": 2,
    }
    assert list(seen)[:4] == ["kind", "apiVersion", "metadata", "eventTime"]


def test_kubectl_lists_and_watches_events_at_events_k8s_io(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=json.dumps(new_style("from-kubectl")))
    table = cluster.ok(
        "get", "events.v1.events.k8s.io", "--field-selector", "reason=Synced", "--no-headers"
    )
    assert [line.split()[1:5] for line in table.splitlines()] == [
        ["Normal", "Synced", "pod/web", "in"] for _ in table.splitlines()
    ]
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    listed = json.loads(cluster.ok("get", "--raw", path))
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert all("regarding" in i and "involvedObject" not in i for i in listed["items"])
    watched = cluster.ok(
        "get",
        "--raw",
        path + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dfrom-kubectl",
    )
    [event] = [json.loads(line) for line in watched.splitlines()]
    assert (event["type"], event["object"]["apiVersion"], event["object"]["note"]) == (
        "ADDED",
        "events.k8s.io/v1",
        "in sync",
    )


def test_writes_through_events_k8s_io_take_its_strict_rules(events: client.EventsV1Api) -> None:
    create = events.create_namespaced_event
    assert failure(create, "default", new_style("odd", type="Odd")) == (
        422,
        'Event "odd" is invalid: type: Invalid value: "": has invalid value: Odd',
    )
    timeless = new_style("timeless")
    del timeless["eventTime"]
    assert failure(create, "default", timeless) == (
        422,
        'Event "timeless" is invalid: eventTime: Required value',
    )
    legacy = new_style("legacy", deprecatedCount=3, deprecatedSource={"component": "x"})
    assert failure(create, "default", legacy) == (
        422,
        'Event "legacy" is invalid: [count: Invalid value: "": needs to be unset, '
        'source: Invalid value: "": needs to be unset]',
    )
    short = new_style("short-series", series={"count": 1})
    assert failure(create, "default", short) == (
        422,
        'Event "short-series" is invalid: [series.count: Invalid value: "": should be at least '
        "2, series.lastObservedTime: Required value]",
    )

    events.create_namespaced_event("default", new_style("fixed"))
    assert failure(events.patch_namespaced_event, "fixed", "default", {"note": "changed"}) == (
        422,
        'Event "fixed" is invalid: message: Invalid value: "changed": field is immutable',
    )
    moved = {"regarding": {"kind": "Pod", "name": "other", "namespace": "default"}}
    assert failure(events.patch_namespaced_event, "fixed", "default", moved) == (
        422,
        'Event "fixed" is invalid: involvedObject: Invalid value: core.ObjectReference{'
        'Kind:"Pod", Namespace:"default", Name:"other", UID:"", APIVersion:"", '
        'ResourceVersion:"", FieldPath:""}: field is immutable',
    )
    series = {"series": {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.000000Z"}}
    patched = raw(events.patch_namespaced_event("fixed", "default", series, _preload_content=False))
    assert patched["series"] == series["series"]


def test_core_v1_keeps_its_legacy_rules(core: client.CoreV1Api) -> None:
    # The same free-form type and unset eventTime are fine through core/v1.
    made = core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "free-form"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Whatever",
            "type": "Odd",
        },
    )
    assert made.type == "Odd"


USER_EVENT = """
apiVersion: v1
kind: Event
metadata: {name: by-hand}
involvedObject: {kind: Pod, name: web, namespace: default}
reason: Noted
message: written by hand
"""


def test_core_v1_writes_an_event_s_unset_times_as_null(
    cluster: Cluster, core: client.CoreV1Api
) -> None:
    """A core/v1 Event's times are Go structs, whose zero marshals as null whatever their
    omitempty, and its reporting fields have no omitempty: kube-apiserver writes them all,
    in its struct's order, for an Event that never set them."""
    cluster.ok("create", "-f", "-", stdin=USER_EVENT)
    made = raw(core.read_namespaced_event("by-hand", "default", _preload_content=False))
    listed = raw(core.list_namespaced_event("default", _preload_content=False))
    [item] = [e for e in listed["items"] if e["metadata"]["name"] == "by-hand"]
    assert made == {"kind": "Event", "apiVersion": "v1", **item}
    shown = json.loads(cluster.ok("get", "event", "by-hand", "-o", "json"))
    for event in (made, shown):
        assert {k: v for k, v in event.items() if k != "metadata"} == {
            "kind": "Event",
            "apiVersion": "v1",
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Noted",
            "message": "written by hand",
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
            "eventTime": None,
            "reportingComponent": "",
            "reportingInstance": "",
        }
    assert list(made)[6:] == [
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "eventTime",
        "reportingComponent",
        "reportingInstance",
    ]


def test_field_selectors_take_events_k8s_io_labels(
    events: client.EventsV1Api, core: client.CoreV1Api
) -> None:
    events.create_namespaced_event("default", new_style("selected", reason="Selected"))
    names = raw(
        events.list_namespaced_event(
            "default",
            field_selector="regarding.name=web,reportingController=example.com/syncer,"
            "reason=Selected",
            _preload_content=False,
        )
    )
    assert [item["metadata"]["name"] for item in names["items"]] == ["selected"]
    refused = failure(
        lambda: events.list_namespaced_event("default", field_selector="involvedObject.name=web")
    )
    assert refused == (400, "field label not supported: involvedObject.name")
    by_core = core.list_namespaced_event(
        "default", field_selector="reportingComponent=example.com/syncer,reason=Selected"
    )
    assert [e.metadata.name for e in by_core.items] == ["selected"]
