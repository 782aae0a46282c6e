"""apps/v1: replica sets, deployments, daemon sets and stateful sets, and core/v1's
replication controllers, with the wide CONTAINERS, IMAGES and (but for stateful sets) SELECTOR
columns of their pod template."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    containers_columns,
    doc,
    integer,
    meta,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import (
    container_cells,
    format_label_selector,
    format_labels,
    selector_string,
)


def _desired(spec: Object) -> int:
    """spec.replicas, which defaulting sets to 1 when it is left out."""
    replicas: Any = spec.get("replicas", 1)
    return integer(replicas)


def _template_spec(obj: Object) -> Object:
    return section(obj, "spec", "template", "spec")


def _replica_row(selector_cell: Callable[[Any], str]) -> Callable[[Object, float], Row]:
    """A replica set's or replication controller's row: the two differ only in how their
    selector is written (a label selector, or a plain label map)."""

    def row(obj: Object, now: float) -> Row:
        spec, status = section(obj, "spec"), section(obj, "status")
        names, images = container_cells(_template_spec(obj))
        return Row(
            [
                name_of(obj),
                _desired(spec),
                integer(status.get("replicas")),
                integer(status.get("readyReplicas")),
                age_of(obj, now),
                names,
                images,
                selector_cell(spec.get("selector")),
            ]
        )

    return row


def _replica_printer(model: str, selector_cell: Callable[[Any], str]) -> Printer:
    """The table of a replica set (`model` V1ReplicaSet) or replication controller."""
    return Printer(
        (
            name_column(),
            Column("Desired", "integer", doc(f"{model}Spec", "replicas")),
            Column("Current", "integer", doc(f"{model}Status", "replicas")),
            Column("Ready", "integer", doc(f"{model}Status", "readyReplicas")),
            age_column(),
            *containers_columns(doc(f"{model}Spec", "selector")),
        ),
        _replica_row(selector_cell),
    )


REPLICA_SETS = _replica_printer("V1ReplicaSet", format_label_selector)
REPLICATION_CONTROLLERS = _replica_printer("V1ReplicationController", format_labels)


def _deployment_row(deploy: Object, now: float) -> Row:
    spec, status = section(deploy, "spec"), section(deploy, "status")
    names, images = container_cells(_template_spec(deploy))
    selector = selector_string(spec.get("selector"))
    return Row(
        [
            name_of(deploy),
            f"{integer(status.get('readyReplicas'))}/{_desired(spec)}",
            integer(status.get("updatedReplicas")),
            integer(status.get("availableReplicas")),
            age_of(deploy, now),
            names,
            images,
            "<invalid>" if selector is None else selector,
        ]
    )


DEPLOYMENTS = Printer(
    (
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string", doc("V1DeploymentStatus", "updatedReplicas")),
        Column("Available", "string", doc("V1DeploymentStatus", "availableReplicas")),
        age_column(),
        *containers_columns(doc("V1DeploymentSpec", "selector")),
    ),
    _deployment_row,
)


def _daemon_set_row(ds: Object, now: float) -> Row:
    spec, status = section(ds, "spec"), section(ds, "status")
    names, images = container_cells(_template_spec(ds))
    return Row(
        [
            name_of(ds),
            integer(status.get("desiredNumberScheduled")),
            integer(status.get("currentNumberScheduled")),
            integer(status.get("numberReady")),
            integer(status.get("updatedNumberScheduled")),
            integer(status.get("numberAvailable")),
            format_labels(_template_spec(ds).get("nodeSelector")),
            age_of(ds, now),
            names,
            images,
            format_label_selector(spec.get("selector")),
        ]
    )


DAEMON_SETS = Printer(
    (
        name_column(),
        Column("Desired", "integer", doc("V1DaemonSetStatus", "desiredNumberScheduled")),
        Column("Current", "integer", doc("V1DaemonSetStatus", "currentNumberScheduled")),
        Column("Ready", "integer", doc("V1DaemonSetStatus", "numberReady")),
        Column("Up-to-date", "integer", doc("V1DaemonSetStatus", "updatedNumberScheduled")),
        Column("Available", "integer", doc("V1DaemonSetStatus", "numberAvailable")),
        Column("Node Selector", "string", doc("V1PodSpec", "nodeSelector")),
        age_column(),
        *containers_columns(doc("V1DaemonSetSpec", "selector")),
    ),
    _daemon_set_row,
)


def _stateful_set_row(sts: Object, now: float) -> Row:
    names, images = container_cells(_template_spec(sts))
    ready = integer(section(sts, "status").get("readyReplicas"))
    return Row(
        [
            name_of(sts),
            f"{ready}/{_desired(section(sts, 'spec'))}",
            age_of(sts, now),
            names,
            images,
        ]
    )


STATEFUL_SETS = Printer(
    (
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        age_column(),
        *containers_columns("")[:2],  # Containers and Images: no Selector column
    ),
    _stateful_set_row,
)


def _controller_of(obj: Object) -> str:
    """The controller ownerReference as `kind.group/name` (`daemonset.apps/agent`)."""
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            api_version = str(ref.get("apiVersion") or "")
            group = api_version.rpartition("/")[0]
            kind = str(ref.get("kind") or "").lower()
            return (
                f"{kind}.{group}/{ref.get('name', '')}"
                if group
                else f"{kind}/{ref.get('name', '')}"
            )
    return "<none>"


def _controller_revision_row(revision: Object, now: float) -> Row:
    return Row(
        [
            name_of(revision),
            _controller_of(revision),
            integer(revision.get("revision")),
            age_of(revision, now),
        ]
    )


CONTROLLER_REVISIONS = Printer(
    (
        name_column(),
        Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", doc("V1ControllerRevision", "revision")),
        age_column(),
    ),
    _controller_revision_row,
)
