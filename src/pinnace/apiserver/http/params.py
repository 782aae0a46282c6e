"""Query parameters and option bodies into the API server's options, as apimachinery's
parameter codec converts them and its validation checks them.

Booleans read as Go's conversion reads them: "0", "f" and "false" (any case) are false, and
anything else given is true, so `?watch` alone and `?watch=True` (the Python client) both
watch. Integers that do not parse are a 400; options that do not validate are a 422 naming
the options kind (`ListOptions.meta.k8s.io "" is invalid: …`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api import field, status
from pinnace.api.field import FieldError
from pinnace.api.options import FIELD_VALIDATION, DeleteOptions, ListOptions, WriteOptions

Query = Mapping[str, Sequence[str]]

MIN_REQUEST_TIMEOUT = 1800
"""kube-apiserver's --min-request-timeout: a watch without timeoutSeconds lasts between this
and twice this many seconds, chosen at random, so reconnects spread out."""
MAX_FIELD_MANAGER_LENGTH = 128


def first(query: Query, name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def go_bool(query: Query, name: str) -> bool | None:
    value = first(query, name)
    if value is None:
        return None
    return not (value == "0" or value.lower() in ("f", "false"))


def go_int(query: Query, name: str) -> int | None:
    value = first(query, name)
    if value is None:
        return None
    text = value[1:] if value[:1] in "+-" else value
    if not text.isdigit() or not text.isascii():
        raise status.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise status.bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def _invalid(options_kind: str, errors: list[FieldError]) -> status.StatusError:
    return status.invalid(options_kind, "", errors, "meta.k8s.io")


@dataclass(frozen=True)
class ListRequest:
    options: ListOptions
    watch: bool
    timeout: float
    """Seconds a watch lasts (timeoutSeconds, or a random 1800–3600)."""


def list_options(query: Query, rand: random.Random, watch_path: bool = False) -> ListRequest:
    """A list or watch request's options, validated as ValidateListOptions does."""
    watch = watch_path or bool(go_bool(query, "watch"))
    limit = go_int(query, "limit") or 0
    timeout_seconds = go_int(query, "timeoutSeconds")
    send_initial = go_bool(query, "sendInitialEvents")
    options = ListOptions(
        label_selector=first(query, "labelSelector") or "",
        field_selector=first(query, "fieldSelector") or "",
        limit=limit,
        continue_token=first(query, "continue") or "",
        resource_version=first(query, "resourceVersion") or "",
        resource_version_match=first(query, "resourceVersionMatch") or "",
        allow_watch_bookmarks=bool(go_bool(query, "allowWatchBookmarks")) and watch,
        timeout_seconds=timeout_seconds,
        send_initial_events=send_initial,
    )
    errors = _watch_errors(options) if watch else _list_errors(options)
    if errors:
        raise _invalid("ListOptions", errors)
    timeout = float(timeout_seconds) if timeout_seconds else 0.0
    if timeout <= 0:
        timeout = MIN_REQUEST_TIMEOUT * (rand.random() + 1.0)
    return ListRequest(options, watch, timeout)


