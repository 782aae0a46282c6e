"""Usage-aware and learned policies in the real scheduler: `pinnace up --scheduler-config` with
PolicyPick running a toy policy that always packs (the most requested node first) and a saved
Q-table that packs, and with
TargetLoadPacking on the usage the scheduler samples; kubectl-made pods placed by them, and
`pinnace scheduler explain` showing their decisions like any plugin's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tests.http.conftest import launch, stop
from tests.support import eventually, score_only_config

from pinnace.cli.main import main
from pinnace.gym.qtable import LOAD_BUCKETS, NODE_BUCKETS, POD_BUCKETS, QTable

POLICY = '''
def pack(pod, nodes):
    """The share of each node's cpu already requested: the fullest node first."""
    return nodes[:, 2] / nodes[:, 0]
'''

CONFIG = score_only_config("PolicyPick", '{policy: "packing:pack"}')

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


def test_a_saved_q_table_places_kubectl_pods(tmp_path: Path) -> None:
    """A table that values a node the more of its cpu is requested (and an empty one least)
    packs: four pods of 900m fill the first node (the first of equals), the fifth opens the
    next."""
    values = np.tile(np.arange(NODE_BUCKETS, dtype=float), (LOAD_BUCKETS * POD_BUCKETS, 1))
    QTable(values).save(tmp_path / "table.npy")
    policy = f"{{model: {tmp_path / 'table.npy'}, kind: q-table}}"
    (tmp_path / "scheduler.yaml").write_text(CONFIG.replace('"packing:pack"', policy))
    cluster = launch(tmp_path, flags=("--nodes", "3", "--scheduler-config", "scheduler.yaml"))
    try:
        placed = []
        for i in range(5):  # one at a time: each sees the last one placed
            cluster.ok("create", "-f", "-", stdin=POD.format(name=f"web-{i}"))
            placed.append(
                eventually(
                    lambda n=f"web-{i}": cluster.ok(
                        "get", "pod", n, "-o", "jsonpath={.spec.nodeName}"
                    )
                )
            )
    finally:
        stop(cluster)
    assert placed == ["pinnace-node-1"] * 4 + ["pinnace-node-2"]


TLP_CONFIG = score_only_config("TargetLoadPacking")

BURSTABLE = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {{cpu: "1"}}
"""


def test_target_load_packing_runs_on_sampled_usage_in_pinnace_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nodes of 4 cores sampled idle, pods requesting 1 core (predicted 1.5 cores): with
    another such pod, a node holding one just placed (its use not measured yet) would be at
    (1.5 + 1.5) / 4 = 75 %, past the target of 40 %: 17; an idle node at 37.5 %: 96. So each
    pod goes to an idle node, and explaining the last shows those scores."""
    (tmp_path / "scheduler.yaml").write_text(TLP_CONFIG)
    cluster = launch(tmp_path, flags=("--nodes", "3", "--scheduler-config", "scheduler.yaml"))
    try:
        names = [f"api-{i}" for i in range(3)]
        for name in names:
            cluster.ok("create", "-f", "-", stdin=BURSTABLE.format(name=name))
            eventually(
                lambda n=name: cluster.ok("get", "pod", n, "-o", "jsonpath={.spec.nodeName}")
            )
        placed = [
            cluster.ok("get", "pod", name, "-o", "jsonpath={.spec.nodeName}") for name in names
        ]
        assert len(set(placed)) == 3
        code = main(
            ["scheduler", "explain", "api-2", "-o", "json", "--kubeconfig", str(cluster.kubeconfig)]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        raw = {
            n["name"]: [(s["plugin"], s["raw"]) for s in n["scores"]]
            for n in json.loads(out)["nodes"]
        }
        expected = {node: [("TargetLoadPacking", 17)] for node in placed[:2]}
        assert raw == {**expected, placed[2]: [("TargetLoadPacking", 96)]}
    finally:
        stop(cluster)


CUSTOM_TLP_CONFIG = score_only_config(
    "TargetLoadPacking",
    "{usageWindow: 1s, usageSampleInterval: 1s, metricProvider: "
    '{type: CustomMetrics, metric: http_requests_per_second, nodeCapacity: "100"}}',
)

SERVING = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    sim.pinnace.dev/cpu: 500m
    metrics.sim.pinnace.dev/http_requests_per_second: "{rate}"
spec:
  nodeName: {node}
  containers:
  - name: app
    image: nginx:1.27
    resources:
      limits: {{cpu: 100m, memory: 64Mi}}
"""


def test_target_load_packing_on_a_custom_metric_in_pinnace_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two pods of the same CPU use serving 80 and 20 requests a second on the two nodes: the
    scheduler, on the CustomMetrics provider, places the next pod by that load."""
    (tmp_path / "scheduler.yaml").write_text(CUSTOM_TLP_CONFIG)
    cluster = launch(tmp_path, flags=("--nodes", "2", "--scheduler-config", "scheduler.yaml"))
    try:
        for name, node, rate in (("busy", "pinnace-node-1", 80), ("calm", "pinnace-node-2", 20)):
            cluster.ok("create", "-f", "-", stdin=SERVING.format(name=name, node=node, rate=rate))

        def explained() -> dict[str, int] | None:
            code = main(
                ["scheduler", "explain", "calm", "-o", "json",
                 "--kubeconfig", str(cluster.kubeconfig)]
            )  # fmt: skip
            out, err = capsys.readouterr()
            assert code == 0, err
            raw = {n["name"]: n["scores"][0]["raw"] for n in json.loads(out)["nodes"]}
            return raw if raw["pinnace-node-1"] < raw["pinnace-node-2"] else None

        scores = eventually(explained)  # once a sample has both pods' loads
        assert scores is not None
        cluster.ok("create", "-f", "-", stdin=BURSTABLE.format(name="next"))
        node = eventually(
            lambda: cluster.ok("get", "pod", "next", "-o", "jsonpath={.spec.nodeName}")
        )
        assert node == "pinnace-node-2"
    finally:
        stop(cluster)
