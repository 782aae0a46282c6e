"""ControllerRevision (apps/v1): an immutable snapshot of a controller's state, as the
DaemonSet controller keeps one per pod template (its history, for `kubectl rollout history`
and `undo`). Validation as Kubernetes v1.32: `data` (any JSON) is required and immutable,
`revision` is a non-negative number that may change.

Go shows the bad value of an immutable `data` as the decoded runtime object; Pinnace shows
the JSON it was given.
"""

from __future__ import annotations

import json
from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.validation import FIELD_IMMUTABLE_ERROR_MSG, GoValue, validate_nonnegative

DATA = Path("data")
REVISION = Path("revision")


def default_controller_revision(revision: Any) -> None:
    """`revision` has no omitempty in Go: a missing one reads and shows as 0."""
    if isinstance(revision, dict) and revision.get("revision") is None:
        revision["revision"] = 0


def validate_controller_revision(revision: Any) -> list[FieldError]:
    errs = validate_object_meta(revision, namespaced=True)
    if not isinstance(revision, dict):
        return errs
    if revision.get("data") is None:
        errs.append(field.required(DATA, "data is mandatory"))
    errs += validate_nonnegative(revision.get("revision", 0), REVISION)
    return errs


def validate_controller_revision_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + validate_controller_revision(new)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    data = new.get("data")
    if data != old.get("data"):
        shown = GoValue(json.dumps(data, separators=(",", ":"), sort_keys=True))
        errs.append(field.invalid(DATA, shown, FIELD_IMMUTABLE_ERROR_MSG))
    return errs


CONTROLLER_REVISION = Kind(
    group="apps",
    version="v1",
    kind="ControllerRevision",
    plural="controllerrevisions",
    namespaced=True,
    model="V1ControllerRevision",
    default=default_controller_revision,
    validate=validate_controller_revision,
    validate_update=validate_controller_revision_update,
)
