"""The JSON every plan prints is versioned: its keys stay as docs/planning.md lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.plan.manifests import cluster_file, deployment, pool

from pinnace.cli.main import main

POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: duplicates
  plugins: {balance: {enabled: [RemoveDuplicates]}}
"""
COMMON = {"planVersion", "command", "cluster", "nodes", "fragmentation"}
KEYS = {
    "fit": {
        "fits",
        "pods",
        "workloads",
        "unschedulable",
        "placements",
        "preemptions",
        "clusterPending",
        "skipped",
    },
    "headroom": {"shapes"},
    "failure": {"trials", "summary", "cap", "setupWallSeconds"},
    "deschedule": {"evictions", "summary", "skipped", "heldBack"},
    "remove": {
        "threshold",
        "removable",
        "unremovable",
        "nodesBefore",
        "nodesAfter",
        "compactionRatio",
    },
    "nodes": {
        "pool",
        "template",
        "lowerBound",
        "shapeBound",
        "nodesToAdd",
        "spare",
        "nodesToAddWithSpare",
        "spareMethod",
        "newPods",
        "tried",
        "unschedulable",
        "lostNodes",
        "skipped",
    },
}


def test_every_command_prints_version_1_with_its_keys(tmp_path: Path, capsys: object) -> None:
    cluster = str(cluster_file(tmp_path, pool("general", 2), objects=[deployment("old", 2, "1")]))
    web = tmp_path / "web.json"
    web.write_text(json.dumps(deployment("web", 3, "1")))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    commands = {
        "fit": ["fit", str(web)],
        "headroom": ["headroom", "--shape", "cpu=1"],
        "nodes": ["nodes", str(web), "--pool", "general"],
        "remove": ["remove"],
        "failure": ["failure", "--node", "general-1"],
        "deschedule": ["deschedule", "--policy", str(policy)],
    }
    for command, args in commands.items():
        html = tmp_path / f"{command}.html"
        assert main(["plan", *args, "--cluster", cluster, "--json", "--html", str(html)]) == 0
        doc = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
        assert set(doc) == COMMON | KEYS[command], command
        assert (doc["planVersion"], doc["command"]) == (1, command)
        assert set(doc["cluster"]) == {
            "source",
            "nodes",
            "pods",
            "pendingPods",
            "pools",
            "schedulerConfiguration",
        }
        assert set(doc["fragmentation"]) == {"resources", "shapes", "scopes", "nodes"}
        page = html.read_text()
        assert page.startswith("<!DOCTYPE html>") and 'id="fragmentation"' in page


