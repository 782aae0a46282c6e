"""ConfigMap validation vectors (v1.32)."""

from __future__ import annotations

import base64
from typing import Any

from pinnace.api.core.configmap import CONFIG_MAP


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def cm(**parts: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "settings", "namespace": "default", "resourceVersion": "1"},
        **parts,
    }


def test_keys_are_config_map_keys() -> None:
    assert CONFIG_MAP.validate(cm(data={"app.conf": "x", "KEY_1": "y", "-a": "z"})) == []
    assert messages(CONFIG_MAP.validate(cm(data={"a/b": "x"}, binaryData={"..": ""}))) == [
        'data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric '
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
        "used for validation is '[-._a-zA-Z0-9]+')",
        "binaryData[..]: Invalid value: \"..\": must not be '..'",
    ]


def test_a_key_cannot_be_in_both_maps() -> None:
    assert messages(CONFIG_MAP.validate(cm(data={"k": "1"}, binaryData={"k": "MQ=="}))) == [
        'data[k]: Invalid value: "k": duplicate of key present in binaryData'
    ]


def test_total_size_is_one_mebibyte_with_binary_data_counted_decoded() -> None:
    half = "x" * (512 * 1024)
    binary = base64.b64encode(b"y" * (512 * 1024)).decode()
    assert CONFIG_MAP.validate(cm(data={"a": half}, binaryData={"b": binary})) == []
    assert messages(CONFIG_MAP.validate(cm(data={"a": half + "x"}, binaryData={"b": binary}))) == [
        "[]: Too long: must have at most 1048576 bytes"
    ], "as kube-apiserver words it, the empty path spelled []"


def test_namespace_is_required() -> None:
    assert messages(CONFIG_MAP.validate({"metadata": {"name": "a"}})) == [
        "metadata.namespace: Required value"
    ]


def test_immutable_config_maps() -> None:
    old = cm(data={"a": "1"}, immutable=True)
    assert CONFIG_MAP.validate_update(cm(data={"a": "1"}, immutable=True), old) == []
    assert messages(CONFIG_MAP.validate_update(cm(data={"a": "2"}), old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
    assert messages(
        CONFIG_MAP.validate_update(cm(data={"a": "1"}, binaryData={"b": ""}, immutable=True), old)
    ) == ["binaryData: Forbidden: field is immutable when `immutable` is set"]
    # A mutable config map may change anything, including becoming immutable.
    mutable = cm(data={"a": "1"})
    assert CONFIG_MAP.validate_update(cm(data={"a": "2"}, immutable=True), mutable) == []
