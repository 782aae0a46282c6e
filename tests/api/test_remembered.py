"""The memos of pure answers (`Remembered`): what they keep, and that the objects of a large
cluster's heartbeats (a Lease, a Node each node writes at every renewal) neither miss every
time nor push out the entries of a workload's pods."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog, meta, schema
from pinnace.api.field import FieldError
from pinnace.api.objects import Remembered
from pinnace.api.schema import normalize

PODS = catalog.kind("", "pods")
LEASES = catalog.kind("coordination.k8s.io", "leases")
NODES = 5_000


def test_a_memo_of_returning_keys_keeps_a_key_from_its_second_offer() -> None:
    memo: Remembered[str] = Remembered(2, only_returning=True)
    assert not memo.returning("a")
    assert memo.returning("a")
    assert not memo.returning("b")
    assert [memo.returning(k) for k in ("c", "d", "b")] == [False, False, False]  # b forgotten
    plain: Remembered[str] = Remembered(2)
    assert plain.returning("a")


def _pod(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": image}]},
    }


def _lease(node: int, renewed: int) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": f"node-{node}",
            "namespace": "kube-node-lease",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": f"node-{node}", "uid": f"u-{node}"}
            ],
        },
        "spec": {
            "holderIdentity": f"node-{node}",
            "leaseDurationSeconds": 40,
            "renewTime": f"2026-01-01T00:00:{renewed % 60:02d}.{node:06d}Z",
        },
    }


def _spec_remembered(obj: dict[str, Any]) -> bool:
    model = schema.schema_of(PODS).model
    text = schema.plain_json(obj["spec"])
    return schema._specs.get((model, text)) is not None


def test_a_spec_is_remembered_once_sent_again_and_the_leases_push_none_out() -> None:
    pod = _pod("web:1")
    first = normalize(PODS, pod).obj
    assert not _spec_remembered(pod)  # one pod of its spec so far: not worth an entry
    assert normalize(PODS, pod).obj == first
    assert _spec_remembered(pod)
    for node in range(2 * NODES // 5):  # more than the memo holds, each spec new
        normalize(LEASES, _lease(node, 0))
    assert _spec_remembered(pod)
    assert normalize(PODS, pod).obj == first


def test_the_metadata_of_every_nodes_lease_stays_remembered_across_a_renewal_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for renewed in (0, 10):  # remembered from the second time it is seen
        for node in range(NODES):
            assert meta.validate_object_meta(_lease(node, renewed), namespaced=True) == []
    missed: list[dict[str, Any]] = []
    real = meta._common_errors_of

    def counted(m: dict[str, Any]) -> list[FieldError]:
        missed.append(m)
        return real(m)

    monkeypatch.setattr(meta, "_common_errors_of", counted)
    for node in range(NODES):
        assert meta.validate_object_meta(_lease(node, 20), namespaced=True) == []
    assert missed == []