def _list_errors(options: ListOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    match = options.resource_version_match
    path = "resourceVersionMatch"
    if match:
        if not options.resource_version:
            errors.append(
                field.forbidden(
                    path, "resourceVersionMatch is forbidden unless resourceVersion is provided"
                )
            )
        if options.continue_token:
            errors.append(
                field.forbidden(path, "resourceVersionMatch is forbidden when continue is provided")
            )
        if match not in ("Exact", "NotOlderThan"):
            errors.append(field.not_supported(path, match, ("Exact", "NotOlderThan", "")))
        if match == "Exact" and options.resource_version == "0":
            errors.append(
                field.forbidden(
                    path, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                )
            )
    if options.send_initial_events is not None:
        errors.append(
            field.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
        )
    return errors


def _watch_errors(options: ListOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    match = options.resource_version_match
    path = "resourceVersionMatch"
    if options.send_initial_events is not None and match != "NotOlderThan":
        errors.append(
            field.forbidden(
                path, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            )
        )
    if match:
        if options.send_initial_events is None:
            errors.append(
                field.forbidden(
                    path,
                    "resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                )
            )
        if match != "NotOlderThan":
            errors.append(field.not_supported(path, match, ("NotOlderThan",)))
        if options.continue_token:
            errors.append(
                field.forbidden(path, "resourceVersionMatch is forbidden when continue is provided")
            )
    return errors


def _dry_run(values: Sequence[str], path: str = "dryRun") -> list[FieldError]:
    if all(v == "All" for v in values):
        return []
    return [field.not_supported(path, list(values), ("All",))]


def _field_manager(manager: str) -> list[FieldError]:
    if len(manager.encode()) > MAX_FIELD_MANAGER_LENGTH:
        return [field.too_long("fieldManager", manager, MAX_FIELD_MANAGER_LENGTH)]
    if not manager.isprintable():
        return [field.invalid("fieldManager", manager, "must only contain printable characters")]
    return []


_NO_WRITE_OPTIONS = WriteOptions()


def write_options(
    query: Query, options_kind: str, *, apply: bool = False, patch: bool = False
) -> WriteOptions:
    """CreateOptions, UpdateOptions or PatchOptions from the query, validated."""
    if not query and not apply:
        return _NO_WRITE_OPTIONS  # most writes: nothing to read or check
    dry_run = list(query.get("dryRun", ()))
    manager = first(query, "fieldManager") or ""
    validation = first(query, "fieldValidation") or ""
    force = go_bool(query, "force")
    errors = _dry_run(dry_run) + _field_manager(manager)
    if validation and validation not in FIELD_VALIDATION:
        errors.append(
            field.not_supported("fieldValidation", validation, ("", "Ignore", "Strict", "Warn"))
        )
    if apply and not manager:
        errors.append(field.required("fieldManager", "is required for apply patch"))
    if patch and not apply and force is not None:
        errors.append(field.forbidden("force", "may not be specified for non-apply patch"))
    if errors:
        raise _invalid(options_kind, errors)
    return WriteOptions(
        dry_run=bool(dry_run),
        field_manager=manager,
        field_validation=validation or "Warn",
        force=bool(force),
    )


def delete_options(query: Query, body: Any | None) -> DeleteOptions:
    """DeleteOptions from a JSON body when there is one, else from the query."""
    if body is not None:
        return _delete_options_from_body(body)
    dry_run = list(query.get("dryRun", ()))
    errors = _dry_run(dry_run)
    if errors:
        raise _invalid("DeleteOptions", errors)
    return DeleteOptions(
        grace_period_seconds=go_int(query, "gracePeriodSeconds"),
        propagation_policy=first(query, "propagationPolicy") or "",
        orphan_dependents=go_bool(query, "orphanDependents"),
        dry_run=bool(dry_run),
    )


def _delete_options_from_body(body: Any) -> DeleteOptions:
    if not isinstance(body, dict):
        raise status.bad_request("decoded object cannot be converted to DeleteOptions")
    kind = body.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        raise status.bad_request(f"decoded object of kind {kind!r} is not DeleteOptions")
    grace = body.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise status.bad_request(
            "json: cannot unmarshal into Go struct field DeleteOptions.gracePeriodSeconds of "
            "type int64"
        )
    preconditions = body.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        preconditions = {}
    dry_run = body.get("dryRun") or []
    if not isinstance(dry_run, list):
        dry_run = [str(dry_run)]
    errors = _dry_run([str(v) for v in dry_run])
    if errors:
        raise _invalid("DeleteOptions", errors)
    orphan = body.get("orphanDependents")
    return DeleteOptions(
        grace_period_seconds=grace,
        propagation_policy=str(body.get("propagationPolicy") or ""),
        orphan_dependents=orphan if isinstance(orphan, bool) else None,
        precondition_uid=str(preconditions.get("uid") or ""),
        precondition_resource_version=str(preconditions.get("resourceVersion") or ""),
        dry_run=bool(dry_run),
    )
