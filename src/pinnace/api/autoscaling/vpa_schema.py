"""The OpenAPI schema Pinnace publishes for autoscaling.k8s.io/v1 VerticalPodAutoscaler, in the
shape of a CRD's structural schema (vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml), so
that `kubectl explain vpa` works as on a cluster where the VPA's CRD is installed.

It is built from the fields the API server serves and their required ones (`vpa_models`, and
the client package's CrossVersionObjectReference), with the enums `vpa` checks and the
quantities' int-or-string pattern. The CRD's field descriptions are not reproduced: only the
kind and its top-level fields are described, in Pinnace's own words.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import client_models
from pinnace.api.autoscaling import vpa_models
from pinnace.api.autoscaling.vpa import (
    CHANGE_REQUIREMENTS,
    CONTROLLED_VALUES,
    QUANTITY_PATTERN,
    SCALING_MODES,
    UPDATE_MODES,
)

_ROOT = "V1VerticalPodAutoscaler"
_TYPE_META = ("apiVersion", "kind", "metadata")
"""Added to every custom kind's schema by the OpenAPI builder itself."""

_ENUMS = {
    ("V1PodUpdatePolicy", "updateMode"): UPDATE_MODES,
    ("V1ContainerResourcePolicy", "mode"): SCALING_MODES,
    ("V1ContainerResourcePolicy", "controlledValues"): CONTROLLED_VALUES,
    ("V1EvictionRequirement", "changeRequirement"): CHANGE_REQUIREMENTS,
}
_DESCRIPTIONS = {
    (_ROOT, ""): "A VerticalPodAutoscaler sets the CPU and memory requests of the pods of the "
    "workload it targets from their recorded usage.",
    (_ROOT, "spec"): "What the autoscaler targets and how it may change the pods.",
    (_ROOT, "status"): "The latest recommendation and the autoscaler's conditions.",
    ("V1VerticalPodAutoscalerSpec", "targetRef"): "The workload whose pods are autoscaled "
    "(a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob...).",
    ("V1VerticalPodAutoscalerSpec", "updatePolicy"): "Whether and how the recommendation is "
    "applied to the pods.",
    ("V1VerticalPodAutoscalerSpec", "resourcePolicy"): "Per container: bounds, the resources "
    "controlled and whether limits follow the requests.",
    ("V1PodUpdatePolicy", "updateMode"): "Off, Initial (at creation only), Recreate (evicts "
    "pods), InPlaceOrRecreate (resizes them in place when it can) or Auto (the default).",
}
_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN.pattern,
    "x-kubernetes-int-or-string": True,
}


def _fields(model: str) -> dict[str, str]:
    found = client_models.FIELDS.get(model)
    return found if found is not None else getattr(vpa_models, model).openapi_types


def _type(spec: str, model: str, name: str) -> dict[str, Any]:
    if spec.startswith("list["):
        return {"type": "array", "items": _type(spec[5:-1], model, name)}
    if spec == "dict(str, object)":
        return {"type": "object", "additionalProperties": dict(_QUANTITY)}
    if spec == "str":
        enum = _ENUMS.get((model, name))
        return {"type": "string", "enum": list(enum)} if enum else {"type": "string"}
    if spec == "int":
        return {"type": "integer", "format": "int32"}
    if spec == "datetime":
        return {"type": "string", "format": "date-time"}
    return _object(spec)


def _object(model: str) -> dict[str, Any]:
    properties = {}
    for name, spec in _fields(model).items():
        if model == _ROOT and name in _TYPE_META:
            continue
        prop = _type(spec, model, name)
        description = _DESCRIPTIONS.get((model, name))
        properties[name] = {"description": description, **prop} if description else prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = vpa_models.PATCH_TYPES[vpa_models.TYPE_PREFIX + model.removeprefix("V1")][2]
    if required:
        schema["required"] = required.split()
    description = _DESCRIPTIONS.get((model, ""))
    return {"description": description, **schema} if description else schema


SCHEMA = _object(_ROOT)
"""The published structural schema of a VerticalPodAutoscaler."""
