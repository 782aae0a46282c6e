"""The structural schema of autoscaling.k8s.io/v1 (kubernetes/autoscaler's
vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1/types.go), in the shape of the
`kubernetes` client's models, which have none for it: per class, each field's JSON name and
type as the client writes them ("str", "list[...]", "dict(str, str)", a model's name).

`pinnace.api.schema` looks here for a model the client package does not have.
"""

from __future__ import annotations

from typing import ClassVar


class _Model:
    openapi_types: ClassVar[dict[str, str]]
    attribute_map: ClassVar[dict[str, str]]


def _model(name: str, fields: dict[str, str]) -> type[_Model]:
    """A model class whose attributes are named as their JSON fields."""
    return type(name, (_Model,), {"openapi_types": fields, "attribute_map": {f: f for f in fields}})


_RESOURCES = "dict(str, object)"
"""A CRD's int-or-string quantities: kept as sent (a number stays a number), never
canonicalised as a built-in kind's ResourceList is."""

V1VerticalPodAutoscaler = _model(
    "V1VerticalPodAutoscaler",
    {
        "apiVersion": "str",
        "kind": "str",
        "metadata": "V1ObjectMeta",
        "spec": "V1VerticalPodAutoscalerSpec",
        "status": "V1VerticalPodAutoscalerStatus",
    },
)
V1VerticalPodAutoscalerList = _model(
    "V1VerticalPodAutoscalerList",
    {
        "apiVersion": "str",
        "kind": "str",
        "metadata": "V1ListMeta",
        "items": "list[V1VerticalPodAutoscaler]",
    },
)
V1VerticalPodAutoscalerSpec = _model(
    "V1VerticalPodAutoscalerSpec",
    {
        "targetRef": "V1CrossVersionObjectReference",
        "updatePolicy": "V1PodUpdatePolicy",
        "resourcePolicy": "V1PodResourcePolicy",
        "recommenders": "list[V1VerticalPodAutoscalerRecommenderSelector]",
    },
)
V1VerticalPodAutoscalerRecommenderSelector = _model(
    "V1VerticalPodAutoscalerRecommenderSelector", {"name": "str"}
)
V1PodUpdatePolicy = _model(
    "V1PodUpdatePolicy",
    {
        "updateMode": "str",
        "minReplicas": "int",
        "evictionRequirements": "list[V1EvictionRequirement]",
    },
)
V1EvictionRequirement = _model(
    "V1EvictionRequirement", {"resources": "list[str]", "changeRequirement": "str"}
)
V1PodResourcePolicy = _model(
    "V1PodResourcePolicy", {"containerPolicies": "list[V1ContainerResourcePolicy]"}
)
V1ContainerResourcePolicy = _model(
    "V1ContainerResourcePolicy",
    {
        "containerName": "str",
        "mode": "str",
        "minAllowed": _RESOURCES,
        "maxAllowed": _RESOURCES,
        "controlledResources": "list[str]",
        "controlledValues": "str",
    },
)
V1VerticalPodAutoscalerStatus = _model(
    "V1VerticalPodAutoscalerStatus",
    {
        "recommendation": "V1RecommendedPodResources",
        "conditions": "list[V1VerticalPodAutoscalerCondition]",
    },
)
V1RecommendedPodResources = _model(
    "V1RecommendedPodResources",
    {"containerRecommendations": "list[V1RecommendedContainerResources]"},
)
V1RecommendedContainerResources = _model(
    "V1RecommendedContainerResources",
    {
        "containerName": "str",
        "target": _RESOURCES,
        "lowerBound": _RESOURCES,
        "upperBound": _RESOURCES,
        "uncappedTarget": _RESOURCES,
    },
)
V1VerticalPodAutoscalerCondition = _model(
    "V1VerticalPodAutoscalerCondition",
    {
        "type": "str",
        "status": "str",
        "lastTransitionTime": "datetime",
        "reason": "str",
        "message": "str",
    },
)


