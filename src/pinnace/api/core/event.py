"""Event (core/v1): validation as Kubernetes v1.32 applies it to requests made through v1.

kube-apiserver checks v1 Events with its legacy rules only (no ObjectMeta validation, and
`type` is free-form); the strict rules belong to events.k8s.io/v1 (`pinnace.api.events`).
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.names import is_dns1123_subdomain, is_qualified_name
from pinnace.api.validation import object_field, string_field

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"

REPORTING_INSTANCE_LENGTH_LIMIT = 128
ACTION_LENGTH_LIMIT = 128
REASON_LENGTH_LIMIT = 128
NOTE_LENGTH_LIMIT = 1024


OMITTED_WHEN_EMPTY = frozenset({"action", "reason", "message", "type"})
"""The Event's strings Go's encoding leaves out when empty (omitempty), as decoding a body
does: an Event built for `Client.create_own` leaves them out too."""


def without_empty(event: dict[str, Any]) -> dict[str, Any]:
    """`event` with the empty strings of OMITTED_WHEN_EMPTY left out."""
    for key in OMITTED_WHEN_EMPTY:  # a loop: every Event recorded passes here
        if event.get(key) == "":
            return {k: v for k, v in event.items() if v != "" or k not in OMITTED_WHEN_EMPTY}
    return event


_GO_ORDER = (
    "kind",
    "apiVersion",
    "metadata",
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
"""The fields of k8s.io/api's core/v1 Event in its struct's order, which Go writes them in."""
_ALWAYS_WRITTEN: dict[str, Any] = {
    "firstTimestamp": None,
    "lastTimestamp": None,
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
"""What Go writes of an Event that has not set them: its times are structs (metav1.Time,
MicroTime), which omitempty never leaves out and whose zero marshals as null, and its
reporting fields have no omitempty."""


def written(event: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as kube-apiserver writes it: with its unset times null and its
    unset reporting fields empty, in Go's field order; `event` itself when it has them all
    (as client-go's recorder and Pinnace's components write them)."""
    if all(key in event for key in _ALWAYS_WRITTEN):
        return event
    full = {**_ALWAYS_WRITTEN, **event}
    out = {key: full[key] for key in _GO_ORDER if key in full}
    out.update((key, value) for key, value in event.items() if key not in out)
    return out


def occurrences(event: dict[str, Any]) -> int:
    """How often an Event says it happened: its series' count (events.k8s.io/v1), else its
    count (core/v1); a singleton of the new API has neither."""
    series = event.get("series")
    if isinstance(series, dict) and series.get("count"):
        return int(series["count"])
    return int(event.get("count") or 1)


def last_seen(event: dict[str, Any]) -> str:
    """When an Event last happened: its series' lastObservedTime, else its lastTimestamp,
    else its eventTime (RFC 3339)."""
    series = event.get("series")
    if isinstance(series, dict) and series.get("lastObservedTime"):
        return str(series["lastObservedTime"])
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")


_NAMESPACE_MISMATCH = "does not match event.namespace"
_METADATA = Path("metadata")
_NAMESPACE = Path("metadata", "namespace")
_INVOLVED = Path("involvedObject")
_INVOLVED_NAMESPACE = Path("involvedObject", "namespace")
_REPORTING_CONTROLLER = Path("reportingController")
_EVENT_NAMESPACE = Path("namespace")
"""Where v1.32 reports a bad namespace: not under metadata."""


_TEXT_PATHS = {
    key: Path(key)
    for key in ("reportingComponent", "reportingInstance", "action", "reason", "message")
}


def _text(obj: dict[str, Any], key: str, errs: list[FieldError]) -> str:
    value = obj.get(key)
    if type(value) is str:  # every Event a client writes: no path made
        return value
    value, e = string_field(value, _TEXT_PATHS[key])
    errs += e
    return value


def longer_than(value: str, limit: int) -> bool:
    """Whether `value` takes more than `limit` bytes in UTF-8 (encoded only when it might)."""
    return len(value) * 4 > limit and len(value.encode()) > limit


def validate_event(event: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    meta, e = object_field(event.get("metadata"), _METADATA)
    errs += e
    namespace, e = string_field(meta.get("namespace"), _NAMESPACE)
    errs += e
    involved, e = object_field(event.get("involvedObject"), _INVOLVED)
    errs += e
    involved_ns, e = string_field(involved.get("namespace"), _INVOLVED_NAMESPACE)
    errs += e

    if not event.get("eventTime"):
        # An old-style event: its namespace must agree with the involved object's (an
        # object without one may still be reported in "default", for old clients).
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(_mismatch(involved_ns))
        elif namespace != involved_ns:
            errs.append(_mismatch(involved_ns))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(_mismatch(involved_ns))
        controller = _text(event, "reportingComponent", errs)
        if not controller:
            errs.append(field.required(_REPORTING_CONTROLLER))
        if bad := is_qualified_name(controller):
            errs += [field.invalid(_REPORTING_CONTROLLER, controller, m) for m in bad]
        for key, limit in (
            ("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
            ("action", ACTION_LENGTH_LIMIT),
            ("reason", REASON_LENGTH_LIMIT),
        ):
            value = _text(event, key, errs)
            if not value:
                errs.append(field.required(_TEXT_PATHS[key]))
            if longer_than(value, limit):
                errs.append(
                    field.invalid(_TEXT_PATHS[key], "", f"can have at most {limit} characters")
                )
        message = _text(event, "message", errs)
        if longer_than(message, NOTE_LENGTH_LIMIT):
            errs.append(
                field.invalid(
                    _TEXT_PATHS["message"], "", f"can have at most {NOTE_LENGTH_LIMIT} characters"
                )
            )
    if bad := is_dns1123_subdomain(namespace):
        errs += [field.invalid(_EVENT_NAMESPACE, namespace, m) for m in bad]
    return errs


def _mismatch(involved_namespace: str) -> FieldError:
    return field.invalid(_INVOLVED_NAMESPACE, involved_namespace, _NAMESPACE_MISMATCH)


def validate_event_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_event(new)


EVENT = Kind(
    group="",
    version="v1",
    kind="Event",
    plural="events",
    namespaced=True,
    allow_create_on_update=True,
    model="CoreV1Event",
    short_names=("ev",),
    validate=validate_event,
    validate_update=validate_event_update,
)
