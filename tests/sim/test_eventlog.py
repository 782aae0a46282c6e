"""The event log: one JSON line per committed change, stamped with simulated time, whose
SHA-256 tells two runs apart when any field of any object differs."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json

from pinnace.clock import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet import node_configs
from pinnace.sim.eventlog import EventLog
from pinnace.store import MemoryStore


def test_each_change_is_a_line_with_its_time_and_a_digest_of_its_object() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()
        out = io.BytesIO()
        log = EventLog(store, clock, out)

        async def changes() -> None:
            pod = {"kind": "Pod", "metadata": {"name": "web", "namespace": "default"}}
            await store.create("core/pods/default/web", pod)
            await asyncio.sleep(1.5)
            changed = {**pod, "spec": {"nodeName": "node-1"}}
            await store.update("core/pods/default/web", changed, None)
            await store.delete("core/pods/default/web")

        clock.run(changes())
        log.close()
        clock.run(store.create("core/pods/default/later", {"kind": "Pod", "metadata": {}}))

    lines = out.getvalue().splitlines()
    entries = [json.loads(line) for line in lines]
    assert [(e["revision"], e["time"], e["type"]) for e in entries] == [
        (2, 0.0, "ADDED"),
        (3, 1.5, "MODIFIED"),
        (4, 1.5, "DELETED"),
    ]
    assert {(e["kind"], e["namespace"], e["name"]) for e in entries} == {("Pod", "default", "web")}
    added, modified, deleted = (e["digest"] for e in entries)
    assert len({added, modified, deleted}) == 3  # a field changed, and the resourceVersion
    assert log.events == 3
    assert log.sha256() == hashlib.sha256(out.getvalue()).hexdigest()


def test_a_log_made_before_the_cluster_starts_holds_every_change_from_the_first() -> None:
    with VirtualClock() as clock:
        plane = ControlPlane(MemoryStore(), clock, ClusterOptions(nodes=node_configs(2), seed=1))
        out = io.BytesIO()
        log = EventLog(plane.store, clock, out)
        clock.run(plane.start())
        clock.advance(30)
        clock.run(plane.stop())
        log.close()
    revisions = [json.loads(line)["revision"] for line in out.getvalue().splitlines()]
    assert revisions == list(range(2, plane.store.revision + 1))


def test_a_log_without_lines_counts_the_changes_and_has_no_digest() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()
        log = EventLog(store, clock, lines=False)
        pod = {"kind": "Pod", "metadata": {"name": "web", "namespace": "default"}}
        clock.run(store.create("core/pods/default/web", pod))
        clock.run(store.create("core/configmaps/default/c", {"kind": "ConfigMap"}))
        log.close()
    assert (log.events, log.workload_changes) == (2, 1)
    assert log.sha256() == ""
