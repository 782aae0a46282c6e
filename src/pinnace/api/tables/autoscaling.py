"""autoscaling/v2: horizontal pod autoscalers, with TARGETS as `current/target` for at most
two metrics (`cpu: 45%/80%, memory: 120Mi/200Mi + 1 more...`)."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    integer,
    items,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import quantity

_SHOWN = 2
_UNKNOWN = "<unknown>"
# metric type -> the field of the spec and of the status that describes it
_SOURCES = {
    "External": "external",
    "Pods": "pods",
    "Object": "object",
    "Resource": "resource",
    "ContainerResource": "containerResource",
}


def _current(status: Object | None, field: str) -> Object | None:
    """status.<field>.current, or None when the status has no such metric."""
    if status is None or not isinstance(status.get(field), dict):
        return None
    return section(status, field, "current")


def _metric(spec: Object, status: Object | None) -> str:
    field = _SOURCES.get(str(spec.get("type")))
    if field is None:
        return "<unknown type>"
    source = section(spec, field)
    target = section(source, "target")
    current = _current(status, field)
    name = f"{source.get('name', '')}: " if field in ("resource", "containerResource") else ""
    if field == "pods":
        shown = _UNKNOWN if current is None else quantity(current.get("averageValue"))
        return f"{shown}/{quantity(target.get('averageValue'))}"
    if target.get("averageValue") is not None:
        shown = _UNKNOWN
        if current is not None and (
            field in ("resource", "containerResource") or (current.get("averageValue") is not None)
        ):
            shown = quantity(current.get("averageValue"))
        suffix = "" if name else " (avg)"
        return f"{name}{shown}/{quantity(target['averageValue'])}{suffix}"
    if name:
        utilization = None if current is None else current.get("averageUtilization")
        shown = _UNKNOWN if utilization is None else f"{integer(utilization)}%"
        wanted = target.get("averageUtilization")
        return f"{name}{shown}/{'<auto>' if wanted is None else f'{integer(wanted)}%'}"
    shown = _UNKNOWN if current is None else quantity(current.get("value"))
    return f"{shown}/{quantity(target.get('value'))}"


def format_metrics(hpa: Object) -> str:
    specs = items(hpa, "spec", "metrics")
    if not specs:
        return "<none>"
    statuses = items(hpa, "status", "currentMetrics")
    shown = [
        _metric(spec, statuses[i] if i < len(statuses) else None) for i, spec in enumerate(specs)
    ]
    text = ", ".join(shown[:_SHOWN])
    return f"{text} + {len(shown) - _SHOWN} more..." if len(shown) > _SHOWN else text


def _row(hpa: Object, now: float) -> Row:
    spec = section(hpa, "spec")
    target = section(spec, "scaleTargetRef")
    minimum = spec.get("minReplicas")
    return Row(
        [
            name_of(hpa),
            f"{target.get('kind', '')}/{target.get('name', '')}",
            format_metrics(hpa),
            "<unset>" if minimum is None else str(integer(minimum)),
            integer(spec.get("maxReplicas")),
            integer(section(hpa, "status").get("currentReplicas")),
            age_of(hpa, now),
        ]
    )


_SPEC = "V2HorizontalPodAutoscalerSpec"
HORIZONTAL_POD_AUTOSCALERS = Printer(
    (
        name_column(),
        Column("Reference", "string", doc(_SPEC, "scaleTargetRef")),
        Column("Targets", "string", doc(_SPEC, "metrics")),
        Column("MinPods", "string", doc(_SPEC, "minReplicas")),
        Column("MaxPods", "string", doc(_SPEC, "maxReplicas")),
        Column("Replicas", "string", doc("V2HorizontalPodAutoscalerStatus", "currentReplicas")),
        age_column(),
    ),
    _row,
)


def _first_target(vpa: Object, resource: str) -> str | None:
    recommendations = items(vpa, "status", "recommendation", "containerRecommendations")
    value = section(recommendations[0], "target").get(resource) if recommendations else None
    return None if value is None else str(value)


def _provided(vpa: Object) -> str | None:
    for condition in items(vpa, "status", "conditions"):
        if condition.get("type") == "RecommendationProvided":
            return str(condition.get("status", ""))
    return None


def _vpa_row(vpa: Object, now: float) -> Row:
    mode = section(vpa, "spec", "updatePolicy").get("updateMode")
    return Row(
        [
            name_of(vpa),
            None if mode is None else str(mode),
            _first_target(vpa, "cpu"),
            _first_target(vpa, "memory"),
            _provided(vpa),
            age_of(vpa, now),
        ]
    )


VERTICAL_POD_AUTOSCALERS = Printer(
    (
        name_column(),
        Column("Mode", "string", ""),
        Column("CPU", "string", ""),
        Column("Mem", "string", ""),
        Column("Provided", "string", ""),
        Column("Age", "date", ""),
    ),
    _vpa_row,
)
"""The CRD's additionalPrinterColumns (JSONPaths .spec.updatePolicy.updateMode, the first
container recommendation's target cpu and memory, the RecommendationProvided condition's
status): a path that finds nothing is a null cell, which kubectl prints as <none>."""
