"""How admission plugins word their rejections (k8s.io/apiserver/pkg/admission/errors.go)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.api import status
from pinnace.api.status import StatusError


def object_name(obj: Mapping[str, Any]) -> str:
    """The name an admission error gives an object: its name, else its generateName (mutating
    admission runs before a name is generated), else "Unknown"."""
    meta = obj.get("metadata")
    # Every create is named here: a dict is told apart without Mapping's ABC check.
    if type(meta) is dict or isinstance(meta, Mapping):
        for key in ("name", "generateName"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                return value
    return "Unknown"


def forbidden(resource: str, obj: Mapping[str, Any], why: str, group: str = "") -> StatusError:
    """`pods "web" is forbidden: <why>`, as admission.NewForbidden."""
    return status.forbidden(resource, object_name(obj), why, group)


def aggregate(messages: Iterable[str]) -> str:
    """Several messages read `[a, b]`, one reads as itself; repeats are dropped (apimachinery's
    utilerrors.Aggregate)."""
    texts = list(dict.fromkeys(messages))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
