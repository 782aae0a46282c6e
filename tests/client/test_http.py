"""The HTTP client against `pinnace up`: the same verbs, errors and watch order as in-process,
and an informer and an event recorder working through it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from tests.client.conftest import CONFIG_MAPS, EVENTS, PODS, config_map, pod
from tests.http.conftest import Cluster, launch, stop

from pinnace.api.objects import Object, clone
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import EventRecorder, Informer, PatchType
from pinnace.client.http import MAX_IDLE_CONNECTIONS, HTTPClient
from pinnace.clock import Clock

TIMEOUT = 20.0
"""Real seconds a scenario may take before it fails (it takes far less)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # No scheduler: these tests write the pods' events themselves.
    running = launch(Path(tmp_path_factory.mktemp("pinnace-up-client")), flags=("--no-scheduler",))
    yield running
    stop(running)


def run(server: Cluster, scenario: Callable[[HTTPClient], Awaitable[None]]) -> None:
    async def main() -> None:
        client = HTTPClient(server.url, Clock(asyncio.get_running_loop()))
        try:
            await asyncio.wait_for(scenario(client), TIMEOUT)
        finally:
            client.close()

    asyncio.run(main())


def test_crud_and_errors(server: Cluster) -> None:
    async def scenario(client: HTTPClient) -> None:
        created = await client.create(CONFIG_MAPS, "default", config_map("crud", x="1"))
        assert await client.get(CONFIG_MAPS, "default", "crud") == created
        changed = clone(created)
        changed["data"]["x"] = "2"
        updated = await client.update(CONFIG_MAPS, changed)
        assert updated["data"] == {"x": "2"}

        with pytest.raises(StatusError) as e:
            await client.update(CONFIG_MAPS, created)  # from a stale read
        assert (e.value.code, e.value.reason) == (409, "Conflict")
        assert e.value.message.startswith('Operation cannot be fulfilled on configmaps "crud"')
        with pytest.raises(StatusError) as e:
            await client.create(CONFIG_MAPS, "default", config_map("crud"))
        assert (e.value.code, e.value.message) == (409, 'configmaps "crud" already exists')

        def add_y(obj: Object) -> Object:
            obj["data"]["y"] = "3"
            return obj

        modified = await client.modify(CONFIG_MAPS, "default", "crud", add_y)
        assert modified["data"] == {"x": "2", "y": "3"}
        patched = await client.patch(
            CONFIG_MAPS, "default", "crud", [{"op": "remove", "path": "/data/x"}], PatchType.JSON
        )
        assert patched["data"] == {"y": "3"}

        await client.delete(CONFIG_MAPS, "default", "crud")
        with pytest.raises(StatusError) as e:
            await client.get(CONFIG_MAPS, "default", "crud")
        assert (e.value.code, e.value.message) == (404, 'configmaps "crud" not found')

    run(server, scenario)


def test_a_burst_of_requests_leaves_at_most_25_connections_open(server: Cluster) -> None:
    # A node agent process registers hundreds of nodes at once; each idle TLS connection
    # kept would hold its buffers for as long as the process lives.
    async def scenario(client: HTTPClient) -> None:
        before = len(os.listdir("/proc/self/fd"))
        await asyncio.gather(*(client.list(PODS, "default") for _ in range(60)))
        assert len(os.listdir("/proc/self/fd")) - before <= MAX_IDLE_CONNECTIONS

    run(server, scenario)


def test_list_pages_selectors_and_bind(server: Cluster) -> None:
    async def scenario(client: HTTPClient) -> None:
        for name in ("p1", "p2", "p3"):
            await client.create(PODS, "default", pod(name, role="paged"))
        first = await client.list(PODS, "default", label_selector="role=paged", limit=2)
        assert [p["metadata"]["name"] for p in first["items"]] == ["p1", "p2"]
        rest = await client.list(
            PODS,
            "default",
            label_selector="role=paged",
            limit=2,
            continue_token=first["metadata"]["continue"],
        )
        assert [p["metadata"]["name"] for p in rest["items"]] == ["p3"]

        await client.bind(first["items"][0], "node-9")
        on_node = await client.list(PODS, field_selector="spec.nodeName=node-9")
        assert [p["metadata"]["name"] for p in on_node["items"]] == ["p1"]
        with pytest.raises(StatusError) as e:
            await client.bind(first["items"][0], "node-8")
        assert e.value.code == 409

        await client.evict("default", "p2")  # Pending: no budget to consult
        await client.delete_collection(
            PODS,
            "default",
            label_selector="role=paged",
            options=DeleteOptions(grace_period_seconds=0),
        )

    run(server, scenario)


def test_watch_and_informer_see_changes_in_order(server: Cluster) -> None:
    async def scenario(client: HTTPClient) -> None:
        informer = Informer(client, CONFIG_MAPS, "kube-public")
        seen: list[tuple[str, str]] = []
        informer.add_event_handler(
            on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
            on_update=lambda old, new: seen.append(("update", new["metadata"]["name"])),
            on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])),
        )
        await client.create(CONFIG_MAPS, "kube-public", config_map("w1", "kube-public"))
        informer.start()
        await informer.wait_for_sync()
        start = informer.last_sync_resource_version
        await client.create(CONFIG_MAPS, "kube-public", config_map("w2", "kube-public"))
        await client.patch(CONFIG_MAPS, "kube-public", "w1", {"data": {"a": "b"}})
        await client.delete(CONFIG_MAPS, "kube-public", "w2")

        events = []
        async for event in client.watch(CONFIG_MAPS, "kube-public", resource_version=start):
            events.append((event["type"], event["object"]["metadata"]["name"]))
            if len(events) == 3:
                break
        assert events == [("ADDED", "w2"), ("MODIFIED", "w1"), ("DELETED", "w2")]
        while len(seen) < 5:
            await asyncio.sleep(0.01)
        assert seen == [
            ("add", "kube-root-ca.crt"),  # the root CA publisher's, in every namespace
            ("add", "w1"),
            ("add", "w2"),
            ("update", "w1"),
            ("delete", "w2"),
        ]
        await informer.stop()

    run(server, scenario)


def test_recorded_events_show_in_kubectl(server: Cluster) -> None:
    async def scenario(client: HTTPClient) -> None:
        recorder = EventRecorder(client, "pinnace-test")
        created = await client.create(PODS, "default", pod("evented"))
        for _ in range(2):
            recorder.event(created, "Warning", "FailedScheduling", "0/3 nodes are available")
        await recorder.flush()
        listed = await client.list(EVENTS, "default", field_selector="involvedObject.name=evented")
        assert [e["count"] for e in listed["items"]] == [2]

    run(server, scenario)
    table = server.ok("get", "events", "-o", "wide", "--field-selector=involvedObject.name=evented")
    header, row = table.splitlines()
    assert header.split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert "FailedScheduling" in row and "pod/evented" in row and "pinnace-test" in row
    *_, count, name = row.split()
    assert count == "2" and name.startswith("evented.")
