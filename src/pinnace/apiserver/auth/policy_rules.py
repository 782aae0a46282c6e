"""Building RBAC policy rules as bootstrappolicy writes them (rbacv1helpers.NewRule), and the
verb sets it shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
READ_WRITE = READ + WRITE
READ_UPDATE = ["get", "list", "watch", "update", "patch"]


def rule(
    verbs: list[str], groups: list[str], resources: list[str], names: Sequence[str] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "verbs": list(verbs),
        "apiGroups": list(groups),
        "resources": list(resources),
    }
    if names:
        out["resourceNames"] = list(names)
    return out


def urls(verbs: list[str], paths: list[str]) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": list(paths)}


EVENTS = rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"])
