"""Server-side tables: the `meta.k8s.io/v1` Table kube-apiserver returns for
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, which is what `kubectl get` prints.

Columns and cells follow kubernetes/pkg/printers/internalversion/printers.go (v1.32) for each
served kind; a kind without a printer gets the default NAME / CREATED AT table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pinnace.api.kind import Kind
from pinnace.api.tables.apps import (
    CONTROLLER_REVISIONS,
    DAEMON_SETS,
    DEPLOYMENTS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
)
from pinnace.api.tables.autoscaling import HORIZONTAL_POD_AUTOSCALERS, VERTICAL_POD_AUTOSCALERS
from pinnace.api.tables.batch import CRON_JOBS, JOBS
from pinnace.api.tables.certificates import CERTIFICATE_SIGNING_REQUESTS
from pinnace.api.tables.columns import Object, Printer
from pinnace.api.tables.coordination import LEASES
from pinnace.api.tables.core import (
    COMPONENT_STATUSES,
    CONFIG_MAPS,
    NAMESPACES,
    RESOURCE_QUOTAS,
    SECRETS,
    SERVICE_ACCOUNTS,
)
from pinnace.api.tables.default import DEFAULT
from pinnace.api.tables.events import EVENTS
from pinnace.api.tables.metrics import NODE_METRICS, POD_METRICS
from pinnace.api.tables.networking import INGRESS_CLASSES, INGRESSES, NETWORK_POLICIES
from pinnace.api.tables.node import RUNTIME_CLASSES
from pinnace.api.tables.nodes import NODES
from pinnace.api.tables.pods import PODS
from pinnace.api.tables.podtemplates import POD_TEMPLATES
from pinnace.api.tables.policy import POD_DISRUPTION_BUDGETS
from pinnace.api.tables.rbac import BINDINGS
from pinnace.api.tables.scheduling import PRIORITY_CLASSES
from pinnace.api.tables.services import ENDPOINT_SLICES, ENDPOINTS, SERVICES
from pinnace.api.tables.storage import (
    CSI_DRIVERS,
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)

IncludeObject = Literal["None", "Metadata", "Object"]

TABLE_API_VERSION = "meta.k8s.io/v1"

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): PODS,
    ("", "podtemplates"): POD_TEMPLATES,
    ("", "nodes"): NODES,
    ("", "namespaces"): NAMESPACES,
    ("", "events"): EVENTS,
    ("", "configmaps"): CONFIG_MAPS,
    ("", "resourcequotas"): RESOURCE_QUOTAS,
    ("", "services"): SERVICES,
    ("", "endpoints"): ENDPOINTS,
    ("", "secrets"): SECRETS,
    ("", "serviceaccounts"): SERVICE_ACCOUNTS,
    ("", "componentstatuses"): COMPONENT_STATUSES,
    ("", "replicationcontrollers"): REPLICATION_CONTROLLERS,
    ("", "persistentvolumes"): PERSISTENT_VOLUMES,
    ("", "persistentvolumeclaims"): PERSISTENT_VOLUME_CLAIMS,
    ("storage.k8s.io", "storageclasses"): STORAGE_CLASSES,
    ("storage.k8s.io", "csinodes"): CSI_NODES,
    ("storage.k8s.io", "csidrivers"): CSI_DRIVERS,
    ("apps", "replicasets"): REPLICA_SETS,
    ("apps", "deployments"): DEPLOYMENTS,
    ("apps", "daemonsets"): DAEMON_SETS,
    ("apps", "statefulsets"): STATEFUL_SETS,
    ("apps", "controllerrevisions"): CONTROLLER_REVISIONS,
    ("batch", "jobs"): JOBS,
    ("batch", "cronjobs"): CRON_JOBS,
    ("autoscaling", "horizontalpodautoscalers"): HORIZONTAL_POD_AUTOSCALERS,
    ("autoscaling.k8s.io", "verticalpodautoscalers"): VERTICAL_POD_AUTOSCALERS,
    ("policy", "poddisruptionbudgets"): POD_DISRUPTION_BUDGETS,
    ("scheduling.k8s.io", "priorityclasses"): PRIORITY_CLASSES,
    ("coordination.k8s.io", "leases"): LEASES,
    ("certificates.k8s.io", "certificatesigningrequests"): CERTIFICATE_SIGNING_REQUESTS,
    ("node.k8s.io", "runtimeclasses"): RUNTIME_CLASSES,
    ("discovery.k8s.io", "endpointslices"): ENDPOINT_SLICES,
    ("networking.k8s.io", "ingresses"): INGRESSES,
    ("networking.k8s.io", "ingressclasses"): INGRESS_CLASSES,
    ("networking.k8s.io", "networkpolicies"): NETWORK_POLICIES,
    ("rbac.authorization.k8s.io", "rolebindings"): BINDINGS,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): BINDINGS,
    ("metrics.k8s.io", "nodes"): NODE_METRICS,
    ("metrics.k8s.io", "pods"): POD_METRICS,
}
"""(group, resource) -> printer; every other kind uses the default table."""


def printer_for(kind: Kind) -> Printer:
    if kind.printer is not None:
        return kind.printer
    return PRINTERS.get((kind.group, kind.plural), DEFAULT)


def _row_object(kind: Kind, obj: Object, include_object: IncludeObject) -> Any:
    if include_object == "None":
        return None
    if include_object == "Object":
        return {"apiVersion": kind.api_version, "kind": kind.kind, **obj}
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": TABLE_API_VERSION,
        "metadata": obj.get("metadata", {}),
    }


def to_table(
    kind: Kind,
    objects: Iterable[Object],
    *,
    include_object: IncludeObject = "Metadata",
    now: float,
    list_meta: dict[str, Any],
    no_headers: bool = False,
) -> dict[str, Any]:
    """The Table for `objects` of `kind` (one object for a GET, the items for a LIST).

    `include_object` is the request's `includeObject` option: each row carries the object's
    metadata as PartialObjectMetadata (the default), the whole object, or nothing (null).
    `list_meta` becomes the table's metadata: the list's resourceVersion, continue and
    remainingItemCount, or the object's resourceVersion for a GET. `now` (seconds since the
    epoch) is the instant ages are measured from. `no_headers` (TableOptions.noHeaders, which
    kubectl sets on watch events after the first) leaves columnDefinitions null.
    """
    if include_object not in ("None", "Metadata", "Object"):
        raise ValueError(
            f'unrecognized includeObject value: "{include_object}"; '
            'want one of "None", "Metadata", "Object"'
        )
    printer = printer_for(kind)
    rows = []
    for obj in objects:
        row = printer.row(obj, now)
        entry: dict[str, Any] = {"cells": row.cells}
        if row.conditions:
            entry["conditions"] = row.conditions
        entry["object"] = _row_object(kind, obj, include_object)
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": dict(list_meta),
        "columnDefinitions": None if no_headers else [c.definition() for c in printer.columns],
        "rows": rows,
    }


__all__ = ["PRINTERS", "IncludeObject", "printer_for", "to_table"]
