"""Kinds also served at a second version, or in a second group: stored at the catalog's version
and converted on the way in and out, as kube-apiserver serves autoscaling/v1
HorizontalPodAutoscalers from autoscaling/v2 storage and events.k8s.io/v1 Events from core/v1
storage."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pinnace.api import catalog
from pinnace.api.decode import NO_REPEATS, Repeats, decode
from pinnace.api.field import FieldError
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import WriteOptions


@dataclass(frozen=True)
class ServedVersion:
    served: Kind
    """The kind at the other version, as discovery lists it."""
    stored: Kind
    """The catalog's kind, which the server validates and stores."""
    to_stored: Callable[[Object], Object]
    from_stored: Callable[[Object], Object]
    validate_create: Callable[[Object], list[FieldError]] | None = None
    """Rules of this version beyond the stored kind's, run on the converted object after
    them (ValidateEventCreate's for a request version newer than core/v1)."""
    validate_update: Callable[[Object, Object], list[FieldError]] | None = None
    field_labels: Mapping[str, str] | None = None
    """This version's field selector labels, as the stored kind's labels they select on;
    None: the stored kind's own."""

    def with_rules(self, options: WriteOptions) -> WriteOptions:
        """Write options carrying this version's validation, when it has its own."""
        if self.validate_create is None:
            return options
        return dataclasses.replace(
            options, validate_create=self.validate_create, validate_update=self.validate_update
        )

    def decoded_to_stored(
        self,
        obj: Any,
        *,
        strict: bool = False,
        repeats: Repeats = NO_REPEATS,
    ) -> tuple[Object, list[str]]:
        """`obj` decoded as this version's type, then converted to the stored kind, with the
        decoding's warnings: kube-apiserver decodes a body into the version it was sent at,
        so what does not fit that type is its 400 (and its unknown fields are its)."""
        decoded = decode(obj, self.served, strict=strict, repeats=repeats)
        return self.to_stored(decoded.obj), decoded.warnings


@cache
def _served() -> dict[tuple[str, str, str], ServedVersion]:
    from pinnace.api import events
    from pinnace.api.autoscaling import hpa_v1

    stored = catalog.kind("autoscaling", "horizontalpodautoscalers")
    versions = [
        ServedVersion(hpa_v1.HORIZONTAL_POD_AUTOSCALER_V1, stored, hpa_v1.to_v2, hpa_v1.to_v1),
        ServedVersion(
            events.EVENT_V1,
            catalog.kind("", "events"),
            events.to_core,
            events.from_core,
            events.validate_create,
            events.validate_update,
            events.FIELD_LABELS,
        ),
    ]
    return {(v.served.group, v.served.version, v.served.plural): v for v in versions}


def served_version(group: str, version: str, plural: str) -> ServedVersion | None:
    """The conversion behind `/apis/<group>/<version>/<plural>`, when that version is not the
    stored one."""
    return _served().get((group, version, plural))


def other_versions() -> tuple[Kind, ...]:
    """The kinds at their other versions, for discovery."""
    return tuple(v.served for v in _served().values())
