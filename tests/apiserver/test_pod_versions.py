"""Every stored version of a pod stays as it was written, while a status write keeps the spec
and a spec write keeps the status, and a change to one pod leaves the others alone (the server
shares unchanged parts and default tolerations rather than copying them)."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import catalog
from pinnace.api.options import WriteOptions
from pinnace.apiserver.keys import object_key

PODS = catalog.kind("", "pods")


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1"}
            ],
        },
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


def _status_write(phase: str, image: str) -> Any:
    def write(p: dict[str, Any]) -> dict[str, Any]:
        p["status"] = {**p.get("status", {}), "phase": phase}
        p["spec"]["containers"][0]["image"] = image  # a status write cannot change it
        p["metadata"]["ownerReferences"] = []  # nor this
        return p

    return write


def _spec_write(image: str) -> Any:
    def write(p: dict[str, Any]) -> dict[str, Any]:
        p["spec"]["containers"][0]["image"] = image
        p["status"] = {"phase": "Failed"}  # a spec write cannot change it
        return p

    return write


def test_status_and_spec_writes_leave_earlier_versions_as_they_were(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", _pod()).obj
    running = api.call(
        api.server.modify,
        PODS,
        "default",
        "web",
        _status_write("Running", "evil:1"),
        subresource="status",
    ).obj
    assert running["spec"] == created["spec"]
    assert running["metadata"]["ownerReferences"] == created["metadata"]["ownerReferences"]
    assert running["status"]["phase"] == "Running"

    updated = api.call(api.server.modify, PODS, "default", "web", _spec_write("nginx:1.28")).obj
    assert updated["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert updated["status"] == running["status"]

    def at(version: dict[str, Any]) -> dict[str, Any]:
        rv = int(version["metadata"]["resourceVersion"])
        return api.call(api.server.store.get, object_key(PODS, "default", "web"), rv)

    assert at(created)["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert at(running)["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert at(running)["status"]["phase"] == "Running"
    assert at(updated)["status"]["phase"] == "Running"


def test_changing_one_pods_default_toleration_leaves_other_pods_alone(api: Any) -> None:
    for name in ("a", "b"):
        api.call(api.server.create, PODS, "default", {**_pod(), "metadata": {"name": name}})

    def shorter(p: dict[str, Any]) -> dict[str, Any]:
        for toleration in p["spec"]["tolerations"]:
            toleration["tolerationSeconds"] = 5
        return p

    api.call(api.server.modify, PODS, "default", "a", shorter)

    def seconds(name: str) -> list[int]:
        pod = api.call(api.server.get, PODS, "default", name)
        return [t["tolerationSeconds"] for t in pod["spec"]["tolerations"]]

    assert seconds("a") == [5, 5]
    assert seconds("b") == [300, 300]


def test_an_own_status_write_keeps_nothing_of_the_body_the_writer_goes_on_changing(
    api: Any,
) -> None:
    """A controller's own status write (`Client.update_status_own`) hands over a copy of what
    it read that it keeps changing: what is stored shares none of it."""
    created = api.call(api.server.create, PODS, "default", _pod()).obj
    body = copy.deepcopy(created)
    body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    options = WriteOptions(decoded=True)
    written = api.call(
        api.server.update, PODS, "default", "web", body, options, subresource="status"
    ).obj
    body["spec"]["containers"][0]["image"] = "evil:1"
    body["status"]["conditions"][0]["status"] = "False"
    body["metadata"]["ownerReferences"][0]["name"] = "other"

    stored = api.call(api.server.get, PODS, "default", "web")
    assert stored == written
    assert stored["spec"] == created["spec"]
    assert stored["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert stored["metadata"]["ownerReferences"] == created["metadata"]["ownerReferences"]
