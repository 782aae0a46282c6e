"""Built-in objects as kube-apiserver v1.32 writes them out: with the zero values Go's encoding
writes that Pinnace does not store. Embedded metadata's `creationTimestamp: null`
(`pinnace.api.template_meta`); a core/v1 Event's null times and empty reporting fields
(`pinnace.api.core.event.written`)."""

from __future__ import annotations

from typing import Any

from pinnace.api import template_meta
from pinnace.api.core import event

__all__ = ["written"]


def written(model: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj`, a `model` object (its `kubernetes` client model's name), as Go writes it; `obj`
    is left as it is, what changes is copied."""
    if model == "CoreV1Event":
        return event.written(obj)
    return template_meta.written(model, obj)
