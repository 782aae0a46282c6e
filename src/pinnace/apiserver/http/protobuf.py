"""Request bodies in Kubernetes' protobuf encoding, for the kinds kubectl sends that way.

client-go's typed clients (`kubectl create namespace`, `create deployment`, `create job`
(`--from=cronjob/…` copies the CronJob's whole job template), `create cronjob`, `create
configmap`, `create secret`, `create serviceaccount`, `autoscale`, `drain`'s evictions,
`debug node/…` and `debug --copy-to`'s pods, `create role` and the other RBAC kinds, `auth
can-i` and `auth whoami`'s reviews, `create token`'s TokenRequest, `create ingress`) send
`application/vnd.kubernetes.protobuf`: the magic `k8s\\x00`, then a runtime.Unknown whose
`raw` is the object's message. Pinnace reads those bodies into the same JSON objects the JSON
decoder gives, for the kinds in KINDS, every field of v1.32's messages (`protobuf_messages`,
generated from k8s.io/api's types); a field number v1.32 does not have is skipped, as protobuf
allows. Responses are always JSON, which every such client also accepts.
"""

from __future__ import annotations

import base64
import json
from typing import Any, NamedTuple

from pinnace.api import status
from pinnace.apiserver.http.protobuf_messages import MESSAGES as GENERATED
from pinnace.clock import format_time

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# The messages of apimachinery's runtime, meta/v1 Time, resource.Quantity and intstr, which
# have encodings of their own; every other message is generated from k8s.io/api's types
# (`protobuf_messages`). Each: field number -> "jsonName:type", where type is a scalar
# (string, int, bool, bytes: base64 in JSON), raw (bytes kept as they are), time, quantity,
# intorstring, json (raw JSON bytes: FieldsV1), strings (a message of one repeated string:
# ExtraValue), map:<value type> or another message; "*" after the type marks a repeated
# field, "!" a field whose zero value is kept. Go's protobuf encoding writes every non-pointer
# field, zero or not, where JSON leaves zero values out (omitempty); so zero scalars are
# dropped unless the field is a pointer (present means set) or always in JSON. A message
# field without a name is an embedded struct whose fields JSON inlines.
_SCHEMA: dict[str, dict[int, str]] = {
    **GENERATED,
    "Unknown": {1: "typeMeta:TypeMeta", 2: "raw:raw"},
    "TypeMeta": {1: "apiVersion:string", 2: "kind:string"},
    "Time": {1: "seconds:int", 2: "nanos:int"},
    "Quantity": {1: "string:string"},
    "IntOrString": {1: "type:int", 2: "intVal:int", 3: "strVal:string"},
}

KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Pod"): "Pod",
    ("v1", "Service"): "Service",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "Eviction"): "Eviction",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): "CertificateSigningRequest",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "ClusterRoleBinding",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "SubjectAccessReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "LocalSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "TokenReview",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
}


class _Field(NamedTuple):
    name: str
    kind: str
    repeated: bool
    keep_zero: bool


def _parse_field(spec: str) -> _Field:
    name, _, kind = spec.partition(":")
    keep_zero = kind.endswith("!")
    kind = kind.rstrip("!")
    repeated = kind.endswith("*")
    return _Field(name, kind.rstrip("*"), repeated, keep_zero)


MESSAGES = {
    message: {number: _parse_field(spec) for number, spec in fields.items()}
    for message, fields in _SCHEMA.items()
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
        value: int | memoryview
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
        if known.kind.startswith("map:"):
            key, item = _map_entry(value, known.kind[4:])
            obj.setdefault(known.name, {})[key] = item
            continue
        decoded = _value(value, wire, known.kind)
        if not known.name:
            obj.update(decoded)
        elif known.repeated:
            obj.setdefault(known.name, []).append(decoded)
        elif decoded not in ("", 0, False, None) or known.keep_zero:
            obj[known.name] = decoded
    return obj


def _value(value: Any, wire: int, kind: str) -> Any:
    if kind == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "bool":
        return bool(value)
    if wire != 2:
        raise _Malformed(f"a {kind} field is not length-delimited")
    if kind == "string":
        return bytes(value).decode("utf-8", "replace")
    if kind == "bytes":  # a []byte field: base64 in JSON
        return base64.b64encode(value).decode()
    if kind == "raw":
        return bytes(value)
    if kind == "time":
        seconds = _message(value, "Time").get("seconds", 0)
        return format_time(seconds) if seconds else None
    if kind == "intorstring":
        parts = _message(value, "IntOrString")
        return parts.get("strVal", "") if parts.get("type") else parts.get("intVal", 0)
    if kind == "quantity":
        return _message(value, "Quantity").get("string", "0")
    if kind == "json":
        raw = b"".join(bytes(v) for number, _, v in _fields(value) if number == 1)
        try:
            return json.loads(raw) if raw else None
        except ValueError as e:
            raise _Malformed(f"raw JSON that does not parse: {e}") from None
    if kind == "strings":
        return [_value(v, w, "string") for number, w, v in _fields(value) if number == 1]
    return _message(value, kind)


def _map_entry(data: memoryview, item_kind: str) -> tuple[str, Any]:
    key, item = "", None
    for number, wire, value in _fields(data):
        if number == 1:
            key = _value(value, wire, "string")
        elif number == 2:
            item = _value(value, wire, item_kind)
    return key, "" if item is None else item
