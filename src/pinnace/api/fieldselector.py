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

    def requires_exact_match(self, field: str) -> str | None:
        """The value a `field=value` term requires, else None (fields.Selector's
        RequiresExactMatch)."""
        for name, equal, value in self.terms:
            if name == field and equal:
                return value
        return None

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


_Getter = Callable[[Mapping[str, Any]], str]


def _at(*path: str) -> _Getter:
    if len(path) == 1:
        return _top_level(path[0])
    if len(path) != 2:
        return lambda obj: _text(obj, *path)
    outer, inner = path

    def read(obj: Mapping[str, Any]) -> str:
        # _text of a two-step path, as every watch by field tests each change against it.
        node = obj.get(outer)
        value = node.get(inner) if type(node) is dict or isinstance(node, Mapping) else None
        if type(value) is str:
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return read


def _top_level(key: str) -> _Getter:
    def read(obj: Mapping[str, Any]) -> str:
        # _text of a top-level field (an Event's reason): a string as it is.
        value = obj.get(key)
        return value if type(value) is str else _text(obj, key)

    return read


def _first_pod_ip(pod: Mapping[str, Any]) -> str:
    pod_ips = _get(pod, "status", "podIPs") or []
    return str(pod_ips[0].get("ip", "")) if pod_ips else _text(pod, "status", "podIP")


_POD_FIELDS: dict[str, _Getter] = {
    "spec.nodeName": _at("spec", "nodeName"),
    "spec.restartPolicy": _at("spec", "restartPolicy"),
    "spec.schedulerName": _at("spec", "schedulerName"),
    "spec.serviceAccountName": _at("spec", "serviceAccountName"),
    "spec.hostNetwork": lambda pod: "true" if _get(pod, "spec", "hostNetwork") else "false",
    "status.phase": _at("status", "phase"),
    "status.podIP": _first_pod_ip,
    "status.nominatedNodeName": _at("status", "nominatedNodeName"),
}

_EVENT_FIELDS: dict[str, _Getter] = {
    **{
        f"involvedObject.{name}": _at("involvedObject", name)
        for name in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        )
    },
    "reason": _at("reason"),
    "reportingComponent": _at("reportingComponent"),
    "source": lambda e: _text(e, "source", "component") or _text(e, "reportingComponent"),
    "type": _at("type"),
}


def _replicas(obj: Mapping[str, Any]) -> str:
    return str(_get(obj, "status", "replicas") or 0)


_NAME = "metadata.name"
_NAMESPACE = "metadata.namespace"
_META = (_NAME, _NAMESPACE)


class _KindFields:
    """The field labels one kind accepts, how it words a refusal, and how each selectable
    value beyond the metadata's is read from an object."""

    def __init__(
        self,
        labels: tuple[str, ...],
        refusal: str,
        getters: Mapping[str, _Getter] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.labels = frozenset(labels)
        self.refusal = refusal
        self.getters = getters or {}
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
        _POD_FIELDS,
        {"spec.host": "spec.nodeName"},  # accepted from old clients
    ),
    ("", "Node"): _KindFields(
        (_NAME, "spec.unschedulable"),
        _NOT_SUPPORTED,
        {"spec.unschedulable": lambda node: _text(node, "spec", "unschedulable") or "false"},
    ),
    ("", "ReplicationController"): _KindFields(
        (*_META, "status.replicas"), _NOT_SUPPORTED, {"status.replicas": _replicas}
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
        _EVENT_FIELDS,
    ),
    ("", "Namespace"): _KindFields(
        (_NAME, "status.phase"), _NOT_SUPPORTED, {"status.phase": _at("status", "phase")}
    ),
    ("", "Secret"): _KindFields((*_META, "type"), _NOT_SUPPORTED, {"type": _at("type")}),
    ("", "Service"): _KindFields(
        (*_META, "spec.clusterIP", "spec.type"),
        _NOT_SUPPORTED,
        {"spec.clusterIP": _at("spec", "clusterIP"), "spec.type": _at("spec", "type")},
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"): _KindFields(
        (_NAME, "spec.signerName"),
        _NOT_SUPPORTED,
        {"spec.signerName": _at("spec", "signerName")},
    ),
    ("batch", "Job"): _KindFields(
        (*_META, "status.successful"),
        'field label "{label}" not supported for batchv1.Job',
        {"status.successful": lambda job: str(_get(job, "status", "succeeded") or 0)},
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
    if rules:
        fields.update((label, read(obj)) for label, read in rules.getters.items())
    return fields


def field_reader(
    group: str, kind: str, label: str, selectable: frozenset[str] = frozenset()
) -> _Getter:
    """What reads the field `label` (a label the kind accepts, or one of a custom resource's
    `selectable` fields) of an object of the kind; a selector names few of a kind's fields,
    and a watch tests every change against them."""
    if label == _NAME:
        return _at("metadata", "name")
    if label == _NAMESPACE:
        return _at("metadata", "namespace")
    if label in selectable:
        # The value at the field's JSON path as Go's fmt.Sprint prints it, "" when absent
        # (the custom resource strategy's selectableFields).
        return _at(*label.split("."))
    rules = _KINDS.get((group, kind))
    read = rules.getters.get(label) if rules else None
    return read if read is not None else _nothing


def _nothing(obj: Mapping[str, Any]) -> str:
    return ""


_CUSTOM_REFUSAL = "field label not supported: {label}"
_CUSTOM = _KindFields(_META, _CUSTOM_REFUSAL)
_CUSTOM_CLUSTER_SCOPED = _KindFields((_NAME,), _CUSTOM_REFUSAL)
"""A custom resource's (apiextensions-apiserver's crConverter): metadata.name, and
metadata.namespace when it is namespaced."""


def convert_field_selector(
    group: str,
    kind: str,
    selector: FieldSelector,
    *,
    custom: bool = False,
    namespaced: bool = True,
    selectable: frozenset[str] = frozenset(),
) -> FieldSelector:
    """Check every field label is one the kind supports (a `custom` resource's: its metadata's
    and its version's `selectable` fields, as crConverter's ConvertFieldLabel), renaming
    legacy ones.

    Raises a 400 BadRequest StatusError worded as kube-apiserver's for the first bad label.
    """
    if custom:
        rules = _CUSTOM if namespaced else _CUSTOM_CLUSTER_SCOPED
    else:
        rules = _KINDS.get((group, kind), _DEFAULT)
    terms = []
    for name, equal, value in selector.terms:
        name = rules.aliases.get(name, name)
        if name not in rules.labels and name not in selectable:
            raise _refuse(rules, name)
        terms.append((name, equal, value))
    return FieldSelector(tuple(terms))


def rename_field_labels(selector: FieldSelector, labels: Mapping[str, str]) -> FieldSelector:
    """A selector made at a version with field labels of its own (`labels`: each as the stored
    kind's label it selects on), in the stored kind's labels; a 400 for a label that version
    does not have (its field label conversion function's refusal)."""
    terms = []
    for name, equal, value in selector.terms:
        renamed = labels.get(name)
        if renamed is None:
            raise bad_request(_NOT_SUPPORTED.format(label=name))
        terms.append((renamed, equal, value))
    return FieldSelector(tuple(terms))


def _refuse(rules: _KindFields, label: str) -> StatusError:
    return bad_request(rules.refusal.format(label=label))
