"""A Deployment through `pinnace up --nodes 2` and kubectl, as a user runs one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-deployments"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_kubectl_creates_rolls_out_and_updates_a_deployment(cluster: Cluster) -> None:
    created = cluster.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
    assert created.strip() == "deployment.apps/web created"
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    rows = [line.split() for line in cluster.ok("get", "pods", "--no-headers").splitlines()]
    assert len(rows) == 3
    assert all(r[0].startswith("web-") and r[1:3] == ["1/1", "Running"] for r in rows)
    [deployment] = [line.split() for line in cluster.ok("get", "deployments").splitlines()[1:]]
    assert deployment[:4] == ["web", "3/3", "3", "3"]

    cluster.ok("set", "image", "deployment/web", "nginx=nginx:1.28")
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    listing = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase}"
        " {.metadata.deletionTimestamp}{'\\n'}{end}",
    )
    current = [line.split() for line in listing.splitlines() if len(line.split()) == 2]
    assert current == [["nginx:1.28", "Running"]] * 3  # old pods, if any, are terminating
    history = cluster.ok("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    described = cluster.ok("describe", "deployment", "web")
    assert "Scaled up replica set web-" in described

    assert cluster.ok("rollout", "undo", "deployment/web").strip() == (
        "deployment.apps/web rolled back"
    )
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    image = cluster.ok("get", "deployment", "web", "-o", "jsonpath={..containers[0].image}")
    assert image == "nginx:1.27"
    history = cluster.ok("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]
