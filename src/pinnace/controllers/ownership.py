"""Finding a controlled object's controller, or the controllers that may adopt an orphan: what
every workload controller's event handlers ask (resolveControllerRef and the get*ForPod
helpers of kube-controller-manager)."""

from __future__ import annotations

from pinnace.api.apps import as_label_selector
from pinnace.apiserver.objects import Object
from pinnace.client import Informer
from pinnace.controllers.controller_utils import controller_ref


def resolve_controller_ref(
    obj: Object, kind: str, owners: Informer, ref: Object | None = None
) -> Object | None:
    """The `kind` object of `owners` that controls `obj` (through `ref`, its controller
    reference by default), or None: another kind, gone, or a namesake with another uid."""
    ref = ref if ref is not None else controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    owner = owners.get(obj["metadata"]["namespace"], ref.get("name", ""))
    if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
        return None
    return owner


def selecting_owners(obj: Object, owners: Informer) -> list[Object]:
    """The objects of `owners` in `obj`'s namespace whose (non-empty) selector matches its
    labels: who may adopt it once it is an orphan. None for an object without labels."""
    labels = obj["metadata"].get("labels") or {}
    if not labels:
        return []
    found = []
    for owner in owners.list(obj["metadata"]["namespace"]):
        selector = as_label_selector(owner["spec"].get("selector"))
        if selector is not None and not selector.empty and selector.matches(labels):
            found.append(owner)
    return found
