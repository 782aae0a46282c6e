"""Explanations: every Filter plugin's verdict per node, raw and normalised scores per feasible
node, and the pick, as data and as the table `pinnace scheduler explain` prints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import Scheduler
from pinnace.scheduler.explain import explain, render
from pinnace.scheduler.plugins import default_profile


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [container]}}


@pytest.fixture
def core() -> Iterator[Scheduler]:
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(lambda binding: None)], clock)
        gpu = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
        for n in (node("small", "1"), node("big", "4"), node("gpu", "1", gpu), node("mid", "2")):
            scheduler.add_node(n)
        yield scheduler


def test_every_filter_verdict_and_the_scores_of_feasible_nodes(core: Scheduler) -> None:
    explanation = explain(core, pod("web", "1500m"))
    by_node = {n.node: n for n in explanation.nodes}
    fit = {
        n: next(v for v in by_node[n].filters if v.plugin == "NodeResourcesFit") for n in by_node
    }
    assert fit["small"].text == "Insufficient cpu"
    assert fit["gpu"].text == "Insufficient cpu"  # asked too, though TaintToleration came first
    assert by_node["gpu"].rejected_by.plugin == "TaintToleration"
    assert by_node["gpu"].rejected_by.text == "node(s) had untolerated taint {gpu: true}"
    assert [n.node for n in explanation.nodes if n.feasible] == ["big", "mid"]
    big = {s.plugin: s for s in by_node["big"].scores}
    mid = {s.plugin: s for s in by_node["mid"].scores}
    # LeastAllocated over cpu and memory: big keeps 2500/4000 of its cpu, mid 500/2000, and
    # both 8Gi less the 200Mi counted for a container without a memory request.
    memory = (8192 - 200) * 100 // 8192
    assert big["NodeResourcesFit"].raw == (62 + memory) // 2
    assert mid["NodeResourcesFit"].raw == (25 + memory) // 2
    assert big["TaintToleration"].weight == 3
    assert big["TaintToleration"].normalized == mid["TaintToleration"].normalized == 100
    assert by_node["big"].total > by_node["mid"].total
    assert explanation.selected == "big" and explanation.message == ""
    assert by_node["small"].scores == [] and by_node["small"].total is None


def test_the_same_pick_as_a_scheduling_cycle(core: Scheduler) -> None:
    explained = explain(core, pod("web", "1500m"))
    core.add_pod(pod("web", "1500m"))
    (result,) = core.schedule_pending()
    assert result.node_name == explained.selected


def test_nothing_fits_gives_failed_schedulings_message(core: Scheduler) -> None:
    explanation = explain(core, pod("huge", "8"))
    assert explanation.selected is None and explanation.best == []
    assert explanation.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu."
        " preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling,"
        " 3 No preemption victims found for incoming pod.."
    ), "as FailedScheduling says it, preemption included"
    assert explanation.preemption is None
    assert explanation.message in render(explanation.as_dict())


def test_render_prints_a_filter_table_a_score_table_and_the_pick(core: Scheduler) -> None:
    text = render(explain(core, pod("web", "1500m")).as_dict())
    lines = text.splitlines()
    assert lines[0] == "Pod ns/web (scheduler default-scheduler)"
    header = lines[lines.index("FILTER") + 1].split()
    assert header[0] == "NODE" and "NodeResourcesFit" in header and "TaintToleration" in header
    assert any(line.startswith("small") and "Insufficient cpu" in line for line in lines)
    score_header = lines[
        lines.index("SCORE (raw -> normalised, times the weight in the total)") + 1
    ]
    assert "TaintToleration (x3)" in score_header and score_header.endswith("TOTAL")
    assert lines[-1] == "Selected: big"


def test_as_dict_is_plain_data(core: Scheduler) -> None:
    data = explain(core, pod("web", "1500m")).as_dict()
    assert data["selected"] == "big"
    big = next(n for n in data["nodes"] if n["name"] == "big")
    assert {"plugin": "NodeResourcesFit", "verdict": "passed", "passed": True} in big["filters"]
    assert big["total"] == sum(s["normalized"] * s["weight"] for s in big["scores"])


def test_a_pod_no_profile_serves_is_refused(core: Scheduler) -> None:
    other = pod("x", "1")
    other["spec"]["schedulerName"] = "mine"
    with pytest.raises(ValueError, match='no profile serves schedulerName "mine"'):
        explain(core, other)


def test_preemption_is_a_dry_run_naming_the_node_and_the_victims(core: Scheduler) -> None:
    core.add_pod({**pod("low", "3"), "spec": {**pod("low", "3")["spec"], "nodeName": "big"}})
    urgent = pod("urgent", "4")
    urgent["spec"]["priority"] = 1000
    explanation = explain(core, urgent)
    assert explanation.selected is None
    assert explanation.preemption is not None
    assert (explanation.preemption.node, explanation.preemption.victims) == ("big", ("ns/low",))
    assert "Preemption would nominate big, evicting: ns/low" in render(explanation.as_dict())
    assert explanation.as_dict()["preemption"] == {"node": "big", "victims": ["ns/low"]}
    # Nothing was carried out: the victim is still there and nobody is nominated.
    assert "ns/low" in core.table.pods[core.table.index["big"]]
    assert core.nominator.node_of("ns/urgent") is None


def test_the_room_of_a_pod_nominated_to_a_node_is_kept_for_it(core: Scheduler) -> None:
    waiting = pod("waiting", "3")
    waiting["spec"]["priority"] = 1000
    waiting["status"] = {"nominatedNodeName": "big"}
    core.add_pod(waiting)
    explanation = explain(core, pod("web", "1500m"))
    big = next(n for n in explanation.nodes if n.node == "big")
    assert all(v.passed for v in big.filters), "big passes on its own"
    assert big.reserved is not None and big.reserved.reasons == ("Insufficient cpu",)
    assert not big.feasible and explanation.selected == "mid"
    assert "big: NodeResourcesFit: Insufficient cpu" in render(explanation.as_dict())


def test_a_gated_pod_is_explained_as_if_its_gates_were_removed(core: Scheduler) -> None:
    gated = pod("web", "1500m")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "b"}]
    data = explain(core, gated).as_dict()
    assert data["schedulingGates"] == ["example.com/quota", "b"]
    lines = render(data).splitlines()
    assert lines[1] == (
        "Waiting for scheduling gates: [example.com/quota b]: the scheduler does not try it "
        "until they are removed; explained as if they were."
    )
    assert lines[-1] == "Selected: big"
