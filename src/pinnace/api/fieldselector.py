"""Field selectors (`spec.nodeName=n1,status.phase!=Running`), as apimachinery's pkg/fields,
and the field labels kube-apiserver v1.32 lets each kind be selected by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pinnace.api.labels import SelectorError
from pinnace.api.status import StatusError, bad_request

_OPERATORS = ("!=", "==", "=")  # `==` before `=` so no `=` is left on the value


def escape_value(value: str) -> str:
    """Escape `\\`, `,` and `=` so a value reads back unchanged."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            # Go prints the rune with %v, which shows its code point.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start, escaped = 0, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


class FieldSelector:
    """An AND of `field=value` / `field!=value` terms; a missing field reads as ""."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[str, bool, str], ...] = ()) -> None:
        # Each term is (field, wants_equal, value).
        self.terms = terms

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        for name, equal, value in self.terms:  # noqa: SIM110 - hot path, no generator
            if (fields.get(name, "") == value) is not equal:
                return False
        return True

    def __str__(self) -> str:
        return ",".join(
            f"{name}{'=' if equal else '!='}{escape_value(value)}"
            for name, equal, value in self.terms
        )

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and other.terms == self.terms

    def __hash__(self) -> int:
        return hash(self.terms)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse as fields.ParseSelector; raise SelectorError with Kubernetes' wording."""
    terms: list[tuple[str, bool, str]] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name, op, raw = split
        terms.append((name, op != "!=", unescape_value(raw)))
    return FieldSelector(tuple(terms))


# --- per-kind field labels -------------------------------------------------------------------


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _text(obj: Mapping[str, Any], *path: str) -> str:
    value = _get(obj, *path)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _pod_fields(pod: Mapping[str, Any]) -> dict[str, str]:
    pod_ips = _get(pod, "status", "podIPs") or []
    first_ip = pod_ips[0].get("ip", "") if pod_ips else _text(pod, "status", "podIP")
    return {
        "spec.nodeName": _text(pod, "spec", "nodeName"),
        "spec.restartPolicy": _text(pod, "spec", "restartPolicy"),
        "spec.schedulerName": _text(pod, "spec", "schedulerName"),
        "spec.serviceAccountName": _text(pod, "spec", "serviceAccountName"),
        "spec.hostNetwork": "true" if _get(pod, "spec", "hostNetwork") else "false",
        "status.phase": _text(pod, "status", "phase"),
        "status.podIP": first_ip,
        "status.nominatedNodeName": _text(pod, "status", "nominatedNodeName"),
    }


def _event_fields(event: Mapping[str, Any]) -> dict[str, str]:
    fields = {
        f"involvedObject.{name}": _text(event, "involvedObject", name)
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
    }
    fields["involvedObject.fieldPath"] = _text(event, "involvedObject", "fieldPath")
    fields["reason"] = _text(event, "reason")
    fields["reportingComponent"] = _text(event, "reportingComponent")
    fields["source"] = _text(event, "source", "component") or _text(event, "reportingComponent")
    fields["type"] = _text(event, "type")
    return fields


def _replicas(obj: Mapping[str, Any]) -> dict[str, str]:
    return {"status.replicas": str(_get(obj, "status", "replicas") or 0)}


_NAME = "metadata.name"
_NAMESPACE = "metadata.namespace"
_META = (_NAME, _NAMESPACE)

_Extract = Callable[[Mapping[str, Any]], dict[str, str]]


class _KindFields:
    """The field labels one kind accepts, how it words a refusal, and its selectable values."""

    def __init__(
        self,
        labels: tuple[str, ...],
        refusal: str,
        extract: _Extract | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.labels = frozenset(labels)
        self.refusal = refusal
        self.extract = extract
        self.aliases = aliases or {}


_NOT_SUPPORTED = "field label not supported: {label}"

# Kinds with their own conversion function in kube-apiserver; every other kind accepts only
# metadata.name and metadata.namespace (runtime.DefaultMetaV1FieldSelectorConversion). apps/v1
# registers none, so a ReplicaSet's status.replicas cannot be selected on through apps/v1.
_KINDS: dict[tuple[str, str], _KindFields] = {
    ("", "Pod"): _KindFields(
        (
            *_META,
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ),
        _NOT_SUPPORTED,
        _pod_fields,
        {"spec.host": "spec.nodeName"},  # accepted from old clients
    ),
    ("", "Node"): _KindFields(
        (_NAME, "spec.unschedulable"),
        _NOT_SUPPORTED,
        lambda node: {"spec.unschedulable": _text(node, "spec", "unschedulable") or "false"},
    ),
    ("", "ReplicationController"): _KindFields(
        (*_META, "status.replicas"), _NOT_SUPPORTED, _replicas
    ),
    ("", "Event"): _KindFields(
        (
            *_META,
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
        _NOT_SUPPORTED,
        _event_fields,
    ),
    ("", "Namespace"): _KindFields(
        (_NAME, "status.phase"),
        _NOT_SUPPORTED,
        lambda ns: {"status.phase": _text(ns, "status", "phase")},
    ),
    ("", "Secret"): _KindFields(
        (*_META, "type"), _NOT_SUPPORTED, lambda secret: {"type": _text(secret, "type")}
    ),
    ("", "Service"): _KindFields(
        (*_META, "spec.clusterIP", "spec.type"),
        _NOT_SUPPORTED,
        lambda svc: {
            "spec.clusterIP": _text(svc, "spec", "clusterIP"),
            "spec.type": _text(svc, "spec", "type"),
        },
    ),
    ("batch", "Job"): _KindFields(
        (*_META, "status.successful"),
        'field label "{label}" not supported for batchv1.Job',
        lambda job: {"status.successful": str(_get(job, "status", "succeeded") or 0)},
    ),
}

_DEFAULT = _KindFields(
    _META, '"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"'
)


def field_set(group: str, kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """The selectable fields of an object; cluster-scoped objects have no metadata.namespace."""
    fields = {_NAME: _text(obj, "metadata", "name")}
    namespace = _get(obj, "metadata", "namespace")
    if namespace is not None:
        fields[_NAMESPACE] = str(namespace)
    rules = _KINDS.get((group, kind))
    if rules and rules.extract:
        fields.update(rules.extract(obj))
    return fields


def convert_field_selector(group: str, kind: str, selector: FieldSelector) -> FieldSelector:
    """Check every field label is one the kind supports, renaming legacy ones.

    Raises a 400 BadRequest StatusError worded as kube-apiserver's for the first bad label.
    """
    rules = _KINDS.get((group, kind), _DEFAULT)
    terms = []
    for name, equal, value in selector.terms:
        name = rules.aliases.get(name, name)
        if name not in rules.labels:
            raise _refuse(rules, name)
        terms.append((name, equal, value))
    return FieldSelector(tuple(terms))


def _refuse(rules: _KindFields, label: str) -> StatusError:
    return bad_request(rules.refusal.format(label=label))
