"""PodSecurity, kube-apiserver v1.32's validating admission plugin
(plugin/pkg/admission/security/podsecurity, k8s.io/pod-security-admission/admission). Its
`Configuration` gives the policy of a namespace without labels (every mode privileged:latest
by default) and the users, namespaces and RuntimeClasses exempt from it (none by default).

- A pod's create, an update that changes an image, the number of containers or a seccomp
  annotation, and a write of its `ephemeralcontainers` are refused (403) when the enforce
  policy forbids the pod; otherwise the warn policy's violations are a warning.
- A pod controller's template (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
  CronJobs, ReplicationControllers, PodTemplates) is only warned about.
- A namespace's Pod Security labels must parse (422 otherwise, on create or when they change);
  an update making the enforce policy stricter warns of the existing pods it would forbid, and
  an exempt namespace's labels warn that they are ignored.

The audit mode's annotations go to an audit log Pinnace does not keep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pinnace.api import status
from pinnace.api.field import FieldError
from pinnace.apiserver.admission.pod_security_checks import (
    evaluate,
    forbidden_detail,
    forbidden_reason,
)
from pinnace.apiserver.admission.pod_security_levels import (
    LABEL_PREFIX,
    MODES,
    PRIVILEGED,
    Configuration,
    LevelVersion,
    Policy,
    has_labels,
    policy_to_evaluate,
    stricter,
)

_IGNORED_POD_SUBRESOURCES = frozenset(
    {"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"}
)
_CONTROLLERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "ReplicationController"): ("spec", "template"),
    ("", "PodTemplate"): ("template",),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
}
"""Where each pod controller keeps its pod template."""
_MAX_PODS_TO_CHECK = 3000


def applies_to(group: str, kind: str, subresource: str = "") -> bool:
    """Whether the plugin looks at writes of this kind (of this subresource) at all: of a
    pod's, not those it ignores (its status above all, which its kubelet writes), as
    v1.32's ValidatePod returns at once for them; of the other kinds', none."""
    if (group, kind) == ("", "Pod"):
        return subresource not in _IGNORED_POD_SUBRESOURCES
    return not subresource and ((group, kind) in _CONTROLLERS or (group, kind) == ("", "Namespace"))


def _labels(namespace: Mapping[str, Any] | None) -> Mapping[str, Any]:
    labels = (namespace or {}).get("metadata", {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def validate_pod(
    config: Configuration,
    username: str,
    namespace: Mapping[str, Any] | None,
    pod: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    subresource: str,
    policies: NamespacePolicies | None = None,
) -> list[str]:
    """The warnings of a pod's write by `username`; raises the enforce policy's 403.
    `policies`: where the namespace's policy is remembered."""
    policy, errors = _policy(config, namespace, policies)
    if not errors and policy.fully_privileged():
        return []
    if subresource in _IGNORED_POD_SUBRESOURCES or _exempt(config, username, pod):
        return []
    if old is not None and not _significant_update(pod, old):
        return []
    spec = _spec(pod)
    if _exempt_runtime_class(config, spec):
        return []
    meta = _meta(pod)
    enforced = evaluate(policy.enforce, meta, spec)
    if enforced:
        why = f"violates PodSecurity {_quoted(policy.enforce)}: {forbidden_detail(enforced)}"
        raise status.forbidden("pods", str(meta.get("name") or ""), why)
    return _warnings(policy, meta, spec)


def validate_pod_controller(
    config: Configuration,
    username: str,
    namespace: Mapping[str, Any] | None,
    group: str,
    kind: str,
    obj: Mapping[str, Any],
    policies: NamespacePolicies | None = None,
) -> list[str]:
    """The warn policy's warnings of a controller's pod template (never refused).
    `policies`: where the namespace's policy is remembered."""
    policy, errors = _policy(config, namespace, policies)
    if not errors and PRIVILEGED == policy.warn.level == policy.audit.level:
        return []
    if _exempt(config, username, obj):
        return []
    template: Any = obj
    for step in _CONTROLLERS[(group, kind)]:
        template = template.get(step) if isinstance(template, Mapping) else None
    if not isinstance(template, Mapping):
        return []
    spec = _spec(template)
    if _exempt_runtime_class(config, spec):
        return []
    return _warnings(policy, _meta(template), spec)


