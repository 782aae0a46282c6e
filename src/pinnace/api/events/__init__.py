"""Event served as events.k8s.io/v1, stored as core/v1, as kube-apiserver v1.32 serves it: one
storage, two group versions (pkg/apis/events/v1/conversion.go).

The conversion renames fields both ways: `regarding` is `involvedObject`, `note` is `message`,
`reportingController` is `reportingComponent`, and the `deprecated*` fields are core's
`source`, `firstTimestamp`, `lastTimestamp` and `count`. Each side is written with its Go
type's zero values: a core Event always has `involvedObject`, `source`, `reportingComponent`
and `reportingInstance` (its null times are added as it is written out, `pinnace.api.core.
event.written`); an events.k8s.io Event always has `eventTime`, `regarding`,
`deprecatedSource` and the two deprecated times.

Writes through events.k8s.io/v1 take the strict rules on top of core's legacy ones
(pkg/apis/core/validation/events.go ValidateEventCreate and ValidateEventUpdate with a request
version newer than core/v1); field paths name the core fields, as v1.32's errors do. Field
selectors take events.k8s.io's labels (AddFieldLabelConversionsForEvent).
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.objects import Object
from pinnace.api.validation import FIELD_IMMUTABLE_ERROR_MSG, GoValue, go_struct
from pinnace.clock.rfc3339 import go_time_string, parse_time

GROUP = "events.k8s.io"
API_VERSION = f"{GROUP}/v1"

EVENT_V1 = Kind(
    group=GROUP,
    version="v1",
    kind="Event",
    plural="events",
    namespaced=True,
    allow_create_on_update=True,
    model="EventsV1Event",
)

_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_TO_CORE: dict[str, str | None] = {**dict.fromkeys(_RENAMED.values()), **_RENAMED}
"""An events.k8s.io/v1 field's core/v1 name; None for core's own names, which v1 has not."""

FIELD_LABELS = {
    "reason": "reason",
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}
"""An events.k8s.io/v1 field selector's labels, as the core labels they select on."""


def to_core(event: Object) -> Object:
    """An events.k8s.io/v1 Event as core/v1 stores it. Core's own names are not fields of
    events.k8s.io/v1 and are dropped, as decoding the v1 type drops unknown fields."""
    core: Object = {
        "involvedObject": {},
        "source": {},
        "reportingComponent": "",
        "reportingInstance": "",
    }
    for key, value in event.items():
        name = _TO_CORE.get(key, key)
        if name is not None:
            core[name] = value
    if "apiVersion" in event:
        core["apiVersion"] = "v1"
    return core


# events.k8s.io/v1's optional fields by their core/v1 names, each written only when set, in
# the v1 struct's order (regarding and related come between the two groups).
_NAMED_FROM_CORE = (
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
)
_DESCRIBED_FROM_CORE = (("note", "message"), ("type", "type"))


def from_core(event: Object) -> Object:
    """A stored core/v1 Event as an events.k8s.io/v1 client sees it."""
    get = event.get
    out: Object = {}
    if "kind" in event:
        out["kind"] = event["kind"]
    if "apiVersion" in event:
        out["apiVersion"] = API_VERSION
    out["metadata"] = get("metadata") or {}
    out["eventTime"] = get("eventTime")
    if (series := get("series")) is not None:
        out["series"] = series
    for v1_name, core_name in _NAMED_FROM_CORE:
        if value := get(core_name):
            out[v1_name] = value
    out["regarding"] = get("involvedObject") or {}
    if (related := get("related")) is not None:
        out["related"] = related
    for v1_name, core_name in _DESCRIBED_FROM_CORE:
        if value := get(core_name):
            out[v1_name] = value
    out["deprecatedSource"] = get("source") or {}
    out["deprecatedFirstTimestamp"] = get("firstTimestamp")
    out["deprecatedLastTimestamp"] = get("lastTimestamp")
    if count := get("count"):
        out["deprecatedCount"] = count
    return out


def _series_errors(event: Object) -> list[FieldError]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    errs = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        errs.append(field.invalid(Path("series.count"), "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(field.required(Path("series.lastObservedTime")))
    return errs


def validate_create(event: Object) -> list[FieldError]:
    """The rules a create through events.k8s.io/v1 adds to core's legacy ones (run first)."""
    errs = validate_object_meta(event, namespaced=True)
    errs += _series_errors(event)
    if not event.get("eventTime"):
        errs.append(field.required(Path("eventTime")))
    kind = event.get("type")
    if kind not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
        errs.append(field.invalid(Path("type"), "", f"has invalid value: {kind or ''}"))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(key):
            errs.append(field.invalid(Path(key), "", "needs to be unset"))
    source = event.get("source") or {}
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        errs.append(field.invalid(Path("source"), "", "needs to be unset"))
    return errs


_IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",  # v1.32 checks it twice, so a change shows twice in the causes
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
_PATHS = {"reportingComponent": "reportingController"}
_REFERENCE_FIELDS = (
    ("Kind", "kind"),
    ("Namespace", "namespace"),
    ("Name", "name"),
    ("UID", "uid"),
    ("APIVersion", "apiVersion"),
    ("ResourceVersion", "resourceVersion"),
    ("FieldPath", "fieldPath"),
)
_STRUCTS = ("involvedObject", "source")
_POINTERS = ("firstTimestamp", "lastTimestamp", "eventTime", "related")
_ZERO_TIME = "0001-01-01 00:00:00 +0000 UTC"


def _go_value(event: Object, key: str) -> Any:
    """The field as the internal type holds it: an absent struct is empty, a string "", a
    count 0."""
    value = event.get(key)
    if key in _STRUCTS:
        return value or {}
    if key in _POINTERS:
        return value
    return value or (0 if key == "count" else "")


def _shown(key: str, value: Any) -> Any:
    """A field's value as v1.32's immutability error prints the internal type's (`%#v` of a
    struct, a Time's String())."""
    if key in ("involvedObject", "related") and isinstance(value, dict):
        fields = [(go, str(value.get(name) or "")) for go, name in _REFERENCE_FIELDS]
        return go_struct("core.ObjectReference", fields)
    if key == "source" and isinstance(value, dict):
        shown = [
            ("Component", str(value.get("component") or "")),
            ("Host", str(value.get("host") or "")),
        ]
        return go_struct("core.EventSource", shown)
    if key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return GoValue(go_time_string(parse_time(value)) if value else _ZERO_TIME)
    return value


def validate_update(new: Object, old: Object) -> list[FieldError]:
    """The rules an update through events.k8s.io/v1 adds to core's legacy ones."""
    errs = validate_object_meta_update(new, old)
    if new.get("series") != old.get("series"):
        errs += _series_errors(new)
    for key in _IMMUTABLE:
        after = _go_value(new, key)
        if after != _go_value(old, key):
            path = Path(_PATHS.get(key, key))
            errs.append(field.invalid(path, _shown(key, after), FIELD_IMMUTABLE_ERROR_MSG))
    return errs
