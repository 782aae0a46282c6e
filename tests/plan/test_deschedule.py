"""`pinnace plan deschedule`: the descheduler's evictions, and where the replacements land."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.plan.manifests import deployment, pool, snapshot

from pinnace.cli.main import main
from pinnace.descheduler.policy import parse
from pinnace.plan import Snapshot
from pinnace.plan.cluster import new_node
from pinnace.plan.deschedule import deschedule

POLICY_DOCUMENT = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "profiles": [
        {
            "name": "balance",
            "pluginConfig": [
                {
                    "name": "LowNodeUtilization",
                    "args": {
                        "thresholds": {"cpu": 10, "memory": 10},
                        "targetThresholds": {"cpu": 20, "memory": 20},
                    },
                }
            ],
            "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
        }
    ],
}
POLICY = parse(yaml.safe_dump(POLICY_DOCUMENT))


def _cluster(tmp_path: Path, cpu: str, **spec: Any) -> Snapshot:
    """web's four pods on general-1, then two more nodes added to the pool, empty."""
    cluster = snapshot(tmp_path, pool("general", 1), objects=[deployment("web", 4, cpu, **spec)])
    template = cluster.template("general")
    added = [new_node(template, f"general-{i}") for i in (2, 3)]
    return replace(cluster, nodes=[*cluster.nodes, *added])


def test_replacements_land_where_there_is_room_while_the_evicted_pods_terminate(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path, "1")
    assert {p["spec"]["nodeName"] for p in cluster.pods} == {"general-1"}
    plan = deschedule(cluster, POLICY).document
    # general-1 is full (100 % cpu), the spare nodes empty: two pods of 1 CPU go (then the
    # spare nodes would pass 20 %); general-1 is still full of terminating pods
    assert [(e["node"], e["strategy"]) for e in plan["evictions"]] == [
        ("general-1", "LowNodeUtilization")
    ] * 2
    assert sorted(e["landsOn"] for e in plan["evictions"]) == ["general-2", "general-3"]
    assert plan["summary"]["landElsewhere"] == 2


def test_pods_that_can_only_come_back_are_evicted_for_nothing(tmp_path: Path) -> None:
    # descheduler#1584: without nodeFit, LowNodeUtilization evicts pods bound to their node
    cluster = _cluster(tmp_path, "500m", nodeSelector={"kubernetes.io/hostname": "general-1"})
    plan = deschedule(cluster, POLICY).document
    assert len(plan["evictions"]) == 3  # from 50 % of the CPU down to 12.5 %
    assert all(e["sameNode"] for e in plan["evictions"])
    assert plan["summary"]["backOnSameNode"] == 3


def test_the_documented_example_holds_back_the_daemonset_pods_in_upstream_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/planning.md's cluster.yaml and policy: the evictor's reason for the DaemonSet pods
    is the descheduler's own."""
    docs = (Path(__file__).parents[2] / "docs" / "planning.md").read_text()
    example = docs.partition("`cluster.yaml`")[2].partition("```yaml\n")[2].partition("```")[0]
    (tmp_path / "cluster.yaml").write_text(example)
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(POLICY_DOCUMENT))
    argv = ["plan", "deschedule", "--policy", str(tmp_path / "policy.yaml")]
    assert main([*argv, "--cluster", str(tmp_path / "cluster.yaml")]) == 0
    held = (
        "Held back by the evictor: 3 (pod is related to daemonset and descheduler is not "
        "configured with evictDaemonSetPods)."
    )
    assert held in capsys.readouterr().out.splitlines()
    assert held in docs
