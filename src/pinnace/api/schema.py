"""The structural schema of each kind, derived from the `kubernetes` client package's models
(tabled in `pinnace.api.client_models`), and the walk kube-apiserver's JSON decoding does over
a request body.

`normalize` checks every field against the schema the way Go's encoding/json does when it
fills a typed struct (case-sensitive keys, first type error wins, unknown fields dropped and
reported), and canonicalises what Go types re-encode differently: quantities, timestamps, and
the struct fields Go writes even when they were not sent (`resources: {}`).
Schemas are built on first use and cached.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import re
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

import orjson

from pinnace.api import client_models
from pinnace.api.kind import Kind
from pinnace.api.objects import Remembered, plain_json
from pinnace.api.omitted_zeros import OMITTED_ZEROS
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import QuantityError

MAX_DEPTH = 200
"""Deepest nesting accepted in a body (kube-apiserver's decoder allows more; no real object
comes near this, and it keeps the walk far from Python's recursion limit)."""

# The client models do not say which strings are quantities, which `object`s are
# IntOrString, which integers are 64-bit or which times carry microseconds: these tables do.
_QUANTITY_MAPS = {
    "V1ResourceRequirements": ("requests", "limits"),
    "V1VolumeResourceRequirements": ("requests", "limits"),
    "V1NodeStatus": ("capacity", "allocatable"),
    "V1PodSpec": ("overhead",),
    "V1Overhead": ("podFixed",),
    "V1LimitRangeItem": ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"),
    "V1ResourceQuotaSpec": ("hard",),
    "V1ResourceQuotaStatus": ("hard", "used"),
    "V1ContainerStatus": ("allocatedResources",),
    "V1PersistentVolumeSpec": ("capacity",),
    "V1PersistentVolumeClaimStatus": ("capacity", "allocatedResources"),
}
_QUANTITIES = {
    "V2MetricTarget": ("value", "averageValue"),
    "V2MetricValueStatus": ("value", "averageValue"),
    "V1EmptyDirVolumeSource": ("sizeLimit",),
    "V1ResourceFieldSelector": ("divisor",),
}
_BYTE_MAPS = {"V1ConfigMap": ("binaryData",), "V1Secret": ("data",)}
_BYTE_FIELDS = {
    "V1CertificateSigningRequestSpec": ("request",),
    "V1CertificateSigningRequestStatus": ("certificate",),
}
_INT_OR_STRINGS = {
    "V1RollingUpdateDeployment": ("maxSurge", "maxUnavailable"),
    "V1RollingUpdateDaemonSet": ("maxSurge", "maxUnavailable"),
    "V1RollingUpdateStatefulSetStrategy": ("maxUnavailable",),
    "V1PodDisruptionBudgetSpec": ("minAvailable", "maxUnavailable"),
    "V1HTTPGetAction": ("port",),
    "V1TCPSocketAction": ("port",),
}
_MICRO_TIMES = {
    "CoreV1Event": ("eventTime",),
    "CoreV1EventSeries": ("lastObservedTime",),
    "EventsV1Event": ("eventTime",),
    "EventsV1EventSeries": ("lastObservedTime",),
    "V1LeaseSpec": ("acquireTime", "renewTime"),
}
# Struct fields that are Go values, not pointers, of a struct whose every field is omitempty
# (so its zero value encodes as `{}`): `omitempty` never drops a struct, so kube-apiserver
# writes them whether sent or not: a container's `resources: {}`, a container status'
# `lastState: {}`.
_ALWAYS_WRITTEN = {
    "V1Container": ("resources",),
    "V1EphemeralContainer": ("resources",),
    "V1ContainerStatus": ("state", "lastState"),
    "V1PreferredSchedulingTerm": ("preference",),
    "V1DeploymentSpec": ("strategy",),
    "V1DaemonSetSpec": ("updateStrategy",),
    "V1StatefulSetSpec": ("updateStrategy",),
    "CoreV1Event": ("involvedObject", "source"),
    "V1Binding": ("target",),
    "V1Pod": ("status",),
    "V1Deployment": ("status",),
    "V1Job": ("status",),
    "V1CronJob": ("status",),
    "V1Namespace": ("spec", "status"),
    "V1Node": ("spec",),
    "V1ResourceQuota": ("spec", "status"),
    "V1Lease": ("spec",),
    "V1PodDisruptionBudget": ("spec",),
}
_INT64_FIELDS = frozenset(
    {
        "generation",
        "observedGeneration",
        "deletionGracePeriodSeconds",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "progressDeadlineSeconds",
        "runAsUser",
        "runAsGroup",
        "fsGroup",
        "supplementalGroups",
        "expirationSeconds",
        "ttlSecondsAfterFinished",
        "startingDeadlineSeconds",
        "sizeBytes",
        "revision",
        "tolerationSeconds",
        "gracePeriodSeconds",
        "seconds",
        "remainingItemCount",
        # A CRD schema's bounds (JSONSchemaProps' *int64 fields).
        "maxItems",
        "minItems",
        "maxLength",
        "minLength",
        "maxProperties",
        "minProperties",
    }
)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class SchemaError(Exception):
    """The body does not fit the kind's schema; the message is Go's decode error. For a value
    of the wrong JSON type (Go's UnmarshalTypeError, the first one met), `value` is that value
    and `expected` the Go type it was to decode into."""

    def __init__(self, message: str, value: Any = None, expected: Type | None = None) -> None:
        super().__init__(message)
        self.value = value
        self.expected = expected


class OutOfRangeNumber(float):
    """A JSON number beyond float64 (`1e400`, a 100,000-digit integer): Go's decoder skips it
    in an unknown field and refuses it in any other; it prints as the text the client sent."""

    text: str

    def __new__(cls, text: str) -> OutOfRangeNumber:
        number = super().__new__(cls, "-inf" if text.startswith("-") else "inf")
        number.text = text
        return number

    def __reduce__(self) -> tuple[type[OutOfRangeNumber], tuple[str]]:
        # float's own reduction would rebuild it from the infinity, losing the text (patches
        # deep-copy the bodies they merge).
        return (OutOfRangeNumber, (self.text,))

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


@dataclass(slots=True)
class Scalar:
    name: str
    """One of: string, int, bool, float, bytes, time, microtime, object, quantity,
    intorstring."""
    go_type: str


@dataclass(slots=True)
class ListOf:
    item: Type

    @property
    def go_type(self) -> str:
        return "[]" + self.item.go_type


@dataclass(slots=True)
class MapOf:
    value: Type
    go_name: str = ""

    @property
    def go_type(self) -> str:
        return self.go_name or f"map[string]{self.value.go_type}"


@dataclass(slots=True)
class Struct:
    model: str
    go_name: str
    """The Go struct's name without package: "PodSpec"."""
    always_written: tuple[str, ...] = ()
    """Its struct fields written as `{}` when absent (`_ALWAYS_WRITTEN`)."""
    omitted_zeros: frozenset[str] = frozenset()
    """Its fields Go leaves out when they hold their zero value (`OMITTED_ZEROS`)."""
    _fields: dict[str, Type] | None = field(default=None, repr=False)
    _strings: frozenset[str] | None = field(default=None, repr=False)

    @property
    def go_type(self) -> str:
        return f"{_go_package(self.model)}.{self.go_name}"

    @property
    def fields(self) -> dict[str, Type]:
        if self._fields is None:
            self._fields = _build_fields(self.model)
        return self._fields

    @property
    def string_fields(self) -> frozenset[str]:
        """The names of its fields of type string."""
        if self._strings is None:
            self._strings = frozenset(k for k, t in self.fields.items() if t is _STRING)
        return self._strings


Type = Scalar | ListOf | MapOf | Struct

_STRING = Scalar("string", "string")
_BOOL = Scalar("bool", "bool")
_FLOAT = Scalar("float", "float64")
_OBJECT = Scalar("object", "interface {}")
_TIME = Scalar("time", "v1.Time")
_MICRO_TIME = Scalar("microtime", "v1.MicroTime")
_QUANTITY = Scalar("quantity", "resource.Quantity")
_INT_OR_STRING = Scalar("intorstring", "intstr.IntOrString")
_BYTES = Scalar("bytes", "[]uint8")
_INT32_T = Scalar("int", "int32")
_INT64_T = Scalar("int", "int64")

_VERSION_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?(V\d+(?:(?:alpha|beta)\d+)?)(?=[A-Z])")


def _go_package(model: str) -> str:
    match = _VERSION_PREFIX.match(model)
    return match.group(1).lower() if match else "v1"


def _go_name(model: str) -> str:
    match = _VERSION_PREFIX.match(model)
    return model[match.end() :] if match else model


_OWN_MODELS = "pinnace.api.autoscaling.vpa_models"
"""Models of the kinds the client package has none for (autoscaling.k8s.io)."""


def _model_fields(model: str) -> dict[str, str]:
    """Each field's JSON name and the client's type for it."""
    found = client_models.FIELDS.get(model)
    if found is None:
        # The own models' attributes are named as their JSON fields.
        found = getattr(importlib.import_module(_OWN_MODELS), model).openapi_types
    return found


@cache
def struct(model: str) -> Struct:
    return Struct(
        model,
        _go_name(model),
        _ALWAYS_WRITTEN.get(model, ()),
        OMITTED_ZEROS.get(model, frozenset()),
    )


def _parse_type(spec: str, model: str, json_name: str) -> Type:
    if spec.startswith("list["):
        return ListOf(_parse_type(spec[5:-1], model, json_name))
    if spec.startswith("dict(str, "):
        return MapOf(_parse_type(spec[10:-1], model, json_name))
    if spec == "str":
        return _STRING
    if spec == "int":
        return _INT64_T if json_name in _INT64_FIELDS else _INT32_T
    if spec == "bool":
        return _BOOL
    if spec == "float":
        return _FLOAT
    if spec == "datetime":
        return _MICRO_TIME if json_name in _MICRO_TIMES.get(model, ()) else _TIME
    if spec == "object":
        return _INT_OR_STRING if json_name in _INT_OR_STRINGS.get(model, ()) else _OBJECT
    return struct(spec)


def _build_fields(model: str) -> dict[str, Type]:
    fields: dict[str, Type] = {}
    for json_name, spec in _model_fields(model).items():
        if json_name in _QUANTITY_MAPS.get(model, ()):
            fields[json_name] = MapOf(_QUANTITY, "v1.ResourceList")
        elif json_name in _BYTE_MAPS.get(model, ()):
            fields[json_name] = MapOf(_BYTES)
        elif json_name in _BYTE_FIELDS.get(model, ()):
            fields[json_name] = _BYTES
        elif json_name in _QUANTITIES.get(model, ()):
            fields[json_name] = _QUANTITY
        else:
            fields[json_name] = _parse_type(spec, model, json_name)
    return fields


def schema_of(kind: Kind) -> Struct:
    return struct(kind.model)


@dataclass(slots=True)
class Normalized:
    obj: dict[str, Any]
    unknown_fields: list[str]
    """JSON paths of fields the schema does not know, e.g. "spec.containers[0].foo"."""


def unknown_fields(kind: Kind, obj: dict[str, Any]) -> list[str]:
    return normalize(kind, obj).unknown_fields


_specs: Remembered[bytes] = Remembered(1024, only_returning=True)
"""By kind and the JSON text of a `spec` as sent, the text of what it normalized to, for the
specs that normalized cleanly (no unknown field, no type error) and were sent before: every
pod of a template sends the same spec, and normalizing a pod's spec takes tens of
microseconds; a Lease's spec is new at every renewal (5,000 nodes renew 500 a second), and
would push the pods' specs out while costing a check and a copy of its own."""


def normalize(
    kind: Kind,
    obj: Any,
    *,
    json_text: bool = False,
    basis: dict[str, Any] | None = None,
    share: bool = False,
) -> Normalized:
    """A new object holding what Go would decode from `obj`; raises SchemaError.

    Its spec, if one with the same JSON text normalized cleanly before, normalizes from
    memory. `json_text`: `obj` was parsed from JSON text, so it holds JSON's own types only;
    else its spec is read back from its text first, to be sure that it holds no tuple, enum
    or NaN that would write as the same text as a list, string or null.

    `basis`: the stored object an update changes, which went through this on its way in.
    A part of `obj` with the same JSON text as the part of `basis` at its place is kept as
    stored (a copy of that text) rather than walked again: a status patch walks only what it
    changed. (What the API server itself wrote, such as the binding's PodScheduled condition
    with its `lastProbeTime: null` as Go writes a zero time, stays as written.)

    `share`: such a part (say, one a patch left alone, the very object at its place in
    `basis`) is the stored one itself, shared rather than copied; for a caller that changes
    none of the result's parts in place but its metadata's own fields (the update path sets
    resourceVersion and generation there): the metadata is always copied."""
    walk = _Walk(json_text, share)
    root = schema_of(kind)
    if not isinstance(obj, dict):
        raise SchemaError(
            f"json: cannot unmarshal {json_type(obj)} into Go value of type {root.go_type}"
        )
    out = walk.struct(root, obj, "", "", 1, basis)
    if walk.type_error:
        raise SchemaError(walk.type_error, *walk.mismatched)
    return Normalized(out, walk.unknown)


def normalize_object_meta(value: Any, *, json_text: bool = False) -> Normalized:
    """What Go decodes from a custom resource's `metadata` into an ObjectMeta (v1.32's
    apiextensions-apiserver does, GetObjectMetaWithOptions, before pruning the rest by the
    schema): unknown fields dropped (`metadata.x`), times canonical; raises SchemaError."""
    if not isinstance(value, dict):
        raise SchemaError(
            f"json: cannot unmarshal {json_type(value)} into Go value of type v1.ObjectMeta"
        )
    walk = _Walk(json_text)
    out = walk.struct(struct("V1ObjectMeta"), value, "metadata", "", 2)
    if walk.type_error:
        raise SchemaError(walk.type_error, *walk.mismatched)
    return Normalized(out, walk.unknown)


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


_GO_KINDS = {
    str: "string",
    bool: "bool",
    int: "int64",
    float: "float64",
    dict: "map",
    list: "slice",
}
"""reflect.Kind of each value an unstructured object holds."""
_CONVERTED_SCALARS = ("string", "int", "bool", "float")
"""The scalars the converter converts itself, by reflection; the others' Go types have an
UnmarshalJSON of their own, which fails as the JSON decoder does."""


def unstructured_error(value: Any, expected: Type, *, floats: bool = False) -> str | None:
    """What apimachinery's unstructured converter (runtime/converter.go, fromUnstructured)
    says of `value`, which does not decode into `expected` (SchemaError's pair), where a
    strategic merge patch or an apply turns a patched map into the typed object; None where
    it says what the JSON decoder says, or converts what the decoder refuses (a float with
    no fraction into an integer). `floats`: the map's numbers are all float64, as YAML's
    decoded by sigs.k8s.io/yaml are; else whole numbers are int64."""
    source = _GO_KINDS.get(type(value))
    if source is None:
        return None
    if floats and source == "int64":
        source = "float64"
    if isinstance(expected, Struct):
        return f"cannot restore struct from: {source}"
    if isinstance(expected, ListOf):
        return f"cannot restore slice from {source}"
    if isinstance(expected, MapOf):
        return f"cannot restore map from {source}"
    name = expected.name
    if name not in _CONVERTED_SCALARS:
        return None
    target = expected.go_type
    # reflect's ConvertibleTo: numbers to numbers, integers to strings; the converter then
    # refuses what JSON would (an integer into a string, a fraction into an integer).
    if source == "int64" and name == "string":
        return f"cannot convert int64 to {target}"
    if source == "float64" and name == "int":
        return None if float(value).is_integer() else f"cannot convert float64 to {target}"
    if (source, name) in (("int64", "int"), ("int64", "float"), ("float64", "float")):
        return None
    return f"unrecognized type: {target}"


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII)
_RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"


