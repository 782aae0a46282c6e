"""ServiceAccount (v1): validation as Kubernetes v1.32 (pkg/apis/core/validation
ValidateServiceAccount: metadata only; no defaults)."""

from __future__ import annotations

from typing import Any

from pinnace.api.field import FieldError
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update

DEFAULT_SERVICE_ACCOUNT = "default"


def validate_service_account(sa: Any) -> list[FieldError]:
    return validate_object_meta(sa, namespaced=True)


def validate_service_account_update(new: Any, old: Any) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_service_account(new)


SERVICE_ACCOUNT = Kind(
    group="",
    version="v1",
    kind="ServiceAccount",
    plural="serviceaccounts",
    namespaced=True,
    model="V1ServiceAccount",
    short_names=("sa",),
    subresources=("token",),
    validate=validate_service_account,
    validate_update=validate_service_account_update,
)
