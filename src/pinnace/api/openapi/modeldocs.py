"""What the `kubernetes` client models know beyond field types: each field's description
(the property docstring, which the client generator copied from the Kubernetes OpenAPI spec)
and which fields are required (the setters that refuse None).

The type-level descriptions ("Pod is a collection of containers…") did not survive the client
generator, so the few that `kubectl explain` shows at the top of a kind live in
`KIND_DESCRIPTIONS`.
"""

from __future__ import annotations

import importlib
import re
import sys
from functools import cache
from pathlib import Path

_NOQA = "  # noqa: E501"
_REQUIRED = re.compile(r"Invalid value for `(\w+)`, must not be `None`")

KIND_DESCRIPTIONS = {
    "V1Binding": "Binding ties one object to another; for example, a pod is bound to a node "
    "by a scheduler.",
    "V1ConfigMap": "ConfigMap holds configuration data for pods to consume.",
    "CoreV1Event": "Event is a report of an event somewhere in the cluster.  Events have a "
    "limited retention time and triggers and messages may evolve with time.  Event consumers "
    "should not rely on the timing of an event with a given Reason reflecting a consistent "
    "underlying trigger, or the continued existence of events with that Reason.  Events "
    "should be treated as informative, best-effort, supplemental data.",
    "V1LimitRange": "LimitRange sets resource usage limits for each kind of resource in a "
    "Namespace.",
    "V1Namespace": "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
    "V1Node": "Node is a worker node in Kubernetes. Each node will have a unique identifier "
    "in the cache (i.e. in etcd).",
    "V1Pod": "Pod is a collection of containers that can run on a host. This resource is "
    "created by clients and scheduled onto hosts.",
    "V1ResourceQuota": "ResourceQuota sets aggregate quota restrictions enforced per namespace",
    "V1DaemonSet": "DaemonSet represents the configuration of a daemon set.",
    "V1Deployment": "Deployment enables declarative updates for Pods and ReplicaSets.",
    "V1ReplicaSet": "ReplicaSet ensures that a specified number of pod replicas are running "
    "at any given time.",
    "V2HorizontalPodAutoscaler": "HorizontalPodAutoscaler is the configuration for a "
    "horizontal pod autoscaler, which automatically manages the replica count of any "
    "resource implementing the scale subresource based on the metrics specified.",
    "V1Job": "Job represents the configuration of a single job.",
    "V1Lease": "Lease defines a lease concept.",
    "V1PodDisruptionBudget": "PodDisruptionBudget is an object to define the max disruption "
    "that can be caused to a collection of pods",
    "V1PriorityClass": "PriorityClass defines mapping from a priority class name to the "
    "priority integer value. The value can be any valid integer.",
    "V1Eviction": "Eviction evicts a pod from its node subject to certain policies and "
    "safety constraints. This is a subresource of Pod.  A request to cause such an eviction "
    "is created by POSTing to .../pods/<pod name>/evictions.",
    "V1Scale": "Scale represents a scaling request for a resource.",
    "V1ObjectMeta": "ObjectMeta is metadata that all persisted resources must have, which "
    "includes all objects users must create.",
    "V1ListMeta": "ListMeta describes metadata that synthetic resources must have, including "
    "lists and various status objects. A resource may have only one of {ObjectMeta, "
    "ListMeta}.",
    "V1PodSpec": "PodSpec is a description of a pod.",
    "V1PodStatus": "PodStatus represents information about the status of a pod. Status may "
    "trail the actual state of a system, especially if the node that hosts the pod cannot "
    "contact the control plane.",
    "V1Container": "A single application container that you want to run within a pod.",
    "V1PodTemplateSpec": "PodTemplateSpec describes the data a pod should have when created "
    "from a template",
    "V1LabelSelector": "A label selector is a label query over a set of resources. The "
    "result of matchLabels and matchExpressions are ANDed. An empty label selector matches "
    "all objects. A null label selector matches no objects.",
    "V1Status": "Status is a return value for calls that don't return other objects.",
    "V1DeleteOptions": "DeleteOptions may be provided when deleting an API object.",
}
"""Type descriptions of the served kinds and the types `kubectl explain` shows most, as the
Kubernetes v1.32 API documents them."""


def model_class(model: str) -> type:
    """The client model class named `model` ("V1Pod")."""
    cls: type = getattr(importlib.import_module("kubernetes.client.models"), model)
    return cls


@cache
def _json_to_attr(model: str) -> dict[str, str]:
    cls = model_class(model)
    return {json_name: attr for attr, json_name in cls.attribute_map.items()}  # type: ignore[attr-defined]


def field_description(model: str, json_name: str) -> str:
    """The description of field `json_name` of `model`, "" when the spec gives none."""
    attr = _json_to_attr(model)[json_name]
    doc = getattr(model_class(model), attr).__doc__ or ""
    blocks = [block.strip() for block in doc.split("\n\n")]
    if len(blocks) < 3 or blocks[1].startswith(":return:"):
        return ""
    return blocks[1].removesuffix(_NOQA.strip()).strip()


@cache
def required_fields(model: str) -> tuple[str, ...]:
    """The JSON names of the fields `model` requires, in declaration order."""
    cls = model_class(model)
    source = Path(sys.modules[cls.__module__].__file__ or "").read_text()
    required = set(_REQUIRED.findall(source))
    return tuple(json for attr, json in cls.attribute_map.items() if attr in required)  # type: ignore[attr-defined]


def kind_description(model: str) -> str:
    return KIND_DESCRIPTIONS.get(model, "")