@lru_cache(maxsize=256)
def _canonical_time_text(value: str, micro: bool) -> str:
    """Writes in the same second carry the same timestamps (managedFields' `time`)."""
    return _canonical_time(value, micro)


_CANONICAL_TIME = {
    False: re.compile(r"[1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", re.ASCII),
    True: re.compile(r"[1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII),
}
"""A Time (False) or MicroTime (True) as `_canonical_time` writes it, from the year 1000 on
(strftime writes earlier years with fewer digits)."""


def _canonical_time(value: Any, micro: bool) -> str:
    """metav1.Time re-encodes in UTC to the second, MicroTime to the microsecond."""
    if not isinstance(value, str):
        raise SchemaError(f"json: cannot unmarshal {json_type(value)} into Go value of type string")
    if _CANONICAL_TIME[micro].fullmatch(value) and _in_range(value[:-1]):
        return value  # what it re-encodes to: most times were written by a clock, in UTC
    if not _RFC3339.fullmatch(value):
        raise SchemaError(
            f'parsing time "{value}" as "{_RFC3339_LAYOUT}": cannot parse "{value}" as "2006"'
        )
    text = value.replace("Z", "+00:00")
    if "." in text:
        head, _, tail = text.partition(".")
        digits = re.match(r"\d+", tail)
        assert digits is not None  # the pattern above guarantees digits after the dot
        text = head + "." + digits.group()[:6].ljust(6, "0") + tail[digits.end() :]
    try:
        moment = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError as e:
        unit = next((u for u in ("day", "month", "hour", "minute", "second") if u in str(e)), "")
        raise SchemaError(f'parsing time "{value}": {unit or "value"} out of range') from None
    except OverflowError:  # its offset carries it to year 0 or 10000 (docs/differences.md)
        raise SchemaError(f'parsing time "{value}": year out of range') from None
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _in_range(text: str) -> bool:
    """Whether a date and time of day without offset names a moment (day 31 of June does not)."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


_BASE64_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/")


def _canonical_base64(value: str) -> str:
    """[]byte travels as padded base64; Go skips line breaks and re-encodes on the way out."""
    text = value.replace("\r", "").replace("\n", "")
    bad = next(
        (i for i, ch in enumerate(value) if ch not in _BASE64_ALPHABET and ch not in "=\r\n"), None
    )
    if bad is None:
        try:
            return base64.b64encode(base64.b64decode(text, validate=True)).decode()
        except binascii.Error:
            bad = len(value)
    raise SchemaError(f"illegal base64 data at input byte {bad}")


def _zero(t: Type) -> Any:
    """What Go leaves in a list item or map value that was JSON null."""
    if isinstance(t, Struct | MapOf):
        return {}
    if isinstance(t, ListOf):
        return []
    return {"string": "", "int": 0, "bool": False, "float": 0.0, "quantity": "0"}.get(t.name)


class _Walk:
    __slots__ = ("json_text", "mismatched", "share", "type_error", "unknown")

    def __init__(self, json_text: bool = False, share: bool = False) -> None:
        self.unknown: list[str] = []
        self.type_error = ""
        self.mismatched: tuple[Any, Type | None] = (None, None)
        self.json_text = json_text
        self.share = share

    def mismatch(self, value: Any, owner: str, go_path: str, t: Type) -> None:
        # Go keeps decoding after a type mismatch and reports the first one at the end.
        if not self.type_error:
            self.mismatched = (value, t)
            detail = json_type(value)
            # Go names the number itself only when it fails to fit a number field.
            if detail == "number" and isinstance(t, Scalar) and t.name in ("int", "float"):
                detail = f"number {value}"
            self.type_error = (
                f"json: cannot unmarshal {detail} into Go struct field "
                f"{owner}.{go_path} of type {t.go_type}"
            )

    def struct(
        self,
        s: Struct,
        value: dict[str, Any],
        path: str,
        go_path: str,
        depth: int,
        basis: Any = None,
    ) -> Any:
        if depth > MAX_DEPTH:
            raise SchemaError("json: exceeded max depth")
        strings = s.string_fields
        if strings.issuperset(value) and _STR.issuperset(map(type, value.values())):
            # Strings in string fields only (an object reference, an Event's source): nothing
            # to drop, convert or report, which these two scans of C tell at once; but an
            # empty one Go would leave out.
            out = dict(value)
            if "" in out.values() and s.omitted_zeros:
                out = {k: v for k, v in out.items() if v or k not in s.omitted_zeros}
        else:
            out = self.fields_of(s, value, path, go_path, depth, basis, strings)
        for key in s.always_written:
            if key not in out:
                out[key] = {}
        return out

    def fields_of(
        self,
        s: Struct,
        value: dict[str, Any],
        path: str,
        go_path: str,
        depth: int,
        basis: Any,
        strings: frozenset[str],
    ) -> dict[str, Any]:
        """`struct` field by field."""
        fields = s.fields
        zeros = s.omitted_zeros
        out: dict[str, Any] = {}
        if type(basis) is not dict:
            basis = None
        for key, item in value.items():
            if type(item) is str and key in strings:
                if item or key not in zeros:
                    out[key] = item  # the commonest field, without building its paths
                continue
            t = fields.get(key)
            if t is None:
                self.unknown.append(f"{path}.{key}" if path else key)
                continue
            if item is None:
                continue
            if t is _STRING and isinstance(item, str):
                if item or key not in zeros:
                    out[key] = item
                continue
            was = None if basis is None else basis.get(key)
            if was is not None:
                share = self.share and (depth > 1 or key != "metadata")
                if (same := _as_before(item, was, share)) is not _MISMATCH:
                    out[key] = same
                    continue
            if type(t) is Scalar:  # what `value` does for it, without the JSON path it needs not
                converted = self.scalar(t, item, s.go_name, go_path, depth + 1, key)
            elif depth == 1 and key == "spec" and type(item) is dict:
                converted = self.spec(s, t, item, depth + 1)
            else:
                child = f"{path}.{key}" if path else key
                child_go = f"{go_path}.{key}" if go_path else key
                if type(t) is Struct and type(item) is dict:  # what `value` does for it
                    converted = self.struct(t, item, child, child_go, depth + 1, was)
                else:
                    converted = self.value(t, item, child, s.go_name, child_go, depth + 1, was)
            if converted is not _MISMATCH and (converted or key not in zeros):
                out[key] = converted  # Go's encoding leaves out a zero held by value
        return out

    def spec(self, root: Struct, t: Type, value: dict[str, Any], depth: int) -> Any:
        """The object's spec, normalized as `value` does, or from memory."""
        text = plain_json(value)
        if text is None:
            return self.value(t, value, "spec", root.go_name, "spec", depth)
        key = (root.model, text)
        known = _specs.get(key)
        if known is not None and self._as_text(text, value):
            return orjson.loads(known)
        unknown = len(self.unknown)
        converted = self.value(t, value, "spec", root.go_name, "spec", depth)
        if (
            not self.type_error
            and len(self.unknown) == unknown
            and _specs.returning(key)
            and self._as_text(text, value)
        ):
            _specs.put(key, orjson.dumps(converted))
        return converted

    def _as_text(self, text: bytes, value: dict[str, Any]) -> bool:
        """Whether `value` is what its JSON `text` reads back as: not so for values of other
        types than JSON's own, which are walked every time."""
        return self.json_text or orjson.loads(text) == value

    def value(
        self,
        t: Type,
        value: Any,
        path: str,
        owner: str,
        go_path: str,
        depth: int,
        basis: Any = None,
    ) -> Any:
        if value is None:
            return _zero(t)
        if isinstance(t, Struct):
            if not isinstance(value, dict):
                self.mismatch(value, owner, go_path, t)
                return _MISMATCH
            return self.struct(t, value, path, go_path, depth, basis)
        if isinstance(t, ListOf):
            if not isinstance(value, list):
                self.mismatch(value, owner, go_path, t)
                return _MISMATCH
            if depth > MAX_DEPTH:
                raise SchemaError("json: exceeded max depth")
            # An item keeps its place's basis, unless items were inserted or removed.
            was = basis if type(basis) is list and len(basis) == len(value) else None
            items = []
            for i, item in enumerate(value):
                if (
                    was is not None
                    and (same := _as_before(item, was[i], self.share)) is not _MISMATCH
                ):
                    items.append(same)
                    continue
                converted = self.value(
                    t.item,
                    item,
                    f"{path}[{i}]",
                    owner,
                    go_path,
                    depth + 1,
                    None if was is None else was[i],
                )
                items.append(_zero(t.item) if converted is _MISMATCH else converted)
            return items
        if isinstance(t, MapOf):
            if not isinstance(value, dict):
                self.mismatch(value, owner, go_path, t)
                return _MISMATCH
            if depth > MAX_DEPTH:
                raise SchemaError("json: exceeded max depth")
            entries = {}
            for key, item in value.items():
                converted = self.value(t.value, item, f"{path}[{key}]", owner, go_path, depth + 1)
                if converted is not _MISMATCH:
                    entries[key] = converted
            return entries
        return self.scalar(t, value, owner, go_path, depth)

    def scalar(
        self, t: Scalar, value: Any, owner: str, go_path: str, depth: int, key: str = ""
    ) -> Any:
        """`key`: the field's name below `go_path`, which an error names (its Go path is
        spelt out only then)."""
        name = t.name
        if name == "string":
            if isinstance(value, str):
                return value
        elif name == "int":
            if isinstance(value, int) and not isinstance(value, bool):
                lo, hi = _INT64 if t is _INT64_T else _INT32
                if lo <= value <= hi:
                    return value
        elif name == "bool":
            if isinstance(value, bool):
                return value
        elif name == "float":
            if isinstance(value, int | float) and not isinstance(value, bool | OutOfRangeNumber):
                return value
        elif name == "quantity":
            try:
                if isinstance(value, str):
                    return _canonical_quantity(value)
                return str(parse_quantity(value))
            except QuantityError as e:
                raise SchemaError(e.reason) from None
            except ValueError:
                raise SchemaError("must be a quantity") from None
        elif name == "bytes":
            if isinstance(value, str):
                return _canonical_base64(value)
        elif name in ("time", "microtime"):
            if isinstance(value, str):
                return _canonical_time_text(value, name == "microtime")
            return _canonical_time(value, micro=name == "microtime")
        elif name == "intorstring":
            if isinstance(value, str) or (
                isinstance(value, int) and not isinstance(value, bool) and _fits_int32(value)
            ):
                return value
            raise SchemaError(
                f"json: cannot unmarshal {json_type(value)} into Go value of type int32"
            )
        else:
            return _copy(value, depth) if isinstance(value, _CONTAINERS) else _free(value)
        if key:
            go_path = f"{go_path}.{key}" if go_path else key
        self.mismatch(value, owner, go_path, t)
        return _MISMATCH


@lru_cache(maxsize=1024)
def _canonical_quantity(text: str) -> str:
    """The same few quantities ("250m", "128Mi") recur in every pod."""
    return str(parse_quantity(text))


def _fits_int32(value: int) -> bool:
    return _INT32[0] <= value <= _INT32[1]


_MISMATCH: Any = object()
_STR = frozenset({str})


def _as_before(value: Any, basis: Any, share: bool = False) -> Any:
    """`basis` (a normalized object or array), or with `share` false a new copy of it, when
    `value` writes as the same JSON text, which it then normalizes to; else `_MISMATCH`.
    Texts are compared, as values mix types (True == 1 in Python), and then values, as texts
    do too: a NaN or an infinity writes as null, a tuple as a list, an enum as its value, and
    the walk refuses them (a part whose text cannot be written is walked too)."""
    if share and value is basis:
        return basis
    if not isinstance(basis, _CONTAINERS) or type(value) is not type(basis):
        return _MISMATCH
    text = plain_json(value)
    # A part a patch left alone is the stored one itself (APIServer.modify's `pure`).
    if text is None or (value is not basis and text != plain_json(basis)):
        return _MISMATCH
    # `basis` holds JSON's own types only, so it equals what its text reads back as.
    copy = basis if share else orjson.loads(text)
    return copy if copy == value else _MISMATCH


_CONTAINERS = (dict, list)


def _copy(value: dict[str, Any] | list[Any], depth: int) -> Any:
    """A deep copy of a free-form JSON object or array (an `object` field), bounded in depth."""
    if depth > MAX_DEPTH:
        raise SchemaError("json: exceeded max depth")
    if not value:
        return {} if isinstance(value, dict) else []
    if isinstance(value, dict):
        return {
            k: _copy(v, depth + 1) if isinstance(v, _CONTAINERS) else _free(v)
            for k, v in value.items()
        }
    return [_copy(v, depth + 1) if isinstance(v, _CONTAINERS) else _free(v) for v in value]


def _free(value: Any) -> Any:
    """A scalar of a free-form field, which Go decodes as an interface{}."""
    if type(value) is OutOfRangeNumber:
        raise SchemaError(f"json: cannot unmarshal number {value} into Go value of type float64")
    return value
