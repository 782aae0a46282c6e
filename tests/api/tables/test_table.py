"""The Table document itself: what kube-apiserver sends for `as=Table;v=v1;g=meta.k8s.io`."""

from __future__ import annotations

import json

import pytest

from pinnace.api.core.configmap import CONFIG_MAP
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-01T00:05:00Z")
CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "settings",
        "namespace": "default",
        "uid": "8c0f",
        "resourceVersion": "41",
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "labels": {"app": "web"},
    },
    "data": {"a": "1"},
}


def test_table_layout_with_metadata_rows() -> None:
    table = to_table(
        CONFIG_MAP, [CM], now=NOW, list_meta={"resourceVersion": "42", "continue": "abc"}
    )
    assert list(table) == ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"]
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42", "continue": "abc"}
    assert table["columnDefinitions"][0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": table["columnDefinitions"][0]["description"],
        "priority": 0,
    }
    assert table["rows"] == [
        {
            "cells": ["settings", 1, "5m"],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": CM["metadata"],
            },
        }
    ]
    json.dumps(table)  # plain JSON all the way down


def test_include_object() -> None:
    whole = to_table(CONFIG_MAP, [CM], include_object="Object", now=NOW, list_meta={})
    assert whole["rows"][0]["object"] == CM
    bare = {key: value for key, value in CM.items() if key not in ("apiVersion", "kind")}
    typed = to_table(CONFIG_MAP, [bare], include_object="Object", now=NOW, list_meta={})
    assert typed["rows"][0]["object"] == CM
    none = to_table(CONFIG_MAP, [CM], include_object="None", now=NOW, list_meta={})
    assert none["rows"][0] == {"cells": ["settings", 1, "5m"], "object": None}


def test_unknown_include_object_is_refused() -> None:
    with pytest.raises(ValueError, match="includeObject"):
        to_table(CONFIG_MAP, [CM], include_object="All", now=NOW, list_meta={})  # type: ignore[arg-type]


def test_no_headers_leaves_column_definitions_null() -> None:
    table = to_table(CONFIG_MAP, [CM], now=NOW, list_meta={}, no_headers=True)
    assert table["columnDefinitions"] is None
    assert len(table["rows"]) == 1


def test_missing_creation_timestamp_is_unknown_age() -> None:
    obj = {"metadata": {"name": "x"}}
    assert to_table(CONFIG_MAP, [obj], now=NOW, list_meta={})["rows"][0]["cells"] == [
        "x",
        0,
        "<unknown>",
    ]
