"""The Pod kind: defaulting, the registry strategy and validation, as kube-apiserver v1.32.

The rules live in the pod_* modules beside this one; this module assembles them into `POD`
and re-exports the helpers other kinds use for their pod templates.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.core.pod_apparmor import apply_apparmor_version_skew
from pinnace.api.core.pod_defaults import default_pod, default_pod_spec, default_pod_template
from pinnace.api.core.pod_ephemeral import (
    prepare_pod_for_ephemeral_containers,
    validate_pod_ephemeral_containers_update,
)
from pinnace.api.core.pod_resize import (
    default_resize_policy,
    drop_disabled_pod_fields,
    prepare_pod_for_resize,
    validate_pod_resize,
)
from pinnace.api.core.pod_scheduling import (
    validate_affinity,
    validate_node_selector,
    validate_tolerations,
)
from pinnace.api.core.pod_shape import as_dict, as_list, dict_items
from pinnace.api.core.pod_update import (
    validate_pod_spec_update,
    validate_pod_status_update,
    validate_pod_update,
)
from pinnace.api.core.pod_validation import (
    check_pod_create,
    validate_pod_create,
    validate_pod_spec,
    validate_pod_template_spec,
)
from pinnace.api.core.pod_warnings import pod_warnings
from pinnace.api.kind import Kind
from pinnace.api.objects import Remembered, plain_json
from pinnace.resources.qos import qos_class

__all__ = [
    "POD",
    "default_pod",
    "default_pod_spec",
    "default_pod_template",
    "prepare_pod_for_create",
    "prepare_pod_for_status_update",
    "prepare_pod_for_update",
    "validate_affinity",
    "validate_node_selector",
    "validate_pod_create",
    "validate_pod_spec",
    "validate_pod_spec_update",
    "validate_pod_status_update",
    "validate_pod_template_spec",
    "validate_pod_update",
    "validate_tolerations",
]

SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
BEHAVIOUR_ANNOTATION_PREFIX = "sim.pinnace.dev/"
"""The prefix of the annotations that say how a simulated container behaves (docs/nodes.md):
Pinnace's kubelet reads their values; no part of the API server does, but validation's limit on
the total size of a pod's annotations."""


def prepare_pod_for_create(pod: dict[str, Any]) -> list[str]:
    """A new pod starts Pending with its QoS class; scheduling gates show as a PodScheduled
    condition, pod (anti-)affinity matchLabelKeys become selector requirements, and the
    deprecated AppArmor annotations and the fields are synced (with their warnings)."""
    spec = as_dict(pod.get("spec"))
    status: dict[str, Any] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    if spec.get("schedulingGates"):
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": SCHEDULING_GATED_MESSAGE,
            }
        ]
    pod["status"] = status
    _apply_match_label_keys(pod)
    return apply_apparmor_version_skew(pod)


_qos_classes: Remembered[str] = Remembered(1024)
"""By the plain JSON text of the resources of a pod's containers and init containers, its QoS
class."""


def _qos_class(spec: dict[str, Any]) -> str:
    """The QoS class of the pod with this spec, which depends on its containers' resources
    only."""
    key = _resources_text(spec)
    qos = _qos_classes.get(key) if key is not None else None
    if qos is None:
        try:
            qos = qos_class({"spec": spec})
        except (TypeError, ValueError, AttributeError, KeyError):
            # Garbage that validation is about to reject has no meaningful class.
            return "BestEffort"
        if key is not None:
            _qos_classes.put(key, qos)
    return qos


def _resources_text(spec: dict[str, Any]) -> bytes | None:
    """The text of the containers' and init containers' resources, in order; None for a spec
    whose containers are not well-formed enough to be read (their class is worked out, and
    the validation refuses them). The containers themselves differ from pod to pod (a volume
    mount of the pod's own kube-api-access volume), their resources seldom."""
    shapes: list[list[Any] | None] = []
    for items in (spec.get("containers"), spec.get("initContainers")):
        if items is None:
            shapes.append(None)
            continue
        if not isinstance(items, list):
            return None
        shape = []
        for container in items:
            if not isinstance(container, dict) or not isinstance(container.get("name", ""), str):
                return None
            shape.append(container.get("resources"))
        shapes.append(shape)
    return plain_json(shapes)


