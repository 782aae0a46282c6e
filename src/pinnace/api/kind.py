"""What the API knows about one kind: its names, scope, subresources and its rules.

Each kind's module builds one `Kind`; `pinnace.api.catalog` collects them all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.features import FeatureGates
from pinnace.api.field import FieldError
from pinnace.api.objects import Object

Defaulter = Callable[[Object], None]
Validator = Callable[[Object], list[FieldError]]
CreatePreparer = Callable[[Object], list[str] | None]
CreateChecker = Callable[[Object], tuple[list[FieldError], list[str]]]
UpdateValidator = Callable[[Object, Object], list[FieldError]]
UpdatePreparer = Callable[[Object, Object], None]
FeatureDefaulter = Callable[[Object, FeatureGates], None]
FieldDropper = Callable[[Object, Object | None, FeatureGates], None]
ScaleReader = Callable[[Object], Object]
ScaleWriter = Callable[[Object, Any], list[FieldError]]


def _no_defaults(obj: Object) -> None:
    return None


def _nothing_to_prepare(new: Object, old: Object) -> None:
    return None


def _no_feature_defaults(obj: Object, gates: FeatureGates) -> None:
    return None


def _nothing_to_drop(new: Object, old: Object | None, gates: FeatureGates) -> None:
    return None


def _always_valid(obj: Object) -> list[FieldError]:
    return []


def _any_update_valid(new: Object, old: Object) -> list[FieldError]:
    return []


def _no_warnings(obj: Object) -> list[str]:
    return []


def _no_update_warnings(new: Object, old: Object) -> list[str]:
    return []


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    model: str
    """The `kubernetes` client model class that describes the schema, e.g. "V1Pod"."""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    """`all` for kinds that `kubectl get all` lists."""
    subresources: tuple[str, ...] = ()
    """e.g. ("status", "binding", "eviction", "log") for pods."""
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    """What discovery lists; a kind with only "create" (Binding) is never stored."""
    custom: bool = False
    """Served as kube-apiserver serves a CustomResourceDefinition's kind (the VPA's): a
    strategic merge patch is refused (415), the other patch types work."""
    selectable_fields: frozenset[str] = frozenset()
    """A custom resource version's `selectableFields` as field labels (`spec.color` for
    `.spec.color`): field selectors may name them beyond the metadata's."""
    warning: str = ""
    """A `Warning` sent with every answer about the kind at this version: a deprecated custom
    resource version's deprecationWarning, as crdHandler adds it."""
    terminating: bool = False
    """A custom resource kind whose CRD is being deleted: it takes no creates (405, "create
    not allowed while custom resource definition is terminating")."""
    allow_create_on_update: bool = False
    """A PUT to a missing object creates it (events, leases, limit ranges)."""
    default: Defaulter = field(default=_no_defaults, compare=False)
    """Fill in defaults in place, as kube-apiserver's defaulting does on decode."""
    prepare_for_create: CreatePreparer = field(default=_no_defaults, compare=False)
    """The registry strategy's create step, run after uid and creationTimestamp are set and
    before validation: reset status, set generation 1, derived fields (pod status.qosClass,
    a Job's generated selector). It may return warnings, as the strategy's own AddWarning
    (a pod's deprecated AppArmor annotations), sent ahead of `warnings_on_create`'s."""
    prepare_for_update: Callable[[Object, Object], None] = field(
        default=_nothing_to_prepare, compare=False
    )
    """The strategy's update step (new, old), in place on new: keep old status on a spec
    write, bump metadata.generation when the spec changed."""
    prepare_for_status_update: Callable[[Object, Object], None] = field(
        default=_nothing_to_prepare, compare=False
    )
    """The status strategy's step (new, old), in place on new: keep old spec (and whatever
    else only the main endpoint may change). It puts the stored spec in the place of the
    written one, never changing that in place: `APIServer.update` leaves a status write's spec
    the caller's own, uncopied."""
    subresource_updates: Mapping[str, tuple[UpdatePreparer, UpdateValidator]] = field(
        default_factory=dict, compare=False
    )
    """Other subresources written with PUT, as (prepare, validate): namespaces/finalize."""
    subresource_gates: Mapping[str, Callable[[FeatureGates], bool]] = field(
        default_factory=dict, compare=False
    )
    """Subresources served only while the cluster's feature gates say so (pods/resize): the
    others answer 404 as an unknown path."""
    default_with_features: FeatureDefaulter = field(default=_no_feature_defaults, compare=False)
    """The defaults that depend on the cluster's feature gates, run after `default`."""
    status_write_discards_defaults: bool = False
    """`prepare_for_status_update` puts back from the stored object all that `default` and
    `default_with_features` fill in (a pod's spec): a write to the status subresource skips
    them, as nothing they would do to it is kept."""
    drop_disabled: FieldDropper = field(default=_nothing_to_drop, compare=False)
    """Drop the fields of disabled features (new, old or None on create), in place: run after
    every prepare step, as the strategies call DropDisabledPodFields."""
    validate: Validator = field(default=_always_valid, compare=False)
    """Create validation (metadata included): a list of field errors, empty when valid."""
    validate_update: UpdateValidator = field(default=_any_update_valid, compare=False)
    """Update validation (new, old): immutability and transitions, metadata included."""
    validate_status_update: UpdateValidator = field(default=_any_update_valid, compare=False)
    """Validation of a write to the status subresource (new, old)."""
    warnings_on_create: Callable[[Object], list[str]] = field(default=_no_warnings, compare=False)
    """The strategy's WarningsOnCreate: `Warning` headers for a valid new object."""
    checks_on_create: CreateChecker | None = field(default=None, compare=False)
    """`validate` and `warnings_on_create` of a new object at once, (errors, warnings), for a
    kind whose two share their work (a pod's, its spec looked up once): the warnings count
    only when there are no errors. None: the two are asked in turn."""
    warnings_on_update: Callable[[Object, Object], list[str]] = field(
        default=_no_update_warnings, compare=False
    )
    """The strategy's WarningsOnUpdate (new, old): `Warning` headers for a valid update of the
    object itself (not of a subresource)."""
    orphans_by_default: bool = False
    """A DELETE that names no propagation policy orphans the dependents (the strategy's
    DefaultGarbageCollectionPolicy is OrphanDependents: v1 ReplicationControllers and batch/v1
    Jobs, for compatibility with the time before the garbage collector)."""
    delete_finalizer: str = ""
    """A finalizer the first DELETE adds (a CustomResourceDefinition's cleanup finalizer): the
    object stays until its controller has finished and removed it."""
    prepare_for_delete: Defaulter = field(default=_no_defaults, compare=False)
    """In place on the copy the first DELETE marks with a deletion timestamp (a CRD's
    Terminating condition)."""
    prune: Callable[[Object], list[str]] | None = field(default=None, compare=False)
    """Decoding without a Go struct (a custom resource's): drop, in place, what the kind's
    structural schema does not specify, returning the dropped fields' paths; None for kinds
    decoded by their model."""
    scale: tuple[ScaleReader, ScaleWriter] | None = field(default=None, compare=False)
    """The scale subresource of a kind that declares where its replicas are (a custom
    resource's): (object -> its autoscaling/v1 Scale, (object, Scale) -> the errors of setting
    the Scale's replicas on the object in place); None for the workload kinds' built-in one."""
    apply_shape: Any = field(default=None, compare=False)
    """How server-side apply and managedFields see the kind's fields (a
    `pinnace.api.patch.openapi.Shape`) when the built-in table has no entry for it: a custom
    resource's, from its served version's structural schema; None for the table's kinds."""
    openapi_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    """The structural schema /openapi/v2 and /openapi/v3 publish for the kind (a custom
    resource's served version's openAPIV3Schema); None for the kinds documented from their
    models, and for those published nowhere."""
    printer: Any = field(default=None, compare=False)
    """The kind's own table printer (`pinnace.api.tables.columns.Printer`, a custom
    resource's additionalPrinterColumns); None for the printer `pinnace.api.tables` keeps
    for it."""

    @functools.cached_property
    def api_version(self) -> str:
        # Worked out once (kept in the instance's dict, which a frozen dataclass's fields
        # are not): every write's decoding and every Event's reference read it.
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources
