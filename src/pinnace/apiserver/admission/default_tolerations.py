"""DefaultTolerationSeconds, as kube-apiserver v1.32's admission plugin of that name.

Every pod gets NoExecute tolerations of the `not-ready` and `unreachable` node taints for a
while (300 s by default, kube-apiserver's --default-not-ready-toleration-seconds and
--default-unreachable-toleration-seconds), so a node that stops reporting has its pods
evicted after that grace, not at once. A pod that already tolerates a taint is left alone for
it. The plugin runs on pod create and update.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pinnace.api.core.pod_shape import child_dict

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def admit_pod(
    pod: dict[str, Any],
    not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
    unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS,
) -> None:
    """Append the default tolerations the pod lacks, in place."""
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    tolerations = spec.get("tolerations") or []
    if not isinstance(tolerations, list):
        return  # validation reports it
    existing = [t for t in tolerations if isinstance(t, Mapping)]
    added = [
        _toleration(key, seconds)
        for key, seconds in (
            (TAINT_NODE_NOT_READY, not_ready_seconds),
            (TAINT_NODE_UNREACHABLE, unreachable_seconds),
        )
        if not any(_covers(t, key) for t in existing)
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _covers(toleration: Mapping[str, Any], key: str) -> bool:
    # v1.32 looks at key and effect only: an empty key or effect counts as a wildcard,
    # whatever the operator or value.
    return toleration.get("key") in (key, "", None) and toleration.get("effect") in (
        "NoExecute",
        "",
        None,
    )


@functools.lru_cache(maxsize=16)
def _toleration(key: str, seconds: int) -> dict[str, Any]:
    # One dict per taint and grace, shared by every pod that gets it: stored objects are
    # read-only (pinnace.store.interface), and nothing on the way from here to the store changes
    # a toleration in place. At 110 pods a node that is thousands of dicts fewer per node.
    return {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