def _apply_match_label_keys(pod: dict[str, Any]) -> None:
    labels = as_dict(as_dict(pod.get("metadata")).get("labels"))
    affinity = as_dict(as_dict(pod.get("spec")).get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = as_dict(affinity.get(kind))
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution")
        preferred = terms.get("preferredDuringSchedulingIgnoredDuringExecution")
        for _, term in dict_items(required):
            _merge_label_keys(term, labels)
        for _, weighted in dict_items(preferred):
            _merge_label_keys(as_dict(weighted.get("podAffinityTerm")), labels)


def _merge_label_keys(term: dict[str, Any], labels: dict[str, Any]) -> None:
    selector = term.get("labelSelector")
    if not isinstance(selector, dict):
        return  # a null selector matches nothing; there is nothing to narrow
    added = [
        {"key": key, "operator": operator, "values": [labels[key]]}
        for list_name, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn"))
        for key in as_list(term.get(list_name))
        if isinstance(key, str) and isinstance(labels.get(key), str)
    ]
    if not added:
        return
    expressions = selector.get("matchExpressions")
    if not isinstance(expressions, list):
        expressions = selector["matchExpressions"] = []
    expressions.extend(added)


def prepare_pod_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A write to the pod keeps its status: that is the status subresource's business.

    The kept parts are the stored object's own, shared rather than copied: stored objects are
    read-only (pinnace.store.interface), and nothing on the update path changes them after
    this step (mutating admission leaves pod subresources alone and never touches status).
    That keeps one copy of each unchanged part in memory, whatever the number of writes."""
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)


def prepare_pod_for_status_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A write to pods/status keeps the spec and owner references, and backfills the QoS
    class a client left out. The kept parts are shared, as in prepare_pod_for_update."""
    if "spec" in old:
        new["spec"] = old["spec"]
    new_meta, old_meta = new.get("metadata"), as_dict(old.get("metadata"))
    if isinstance(new_meta, dict):
        if "ownerReferences" in old_meta:
            new_meta["ownerReferences"] = old_meta["ownerReferences"]
        else:
            new_meta.pop("ownerReferences", None)
    status = new.get("status")
    old_qos = as_dict(old.get("status")).get("qosClass")
    if isinstance(status, dict) and not status.get("qosClass") and old_qos:
        status["qosClass"] = old_qos


POD = Kind(
    group="",
    version="v1",
    kind="Pod",
    plural="pods",
    namespaced=True,
    model="V1Pod",
    short_names=("po",),
    categories=("all",),
    subresources=(
        "attach",
        "binding",
        "ephemeralcontainers",
        "eviction",
        "exec",
        "log",
        "portforward",
        "proxy",
        "resize",
        "status",
    ),
    subresource_updates={
        "ephemeralcontainers": (
            prepare_pod_for_ephemeral_containers,
            validate_pod_ephemeral_containers_update,
        ),
        "resize": (prepare_pod_for_resize, validate_pod_resize),
    },
    subresource_gates={"resize": lambda gates: gates.in_place_pod_vertical_scaling},
    default_with_features=default_resize_policy,
    status_write_discards_defaults=True,
    drop_disabled=drop_disabled_pod_fields,
    default=default_pod,
    prepare_for_create=prepare_pod_for_create,
    prepare_for_update=prepare_pod_for_update,
    prepare_for_status_update=prepare_pod_for_status_update,
    validate=validate_pod_create,
    checks_on_create=check_pod_create,
    validate_update=validate_pod_update,
    validate_status_update=validate_pod_status_update,
    warnings_on_create=pod_warnings,
)
