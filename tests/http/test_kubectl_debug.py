"""`kubectl debug` against `pinnace up`: an ephemeral container added to a running pod runs
its command on the pod's node, its output shows through the session and its logs, and an
update that removes one gets kube-apiserver's 422."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-debug"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_kubectl_debug_runs_an_ephemeral_container(cluster: Cluster) -> None:
    cluster.ok("run", "web", "--image=nginx")
    cluster.ok("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")

    session = cluster.ok(
        "debug",
        "web",
        "-it",
        "--image=busybox",
        "--container=debugger",
        "--",
        "echo",
        "dbg",
        stdin="",
    )
    assert "dbg" in session.splitlines()
    assert cluster.ok("logs", "web", "-c", "debugger") == "dbg\n"
    statuses = json.loads(
        cluster.ok("get", "pod", "web", "-o", "jsonpath={.status.ephemeralContainerStatuses}")
    )
    [debugger] = statuses
    assert debugger["name"] == "debugger"
    assert debugger["state"]["terminated"]["exitCode"] == 0
    assert cluster.ok("get", "pod", "web", "-o", "jsonpath={.status.phase}") == "Running"

    removal = '[{"op": "remove", "path": "/spec/ephemeralContainers/0"}]'
    done = cluster.kubectl(
        "patch", "pod", "web", "--subresource=ephemeralcontainers", "--type=json", "-p", removal
    )
    assert done.returncode == 1
    assert done.stderr == (
        'The Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "debugger" may not be removed\n\n'
    )
