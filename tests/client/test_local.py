"""The in-process client: the verbs, their errors, and conflicts retried by modify."""

from __future__ import annotations

import orjson
import pytest
from tests.client.conftest import CONFIG_MAPS, DEPLOYMENTS, NODES, PODS, Cluster, config_map, pod

from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.apiserver import binding
from pinnace.apiserver.server import APIServer
from pinnace.client import LocalClient, PatchType
from pinnace.client.interface import binding_body


def test_create_get_list_update_delete(cluster: Cluster) -> None:
    client = cluster.client

    async def scenario() -> None:
        created = await client.create(CONFIG_MAPS, "default", config_map("a", x="1"))
        assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
        got = await client.get(CONFIG_MAPS, "default", "a")
        assert got == created

        changed = clone(got)
        changed["data"]["x"] = "2"
        updated = await client.update(CONFIG_MAPS, changed)
        assert updated["data"] == {"x": "2"}
        assert int(updated["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"]
        )

        listed = await client.list(CONFIG_MAPS, "default")
        assert listed["kind"] == "ConfigMapList"
        assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
        assert listed["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]

        await client.delete(CONFIG_MAPS, "default", "a")
        with pytest.raises(StatusError) as e:
            await client.get(CONFIG_MAPS, "default", "a")
        assert (e.value.code, e.value.message) == (404, 'configmaps "a" not found')

    cluster.run(scenario())


def test_create_does_not_keep_the_callers_object(cluster: Cluster) -> None:
    body = config_map("a", x="1")
    created = cluster.run(cluster.client.create(CONFIG_MAPS, "default", body))
    body["data"]["x"] = "changed by the caller"
    assert cluster.run(cluster.client.get(CONFIG_MAPS, "default", "a")) == created


def test_errors_are_statuses_as_kube_apiserver_sends_them(cluster: Cluster) -> None:
    client = cluster.client
    cluster.run(client.create(CONFIG_MAPS, "default", config_map("a")))
    with pytest.raises(StatusError) as e:
        cluster.run(client.create(CONFIG_MAPS, "default", config_map("a")))
    assert (e.value.code, e.value.reason) == (409, "AlreadyExists")
    assert e.value.message == 'configmaps "a" already exists'

    with pytest.raises(StatusError) as e:
        cluster.run(client.create(CONFIG_MAPS, "default", config_map("Bad_Name")))
    assert e.value.code == 422
    assert e.value.message.startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid')


def test_update_from_a_stale_read_is_a_conflict(cluster: Cluster) -> None:
    client = cluster.client
    stale = cluster.run(client.create(CONFIG_MAPS, "default", config_map("a", x="1")))
    first = clone(stale)
    first["data"]["x"] = "2"
    cluster.run(client.update(CONFIG_MAPS, first))
    second = clone(stale)
    second["data"]["x"] = "3"
    with pytest.raises(StatusError) as e:
        cluster.run(client.update(CONFIG_MAPS, second))
    assert (e.value.code, e.value.reason) == (409, "Conflict")
    assert e.value.message == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


class RacingClient(LocalClient):
    """Another writer patches the object right after this client's next read."""

    def __init__(self, server: APIServer, patch: Object) -> None:
        super().__init__(server)
        self.racing_patch: Object | None = patch

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        read = await super().get(kind, namespace, name)
        if self.racing_patch is not None:
            patch, self.racing_patch = self.racing_patch, None
            await self.patch(kind, namespace, name, patch, PatchType.MERGE)
        return read


def test_modify_retries_on_conflict_with_the_latest_object(cluster: Cluster) -> None:
    client = RacingClient(cluster.server, {"data": {"z": "9"}})
    cluster.run(client.create(CONFIG_MAPS, "default", config_map("a", x="1")))
    seen: list[dict[str, str]] = []

    def add_y(obj: Object) -> Object:
        seen.append(dict(obj["data"]))
        obj["data"]["y"] = "2"
        return obj

    result = cluster.run(client.modify(CONFIG_MAPS, "default", "a", add_y))
    assert seen == [{"x": "1"}, {"x": "1", "z": "9"}]
    assert result["data"] == {"x": "1", "y": "2", "z": "9"}


def test_modify_gives_up_with_the_conflict_after_five_attempts(cluster: Cluster) -> None:
    client = cluster.client
    cluster.run(client.create(CONFIG_MAPS, "default", config_map("a", n="0")))
    attempts = 0

    def always_stale(obj: Object) -> Object:
        nonlocal attempts
        attempts += 1
        obj["metadata"]["resourceVersion"] = "1"
        return obj

    with pytest.raises(StatusError) as e:
        cluster.run(client.modify(CONFIG_MAPS, "default", "a", always_stale))
    assert (e.value.code, e.value.reason, attempts) == (409, "Conflict", 5)


def test_modify_status_writes_only_the_status(cluster: Cluster) -> None:
    client = cluster.client
    cluster.run(client.create(PODS, "default", pod("p")))

    def running(obj: Object) -> Object:
        obj["status"]["phase"] = "Running"
        obj["spec"]["activeDeadlineSeconds"] = 30
        return obj

    result = cluster.run(client.modify(PODS, "default", "p", running, subresource="status"))
    assert result["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in result["spec"]


def test_patch_kinds(cluster: Cluster) -> None:
    client = cluster.client
    cluster.run(client.create(PODS, "default", pod("p", app="web")))
    merged = cluster.run(
        client.patch(PODS, "default", "p", {"metadata": {"labels": {"tier": "1"}}}, PatchType.MERGE)
    )
    assert merged["metadata"]["labels"] == {"app": "web", "tier": "1"}
    # A strategic merge patch merges containers by name; a merge patch would replace the list.
    strategic = {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}
    patched = cluster.run(client.patch(PODS, "default", "p", strategic))
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [("app", "nginx:2")]
    ops = [{"op": "remove", "path": "/metadata/labels/app"}]
    patched = cluster.run(client.patch(PODS, "default", "p", ops, PatchType.JSON))
    assert patched["metadata"]["labels"] == {"tier": "1"}
    status = {"status": {"phase": "Running"}}
    patched = cluster.run(
        client.patch(PODS, "default", "p", status, PatchType.MERGE, subresource="status")
    )
    assert patched["status"]["phase"] == "Running"


def test_patch_does_not_change_what_earlier_readers_hold(cluster: Cluster) -> None:
    client = cluster.client
    before = cluster.run(client.create(CONFIG_MAPS, "default", config_map("a", x="1")))
    snapshot = clone(before)
    cluster.run(client.patch(CONFIG_MAPS, "default", "a", {"data": {"x": "2"}}, PatchType.MERGE))
    assert before == snapshot


def test_list_selectors_and_pages(cluster: Cluster) -> None:
    client = cluster.client
    for name, node, app in [("a", "n1", "web"), ("b", "n2", "web"), ("c", "n1", "db")]:
        cluster.run(client.create(PODS, "default", pod(name, node=node, app=app)))

    def names(listed: Object) -> list[str]:
        return [i["metadata"]["name"] for i in listed["items"]]

    assert names(cluster.run(client.list(PODS, label_selector="app=web"))) == ["a", "b"]
    assert names(cluster.run(client.list(PODS, field_selector="spec.nodeName=n1"))) == ["a", "c"]
    first = cluster.run(client.list(PODS, "default", limit=2))
    assert names(first) == ["a", "b"]
    token = first["metadata"]["continue"]
    rest = cluster.run(client.list(PODS, "default", limit=2, continue_token=token))
    assert names(rest) == ["c"] and "continue" not in rest["metadata"]


def test_delete_options_and_collections(cluster: Cluster) -> None:
    client = cluster.client
    created = cluster.run(client.create(CONFIG_MAPS, "default", config_map("a")))
    with pytest.raises(StatusError) as e:
        cluster.run(
            client.delete(CONFIG_MAPS, "default", "a", DeleteOptions(precondition_uid="other"))
        )
    assert e.value.code == 409
    assert "the UID in the precondition (other) does not match the UID in record" in (
        e.value.message
    )
    uid = created["metadata"]["uid"]
    answer = cluster.run(
        client.delete(CONFIG_MAPS, "default", "a", DeleteOptions(precondition_uid=uid))
    )
    assert answer["status"] == "Success"

    for name in ("b", "c"):
        cluster.run(client.create(CONFIG_MAPS, "default", config_map(name)))
    cluster.run(client.delete_collection(CONFIG_MAPS, "default"))
    assert cluster.run(client.list(CONFIG_MAPS, "default"))["items"] == []


def test_bind_puts_the_pod_on_the_node_once(cluster: Cluster) -> None:
    client = cluster.client
    created = cluster.run(client.create(PODS, "default", pod("p")))
    cluster.run(client.bind(created, "node-1"))
    bound = cluster.run(client.get(PODS, "default", "p"))
    assert bound["spec"]["nodeName"] == "node-1"
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]
    with pytest.raises(StatusError) as e:
        cluster.run(client.bind(created, "node-2"))
    assert e.value.code == 409
    assert e.value.message.endswith('pod p is already assigned to node "node-1"')


def test_bind_stores_what_a_binding_sent_as_json_stores(cluster: Cluster) -> None:
    """The in-process client's Binding skips decoding (it is built decoded); the pod it binds
    is stored as the one a Binding decoded from JSON text binds, and a second bind of each
    fails alike."""
    client = cluster.client
    for name in ("p", "q"):
        cluster.run(client.create(PODS, "default", pod(name)))
    p = cluster.run(client.get(PODS, "default", "p"))
    q = cluster.run(client.get(PODS, "default", "q"))
    cluster.run(client.bind(p, "node-1"))
    sent = orjson.loads(orjson.dumps(binding_body(q, "node-1")))
    cluster.run(binding.bind(cluster.server, "default", "q", sent))

    def stored(name: str) -> bytes:
        obj = clone(cluster.run(client.get(PODS, "default", name)))
        for field in ("name", "uid", "resourceVersion"):
            del obj["metadata"][field]
        return orjson.dumps(obj)

    assert stored("p") == stored("q")
    with pytest.raises(StatusError) as own:
        cluster.run(client.bind(p, "node-2"))
    with pytest.raises(StatusError) as decoded:
        cluster.run(binding.bind(cluster.server, "default", "q", sent))
    as_p = orjson.dumps(decoded.value.status()).replace(b"q", b"p")
    assert orjson.dumps(own.value.status()) == as_p


def test_evict_a_pending_pod_deletes_it(cluster: Cluster) -> None:
    client = cluster.client
    cluster.run(client.create(PODS, "default", pod("p")))
    cluster.run(client.evict("default", "p", DeleteOptions(grace_period_seconds=0)))
    with pytest.raises(StatusError) as e:
        cluster.run(client.get(PODS, "default", "p"))
    assert e.value.code == 404


def test_scale(cluster: Cluster) -> None:
    client = cluster.client
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": pod("ignored", app="web") | {"metadata": {"labels": {"app": "web"}}},
        },
    }
    cluster.run(client.create(DEPLOYMENTS, "default", deployment))
    assert cluster.run(client.get_scale(DEPLOYMENTS, "default", "web"))["spec"] == {"replicas": 1}
    scale = cluster.run(client.update_scale(DEPLOYMENTS, "default", "web", 3))
    assert scale["spec"] == {"replicas": 3}
    assert cluster.run(client.get(DEPLOYMENTS, "default", "web"))["spec"]["replicas"] == 3


