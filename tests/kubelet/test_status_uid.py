"""A node agent's status write names the pod by uid, as the kubelet's status manager does: a
write racing the pod's deletion and re-creation under the same name does not land on the new
pod, and is dropped rather than retried."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.kubelet.conftest import PODS, Node, pod

from pinnace.api.options import DeleteOptions


def test_a_status_write_racing_a_delete_and_recreate_does_not_land_on_the_new_pod(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    node.create_pod(pod("web", node="node-1", restart_policy="Never", run_seconds="5"))
    node.settle()
    old_uid = node.get_pod("web")["metadata"]["uid"]
    assert node.get_pod("web")["status"]["phase"] == "Running"

    # The write the container's exit causes finds the pod replaced (force-deleted and
    # recreated, unbound) between the agent reading it and the write arriving.
    patch = node.client.patch_own  # as the agent patches a pod's status
    status_writes: list[dict[str, Any]] = []
    new_pod: dict[str, Any] = {}

    async def racing_patch(
        kind: Any, namespace: str, name: str, body: Any, *a: Any, **k: Any
    ) -> Any:
        if k.get("subresource") == "status" and name == "web":
            status_writes.append(body)
            if not new_pod:
                await node.server.delete(
                    PODS, namespace, name, DeleteOptions(grace_period_seconds=0)
                )
                new_pod.update((await node.server.create(PODS, namespace, pod("web"))).obj)
        return await patch(kind, namespace, name, body, *a, **k)

    node.client.patch_own = racing_patch  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        node.settle(5)
    assert new_pod, "the container's exit wrote no status"
    assert status_writes[0]["metadata"] == {"uid": old_uid}
    assert node.get_pod("web") == new_pod
    assert not caplog.records  # dropped quietly, as a write for a pod that is gone

    # Dropped, not retried: later ticks write nothing more for the old pod.
    writes = len(status_writes)
    node.settle(60)
    assert len(status_writes) == writes
    assert node.get_pod("web") == new_pod
    assert not node.task.done()
