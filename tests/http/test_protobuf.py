"""Protobuf bodies as client-go's typed clients send them (`kubectl create namespace`)."""

from __future__ import annotations

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.http import protobuf


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, raw)


def test_namespace_as_kubectl_create_namespace_sends_it() -> None:
    labels = field(1, "team") + field(2, "a")
    metadata = field(1, "team") + field(11, labels) + field(99, "ignored")
    spec = field(1, "kubernetes")
    body = envelope("v1", "Namespace", field(1, metadata) + field(2, spec) + field(3, b""))
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "labels": {"team": "a"}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {},
    }


def test_eviction_with_delete_options() -> None:
    options = field(1, 30) + field(2, field(1, "uid-1")) + field(5, "All")
    raw = field(1, field(1, "web") + field(3, "dev")) + field(2, options)
    decoded = protobuf.decode(envelope("policy/v1", "Eviction", raw))
    assert decoded["deleteOptions"] == {
        "gracePeriodSeconds": 30,
        "preconditions": {"uid": "uid-1"},
        "dryRun": ["All"],
    }
    assert decoded["metadata"] == {"name": "web", "namespace": "dev"}


def test_quantities_and_negative_integers() -> None:
    hard = field(1, "cpu") + field(2, field(1, "2"))
    quota = envelope("v1", "ResourceQuota", field(2, field(1, hard)))
    assert protobuf.decode(quota)["spec"] == {"hard": {"cpu": "2"}}
    priority = envelope("scheduling.k8s.io/v1", "PriorityClass", field(2, (1 << 64) - 5))
    assert protobuf.decode(priority)["value"] == -5


def test_kinds_pinnace_cannot_read_in_protobuf_are_415() -> None:
    with pytest.raises(StatusError) as e:
        protobuf.decode(envelope("apps/v1", "DaemonSet", b""))
    assert e.value.code == 415


@pytest.mark.parametrize("body", [b"{}", protobuf.MAGIC + b"\x0a\x05ab", protobuf.MAGIC + b"\x0f"])
def test_malformed_bodies_are_400(body: bytes) -> None:
    with pytest.raises(StatusError) as e:
        protobuf.decode(body)
    assert e.value.code == 400


def test_zero_values_are_kept_only_where_json_has_them() -> None:
    template = field(2, field(2, field(1, "main") + field(2, "")))
    spec = field(1, 0) + field(3, template) + field(5, 0)
    metadata = field(1, "web") + field(2, "") + field(7, 0) + field(8, field(1, 0))
    decoded = protobuf.decode(
        envelope("apps/v1", "Deployment", field(1, metadata) + field(2, spec))
    )
    assert decoded["metadata"] == {"name": "web"}
    assert decoded["spec"] == {
        "replicas": 0,
        "template": {"spec": {"containers": [{"name": "main"}]}},
    }


def test_an_ingress_as_kubectl_create_ingress_sends_it() -> None:
    port = field(2, field(2, 80))
    backend = field(4, field(1, "web") + port)
    path = field(1, "/") + field(3, "Exact") + field(2, backend)
    rule = field(1, "shop.example.com") + field(2, field(1, field(1, path)))
    spec = field(3, rule) + field(4, "nginx") + field(2, field(1, "shop.example.com"))
    decoded = protobuf.decode(
        envelope("networking.k8s.io/v1", "Ingress", field(1, field(1, "web")) + field(2, spec))
    )
    assert decoded["spec"] == {
        "rules": [
            {
                "host": "shop.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Exact",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}},
                        }
                    ]
                },
            }
        ],
        "ingressClassName": "nginx",
        "tls": [{"hosts": ["shop.example.com"]}],
    }
