"""Deleting a namespace with running pods through `pinnace up`: the kubelet's events about
the pods it stops (Killing) come after the namespace began terminating, and the namespace
lifecycle admission refuses them. client-go's recorder logs that refusal at V(5) only
(record/event.go: AlreadyExists or NamespaceTerminatingCause), so the server's terminal
shows nothing; any other refusal is still an error line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-teardown"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_deleting_a_namespace_with_running_pods_logs_no_refused_events(
    cluster: Cluster,
) -> None:
    cluster.ok("create", "namespace", "scratch")
    cluster.ok("-n", "scratch", "create", "deployment", "tmp", "--image=nginx:1.27")
    cluster.ok("-n", "scratch", "rollout", "status", "deployment/tmp", "--timeout=60s")

    cluster.ok("delete", "namespace", "scratch", "--timeout=60s")

    eventually(lambda: cluster.kubectl("get", "namespace", "scratch").returncode == 1)
    log = (cluster.workdir / "server.log").read_text()
    assert "server rejected event" not in log, log
