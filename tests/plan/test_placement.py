"""The scheduler over a snapshot: trials put the cluster back as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.plan.manifests import deployment, pool, snapshot

from pinnace.plan.cluster import new_node
from pinnace.plan.materialize import materialize
from pinnace.plan.placement import Placer, unbound


def _contents(placer: Placer) -> tuple[Any, ...]:
    table = placer.core.table
    requested = {name: table.requested[i].tolist() for i, name in enumerate(table.names)}
    return requested, placer.pods, sorted(placer.nodes)


def test_a_trial_is_undone_and_the_next_makes_the_same_choices(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3), objects=[deployment("old", 4, "1")])
    made = materialize([deployment("web", 5, "700m")], nodes=cluster.nodes)
    placer = Placer(cluster)
    before = _contents(placer)
    landed = []
    for _ in range(2):
        placer.begin()
        placer.add_node(new_node(cluster.template("general"), "general-plan-1"))
        moved = placer.pods_on("general-1")
        for pod in moved:
            placer.delete_pod(pod)
        placer.place([unbound(pod) for pod in moved])
        landed.append([o.node for o in placer.place(made.pods)])
        placer.restore()
        assert _contents(placer) == before
    assert landed[0] == landed[1]
    assert all(landed[0])


def test_a_node_lost_in_a_trial_comes_back_with_its_pods(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3), objects=[deployment("old", 4, "1")])
    placer = Placer(cluster)
    before = _contents(placer)
    placer.begin()
    gone = placer.remove_node("general-2")
    assert gone
    placer.place([placer.replacement(pod) for pod in gone])
    placer.restore()
    assert _contents(placer) == before
