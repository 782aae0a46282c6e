"""A DaemonSet's history through `pinnace up --nodes 2` and kubectl: `rollout history` lists
a revision per template and `rollout undo` goes back to the previous one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controllers.test_daemonset_kubectl import MANIFEST
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-ds-history"), flags=("--nodes", "2"))
    yield running
    stop(running)


def rolled_out(cluster: Cluster) -> None:
    status = cluster.ok("rollout", "status", "ds/agent", "--timeout=60s")
    assert status.strip().endswith('daemon set "agent" successfully rolled out')


def running_images(cluster: Cluster) -> set[str]:
    listing = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={range .items[*]}{.spec.containers[0].image} {.metadata.deletionTimestamp}"
        "{'\\n'}{end}",
    )
    return {row[0] for line in listing.splitlines() if len(row := line.split()) == 1}


def test_rollout_history_and_undo_of_a_daemon_set(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=MANIFEST)
    rolled_out(cluster)
    cluster.ok("set", "image", "ds/agent", "agent=fluentd:v1.18")
    rolled_out(cluster)
    assert running_images(cluster) == {"fluentd:v1.18"}

    history = cluster.ok("rollout", "history", "ds/agent").splitlines()
    assert history[0].strip() == "daemonset.apps/agent"
    assert history[1].split() == ["REVISION", "CHANGE-CAUSE"]
    assert [line.split() for line in history[2:] if line.strip()] == [
        ["1", "<none>"],
        ["2", "<none>"],
    ]
    detail = cluster.ok("rollout", "history", "ds/agent", "--revision=1")
    assert "fluentd:v1.17" in detail

    revisions = cluster.ok("get", "controllerrevisions").splitlines()
    assert revisions[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert sorted(line.split()[1:3] for line in revisions[1:]) == [
        ["daemonset.apps/agent", "1"],
        ["daemonset.apps/agent", "2"],
    ]

    assert cluster.ok("rollout", "undo", "ds/agent").strip() == "daemonset.apps/agent rolled back"
    rolled_out(cluster)
    assert running_images(cluster) == {"fluentd:v1.17"}
    image = cluster.ok(
        "get", "ds/agent", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert image == "fluentd:v1.17"
    history = cluster.ok("rollout", "history", "ds/agent").splitlines()
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["2", "3"]
    # kubectl compares the revision's data byte for byte with its own patch of the template.
    again = cluster.ok("rollout", "undo", "ds/agent", "--to-revision=3")
    assert again.strip() == (
        "daemonset.apps/agent skipped rollback (current template already matches revision 3)"
    )
