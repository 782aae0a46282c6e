"""HorizontalPodAutoscaler served as autoscaling/v1, stored as autoscaling/v2, converted both
ways as kube-apiserver v1.32 converts them (pkg/apis/autoscaling/v1/conversion.go).

v1 has one target, `targetCPUUtilizationPercentage`, and reports
`currentCPUUtilizationPercentage`. Everything else v2 holds rides in annotations on the v1
object: the other metrics (`autoscaling.alpha.kubernetes.io/metrics`, in v1's MetricSpec
shape), the behavior, the current metrics and the conditions. A v1 object without a CPU target
or other metrics gets the default 80 % CPU target.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
API_VERSION = "autoscaling/v1"
STORED_API_VERSION = "autoscaling/v2"
DEFAULT_CPU_UTILIZATION = 80

HORIZONTAL_POD_AUTOSCALER_V1 = Kind(
    group="autoscaling",
    version="v1",
    kind="HorizontalPodAutoscaler",
    plural="horizontalpodautoscalers",
    namespaced=True,
    model="V1HorizontalPodAutoscaler",
    short_names=("hpa",),
    categories=("all",),
    subresources=("status",),
)


def _some(**fields: Any) -> Object:
    return {k: v for k, v in fields.items() if v is not None}


# --- metric specs and statuses: v2 <-> v1's (v2beta1-shaped) forms -------------------------------


def _spec_to_v1(metric: Object) -> Object:
    kind = metric.get("type", "")
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = metric.get(field) or {}
        target = source.get("target") or {}
        return {
            "type": kind,
            field: _some(
                name=source.get("name"),
                container=source.get("container"),
                targetAverageUtilization=target.get("averageUtilization"),
                targetAverageValue=target.get("averageValue"),
            ),
        }
    if kind == "Pods":
        source = metric.get("pods") or {}
        ident, target = source.get("metric") or {}, source.get("target") or {}
        return {
            "type": kind,
            "pods": _some(
                metricName=ident.get("name"),
                targetAverageValue=target.get("averageValue"),
                selector=ident.get("selector"),
            ),
        }
    if kind == "Object":
        source = metric.get("object") or {}
        ident, target = source.get("metric") or {}, source.get("target") or {}
        return {
            "type": kind,
            "object": _some(
                target=source.get("describedObject"),
                metricName=ident.get("name"),
                targetValue=target.get("value"),
                averageValue=target.get("averageValue"),
                selector=ident.get("selector"),
            ),
        }
    if kind == "External":
        source = metric.get("external") or {}
        ident, target = source.get("metric") or {}, source.get("target") or {}
        return {
            "type": kind,
            "external": _some(
                metricName=ident.get("name"),
                metricSelector=ident.get("selector"),
                targetValue=target.get("value"),
                targetAverageValue=target.get("averageValue"),
            ),
        }
    return {"type": kind}


def _spec_to_v2(metric: Object) -> Object:
    kind = metric.get("type", "")
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = metric.get(field) or {}
        utilization = source.get("targetAverageUtilization")
        target = _some(
            type="AverageValue" if utilization is None else "Utilization",
            averageUtilization=utilization,
            averageValue=source.get("targetAverageValue"),
        )
        named = _some(name=source.get("name"), container=source.get("container"))
        return {"type": kind, field: {**named, "target": target}}
    if kind == "Pods":
        source = metric.get("pods") or {}
        return {
            "type": kind,
            "pods": {
                "metric": _some(name=source.get("metricName"), selector=source.get("selector")),
                "target": _some(type="AverageValue", averageValue=source.get("targetAverageValue")),
            },
        }
    if kind == "Object":
        source = metric.get("object") or {}
        average = source.get("averageValue")
        return {
            "type": kind,
            "object": _some(
                describedObject=source.get("target"),
                metric=_some(name=source.get("metricName"), selector=source.get("selector")),
                target=_some(
                    type="Value" if average is None else "AverageValue",
                    value=source.get("targetValue"),
                    averageValue=average,
                ),
            ),
        }
    if kind == "External":
        source = metric.get("external") or {}
        value = source.get("targetValue")
        return {
            "type": kind,
            "external": {
                "metric": _some(
                    name=source.get("metricName"), selector=source.get("metricSelector")
                ),
                "target": _some(
                    type="AverageValue" if value is None else "Value",
                    value=value,
                    averageValue=source.get("targetAverageValue"),
                ),
            },
        }
    return {"type": kind}


def _status_to_v1(metric: Object) -> Object:
    kind = metric.get("type", "")
    field = {"ContainerResource": "containerResource"}.get(kind, kind.lower())
    source = metric.get(field) or {}
    current = source.get("current") or {}
    ident = source.get("metric") or {}
    if kind in ("Resource", "ContainerResource"):
        converted = _some(
            name=source.get("name"),
            container=source.get("container"),
            currentAverageUtilization=current.get("averageUtilization"),
            currentAverageValue=current.get("averageValue") or "0",
        )
    elif kind == "Pods":
        converted = _some(
            metricName=ident.get("name"),
            currentAverageValue=current.get("averageValue") or "0",
            selector=ident.get("selector"),
        )
    elif kind == "Object":
        converted = _some(
            target=source.get("describedObject"),
            metricName=ident.get("name"),
            currentValue=current.get("value") or "0",
            averageValue=current.get("averageValue"),
            selector=ident.get("selector"),
        )
    elif kind == "External":
        converted = _some(
            metricName=ident.get("name"),
            metricSelector=ident.get("selector"),
            currentValue=current.get("value") or "0",
            currentAverageValue=current.get("averageValue"),
        )
    else:
        return {"type": kind}
    return {"type": kind, field: converted}


def _status_to_v2(metric: Object) -> Object:
    kind = metric.get("type", "")
    field = {"ContainerResource": "containerResource"}.get(kind, kind.lower())
    source = metric.get(field) or {}
    if kind in ("Resource", "ContainerResource"):
        current = _some(
            averageValue=source.get("currentAverageValue"),
            averageUtilization=source.get("currentAverageUtilization"),
        )
        named = _some(name=source.get("name"), container=source.get("container"))
        return {"type": kind, field: {**named, "current": current}}
    if kind == "Pods":
        ident = _some(name=source.get("metricName"), selector=source.get("selector"))
        current = _some(averageValue=source.get("currentAverageValue"))
        return {"type": kind, "pods": {"metric": ident, "current": current}}
    if kind == "Object":
        ident = _some(name=source.get("metricName"), selector=source.get("selector"))
        current = _some(value=source.get("currentValue"), averageValue=source.get("averageValue"))
        converted = _some(describedObject=source.get("target"), metric=ident, current=current)
        return {"type": kind, "object": converted}
    if kind == "External":
        ident = _some(name=source.get("metricName"), selector=source.get("metricSelector"))
        current = _some(
            value=source.get("currentValue"), averageValue=source.get("currentAverageValue")
        )
        return {"type": kind, "external": {"metric": ident, "current": current}}
    return {"type": kind}


def _is_cpu_utilization(metric: Object) -> bool:
    resource = metric.get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get("target") or {}).get("averageUtilization") is not None
    )


# --- whole objects ------------------------------------------------------------------------------


def _annotation(annotations: dict[str, str], key: str) -> Any:
    text = annotations.pop(key, None)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def to_v2(hpa: Object) -> Object:
    """A v1 object (from a client) as the v2 object the server stores."""
    out = copy.deepcopy(hpa)
    if "apiVersion" in out:
        out["apiVersion"] = STORED_API_VERSION
    meta = out.get("metadata")
    annotations: dict[str, str] = dict((meta or {}).get("annotations") or {})
    spec = out.get("spec")
    if isinstance(spec, dict):
        cpu = spec.pop("targetCPUUtilizationPercentage", None)
        metrics = [_spec_to_v2(m) for m in _annotation(annotations, METRICS_ANNOTATION) or []]
        if cpu is not None:
            target = {"type": "Utilization", "averageUtilization": cpu}
            metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
        if not metrics:
            target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
            metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
        spec["metrics"] = metrics
        behavior = _annotation(annotations, BEHAVIOR_ANNOTATION)
        if behavior is not None:
            spec["behavior"] = behavior
    status = out.get("status")
    current_metrics = _annotation(annotations, CURRENT_METRICS_ANNOTATION)
    conditions = _annotation(annotations, CONDITIONS_ANNOTATION)
    if isinstance(status, dict):
        cpu_now = status.pop("currentCPUUtilizationPercentage", None)
        if current_metrics is not None:
            status["currentMetrics"] = [_status_to_v2(m) for m in current_metrics]
        elif cpu_now is not None:
            current = {"averageUtilization": cpu_now}
            status["currentMetrics"] = [
                {"type": "Resource", "resource": {"name": "cpu", "current": current}}
            ]
        if conditions is not None:
            status["conditions"] = conditions
    if isinstance(meta, dict) and "annotations" in meta:
        meta["annotations"] = annotations
    return out


def to_v1(hpa: Object) -> Object:
    """A stored v2 object as a v1 client sees it."""
    out = copy.deepcopy(hpa)
    if "apiVersion" in out:
        out["apiVersion"] = API_VERSION
    extra: dict[str, str] = {}
    spec = out.get("spec") or {}
    metrics = spec.pop("metrics", None) or []
    others = [_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    if others:
        extra[METRICS_ANNOTATION] = _compact(others)
    behavior = spec.pop("behavior", None)
    if behavior is not None:
        extra[BEHAVIOR_ANNOTATION] = _compact(behavior)
    status = out.setdefault("status", {})
    if isinstance(status, dict):
        # v1 always writes both counts (no omitempty), where v2 leaves a zero currentReplicas out
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        current_metrics = status.pop("currentMetrics", None) or []
        conditions = status.pop("conditions", None) or []
        for metric in current_metrics:
            resource = metric.get("resource") or {}
            utilization = (resource.get("current") or {}).get("averageUtilization")
            is_cpu = metric.get("type") == "Resource" and resource.get("name") == "cpu"
            if is_cpu and utilization is not None:
                status["currentCPUUtilizationPercentage"] = utilization
        if current_metrics:
            extra[CURRENT_METRICS_ANNOTATION] = _compact(
                [_status_to_v1(m) for m in current_metrics]
            )
        if conditions:
            extra[CONDITIONS_ANNOTATION] = _compact(conditions)
    if extra:
        meta = out.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **extra}
    return out


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