class NamespacePolicies:
    """Each namespace's policy to evaluate (`policy_to_evaluate` of its labels, the
    configuration's defaults for the modes they leave out), worked out once per version of the
    namespace: a stored namespace is replaced, never changed in place, when it is written, so
    the object itself tells whether its labels may have changed (as v1.32's plugin keeps its
    namespace informer's objects). Most namespaces have no Pod Security label: their pods
    are then passed over with one look-up."""

    _MAX_REMEMBERED = 4096

    def __init__(self) -> None:
        self._known: dict[
            str, tuple[Mapping[str, Any] | None, Configuration, Policy, list[FieldError]]
        ] = {}

    def of(
        self, config: Configuration, namespace: Mapping[str, Any] | None
    ) -> tuple[Policy, list[FieldError]]:
        name = str(_meta(namespace or {}).get("name") or "")
        known = self._known.get(name)
        if known is not None and known[0] is namespace and known[1] is config:
            return known[2], known[3]
        policy, errors = _evaluated(config, namespace)
        if len(self._known) >= self._MAX_REMEMBERED:
            self._known.clear()
        self._known[name] = (namespace, config, policy, errors)
        return policy, errors


def _policy(
    config: Configuration,
    namespace: Mapping[str, Any] | None,
    policies: NamespacePolicies | None,
) -> tuple[Policy, list[FieldError]]:
    return _evaluated(config, namespace) if policies is None else policies.of(config, namespace)


def _evaluated(
    config: Configuration, namespace: Mapping[str, Any] | None
) -> tuple[Policy, list[FieldError]]:
    labels = _labels(namespace)
    if not has_labels(labels):
        return config.defaults, []
    return policy_to_evaluate(labels, config.defaults)


def _exempt(config: Configuration, username: str, obj: Mapping[str, Any]) -> bool:
    namespace = _meta(obj).get("namespace")
    return (bool(namespace) and namespace in config.namespaces) or (
        bool(username) and username in config.usernames
    )


