"""`pinnace node stop|start NAME` against `pinnace up`, as a user sees it through kubectl: the
stopped node turns NotReady (Ready Unknown) after the node monitor grace period, and Ready
again once started. Short kubelet and controller timings keep it to seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: fast
  count: 2
  kubelet: {nodeLeaseDurationSeconds: 4, nodeStatusUpdateFrequency: 1s}
"""


def node(cluster: Cluster, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`pinnace node ARGS` against the cluster: exit code, and what it printed."""
    code = main(["node", *args, "--kubeconfig", str(cluster.kubeconfig)])
    out, err = capsys.readouterr()
    return code, out + err


def status(cluster: Cluster, name: str) -> str:
    return cluster.ok("get", "node", name, "--no-headers").split()[1]


def test_a_stopped_node_turns_not_ready_and_a_started_one_ready_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER_FILE)
    flags = ("--config", "cluster.yaml", "--node-monitor-grace-period", "4s")
    cluster = launch(tmp_path, flags=(*flags, "--node-monitor-period", "1s"))
    try:
        assert eventually(lambda: status(cluster, "fast-1") == "Ready")
        assert node(cluster, capsys, "stop", "fast-1") == (0, "node/fast-1 stopped\n")

        def unknown() -> bool:
            conditions = cluster.ok(
                "get", "node", "fast-1", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')]}"
            )
            assert '"status":"Unknown"' in conditions
            assert "Kubelet stopped posting node status." in conditions
            return True

        eventually(unknown)
        assert status(cluster, "fast-1") == "NotReady"
        assert status(cluster, "fast-2") == "Ready"

        assert node(cluster, capsys, "start", "fast-1") == (0, "node/fast-1 started\n")
        assert eventually(lambda: status(cluster, "fast-1") == "Ready")

        code, said = node(cluster, capsys, "partition", "nowhere")
        assert (code, said) == (
            1,
            'Error from server (NotFound): node "nowhere" is not a simulated node of this '
            "cluster\n",
        )
    finally:
        stop(cluster)
