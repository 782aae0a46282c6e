"""Secret defaulting, stringData and validation vectors (v1.32: pkg/apis/core/validation's
TestValidateSecret and TestValidateSecretUpdate), and its table (NAME TYPE DATA AGE)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.api.tables.test_kinds import columns, row

from pinnace.api.core.secret import SECRET
from pinnace.api.decode import decode
from pinnace.api.status import StatusError


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(**parts: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": "s", "namespace": "default"}, **parts}
    SECRET.default(obj)
    return obj


def test_type_defaults_to_opaque_and_string_data_moves_into_data() -> None:
    obj = secret(data={"a": b64("one"), "b": b64("two")}, stringData={"b": "zwei", "c": "drei"})
    assert obj["type"] == "Opaque"
    assert "stringData" not in obj
    assert obj["data"] == {"a": b64("one"), "b": b64("zwei"), "c": b64("drei")}


def test_keys_and_size() -> None:
    assert messages(SECRET.validate(secret(data={"a/b": b64("x")}))) == [
        'data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric '
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
        "used for validation is '[-._a-zA-Z0-9]+')"
    ]
    half = b64("x" * (512 * 1024))
    assert SECRET.validate(secret(data={"a": half, "b": half})) == []
    assert messages(SECRET.validate(secret(data={"a": half, "b": half, "c": b64("!")}))) == [
        "data: Too long: must have at most 1048576 bytes"
    ]


def test_each_type_requires_its_keys() -> None:
    def errors(kind: str, **data: str) -> list[str]:
        encoded = {k: b64(v) for k, v in data.items()}
        return messages(SECRET.validate(secret(type=kind, data=encoded)))

    assert errors("kubernetes.io/tls") == [
        "data[tls.crt]: Required value",
        "data[tls.key]: Required value",
    ]
    assert errors("kubernetes.io/tls", **{"tls.crt": "c", "tls.key": "k"}) == []
    assert errors("kubernetes.io/basic-auth") == [
        "data[username]: Required value",
        "data[password]: Required value",
    ]
    assert errors("kubernetes.io/basic-auth", password="") == []
    assert errors("kubernetes.io/ssh-auth", **{"ssh-privatekey": ""}) == [
        "data[ssh-privatekey]: Required value"
    ]
    assert errors("kubernetes.io/dockerconfigjson") == ["data[.dockerconfigjson]: Required value"]
    assert errors("kubernetes.io/dockerconfigjson", **{".dockerconfigjson": "{}"}) == []
    assert errors("kubernetes.io/dockerconfigjson", **{".dockerconfigjson": "nope"}) == [
        'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
        "invalid character 'n' looking for beginning of value"
    ]
    assert errors("kubernetes.io/service-account-token") == [
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ]
    assert errors("example.com/anything") == []


def test_type_is_immutable_and_so_is_the_data_of_an_immutable_secret() -> None:
    old = secret(data={"a": b64("1")}, immutable=True)
    old["metadata"]["resourceVersion"] = "1"
    new = secret(data={"a": b64("2")}, type="example.com/custom")
    new["metadata"]["resourceVersion"] = "1"
    assert messages(SECRET.validate_update(new, old)) == [
        'type: Invalid value: "example.com/custom": field is immutable',
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


def test_table() -> None:
    assert columns(SECRET) == [
        ("Name", "string", 0),
        ("Type", "string", 0),
        ("Data", "string", 0),
        ("Age", "string", 0),
    ]
    assert row(SECRET, {"type": "kubernetes.io/tls", "data": {"a": "", "b": ""}}) == [
        "x",
        "kubernetes.io/tls",
        2,
        "120m",
    ]


def test_data_that_is_not_base64_cannot_be_decoded() -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "!!"}}
    with pytest.raises(StatusError) as e:
        decode(body, SECRET, json_text=True)
    assert (e.value.code, e.value.message) == (
        400,
        'Secret in version "v1" cannot be handled as a Secret: '
        "illegal base64 data at input byte 0",
    )
