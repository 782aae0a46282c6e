"""The `scale` subresource of deployments, replicasets, replication controllers, statefulsets
and the custom resources whose definition declares it: an autoscaling/v1 Scale read from the
object, and written back as a change of spec.replicas (PUT replaces the Scale, PATCH patches
it; both arrive here as a change of the current Scale).

The write's field manager owns the replicas it changed, in an entry of the object's
managedFields with subresource `scale`, and other managers lose them, as managedfields'
ScaleHandler (k8s.io/apiserver, pkg/registry/apps/deployment/storage) records a scale. A
server-side apply of a Scale applies its replicas to the object: its manager owns them, and
another manager's replicas of a different count are a conflict unless forced."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pinnace.api import status
from pinnace.api.apps import apply_scale, scale_of
from pinnace.api.core.replicationcontroller import REPLICATION_CONTROLLER, selector_of
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone, meta
from pinnace.api.options import WriteOptions
from pinnace.api.patch import server_side_apply, track_update
from pinnace.api.patch.body import yaml_body

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer, Result

ScaleChange = Callable[[Object], Any]
"""The current Scale -> the wanted one (a PUT body, or the Scale with a patch applied)."""


def _set_scale(kind: Kind, obj: Object, scale: Any) -> None:
    """`obj` with the replicas `scale` asks for; 422 when they are not valid."""
    errs = apply_scale(obj, scale) if kind.scale is None else kind.scale[1](obj, scale)
    if errs:
        raise status.invalid("Scale", meta(obj).get("name", ""), errs, "autoscaling")


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

    manager = options.field_manager if options is not None else ""

    def mutate(obj: Object) -> Object:
        before = clone(obj) if manager else obj
        wanted = change(_scale(kind, obj))
        wanted_meta = wanted.get("metadata") if isinstance(wanted, dict) else None
        wanted_meta = wanted_meta if isinstance(wanted_meta, dict) else {}
        if wanted_meta.get("name", name) != name:
            raise status.bad_request(
                f"the name of the object ({wanted_meta['name']}) does not match the name on "
                f"the URL ({name})"
            )
        _set_scale(kind, obj, wanted)
        if wanted_meta.get("resourceVersion"):
            meta(obj)["resourceVersion"] = wanted_meta["resourceVersion"]
        if manager:
            now = server.clock.now_rfc3339()
            return track_update(
                before, obj, manager=manager, subresource="scale", now=now, kind=kind
            )
        return obj

    result = await server.modify(kind, namespace, name, mutate, options)
    return dataclasses.replace(result, obj=_scale(kind, result.obj))


async def apply_scale_config(
    server: APIServer,
    kind: Kind,
    namespace: str,
    name: str,
    applied: Any,
    options: WriteOptions,
) -> Result:
    """Server-side apply of the Scale `applied` by `options.field_manager`, as an apply of
    its replicas to the object with subresource `scale`. The result carries the Scale."""
    scale = yaml_body(applied)

    def mutate(obj: Object) -> Object:
        config = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
        config["metadata"] = {"name": name}
        if _asks_for_replicas(scale):
            _set_scale(kind, config, scale)
        return server_side_apply(
            obj,
            config,
            manager=options.field_manager,
            force=options.force,
            now=server.clock.now_rfc3339(),
            subresource="scale",
            kind=kind,
        )

    result = await server.modify(kind, namespace, name, mutate, options)
    return dataclasses.replace(result, obj=_scale(kind, result.obj))


def _asks_for_replicas(scale: Any) -> bool:
    """Whether an applied Scale sets spec.replicas: one without them (Go's zero value, which
    the typed configuration omits) applies no count, and leaves the object's as it is. Any
    other shape is checked as a Scale (and refused when it is none)."""
    if not isinstance(scale, dict):
        return True
    spec = scale.get("spec")
    if spec is None:
        return False
    return not isinstance(spec, dict) or spec.get("replicas") is not None
