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

The Bindings an in-process scheduler sends (`binding_body`) differ in the pod's name and uid and
the node's name only, which decoding and admission copy or name in their errors only; so that
a template's Bindings passed decoding, admission and validation is remembered
(`AdmittedBindings`), keyed as a pod's create is (`create_memo`), and its next Bindings skip
them: each still has its name compared with the URL's and its node's name checked (validation's
only rule on what varies), and one that fails those takes the whole way, whose error it is.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from pinnace.api import catalog, status
from pinnace.api.decode import as_decoded, decode
from pinnace.api.objects import Object, Remembered, meta, plain_json
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
    subresource = bool(name)
    admitted = server.admitted_bindings
    generation = server.admission.generation(namespace) if options.decoded else None
    template = admitted.template(namespace, name, body, (server.features, generation))
    if template is not None and admitted.passed(template):
        await _assign(server, namespace, body, options, subresource)
        return dict(STATUS_SUCCESS)
    # The in-process client's own Binding (`binding_body`) is in decoded form already.
    decoded = as_decoded(body, BINDINGS) if options.decoded else decode(body, BINDINGS)
    binding = decoded.obj
    server.check_namespace(BINDINGS, binding, namespace)
    binding_meta = meta(binding)
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
    if template is not None and server.admission.generation(namespace) == generation:
        admitted.remember(template)
    await _assign(server, namespace, binding, options, subresource)
    return dict(STATUS_SUCCESS)


async def _assign(
    server: APIServer, namespace: str, binding: Object, options: WriteOptions, subresource: bool
) -> None:
    """BindingREST: the admitted and valid `binding` (made through the pods/binding
    subresource or not) assigns its pod."""
    binding_meta = meta(binding)
    name = binding_meta.get("name") or ""
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


class AdmittedBindings:
    """The templates of the Bindings admitted and found valid lately: a Binding in
    `binding_body`'s form with its pod's name, uid and node's name left out, with its
    namespace, the subresource's name, the feature gates and admission's `generation`."""

    def __init__(self, size: int = 64) -> None:
        self._passed: Remembered[bool] = Remembered(size)

    @staticmethod
    def template(
        namespace: str, name: str, body: Any, context: tuple[Hashable, Hashable]
    ) -> Hashable | None:
        """The template of a Binding to the pod `name` ("" for POST .../bindings), with
        `context` (the feature gates and admission's generation, None for a body that is not
        the caller's own); None for one the memo does not serve: one whose varying values
        validation or the URL would refuse."""
        if context[1] is None or not isinstance(body, dict):
            return None
        m, target = body.get("metadata"), body.get("target")
        if not isinstance(m, dict) or not isinstance(target, dict) or m.keys() - _BOUND_META:
            return None
        pod, uid, node = m.get("name"), m.get("uid"), target.get("name")
        if type(pod) is not str or (name and pod != name) or type(node) is not str or not node:
            return None
        if uid is not None and type(uid) is not str:
            return None
        stand_ins = {
            **body,
            "metadata": {**m, "name": "-", **({} if uid is None else {"uid": "-"})},
            "target": {**target, "name": "-"},
        }
        text = plain_json(stand_ins)
        if text is None:
            return None
        return (text, namespace, bool(name), *context)

    def passed(self, template: Hashable) -> bool:
        return self._passed.get(template) is not None

    def remember(self, template: Hashable) -> None:
        self._passed.put(template, True)


_BOUND_META = frozenset({"namespace", "name", "uid"})


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
