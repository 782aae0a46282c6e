"""Every kind's status write puts the stored spec in the place of the written one and leaves
that one as it was: the API server hands a status write's spec over uncopied."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.apiextensions.custom import served_kinds
from pinnace.api.kind import Kind

_WIDGETS = {
    "metadata": {"name": "widgets.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}},
            }
        ],
    },
}
KINDS = [k for k in catalog.kinds() if "status" in k.subresources] + [served_kinds(_WIDGETS)[0]]


def _object(kind: Kind, spec: dict[str, Any], phase: str) -> dict[str, Any]:
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": "x", "labels": {"app": "x"}},
        "spec": spec,
        "status": {"phase": phase},
    }


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k.plural}.{k.group}")
def test_a_status_write_keeps_the_stored_spec_and_leaves_the_written_one_alone(
    kind: Kind,
) -> None:
    written = {"replicas": 3, "template": {"spec": {"containers": [{"name": "a"}]}}}
    sent = copy.deepcopy(written)
    stored = _object(kind, {"replicas": 1}, "Pending")
    new = _object(kind, written, "Running")

    kind.prepare_for_status_update(new, stored)

    assert new["spec"] == {"replicas": 1}
    assert written == sent
