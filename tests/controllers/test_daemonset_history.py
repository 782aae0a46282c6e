"""A DaemonSet's ControllerRevisions on the virtual clock: one per template, renumbered when
a rollback returns to one, adopted when orphaned, pruned beyond revisionHistoryLimit,
renamed after a hash collision, deduplicated, and collected with their DaemonSet."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import PODS, Workloads, template

from pinnace.api.decode import decode
from pinnace.api.objects import Object
from pinnace.apiserver.keys import object_key
from pinnace.client import PatchType
from pinnace.controllers.daemonset import DAEMON_SETS
from pinnace.controllers.daemonset_history import CONTROLLER_REVISIONS, get_patch
from pinnace.controllers.daemonset_util import current_hash

HASH = "controller-revision-hash"


def daemon_set(**spec: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "annotations": {"kubernetes.io/change-cause": "first"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": template(app="agent"),
            **spec,
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


def revisions(cluster: Workloads) -> list[Object]:
    items = cluster.run(cluster.client.list(CONTROLLER_REVISIONS, "default"))["items"]
    return sorted(items, key=lambda r: r["revision"])


def set_image(cluster: Workloads, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}}
    cluster.run(cluster.client.patch(DAEMON_SETS, "default", "agent", patch))
    cluster.settle(60)


def images(cluster: Workloads) -> set[str]:
    return {p["spec"]["containers"][0]["image"] for p in cluster.pods(app="agent")}


def pod_hashes(cluster: Workloads) -> set[str]:
    return {p["metadata"]["labels"][HASH] for p in cluster.pods(app="agent")}


def test_the_first_template_is_revision_1_owned_labelled_and_restorable(cluster: Workloads):
    ds = cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set()))
    cluster.settle()
    ds = cluster.get(DAEMON_SETS, "agent")
    [first] = revisions(cluster)
    hash_ = first["metadata"]["labels"][HASH]
    assert first["metadata"]["name"] == f"agent-{hash_}"
    assert first["revision"] == 1
    assert first["metadata"]["labels"] == {"app": "agent", HASH: hash_}
    assert first["metadata"]["annotations"]["kubernetes.io/change-cause"] == "first"
    [owner] = first["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "DaemonSet",
        "agent",
        ds["metadata"]["uid"],
        True,
    )
    template_ = first["data"]["spec"]["template"]
    assert template_["$patch"] == "replace"
    assert template_["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert template_["metadata"] == {"creationTimestamp": None, "labels": {"app": "agent"}}
    assert first["data"] == get_patch(ds)
    assert pod_hashes(cluster) == {hash_}


def test_a_new_template_is_a_new_revision_and_a_rollback_renumbers_the_old_one(cluster: Workloads):
    cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set()))
    cluster.settle()
    set_image(cluster, "nginx:1.28")
    first, second = revisions(cluster)
    assert (first["revision"], second["revision"]) == (1, 2)
    assert second["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert images(cluster) == {"nginx:1.28"}
    assert pod_hashes(cluster) == {second["metadata"]["labels"][HASH]}

    # What `kubectl rollout undo` does: apply the older revision's data as a patch.
    cluster.run(
        cluster.client.patch(
            DAEMON_SETS, "default", "agent", first["data"], PatchType.STRATEGIC_MERGE
        )
    )
    cluster.settle(60)
    after = revisions(cluster)
    assert [(r["metadata"]["name"], r["revision"]) for r in after] == [
        (second["metadata"]["name"], 2),
        (first["metadata"]["name"], 3),
    ]
    assert images(cluster) == {"nginx:1.27"}
    assert pod_hashes(cluster) == {first["metadata"]["labels"][HASH]}


def test_old_revisions_beyond_the_limit_go_oldest_first(cluster: Workloads):
    cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set(revisionHistoryLimit=1)))
    cluster.settle()
    for image in ("nginx:1.28", "nginx:1.29"):
        set_image(cluster, image)
    kept = revisions(cluster)
    assert [r["revision"] for r in kept] == [2, 3]
    assert kept[1]["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.29"


def test_a_revision_no_pod_runs_is_kept_while_a_pod_still_runs_it(cluster: Workloads):
    strategy = {"type": "OnDelete"}
    cluster.run(
        cluster.client.create(
            DAEMON_SETS, "default", daemon_set(revisionHistoryLimit=0, updateStrategy=strategy)
        )
    )
    cluster.settle()
    set_image(cluster, "nginx:1.28")
    # OnDelete: the pods still run revision 1, so it stays though the limit is 0.
    assert [r["revision"] for r in revisions(cluster)] == [1, 2]
    for pod in cluster.pods(app="agent"):
        cluster.run(cluster.client.delete(PODS, "default", pod["metadata"]["name"]))
    cluster.settle(60)
    assert images(cluster) == {"nginx:1.28"}
    assert [r["revision"] for r in revisions(cluster)] == [2]


def test_an_orphaned_revision_is_adopted_and_revisions_go_with_the_daemon_set(cluster: Workloads):
    cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set()))
    cluster.settle()
    [first] = revisions(cluster)
    release = {"metadata": {"ownerReferences": None}}
    cluster.run(
        cluster.client.patch(
            CONTROLLER_REVISIONS, "default", first["metadata"]["name"], release, PatchType.MERGE
        )
    )
    cluster.settle()
    [adopted] = revisions(cluster)
    assert adopted["metadata"]["uid"] == first["metadata"]["uid"]
    assert adopted["metadata"]["ownerReferences"][0]["name"] == "agent"

    cluster.run(cluster.client.delete(DAEMON_SETS, "default", "agent"))
    cluster.settle(10)
    assert revisions(cluster) == []


def test_a_name_taken_by_another_revision_bumps_the_collision_count(cluster: Workloads):
    ds = decode(daemon_set(), DAEMON_SETS).obj  # the template as the server will store it
    DAEMON_SETS.default(ds)
    taken = f"agent-{current_hash(ds)}"
    squatter = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": taken, "labels": {"app": "other"}},
        "data": {"something": "else"},
        "revision": 1,
    }
    cluster.run(cluster.client.create(CONTROLLER_REVISIONS, "default", squatter))
    key = object_key(DAEMON_SETS, "default", "agent")
    stored: list[tuple[int, Object]] = []
    cluster.server.store.observe(
        lambda e: stored.append((e.revision, copy.deepcopy(e.object))) if e.key == key else None
    )
    cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set()))
    cluster.settle(10)
    ds = cluster.get(DAEMON_SETS, "agent")
    assert ds["status"]["collisionCount"] == 1
    ours = [r for r in revisions(cluster) if r["metadata"]["name"] != taken]
    assert [r["metadata"]["name"] for r in ours] == [f"agent-{current_hash(ds)}"]
    assert pod_hashes(cluster) == {current_hash(ds)}
    assert len(cluster.pods(app="agent")) == 2
    # The bump is a write of its own: every version of the DaemonSet stays as it was stored.
    for revision, written in stored:
        assert cluster.run(cluster.server.store.get(key, revision)) == written


def test_duplicates_of_the_current_revision_give_way_to_the_highest_numbered(cluster: Workloads):
    cluster.run(cluster.client.create(DAEMON_SETS, "default", daemon_set()))
    cluster.settle()
    [first] = revisions(cluster)
    duplicate = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "agent-dup", "labels": {"app": "agent", HASH: "dup"}},
        "data": first["data"],
        "revision": 5,
    }
    cluster.run(cluster.client.create(CONTROLLER_REVISIONS, "default", duplicate))
    cluster.settle()
    [kept] = revisions(cluster)
    assert (kept["metadata"]["name"], kept["revision"]) == ("agent-dup", 5)
    assert kept["metadata"]["ownerReferences"][0]["name"] == "agent"
    assert pod_hashes(cluster) == {"dup"}
    assert len(cluster.pods(app="agent")) == 2
