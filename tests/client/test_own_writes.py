"""Objects a component of this process builds in decoded form (`Client.create_own`: the Events
it records; the kubelet's TokenRequests, `Client.grant_token`) are taken as they are, without
the API server decoding them again: every such write here is also decoded, and what is
stored (or answered) must be the decoded one, byte for byte (the JSON text the event log's
digests and every reader see)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from tests.client.conftest import EVENTS, PODS, Cluster, pod

from pinnace.api import decode as decoding
from pinnace.api.kind import Kind
from pinnace.apiserver import server, token_request
from pinnace.bench.gym import scenario
from pinnace.client.correlator import AGGREGATE_MAX_EVENTS
from pinnace.client.events import EventRecorder
from pinnace.client.events_v1 import EventBroadcaster
from pinnace.sim.simulation import Simulation


class Checked:
    """The own writes made while it is installed, each compared with what decoding its body
    would have given."""

    def __init__(self) -> None:
        self.writes: Counter[str] = Counter()
        self.differences: list[tuple[bytes, bytes]] = []

    def __call__(self, obj: dict[str, Any], kind: Kind) -> decoding.Decoded:
        decoded = decoding.decode(obj, kind)
        taken = decoding.as_decoded(obj, kind)
        self.writes[kind.kind] += 1
        assert not decoded.warnings
        text, taken_text = orjson.dumps(decoded.obj), orjson.dumps(taken.obj)
        if text != taken_text:
            self.differences.append((text, taken_text))
        return taken


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    check = Checked()
    monkeypatch.setattr(server, "as_decoded", check)
    monkeypatch.setattr(token_request, "as_decoded", check)
    yield check
    assert not check.differences, check.differences[0]


def test_a_core_event_is_stored_as_its_body_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        recorder.event(created, "Normal", "Pulled", "Container image already present")
        recorder.event(created, "Normal", "", "", field_path="spec.containers{app}")
        recorder.event(created, "Warning", "BackOff", "")
        await recorder.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored) == 3
    assert [(e.get("reason"), e.get("message")) for e in stored] == [
        ("Pulled", "Container image already present"),
        (None, None),  # left out when empty, as Go's encoding leaves them out
        ("BackOff", None),
    ]


def test_events_combined_by_aggregation_are_stored_as_they_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        for i in range(AGGREGATE_MAX_EVENTS + 1):
            recorder.event(created, "Warning", "", f"attempt {i}")
        await recorder.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored)
    assert any(e["message"].startswith("(combined from similar events)") for e in stored)


def test_an_events_v1_event_is_stored_as_its_body_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    broadcaster = EventBroadcaster(cluster.client, "host-1")
    recorder = broadcaster.new_recorder("default-scheduler")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        other = await cluster.client.create(PODS, "default", pod("other"))
        recorder.eventf(created, None, "Normal", "Scheduled", "Binding", "assigned")
        recorder.eventf(created, other, "Warning", "Preempted", "Preempting", "")
        await broadcaster.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored) == 2
    assert [e.get("message") for e in stored] == ["assigned", None]


def test_a_simulated_clusters_own_writes_are_taken_as_they_would_decode(
    checked: Checked,
) -> None:
    """The kubelets' and the scheduler's Events, and the kubelets' TokenRequests, of pods
    placed through the whole cluster."""
    sim = Simulation(scenario(4, 40, 200.0))
    try:
        sim.advance()
    finally:
        sim.close()
    assert checked.writes["Event"] >= 4 * 40
    assert checked.writes["TokenRequest"] == 40


def test_a_body_of_another_kind_is_refused_as_decoding_refuses_it(cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}

    async def create() -> None:
        await cluster.client.create_own(EVENTS, "default", body)

    with pytest.raises(Exception) as own:
        cluster.run(create())
    with pytest.raises(Exception) as decoded:
        cluster.run(cluster.client.create(EVENTS, "default", body))
    assert str(own.value) == str(decoded.value)