def _exempt_runtime_class(config: Configuration, spec: Mapping[str, Any]) -> bool:
    name = spec.get("runtimeClassName")
    return bool(name) and name in config.runtime_classes


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _warnings(policy: Policy, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    failures = evaluate(policy.warn, meta, spec)
    if not failures:
        return []
    return [f"would violate PodSecurity {_quoted(policy.warn)}: {forbidden_detail(failures)}"]


def validate_namespace(
    config: Configuration, namespace: Mapping[str, Any], old: Mapping[str, Any] | None
) -> tuple[list[str], LevelVersion | None]:
    """A namespace's labels must parse (422 on create, or on an update that changes them).
    Returns the warnings for an exempt namespace that asks for a policy, and, for an update
    that makes the enforce policy stricter, that policy, for `existing_pods_warnings`."""
    labels = _labels(namespace)
    old_labels = _labels(old)
    if not has_labels(labels) and not has_labels(old_labels):
        return [], None
    policy, errors = policy_to_evaluate(labels, config.defaults)
    name = str(_meta(namespace).get("name") or "")
    if old is None:
        if errors:
            raise status.invalid("Namespace", name, errors)
        return _exempt_namespace_warnings(config, name, policy, labels), None
    old_policy, old_errors = policy_to_evaluate(old_labels, config.defaults)
    if errors and errors != old_errors:
        raise status.invalid("Namespace", name, errors)
    new, before = policy.enforce, old_policy.enforce
    if new == before or new.level == PRIVILEGED:
        return [], None
    if new.minor == before.minor and not stricter(new.level, before.level):
        return [], None
    if name in config.namespaces:
        return _exempt_namespace_warnings(config, name, policy, labels), None
    return [], new


def _exempt_namespace_warnings(
    config: Configuration, name: str, policy: Policy, labels: Mapping[str, Any]
) -> list[str]:
    """exemptNamespaceWarning: an exempt namespace labelled with a policy of its own."""
    if name not in config.namespaces:
        return []
    if policy.fully_privileged() or policy.equivalent(config.defaults):
        return []
    asked = [
        f"{mode}={level}"
        for mode, level in zip(MODES, policy.modes(), strict=True)
        if level.level != PRIVILEGED
        and (LABEL_PREFIX + mode in labels or LABEL_PREFIX + mode + "-version" in labels)
    ]
    return [
        f'namespace "{name}" is exempt from Pod Security, and the policy ({", ".join(asked)}) '
        "will be ignored"
    ]


def existing_pods_warnings(
    config: Configuration,
    namespace: str,
    enforce: LevelVersion,
    pods: Sequence[Mapping[str, Any]],
) -> list[str]:
    """EvaluatePodsInNamespace: one pod of each controller first, then the rest, but for those
    of exempt RuntimeClasses; pods with the same violations share a warning, named by the
    lexically first."""
    prioritized = _prioritized([p for p in pods if not _exempt_runtime_class(config, _spec(p))])
    checked = prioritized[:_MAX_PODS_TO_CHECK]
    first_named: dict[str, tuple[str, int]] = {}
    for pod in checked:
        failures = evaluate(enforce, _meta(pod), _spec(pod))
        if not failures:
            continue
        reason = forbidden_reason(failures)
        pod_name = str(_meta(pod).get("name") or "")
        named, count = first_named.get(reason, (pod_name, 0))
        first_named[reason] = (min(named, pod_name), count + 1)
    warnings = []
    if len(checked) < len(prioritized):
        warnings.append(
            "new PodSecurity enforce level only checked against the first "
            f"{len(checked)} of {len(prioritized)} existing pods"
        )
    if first_named:
        warnings.append(
            f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce '
            f"level {_quoted(enforce)}"
        )
    warnings += sorted(_decorated(reason, *first_named[reason]) for reason in first_named)
    return warnings


def _decorated(reason: str, pod_name: str, count: int) -> str:
    if count == 1:
        return f"{pod_name}: {reason}"
    others = "1 other pod" if count == 2 else f"{count - 1} other pods"
    return f"{pod_name} (and {others}): {reason}"


def _prioritized(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    first, later = [], []
    seen: set[str] = set()
    for pod in pods:
        controller = _controller_uid(pod)
        if controller is None or controller not in seen:
            first.append(pod)
            if controller is not None:
                seen.add(controller)
        else:
            later.append(pod)
    return first + later


def _controller_uid(pod: Mapping[str, Any]) -> str | None:
    for ref in _meta(pod).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid", ""))
    return None


def _significant_update(pod: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """isSignificantPodUpdate: what pod updates may change that the checks read — images,
    the number of (init) containers, ephemeral containers added, seccomp annotations."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    annotations = _meta(pod).get("annotations") or {}
    old_annotations = _meta(old).get("annotations") or {}
    for field in ("containers", "initContainers"):
        new_list, old_list = spec.get(field) or [], old_spec.get(field) or []
        if len(new_list) != len(old_list):
            return True
        if any(
            _container_changed(c, o, annotations, old_annotations)
            for c, o in zip(new_list, old_list, strict=True)
        ):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    for container in spec.get("ephemeralContainers") or []:
        before = old_ephemeral.get(container.get("name"))
        if before is None or _container_changed(container, before, annotations, old_annotations):
            return True
    return False


def _container_changed(
    container: Mapping[str, Any],
    old: Mapping[str, Any],
    annotations: Mapping[str, Any],
    old_annotations: Mapping[str, Any],
) -> bool:
    if container.get("image") != old.get("image"):
        return True
    key = "container.seccomp.security.alpha.kubernetes.io/" + str(container.get("name", ""))
    return annotations.get(key) != old_annotations.get(key)


def _quoted(policy: LevelVersion) -> str:
    return f'"{policy}"'
