"""The options of each verb, as metav1.ListOptions, DeleteOptions and friends (and
core/v1 PodLogOptions) carry them.

The HTTP front end parses them from query strings and bodies; in-process clients build them
directly. Parsing errors are worded as kube-apiserver words them.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api import status
from pinnace.api.field import FieldError
from pinnace.api.fieldselector import FieldSelector, parse_field_selector
from pinnace.api.labels import LabelSelector, SelectorError, parse_selector

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass(frozen=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    allow_watch_bookmarks: bool = False
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None


@dataclass(frozen=True)
class WriteOptions:
    """Create, update and patch: dryRun, fieldManager, fieldValidation."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    force: bool = False
    """Server-side apply only: take ownership of conflicting fields."""
    validate_create: Callable[[Any], list[FieldError]] | None = None
    """The rules of the version the request is made at, beyond the stored kind's (a
    ServedVersion's)."""
    validate_update: Callable[[Any, Any], list[FieldError]] | None = None
    decoded: bool = False
    """The body (a create's or an update's object; a patch's object once patched) is one this
    process built in the form decoding gives (`Client.create_own`, `Client.update_own`,
    `Client.patch_own`): it is taken as it is, as decoding would give it back unchanged."""


@dataclass(frozen=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str = ""
    orphan_dependents: bool | None = None
    precondition_uid: str = ""
    precondition_resource_version: str = ""
    dry_run: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


BACKGROUND = DeleteOptions(propagation_policy="Background")
"""A delete as kubectl's (and the controllers') default cascade asks it: the dependents go
after the owner, whatever the kind's own default (a Job's and a ReplicationController's would
keep them)."""


@dataclass(frozen=True)
class LogOptions:
    """PodLogOptions; times are clock seconds."""

    container: str = ""
    previous: bool = False
    tail_lines: int | None = None
    timestamps: bool = False
    follow: bool = False
    since_seconds: int | None = None
    since_time: float | None = None
    limit_bytes: int | None = None


@dataclass(frozen=True)
class Selectors:
    labels: LabelSelector | None
    fields: FieldSelector | None


def parse_selectors(options: ListOptions) -> Selectors:
    try:
        labels = parse_selector(options.label_selector) if options.label_selector else None
        fields = parse_field_selector(options.field_selector) if options.field_selector else None
    except SelectorError as e:
        raise status.bad_request(str(e)) from None
    return Selectors(labels, fields)


def parse_resource_version(text: str) -> int:
    """A resourceVersion a client sent: a non-negative integer (`""` is 0)."""
    if not text:
        return 0
    if not text.isdigit() or not text.isascii():
        raise status.bad_request(f'invalid resource version "{text}"')
    return int(text)


LATEST = -1
"""A continue token's revision that continues at the latest one (storage.EncodeContinue's -1,
handed out with a 410 for a token whose revision was compacted)."""


def encode_continue(revision: int, start: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": start}
    encoded = base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode())
    return encoded.rstrip(b"=").decode()  # Go's RawURLEncoding


def decode_continue(token: str) -> tuple[int, str]:
    """(revision, the last key the previous page returned, relative to the list's prefix
    `encode_continue` was given it against). The revision is LATEST, or below 0, for the
    latest; a token that is not valid is a 400 "invalid continue token: …"."""
    try:
        return _decode_continue(token)
    except status.StatusError as e:
        raise status.bad_request(f"invalid continue token: {e.message}") from None


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        if raw.get("v") != "meta.k8s.io/v1":
            raise ValueError("continue key is not valid: incorrect encoded start version")
        revision, start = raw["rv"], raw["start"]
        if not isinstance(revision, int) or revision == 0 or not isinstance(start, str):
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion "
                "(version meta.k8s.io/v1)"
            )
    except (binascii.Error, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        raise status.bad_request("continue key is not valid: illegal base64 data") from None
    except (ValueError, AttributeError) as e:
        raise status.bad_request(str(e) or "continue key is not valid") from None
    # storage.DecodeContinue: a start key path.Clean would change could range outside the
    # list's prefix (path traversal), so it is refused.
    key = start if start.startswith("/") else "/" + start
    if _clean(key) != key:
        raise status.bad_request(f"continue key is not valid: {start}")
    return revision, key[1:]


def _clean(path: str) -> str:
    """Go's path.Clean of an absolute path (posixpath.normpath keeps a leading "//")."""
    return "/" + posixpath.normpath(path).lstrip("/")
