"""Tolerant access to pod-shaped JSON.

Objects arrive as decoded JSON that may hold the wrong type anywhere. These helpers let
defaulting and validation walk such input without raising: a field of the wrong shape reads as
empty (validation reports the shape elsewhere, or the decoder already has).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Obj = dict[str, Any]

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def as_dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int | None:
    """An integer field, or None when absent or not an integer (bools are not integers)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def dict_items(value: Any) -> list[tuple[int, Obj]]:
    """(index, element) for every element of a list that is an object. A list, not a
    generator: a pod's create asks for a dozen lists, most of them absent."""
    if not isinstance(value, list) or not value:
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def child_dict(obj: Obj, name: str) -> Obj | None:
    """obj[name] when it is an object, else None."""
    value = obj.get(name)
    return value if isinstance(value, dict) else None


def pod_containers(spec: Mapping[str, Any]) -> list[Obj]:
    """The init, regular and ephemeral containers of a pod's spec, in that order."""
    return [ctr for list_name in CONTAINER_LISTS for _, ctr in dict_items(spec.get(list_name))]


def container_named(spec: Mapping[str, Any], name: str) -> Obj | None:
    """The container (init, regular or ephemeral) called `name` in a pod's spec."""
    return next((ctr for ctr in pod_containers(spec) if ctr.get("name") == name), None)


def all_containers(spec: Obj) -> Iterator[tuple[str, int, Obj]]:
    """(list name, index, container) over init, regular and ephemeral containers."""
    for list_name in CONTAINER_LISTS:
        for i, ctr in dict_items(spec.get(list_name)):
            yield list_name, i, ctr