def test_a_no_is_status_3_after_the_whole_report(tmp_path: Path, capsys: object) -> None:
    """`plan fit` when the workloads do not fit, `plan nodes` when no count up to --max-nodes
    does it: the report as for a yes, then status 3 (1 is a bad input, 2 a bad command line)."""
    cluster = str(cluster_file(tmp_path, pool("general", 2)))
    web = tmp_path / "web.json"
    web.write_text(json.dumps(deployment("web", 15, "1")))  # 8 fit: 2 nodes more for the rest
    assert main(["plan", "fit", str(web), "--cluster", cluster, "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["fits"] is False  # type: ignore[attr-defined]
    nodes = ["plan", "nodes", str(web), "--pool", "general", "--cluster", cluster]
    assert main([*nodes, "--max-nodes", "1"]) == 3
    assert capsys.readouterr().out.startswith(  # type: ignore[attr-defined]
        "Even 1 more node of pool general does not make everything fit"
    )
    assert main([*nodes, "--max-nodes", "2"]) == 0
    assert main([*nodes, "--max-nodes", "2", "--spare", "1"]) == 3


def test_a_bad_input_is_one_line_and_status_1(tmp_path: Path, capsys: object) -> None:
    missing = str(tmp_path / "nope.yaml")
    assert main(["plan", "headroom", "--cluster", missing]) == 1
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err == f"pinnace plan headroom: {missing}: No such file or directory\n"


def test_the_same_input_and_seed_give_the_same_plan(tmp_path: Path, capsys: object) -> None:
    cluster = str(cluster_file(tmp_path, pool("general", 3), objects=[deployment("old", 5, "1")]))
    web = tmp_path / "web.json"
    web.write_text(json.dumps(deployment("web", 7, "700m")))
    printed = []
    for _ in range(2):
        assert main(["plan", "fit", str(web), "--cluster", cluster, "--seed", "3", "--json"]) == 0
        printed.append(capsys.readouterr().out)  # type: ignore[attr-defined]
    assert printed[0] == printed[1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: Scenario\nmetadata: {name: x\n",
            "while parsing a flow mapping: expected ',' or '}', but got '<stream end>'"
            " (line 3, column 1)",
        ),
        (
            "kind: Scenario\n---\nkind: Cluster\n",
            "expected a single document in the stream: but found another document"
            " (line 2, column 1)",
        ),
    ],
)
def test_a_cluster_file_that_is_not_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    assert main(["plan", "headroom", "--cluster", str(cluster)]) == 1
    assert capsys.readouterr().err == f"pinnace plan headroom: {cluster}: not YAML: {message}\n"


@pytest.mark.parametrize(
    ("flag", "what"),
    [
        ("--policy", "the policy is not valid YAML"),
        ("--scheduler-config", "{path}: not valid YAML"),
    ],
)
def test_a_policy_or_scheduler_configuration_not_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, what: str
) -> None:
    cluster = str(cluster_file(tmp_path, pool("general", 1)))
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: X\nprofiles: [a\n")
    args = ["plan", "deschedule", "--cluster", cluster, flag, str(bad)]
    if flag == "--scheduler-config":
        args += ["--policy", str(bad)]
    assert main(args) == 1
    problem = "while parsing a flow sequence: expected ',' or ']', but got '<stream end>'"
    message = what.format(path=bad)
    assert capsys.readouterr().err == (
        f"pinnace plan deschedule: {message}: {problem} (line 3, column 1)\n"
    )


def test_a_count_of_one_takes_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The headlines as a user reads them on a one-node cluster: "1 node", never "1 nodes"."""
    cluster = str(cluster_file(tmp_path, pool("general", 1), objects=[deployment("old", 1, "1")]))
    web = tmp_path / "web.json"
    web.write_text(json.dumps(deployment("web", 1, "1")))
    headlines = {
        ("fit", str(web)): "Fits: the 1 new pod placed on 1 node.",
        ("headroom", "--shape", "cpu=1"): "each shape on its own, on 1 node running 1 pod.",
        ("remove",): "0 of 1 node can be removed",
        ("nodes", str(web), "--pool", "general", "--spare", "1"): (
            "Add 0 nodes of pool general (lower bound from the resource totals: 0; shape by "
            "shape: 0) for the 1 new pod and everything pending to schedule.\n"
            "With 1 spare: add 1 node (checked on every combination of 1 node)."
        ),
    }
    for args, said in headlines.items():
        main(["plan", *args, "--cluster", cluster])
        out = capsys.readouterr().out
        assert said in out, out


def test_an_apply_s_type_error_names_the_object_as_kubectl_sends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = str(cluster_file(tmp_path, pool("general", 1)))
    web = tmp_path / "web.json"
    wrong = deployment("web", 1, "1")
    wrong["spec"]["replicas"] = "x"
    del wrong["metadata"]["namespace"]  # as a manifest usually leaves it out
    web.write_text(json.dumps(wrong))
    assert main(["plan", "fit", str(web), "--cluster", cluster]) == 1
    assert capsys.readouterr().err == (
        "pinnace plan fit: failed to create typed patch object (default/web; apps/v1, "
        "Kind=Deployment): .spec.replicas: expected numeric (int or float), got string\n"
    )
