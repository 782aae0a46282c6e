"""Request bodies in Kubernetes' protobuf encoding, for the kinds kubectl sends that way.

client-go's typed clients (`kubectl create namespace`, `create configmap`, `drain`'s
evictions) send `application/vnd.kubernetes.protobuf`: the magic `k8s\\x00`, then a
runtime.Unknown whose `raw` is the object's message. Pinnace reads those bodies into the same
JSON objects the JSON decoder gives, for the messages listed here (field numbers are those of
k8s.io/api's generated.proto); a field Pinnace does not know is skipped, as protobuf allows.
Responses are always JSON, which every such client also accepts.
"""

from __future__ import annotations

import base64
from typing import Any

from pinnace.api import status
from pinnace.clock import format_time

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# message -> field number -> (JSON name, type, repeated). Types: scalars, "time", "quantity",
# "map:<value type>", or another message's name.
_STRING, _INT, _BOOL, _BYTES = "string", "int", "bool", "bytes"
MESSAGES: dict[str, dict[int, tuple[str, str, bool]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta", False), 2: ("raw", _BYTES, False)},
    "TypeMeta": {1: ("apiVersion", _STRING, False), 2: ("kind", _STRING, False)},
    "ObjectMeta": {
        1: ("name", _STRING, False),
        2: ("generateName", _STRING, False),
        3: ("namespace", _STRING, False),
        5: ("uid", _STRING, False),
        6: ("resourceVersion", _STRING, False),
        7: ("generation", _INT, False),
        8: ("creationTimestamp", "time", False),
        9: ("deletionTimestamp", "time", False),
        10: ("deletionGracePeriodSeconds", _INT, False),
        11: ("labels", "map:string", False),
        12: ("annotations", "map:string", False),
        13: ("ownerReferences", "OwnerReference", True),
        14: ("finalizers", _STRING, True),
    },
    "OwnerReference": {
        1: ("kind", _STRING, False),
        3: ("name", _STRING, False),
        4: ("uid", _STRING, False),
        5: ("apiVersion", _STRING, False),
        6: ("controller", _BOOL, False),
        7: ("blockOwnerDeletion", _BOOL, False),
    },
    "Time": {1: ("seconds", _INT, False), 2: ("nanos", _INT, False)},
    "Quantity": {1: ("string", _STRING, False)},
    "Namespace": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "NamespaceSpec", False),
        3: ("status", "NamespaceStatus", False),
    },
    "NamespaceSpec": {1: ("finalizers", _STRING, True)},
    "NamespaceStatus": {1: ("phase", _STRING, False)},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map:string", False),
        3: ("binaryData", "map:bytes", False),
        4: ("immutable", _BOOL, False),
    },
    "PriorityClass": {
        1: ("metadata", "ObjectMeta", False),
        2: ("value", _INT, False),
        3: ("globalDefault", _BOOL, False),
        4: ("description", _STRING, False),
        5: ("preemptionPolicy", _STRING, False),
    },
    "ResourceQuota": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "ResourceQuotaSpec", False),
    },
    "ResourceQuotaSpec": {1: ("hard", "map:quantity", False), 2: ("scopes", _STRING, True)},
    "Eviction": {
        1: ("metadata", "ObjectMeta", False),
        2: ("deleteOptions", "DeleteOptions", False),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", _INT, False),
        2: ("preconditions", "Preconditions", False),
        3: ("orphanDependents", _BOOL, False),
        4: ("propagationPolicy", _STRING, False),
        5: ("dryRun", _STRING, True),
    },
    "Preconditions": {1: ("uid", _STRING, False), 2: ("resourceVersion", _STRING, False)},
}

KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "Eviction"): "Eviction",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
}


class _Malformed(ValueError):
    pass


def decode(data: bytes) -> dict[str, Any]:
    """The object a protobuf body carries, as JSON; 400 when it does not parse, 415 for a
    kind Pinnace cannot read in protobuf."""
    if not data.startswith(MAGIC):
        raise status.bad_request("provided data does not appear to be a protobuf message")
    try:
        unknown = _message(memoryview(data)[len(MAGIC) :], "Unknown")
        type_meta = unknown.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        message = KINDS.get((api_version, kind))
        if message is None:
            raise status.StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - {kind} in {api_version} "
                "is only accepted as application/json or application/yaml",
            )
        obj = _message(memoryview(unknown.get("raw", b"")), message)
    except _Malformed as e:
        raise status.bad_request(f"unable to decode the protobuf body: {e}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: memoryview, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data) or shift > 63:
            raise _Malformed("truncated varint")
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _fields(data: memoryview) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in order: ints for varints, bytes otherwise."""
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise _Malformed("truncated field")
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, i = data[i : i + width], i + width
        else:
            raise _Malformed(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _message(data: memoryview, name: str) -> dict[str, Any]:
    schema = MESSAGES[name]
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        known = schema.get(number)
        if known is None:
            continue
        json_name, kind, repeated = known
        if kind.startswith("map:"):
            key, item = _map_entry(value, kind[4:])
            obj.setdefault(json_name, {})[key] = item
            continue
        decoded = _value(value, wire, kind)
        if repeated:
            obj.setdefault(json_name, []).append(decoded)
        else:
            obj[json_name] = decoded
    return obj


def _value(value: Any, wire: int, kind: str) -> Any:
    if kind == _INT:
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == _BOOL:
        return bool(value)
    if wire != 2:
        raise _Malformed(f"a {kind} field is not length-delimited")
    if kind == _STRING:
        return bytes(value).decode("utf-8", "replace")
    if kind == _BYTES:
        return bytes(value)
    if kind == "time":
        return format_time(_message(value, "Time").get("seconds", 0))
    if kind == "quantity":
        return _message(value, "Quantity").get("string", "0")
    return _message(value, kind)


def _map_entry(data: memoryview, item_kind: str) -> tuple[str, Any]:
    key, item = "", None
    for number, wire, value in _fields(data):
        if number == 1:
            key = _value(value, wire, _STRING)
        elif number == 2:
            item = _value(value, wire, item_kind)
    if item_kind == _BYTES:
        return key, base64.b64encode(item or b"").decode()
    return key, "" if item is None else item
