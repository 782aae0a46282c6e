"""`kubectl get events`: when it was last and first seen, how often, and for which object.

Events written through events.k8s.io/v1 carry eventTime and series instead of the old
first/last timestamps and count; the printer reads whichever is set.
"""

from __future__ import annotations

from pinnace.api.tables.age import since
from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    doc,
    integer,
    name_column,
    name_of,
    section,
)


def _first_non_empty(*values: object) -> str:
    return next((str(v) for v in values if v), "")


def event_source(event: Object) -> str:
    """`component, host`, falling back to the reporting controller and instance."""
    source = section(event, "source")
    component = _first_non_empty(source.get("component"), event.get("reportingComponent"))
    instance = _first_non_empty(source.get("host"), event.get("reportingInstance"))
    return f"{component}, {instance}" if instance else component


def _row(event: Object, now: float) -> Row:
    first = (
        since(event["firstTimestamp"], now)
        if event.get("firstTimestamp")
        else since(event.get("eventTime"), now)
    )
    last = since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first
    count = integer(event.get("count"))
    series = event.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = integer(series.get("count"))
    elif count == 0:
        count = 1  # a singleton event of the new API has no count
    involved = section(event, "involvedObject")
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return Row(
        [
            last,
            str(event.get("type", "")),
            str(event.get("reason", "")),
            target,
            str(involved.get("fieldPath", "")),
            event_source(event),
            str(event.get("message", "")).strip(),
            first,
            count,
            name_of(event),
        ]
    )


EVENTS = Printer(
    (
        Column("Last Seen", "string", doc("CoreV1Event", "lastTimestamp")),
        Column("Type", "string", doc("CoreV1Event", "type")),
        Column("Reason", "string", doc("CoreV1Event", "reason")),
        Column("Object", "string", doc("CoreV1Event", "involvedObject")),
        Column("Subobject", "string", doc("V1ObjectReference", "fieldPath"), 1),
        Column("Source", "string", doc("CoreV1Event", "source"), 1),
        Column("Message", "string", doc("CoreV1Event", "message")),
        Column("First Seen", "string", doc("CoreV1Event", "firstTimestamp"), 1),
        Column("Count", "string", doc("CoreV1Event", "count"), 1),
        name_column(priority=1),
    ),
    _row,
)
