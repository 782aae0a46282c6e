"""The node table's pods grouped by labels, kept bind by bind, count on every node the pods a
selector matches (PodTopologySpread's counts) as looking at each pod does, and its pods with
inter-pod affinity terms are those of its pods that have some, whatever nodes and pods come and
go: pods on a node the table does not have yet, pods being deleted, nodes removed with their
pods on them and added back, pods seen again as a binding confirms them."""

from __future__ import annotations

import random

import pytest

from pinnace.api.labels import selector_from_dict
from pinnace.scheduler import NodeTable, PodInfo
from pinnace.scheduler.plugins.label_index import _matching_by_labels, counts_for
from pinnace.scheduler.plugins.pod_affinity_terms import pod_affinity_terms

SELECTORS = [
    selector_from_dict({"matchLabels": {"app": "x"}}),
    selector_from_dict({"matchLabels": {"app": "y", "tier": "web"}}),
    selector_from_dict({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
    selector_from_dict({}),
]


def _pod(rng: random.Random, name: str, node: str) -> PodInfo:
    labels = {"app": rng.choice("xy"), **({"tier": "web"} if rng.random() < 0.4 else {})}
    meta = {"name": name, "namespace": rng.choice(["default", "other"]), "labels": labels}
    if rng.random() < 0.15:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    spec: dict[str, object] = {"nodeName": node, "containers": []}
    if rng.random() < 0.3:
        term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "zone"}
        kind = rng.choice(["podAffinity", "podAntiAffinity", "nodeAffinity"])
        spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return PodInfo.from_pod({"metadata": meta, "spec": spec})


def _node(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"pods": "110"}}}


def _confirm(rng: random.Random, table: NodeTable, name: str) -> None:
    """A pod of that name on its node seen again, as a binding's confirmation is: alike but
    for its status, or with new labels, or being deleted now; it goes last among the node's
    pods, as one placed anew does."""
    found = [
        (i, key, pod)
        for i, pods in enumerate(table.pods)
        for key, pod in pods.items()
        if pod.name == name
    ]
    if not found:
        return  # its node is gone for now
    i, key, pod = rng.choice(found)
    meta = dict(pod.pod["metadata"])
    roll = rng.random()
    if roll < 0.3:
        meta["labels"] = {"app": rng.choice("xy")}
    elif roll < 0.4:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    confirmed = pod.updated({**pod.pod, "metadata": meta, "status": {"phase": "Running"}})
    table.replace_pod(confirmed, table.names[i])
    assert list(table.pods[i].items())[-1] == (key, confirmed)


@pytest.mark.parametrize("seed", range(5))
def test_counts_from_label_groups_equal_counting_each_pod(seed: int) -> None:
    rng = random.Random(seed)
    table = NodeTable()
    where: dict[str, str] = {}  # pod name -> node
    for step in range(300):
        node = f"n{rng.randrange(6)}"
        roll = rng.random()
        if roll < 0.15:
            if node in table.index:
                table.remove_node(node)
            else:
                table.add_node(_node(node))
        elif roll < 0.4 and where:
            name = rng.choice(sorted(where))
            table.remove_pod(f"default/{name}", where[name])
            table.remove_pod(f"other/{name}", where.pop(name))
        elif roll < 0.55 and where:
            _confirm(rng, table, rng.choice(sorted(where)))
        else:
            name = f"p{rng.randrange(40)}"
            if name in where:  # an update: the old state goes first, as the cache does it
                table.remove_pod(f"default/{name}", where[name])
                table.remove_pod(f"other/{name}", where[name])
            where[name] = node
            table.add_pod(_pod(rng, name, node), node)
        for i in range(len(table)):
            with_terms = {k: p for k, p in table.pods[i].items() if pod_affinity_terms(p)}
            assert table.pods_with_affinity[i] == with_terms
        assert table.pods_with_affinity_count == sum(map(len, table.pods_with_affinity))
        for namespace in ("default", "other"):
            for selector in SELECTORS:
                each = [
                    sum(counts_for(p, namespace, selector) for p in table.pods[i].values())
                    for i in range(len(table))
                ]
                grouped = _matching_by_labels(table, namespace, selector).tolist()
                assert grouped == each, f"step {step}"
