"""Matching RBAC rules against requests, and comparing sets of rules, as Kubernetes v1.32 does:
pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches … NonResourceURLMatches),
plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows),
staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go (Covers) and
pkg/registry/rbac/validation/policy_compact.go (CompactRules) with CompactString.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api.goquote import quote

ALL = "*"


@dataclass(frozen=True)
class Attributes:
    """authorizer.Attributes: what a request does, and who asks."""

    user: Any  # UserInfo; Any keeps this module free of the user module for the tests' vectors
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    field_selector: str = ""
    """The request's fieldSelector, as sent (the Node authorizer reads spec.nodeName)."""


def _strings(rule: dict[str, Any], key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def verb_matches(rule: dict[str, Any], verb: str) -> bool:
    return any(v in (ALL, verb) for v in _strings(rule, "verbs"))


def api_group_matches(rule: dict[str, Any], group: str) -> bool:
    return any(g in (ALL, group) for g in _strings(rule, "apiGroups"))


def resource_matches(rule: dict[str, Any], combined: str, subresource: str) -> bool:
    """`combined` is resource or resource/subresource; `*/subresource` matches a subresource
    of any resource."""
    for resource in _strings(rule, "resources"):
        if resource in (ALL, combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: dict[str, Any], name: str) -> bool:
    names = _strings(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: dict[str, Any], path: str) -> bool:
    for url in _strings(rule, "nonResourceURLs"):
        if url in (ALL, path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attributes: Attributes, rule: dict[str, Any]) -> bool:
    if not attributes.resource_request:
        return verb_matches(rule, attributes.verb) and non_resource_url_matches(
            rule, attributes.path
        )
    combined = attributes.resource
    if attributes.subresource:
        combined = f"{combined}/{attributes.subresource}"
    return (
        verb_matches(rule, attributes.verb)
        and api_group_matches(rule, attributes.api_group)
        and resource_matches(rule, combined, attributes.subresource)
        and resource_name_matches(rule, attributes.name)
    )


# --- comparing rules (the escalation check) ---------------------------------------------------


def breakdown_rule(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """One rule per group, resource, verb (and name); one per non-resource URL and verb."""
    verbs, names = _strings(rule, "verbs"), _strings(rule, "resourceNames")
    subrules: list[dict[str, Any]] = []
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in verbs:
                base = {"verbs": [verb], "apiGroups": [group], "resources": [resource]}
                if names:
                    subrules += [{**base, "resourceNames": [name]} for name in names]
                else:
                    subrules.append(base)
    for url in _strings(rule, "nonResourceURLs"):
        subrules += [{"verbs": [verb], "nonResourceURLs": [url]} for verb in verbs]
    return subrules


def _has_all(owned: Sequence[str], wanted: Iterable[str]) -> bool:
    have = set(owned)
    return all(w in have for w in wanted)


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if ALL in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if f"*/{path.split('/', 1)[1]}" not in owned:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def _urls_cover(owned: list[str], wanted: list[str]) -> bool:
    return all(any(_url_covers(o, path) for o in owned) for path in wanted)


def rule_covers(owner: dict[str, Any], sub: dict[str, Any]) -> bool:
    owner_verbs, owner_groups = _strings(owner, "verbs"), _strings(owner, "apiGroups")
    owner_names, sub_names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    verbs = ALL in owner_verbs or _has_all(owner_verbs, _strings(sub, "verbs"))
    groups = ALL in owner_groups or _has_all(owner_groups, _strings(sub, "apiGroups"))
    resources = _resources_cover(_strings(owner, "resources"), _strings(sub, "resources"))
    urls = _urls_cover(_strings(owner, "nonResourceURLs"), _strings(sub, "nonResourceURLs"))
    if not sub_names:
        names = not owner_names
    else:
        names = not owner_names or _has_all(owner_names, sub_names)
    return verbs and groups and resources and names and urls


def covers(
    owner_rules: Sequence[dict[str, Any]], servant_rules: Iterable[dict[str, Any]]
) -> tuple[bool, list[dict[str, Any]]]:
    """Whether the owner's rules allow everything the servant's do, and the broken-down rules
    they do not."""
    missing = [
        sub
        for rule in servant_rules
        for sub in breakdown_rule(rule)
        if not any(rule_covers(owner, sub) for owner in owner_rules)
    ]
    return not missing, missing


def compact_rules(rules: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules of one group and one resource (and at most one name) merged into one rule per
    group, resource and name, their verbs concatenated."""
    compacted: list[dict[str, Any]] = []
    simple: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            compacted.append(rule)
        elif key in simple:
            simple[key]["verbs"] = simple[key]["verbs"] + _strings(rule, "verbs")
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return compacted + list(simple.values())


def _simple_key(rule: dict[str, Any]) -> tuple[str, str, str | None] | None:
    names = _strings(rule, "resourceNames")
    if len(names) > 1 or _strings(rule, "nonResourceURLs"):
        return None
    groups, resources = _strings(rule, "apiGroups"), _strings(rule, "resources")
    if len(groups) != 1 or len(resources) != 1:
        return None
    return groups[0], resources[0], names[0] if names else None


def go_strings(values: Sequence[str]) -> str:
    """A []string as Go's %q prints it: ["a" "b"]."""
    return "[" + " ".join(quote(v) for v in values) + "]"


def compact_string(rule: dict[str, Any]) -> str:
    """rbacv1helpers.CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`."""
    parts = [
        f"{label}:{go_strings(_strings(rule, key))}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if _strings(rule, key)
    ]
    return "{" + ", ".join(parts) + "}"
