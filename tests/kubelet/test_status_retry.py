"""What a node agent writes is tried again until it lands, as the kubelet does: the status
manager writes a pod's status (and deletes a pod) again at its next sync after a failure, the
node status is posted again at once on the Node read again, and the lease controller renews
the Lease read again after a conflict. Each test makes the API refuse a write with 409
Conflict after another writer changed the object."""

from __future__ import annotations

from typing import Any

from tests.kubelet.conftest import LEASES, NODES, PODS, Node, pod

from pinnace.api import status
from pinnace.api.options import DeleteOptions
from pinnace.clock import parse_time
from pinnace.kubelet.config import STATUS_SYNC_PERIOD

OTHER_WRITER = {"metadata": {"annotations": {"example.com/other-writer": "was here"}}}


def conflict(kind: Any, name: str) -> status.StatusError:
    return status.conflict(kind.plural, name, status.STALE_RESOURCE_VERSION, kind.group)


def refuse_status_patches(node: Node, kind: Any, name: str, times: int = 1) -> list[float]:
    """The agent's next `times` status patches of `name` find that another writer has just
    changed it, and fail with a 409; returns when every status patch of it was tried (a
    pod's status is patched with `patch_own`, a node's with `patch`)."""
    patch, tried = node.client.patch, []
    method = "patch_own" if kind is PODS else "patch"
    write = getattr(node.client, method)

    async def refused(k: Any, namespace: str, n: str, body: Any, *a: Any, **kw: Any) -> Any:
        if k is kind and n == name and kw.get("subresource") == "status":
            tried.append(node.client.clock.now())
            if len(tried) <= times:
                await patch(k, namespace, n, OTHER_WRITER)
                raise conflict(k, n)
        return await write(k, namespace, n, body, *a, **kw)

    setattr(node.client, method, refused)
    return tried


def test_a_pod_status_refused_with_a_conflict_lands_at_the_next_sync(node: Node) -> None:
    tried = refuse_status_patches(node, PODS, "web")
    node.create_pod(pod("web", node="node-1"))
    node.settle()
    assert node.get_pod("web")["status"]["phase"] == "Pending"
    node.settle(STATUS_SYNC_PERIOD)
    written = node.get_pod("web")
    assert written["status"]["phase"] == "Running"
    assert written["status"]["containerStatuses"][0]["ready"] is True
    assert written["metadata"]["annotations"]["example.com/other-writer"] == "was here"
    assert [round(t - tried[0], 3) for t in tried] == [0, STATUS_SYNC_PERIOD]


def test_a_status_change_after_a_refused_write_is_written_at_once(node: Node) -> None:
    tried = refuse_status_patches(node, PODS, "job")
    node.create_pod(pod("job", node="node-1", restart_policy="Never", run_seconds="3"))
    node.settle(4)  # the container exited 3 s after it started: no wait for the next sync
    assert node.get_pod("job")["status"]["phase"] == "Succeeded"
    assert len(tried) == 2 and tried[1] - tried[0] < STATUS_SYNC_PERIOD


def test_a_refused_final_deletion_is_tried_again_at_the_next_sync(node: Node) -> None:
    node.create_pod(pod("web", node="node-1"))
    node.settle()
    delete, tried = node.client.delete, []

    async def refused(kind: Any, namespace: str, name: str, options: Any = None) -> Any:
        if kind is PODS and options is not None and options.grace_period_seconds == 0:
            tried.append(node.client.clock.now())
            if len(tried) == 1:
                raise status.StatusError(500, "InternalError", "etcdserver: request timed out")
        return await delete(kind, namespace, name, options)

    node.client.delete = refused  # type: ignore[method-assign]
    node.run(delete(PODS, "default", "web", DeleteOptions(grace_period_seconds=1)))
    node.settle(2)
    assert node.get_pod("web")["metadata"]["deletionTimestamp"]  # still there
    node.settle(STATUS_SYNC_PERIOD)
    assert not node.run(node.client.list(PODS, "default"))["items"]
    assert round(tried[1] - tried[0], 3) == STATUS_SYNC_PERIOD


def test_a_node_status_refused_with_a_conflict_is_posted_again_at_once(node: Node) -> None:
    tried = refuse_status_patches(node, NODES, "node-1")
    node.create_pod(pod("web", node="node-1"))  # a new image: the node status changes
    node.settle(10)
    images = node.run(node.client.get(NODES, "", "node-1"))["status"]["images"]
    assert any("docker.io/library/nginx:1.27" in i["names"] for i in images)
    assert len(tried) == 2 and tried[0] == tried[1]


def test_a_lease_renewal_refused_with_conflicts_renews_the_lease_read_again(node: Node) -> None:
    update, tried = node.client.update_own, []  # as the agent renews its Lease

    async def refused(kind: Any, obj: Any) -> Any:
        if kind is LEASES:
            tried.append(obj["metadata"]["resourceVersion"])
            if len(tried) <= 2:
                m = obj["metadata"]
                other = {"metadata": {"annotations": {"example.com/writes": str(len(tried))}}}
                await node.client.patch(LEASES, m["namespace"], m["name"], other)
                raise conflict(LEASES, m["name"])
        return await update(kind, obj)

    node.client.update_own = refused  # type: ignore[method-assign]
    before = node.run(node.client.get(LEASES, "kube-node-lease", "node-1"))
    node.settle(10)
    lease = node.run(node.client.get(LEASES, "kube-node-lease", "node-1"))
    assert parse_time(lease["spec"]["renewTime"]) - parse_time(before["spec"]["renewTime"]) == 10
    assert lease["metadata"]["annotations"] == {"example.com/writes": "2"}
    assert len(tried) == 3 and len(set(tried)) == 3  # each try on the Lease read again
