"""A learned policy in the real scheduler: `pinnace up --scheduler-config` with PolicyPick
running a toy policy that always packs (the most requested node first), kubectl-made pods
placed by it, and `pinnace scheduler explain` showing its decision like any plugin's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from tests.http.conftest import launch, stop
from tests.support import eventually

from pinnace.cli.main import main

POLICY = '''
def pack(pod, nodes):
    """The share of each node's cpu already requested: the fullest node first."""
    return nodes[:, 2] / nodes[:, 0]
'''

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: PolicyPick}]
  pluginConfig:
  - name: PolicyPick
    args: {policy: "packing:pack"}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {{cpu: 900m, memory: 64Mi}}
"""


def test_a_packing_policy_places_kubectl_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "packing.py").write_text(POLICY)
    (tmp_path / "scheduler.yaml").write_text(CONFIG)
    cluster = launch(tmp_path, flags=("--nodes", "3", "--scheduler-config", "scheduler.yaml"))
    try:
        names = [f"web-{i}" for i in range(6)]
        for name in names:  # one at a time: each sees the last one placed
            cluster.ok("create", "-f", "-", stdin=POD.format(name=name))
            eventually(
                lambda n=name: cluster.ok("get", "pod", n, "-o", "jsonpath={.spec.nodeName}")
            )
        placed = {
            name: cluster.ok("get", "pod", name, "-o", "jsonpath={.spec.nodeName}")
            for name in names
        }
        # 4 cores a node: four pods of 900m fill the first, the next two pack the second.
        by_node = Counter(placed.values())
        assert sorted(by_node.values()) == [2, 4]
        first, second = by_node.most_common()[0][0], by_node.most_common()[1][0]
        assert [placed[n] for n in names] == [first] * 4 + [second] * 2

        code = main(
            ["scheduler", "explain", "web-5", "-o", "json", "--kubeconfig", str(cluster.kubeconfig)]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        explanation = json.loads(out)
        assert explanation["selected"] == second
        scores = {
            n["name"]: [(s["plugin"], s["normalized"]) for s in n["scores"]]
            for n in explanation["nodes"]
            if n["feasible"]
        }
        third = ({"pinnace-node-1", "pinnace-node-2", "pinnace-node-3"} - {first, second}).pop()
        assert scores == {second: [("PolicyPick", 100)], third: [("PolicyPick", 0)]}
    finally:
        stop(cluster)