# --- the structural schema's merge semantics, for server-side apply ---------------------------
# In the layout of the generated `pinnace.api.patch.strategies` table: per type, its scalar
# fields, its other fields as (type, patch strategy, merge key, list or map type, keys), and
# its required fields. A CRD's lists without x-kubernetes-list-type are atomic; its maps
# (additionalProperties) merge by key.

KIND = "VerticalPodAutoscaler"
API_VERSION = "autoscaling.k8s.io/v1"
TYPE_PREFIX = "autoscaling.k8s.io.v1."
PATCH_ROOT = TYPE_PREFIX + "VerticalPodAutoscaler"
_MAP = ("{", "", "", "", ())
_ATOMIC_STRINGS = ("[", "", "", "atomic", ())


def _atomic_list(type_name: str) -> tuple[str, str, str, str, tuple[str, ...]]:
    return ("[" + TYPE_PREFIX + type_name, "", "", "atomic", ())


def _struct(type_name: str) -> tuple[str, str, str, str, tuple[str, ...]]:
    return (TYPE_PREFIX + type_name, "", "", "", ())


PATCH_TYPES: dict[str, tuple[str, dict[str, tuple[str, str, str, str, tuple[str, ...]]], str]] = {
    PATCH_ROOT: (
        "apiVersion kind",
        {
            "metadata": ("meta.v1.ObjectMeta", "", "", "", ()),
            "spec": _struct("VerticalPodAutoscalerSpec"),
            "status": _struct("VerticalPodAutoscalerStatus"),
        },
        "spec",
    ),
    TYPE_PREFIX + "VerticalPodAutoscalerSpec": (
        "",
        {
            "targetRef": _struct("CrossVersionObjectReference"),
            "updatePolicy": _struct("PodUpdatePolicy"),
            "resourcePolicy": _struct("PodResourcePolicy"),
            "recommenders": _atomic_list("VerticalPodAutoscalerRecommenderSelector"),
        },
        "targetRef",
    ),
    TYPE_PREFIX + "CrossVersionObjectReference": ("apiVersion kind name", {}, "kind name"),
    TYPE_PREFIX + "VerticalPodAutoscalerRecommenderSelector": ("name", {}, "name"),
    TYPE_PREFIX + "PodUpdatePolicy": (
        "updateMode minReplicas",
        {"evictionRequirements": _atomic_list("EvictionRequirement")},
        "",
    ),
    TYPE_PREFIX + "EvictionRequirement": (
        "changeRequirement",
        {"resources": _ATOMIC_STRINGS},
        "changeRequirement resources",
    ),
    TYPE_PREFIX + "PodResourcePolicy": (
        "",
        {"containerPolicies": _atomic_list("ContainerResourcePolicy")},
        "",
    ),
    TYPE_PREFIX + "ContainerResourcePolicy": (
        "containerName mode controlledValues",
        {"minAllowed": _MAP, "maxAllowed": _MAP, "controlledResources": _ATOMIC_STRINGS},
        "",
    ),
    TYPE_PREFIX + "VerticalPodAutoscalerStatus": (
        "",
        {
            "recommendation": _struct("RecommendedPodResources"),
            "conditions": _atomic_list("VerticalPodAutoscalerCondition"),
        },
        "",
    ),
    TYPE_PREFIX + "RecommendedPodResources": (
        "",
        {"containerRecommendations": _atomic_list("RecommendedContainerResources")},
        "",
    ),
    TYPE_PREFIX + "RecommendedContainerResources": (
        "containerName",
        {"target": _MAP, "lowerBound": _MAP, "upperBound": _MAP, "uncappedTarget": _MAP},
        "target",
    ),
    TYPE_PREFIX + "VerticalPodAutoscalerCondition": (
        "type status lastTransitionTime reason message",
        {},
        "status type",
    ),
}
