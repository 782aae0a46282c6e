"""Binding validation (v1.32): only the target is checked."""

from __future__ import annotations

from pinnace.api.core.binding import BINDING


def test_target_node_name_is_required_and_kind_must_be_node() -> None:
    ok = {"metadata": {"name": "web"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    assert BINDING.validate(ok) == []
    assert BINDING.validate({"target": {"name": "n1"}}) == []
    assert [str(e) for e in BINDING.validate({"target": {"kind": "Pod"}})] == [
        'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
        "target.name: Required value",
    ]
    assert [str(e) for e in BINDING.validate({})] == ["target.name: Required value"]
