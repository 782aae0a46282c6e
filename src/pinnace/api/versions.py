"""Kinds also served at a second version of their group: stored at the catalog's version and
converted on the way in and out, as kube-apiserver serves autoscaling/v1
HorizontalPodAutoscalers from autoscaling/v2 storage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object


@dataclass(frozen=True)
class ServedVersion:
    served: Kind
    """The kind at the other version, as discovery lists it."""
    stored: Kind
    """The catalog's kind, which the server validates and stores."""
    to_stored: Callable[[Object], Object]
    from_stored: Callable[[Object], Object]


@cache
def _served() -> dict[tuple[str, str, str], ServedVersion]:
    from pinnace.api.autoscaling import hpa_v1

    stored = catalog.kind("autoscaling", "horizontalpodautoscalers")
    versions = [
        ServedVersion(hpa_v1.HORIZONTAL_POD_AUTOSCALER_V1, stored, hpa_v1.to_v2, hpa_v1.to_v1)
    ]
    return {(v.served.group, v.served.version, v.served.plural): v for v in versions}


def served_version(group: str, version: str, plural: str) -> ServedVersion | None:
    """The conversion behind `/apis/<group>/<version>/<plural>`, when that version is not the
    stored one."""
    return _served().get((group, version, plural))


def other_versions() -> tuple[Kind, ...]:
    """The kinds at their other versions, for discovery."""
    return tuple(v.served for v in _served().values())
