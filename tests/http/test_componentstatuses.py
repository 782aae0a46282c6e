"""`kubectl get componentstatuses` against `pinnace up`: the deprecated core/v1 resource
kube-apiserver v1.32 still serves, the health of the scheduler, the controller manager and the
store checked at each request, with its deprecation Warning."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

from pinnace.apiserver.component_checks import probe_healthz

DEPRECATED = "Warning: v1 ComponentStatus is deprecated in v1.19+"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-cs"))
    yield running
    stop(running)


def test_kubectl_get_cs_shows_the_components_healthy(cluster: Cluster) -> None:
    shown = cluster.kubectl("get", "cs")
    assert shown.returncode == 0, shown.stderr
    assert DEPRECATED in shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()]
    assert rows == [
        ["NAME", "STATUS", "MESSAGE", "ERROR"],
        ["scheduler", "Healthy", "ok"],
        ["controller-manager", "Healthy", "ok"],
        ["etcd-0", "Healthy", "ok"],
    ]
    one = json.loads(cluster.ok("get", "componentstatus", "etcd-0", "-o", "json"))
    assert one == {
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": "etcd-0"},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    }
    selected = cluster.ok("get", "cs", "--field-selector", "metadata.name=scheduler", "-o", "name")
    assert selected.split() == ["componentstatus/scheduler"]
    core = json.loads(cluster.ok("get", "--raw", "/api/v1"))["resources"]
    [entry] = [r for r in core if r["name"] == "componentstatuses"]
    assert entry == {  # stored nowhere: no storageVersionHash
        "name": "componentstatuses",
        "singularName": "componentstatus",
        "namespaced": False,
        "kind": "ComponentStatus",
        "verbs": ["get", "list"],
        "shortNames": ["cs"],
    }


def test_a_name_it_does_not_check_is_the_registry_s_plain_error(cluster: Cluster) -> None:
    missing = cluster.kubectl("get", "cs", "kubelet")
    assert missing.returncode == 1
    assert "Error from server: Component not found: kubelet" in missing.stderr


def test_a_component_nothing_answers_for_is_unhealthy_with_the_probe_s_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])  # closed again: nothing listens there
    health = asyncio.run(probe_healthz("scheduler", port))
    assert health.status == "False"
    assert health.message == (
        f'Get "https://127.0.0.1:{port}/healthz": dial tcp 127.0.0.1:{port}: connect: '
        "connection refused"
    )
