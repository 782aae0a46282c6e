"""pods/binding: the scheduler's write that puts a pod on a node, as kube-apiserver v1.32's
BindingREST does it (pkg/registry/core/pod/storage/storage.go).

`spec.nodeName` goes from empty to a node exactly once, in a guaranteed update of the stored
pod: a pod that already has a node, is being deleted or still has scheduling gates answers 409,
and so does one whose uid or resourceVersion is not the Binding's when it gives them (storage
preconditions; the Binding's uid only through the pods/binding subresource: the handler of the
legacy POST .../bindings wipes it, as it does for any create). The pod gets the binding's
annotations and PodScheduled=True, in place of the condition of that type it had (keeping its
lastTransitionTime if it was True already), as podutil.UpdatePodCondition sets it.

Before BindingREST, the create handler's admission sees the Binding (of `pods` with subresource
`binding`, or of `bindings`): NamespaceLifecycle refuses one in a namespace that is gone (404) or
terminating (403), as it refuses any create there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinnace.api import catalog, status
from pinnace.api.decode import as_decoded, decode
from pinnace.api.objects import Object, meta
from pinnace.api.options import WriteOptions

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

BINDINGS = catalog.kind("", "bindings")
PODS = catalog.kind("", "pods")
STATUS_SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}


async def bind(
    server: APIServer, namespace: str, name: str, body: Any, options: WriteOptions | None = None
) -> Object:
    """Bind the pod `name` (from the URL of pods/{name}/binding, or "" for POST .../bindings,
    which binds the pod the Binding names) to the Binding's target node."""
    options = options or WriteOptions()
    # The in-process client's own Binding (`binding_body`) is in decoded form already.
    decoded = as_decoded(body, BINDINGS) if options.decoded else decode(body, BINDINGS)
    binding = decoded.obj
    server.check_namespace(BINDINGS, binding, namespace)
    binding_meta = meta(binding)
    subresource = bool(name)
    if subresource:
        await server.admission.admit("CREATE", PODS, binding, None, "binding")
    else:
        await server.admission.admit("CREATE", BINDINGS, binding, None)
    if subresource and binding_meta.get("name") != name:
        raise status.bad_request("name in URL does not match name in Binding object")
    name = binding_meta.get("name") or ""
    errs = BINDINGS.validate(binding)
    if errs:
        raise status.invalid("Binding", name, errs)
    node = binding["target"]["name"]
    annotations = binding_meta.get("annotations") or {}
    now = server.clock.now_rfc3339()

    def assign(pod: Object) -> Object:
        """The pod bound: a new object sharing the stored pod's unchanged parts."""
        pod_meta = pod.get("metadata") or {}
        if pod_meta.get("deletionTimestamp"):
            raise _binding_conflict(
                name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            raise _binding_conflict(
                name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
            )
        if spec.get("schedulingGates"):
            raise _binding_conflict(name, f"pod {name} has non-empty .spec.schedulingGates")
        bound = {**pod, "spec": {**spec, "nodeName": node}}
        if annotations:
            merged = {**(pod_meta.get("annotations") or {}), **annotations}
            bound["metadata"] = {**pod_meta, "annotations": merged}
        bound["status"] = _scheduled(pod.get("status") or {}, now)
        return bound

    await server.guaranteed_update(
        PODS,
        namespace,
        name,
        assign,
        options.dry_run,
        precondition_uid=str(binding_meta.get("uid") or "") if subresource else "",
        precondition_resource_version=str(binding_meta.get("resourceVersion") or ""),
    )
    return dict(STATUS_SUCCESS)


def _binding_conflict(name: str, why: str) -> status.StatusError:
    return status.conflict("pods/binding", name, why)


def _scheduled(pod_status: dict[str, Any], now: str) -> dict[str, Any]:
    """The status with PodScheduled=True in place of its first PodScheduled condition, or
    added last (podutil.UpdatePodCondition): the condition loses any reason and message, and
    keeps its lastTransitionTime only if it was True already."""
    conditions = list(pod_status.get("conditions") or [])
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None}
    for i, condition in enumerate(conditions):
        if condition.get("type") == "PodScheduled":
            kept = condition.get("status") == "True"
            scheduled["lastTransitionTime"] = condition.get("lastTransitionTime") if kept else now
            conditions[i] = scheduled
            break
    else:
        scheduled["lastTransitionTime"] = now
        conditions.append(scheduled)
    return {**pod_status, "conditions": conditions}
