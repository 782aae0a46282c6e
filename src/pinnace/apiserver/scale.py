"""The `scale` subresource of deployments, replicasets, replication controllers, statefulsets
and the custom resources whose definition declares it: an autoscaling/v1 Scale read from the
object, and written back as a change of spec.replicas (PUT replaces the Scale, PATCH patches
it; both arrive here as a change of the current Scale)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pinnace.api import status
from pinnace.api.apps import apply_scale, scale_of
from pinnace.api.core.replicationcontroller import REPLICATION_CONTROLLER, selector_of
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, meta
from pinnace.api.options import WriteOptions

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer, Result

ScaleChange = Callable[[Object], Any]
"""The current Scale -> the wanted one (a PUT body, or the Scale with a patch applied)."""


def _scale(kind: Kind, obj: Object) -> Object:
    if kind.scale is not None:
        return kind.scale[0](obj)
    return scale_of(obj, selector_of(obj) if kind == REPLICATION_CONTROLLER else None)


async def read_scale(server: APIServer, kind: Kind, namespace: str, name: str) -> Object:
    server.check_served(kind, "scale", name)
    return _scale(kind, await server.get(kind, namespace, name))


async def update_scale(
    server: APIServer,
    kind: Kind,
    namespace: str,
    name: str,
    change: ScaleChange,
    options: WriteOptions | None = None,
) -> Result:
    """Set spec.replicas from the Scale `change` returns; a resourceVersion in that Scale is
    a precondition on the object. The result carries the Scale of the stored object."""
    server.check_served(kind, "scale", name)

    def mutate(obj: Object) -> Object:
        wanted = change(_scale(kind, obj))
        wanted_meta = wanted.get("metadata") if isinstance(wanted, dict) else None
        wanted_meta = wanted_meta if isinstance(wanted_meta, dict) else {}
        if wanted_meta.get("name", name) != name:
            raise status.bad_request(
                f"the name of the object ({wanted_meta['name']}) does not match the name on "
                f"the URL ({name})"
            )
        errs = apply_scale(obj, wanted) if kind.scale is None else kind.scale[1](obj, wanted)
        if errs:
            raise status.invalid("Scale", name, errs, "autoscaling")
        if wanted_meta.get("resourceVersion"):
            meta(obj)["resourceVersion"] = wanted_meta["resourceVersion"]
        return obj

    result = await server.modify(kind, namespace, name, mutate, options)
    return dataclasses.replace(result, obj=_scale(kind, result.obj))