def test_cluster_scoped_kinds(cluster: Cluster) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    created = cluster.run(cluster.client.create(NODES, "", node))
    assert "namespace" not in created["metadata"]
    assert cluster.run(cluster.client.get(NODES, "", "n1")) == created


def test_field_manager_records_managed_fields(cluster: Cluster) -> None:
    client = LocalClient(cluster.server, field_manager="pinnace-scheduler")
    created = cluster.run(client.create(CONFIG_MAPS, "default", config_map("a", x="1")))
    managers = [e["manager"] for e in created["metadata"]["managedFields"]]
    assert managers == ["pinnace-scheduler"]
    assert (
        "managedFields"
        not in cluster.run(cluster.client.create(CONFIG_MAPS, "default", config_map("b")))[
            "metadata"
        ]
    )


def test_server_side_apply_is_a_patch_of_the_pipeline(cluster: Cluster) -> None:
    client = LocalClient(cluster.server, field_manager="pinnace-test")
    applied = config_map("a", x="1")
    created = cluster.run(client.patch(CONFIG_MAPS, "default", "a", applied, PatchType.APPLY))
    assert created["data"] == {"x": "1"}
    assert [e["operation"] for e in created["metadata"]["managedFields"]] == ["Apply"]
    applied["data"] = {"x": "2"}
    changed = cluster.run(client.patch(CONFIG_MAPS, "default", "a", applied, PatchType.APPLY))
    assert changed["data"] == {"x": "2"}
    assert changed["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.patch(CONFIG_MAPS, "default", "a", applied, PatchType.APPLY))
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    assert "fieldManager: Required value: is required for apply patch" in e.value.message
