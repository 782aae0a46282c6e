"""Deciding whether a request is allowed, as kube-apiserver v1.32 with
`--authorization-mode=RBAC` (or AlwaysAllow): members of system:masters may do anything
(authorizerfactory.NewPrivilegedGroups, always first), then the RBAC authorizer walks the
cluster role bindings and the request namespace's role bindings that name the user
(plugin/pkg/auth/authorizer/rbac/rbac.go, pkg/registry/rbac/validation/rule.go).

The roles and bindings are read from memory the store's observer keeps current
(`AdmissionObjects`), as kube-apiserver reads them from informers. The RBAC decision of a
request is remembered until any role or binding changes: it depends on nothing else (the
user's name and groups, and what the request does), so a scraper asking the same of 5,000
nodes every 15 s does not walk every binding for each. An HTTP request allowed so is
remembered by its method, path and query too (`request_key`): the same request of the same
user is then allowed without working out what it does again (the node authorizer's decisions,
which read the cluster's pods and volumes, are never remembered).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pinnace.api.goquote import quote
from pinnace.api.objects import Object, Remembered, clone
from pinnace.api.rbac.kinds import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    GROUP_KIND,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
    USER,
)
from pinnace.apiserver.admission_objects import AdmissionObjects
from pinnace.apiserver.auth.node import NodeAuthorizer, node_identity
from pinnace.apiserver.auth.rules import ALL, Attributes, rule_allows
from pinnace.apiserver.auth.user import SYSTEM_MASTERS, UserInfo, service_account_username
from pinnace.store import Store

NODE = "Node"
RBAC = "RBAC"
ALWAYS_ALLOW = "AlwaysAllow"
MODES = (NODE, RBAC, ALWAYS_ALLOW)

FULL_AUTHORITY = (
    {"verbs": [ALL], "apiGroups": [ALL], "resources": [ALL]},
    {"verbs": [ALL], "nonResourceURLs": [ALL]},
)
RequestKey = tuple[object, ...]
"""An HTTP request's user, method, path and query, with the state its decision depends on."""
Visitor = Callable[[str, dict[str, Any] | None, str], bool]
"""(source, rule, error) -> whether to go on; as the resolver's visitor."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _subject_applies(user: UserInfo, subject: Any, namespace: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == USER:
        return bool(user.name == name)
    if kind == GROUP_KIND:
        return name in user.groups
    if kind == SERVICE_ACCOUNT:
        sa_namespace = str(subject.get("namespace") or namespace)
        return bool(sa_namespace) and user.name == service_account_username(sa_namespace, str(name))
    return False


def _describe_subject(subject: dict[str, Any], binding_namespace: str) -> str:
    name = str(subject.get("name") or "")
    if subject.get("kind") == SERVICE_ACCOUNT:
        name = f"{name}/{subject.get('namespace') or binding_namespace}"
    return f"{subject.get('kind')} {quote(name)}"


def _describe(binding: Object, subject: dict[str, Any]) -> str:
    m, ref = binding["metadata"], binding.get("roleRef") or {}
    namespace = m.get("namespace", "")
    if namespace:
        what = f"RoleBinding {quote(m['name'] + '/' + namespace)}"
    else:
        what = f"ClusterRoleBinding {quote(m['name'])}"
    return (
        f"{what} of {ref.get('kind')} {quote(str(ref.get('name')))} to "
        f"{_describe_subject(subject, namespace)}"
    )


class RuleResolver:
    """DefaultRuleResolver over the stored roles and bindings."""

    def __init__(self, store: Store) -> None:
        self.objects = AdmissionObjects(
            store, (ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING)
        )

    async def load(self) -> None:
        await self.objects.load()

    def role_reference_rules(
        self, role_ref: Any, namespace: str
    ) -> tuple[list[dict[str, Any]], str]:
        """(the rules of the role a binding names, "" or the error finding it)."""
        ref = role_ref if isinstance(role_ref, dict) else {}
        name = str(ref.get("name") or "")
        if ref.get("kind") == "Role":
            role = self.objects.get(ROLE, namespace, name)
            missing = f"role.rbac.authorization.k8s.io {quote(name)} not found"
        elif ref.get("kind") == "ClusterRole":
            role = self.objects.get(CLUSTER_ROLE, "", name)
            missing = f"clusterrole.rbac.authorization.k8s.io {quote(name)} not found"
        else:
            return [], f"unsupported role reference kind: {quote(str(ref.get('kind') or ''))}"
        if role is None:
            return [], missing
        return [r for r in role.get("rules") or () if isinstance(r, dict)], ""

    def visit_rules_for(self, user: UserInfo, namespace: str, visit: Visitor) -> None:
        for kind, where in ((CLUSTER_ROLE_BINDING, ""), (ROLE_BINDING, namespace)):
            if kind is ROLE_BINDING and not namespace:
                return
            for binding in self.objects.list(kind, where):
                subject = next(
                    (s for s in binding.get("subjects") or () if _subject_applies(user, s, where)),
                    None,
                )
                if subject is None:
                    continue
                rules, error = self.role_reference_rules(binding.get("roleRef"), where)
                if error:
                    if not visit("", None, error):
                        return
                    continue
                source = _describe(binding, subject)
                for rule in rules:
                    if not visit(source, rule, ""):
                        return

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
        rules: list[dict[str, Any]] = []
        errors: list[str] = []

        def accumulate(source: str, rule: dict[str, Any] | None, error: str) -> bool:
            if rule is not None:
                rules.append(rule)
            if error:
                errors.append(error)
            return True

        self.visit_rules_for(user, namespace, accumulate)
        return rules, errors


def aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's message."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class Authorizer:
    """The union of the privileged-groups authorizer and the modes asked for."""

    def __init__(
        self, resolver: RuleResolver, node: NodeAuthorizer, modes: tuple[str, ...] = (RBAC,)
    ) -> None:
        self.resolver = resolver
        self.node = node
        self.modes = modes
        self._decisions: Remembered[Decision] = Remembered(1 << 14)
        """RBAC's decisions, by the roles' and bindings' `changes` and the request."""
        self._allowed_requests: Remembered[bool] = Remembered(1 << 14)
        """HTTP requests allowed, by `request_key`."""

    def request_key(
        self, user: UserInfo, method: str, path: str, query: bytes
    ) -> RequestKey | None:
        """What the decision of the user's HTTP request (its method, path and raw query
        string) depends on now; None for a node's (the node authorizer's read the cluster's
        state). Taken before the decision, so that a role changed meanwhile is not missed."""
        if NODE in self.modes and node_identity(user)[1]:
            return None
        changes = self.resolver.objects.changes
        return (changes, self.modes, user.name, user.groups, method, path, query)

    def known_allowed(self, user: UserInfo, key: RequestKey | None) -> bool:
        """Whether the user's request may go on without asking `authorize`: a member of
        system:masters, or a request `authorize` allowed (`remember_allowed`) with nothing
        changed since."""
        if SYSTEM_MASTERS in user.groups:
            return True
        return key is not None and self._allowed_requests.get(key) is not None

    def remember_allowed(self, key: RequestKey | None) -> None:
        """Note that `authorize` allowed the request of `key` (`request_key`)."""
        if key is not None:
            self._allowed_requests.put(key, True)

    async def authorize(self, attributes: Attributes) -> Decision:
        user: UserInfo = attributes.user
        if SYSTEM_MASTERS in user.groups:
            return Decision(True)
        reasons = []
        for mode in self.modes:
            if mode == ALWAYS_ALLOW:
                return Decision(True)
            if mode == NODE:
                allowed, reason = await self.node.authorize(attributes)
                if allowed:
                    return Decision(True, reason)
                if reason:
                    reasons.append(reason)
                continue
            await self.resolver.load()
            decision = self._rbac(attributes)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision(False, ", ".join(reasons))

    def _rbac(self, attributes: Attributes) -> Decision:
        user: UserInfo = attributes.user
        key = (
            self.resolver.objects.changes,
            user.name,
            user.groups,
            attributes.verb,
            attributes.resource_request,
            attributes.namespace,
            attributes.api_group,
            attributes.resource,
            attributes.subresource,
            attributes.name,
            "" if attributes.resource_request else attributes.path,
        )
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._walk_rbac(attributes)
            self._decisions.put(key, decision)
        return decision

    def _walk_rbac(self, attributes: Attributes) -> Decision:
        allowed: list[str] = []
        errors: list[str] = []

        def visit(source: str, rule: dict[str, Any] | None, error: str) -> bool:
            if rule is not None and rule_allows(attributes, rule):
                allowed.append(f"RBAC: allowed by {source}")
                return False
            if error:
                errors.append(error)
            return True

        self.resolver.visit_rules_for(attributes.user, attributes.namespace, visit)
        if allowed:
            return Decision(True, allowed[0])
        return Decision(False, f"RBAC: {aggregate(errors)}" if errors else "")

    async def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool, str]:
        """(resource rules, non-resource rules, incomplete, evaluation error), as the union's
        RulesFor answers a SelfSubjectRulesReview (the privileged-groups authorizer lists no
        rules: system:masters sees cluster-admin's through its binding)."""
        resource: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        errors: list[str] = []
        incomplete = False
        for mode in self.modes:
            if mode == NODE:
                if node_identity(user)[1]:
                    incomplete = True
                    errors.append("node authorizer does not support user rule resolution")
                continue
            if mode == ALWAYS_ALLOW:
                every_resource, every_url = (clone(rule) for rule in FULL_AUTHORITY)
                resource.append(every_resource)
                non_resource.append(every_url)
                continue
            await self.resolver.load()
            rules, found = self.resolver.rules_for(user, namespace)
            errors += found
            for rule in rules:
                if rule.get("resources"):
                    resource.append(_resource_rule(rule))
                if rule.get("nonResourceURLs"):
                    non_resource.append(
                        {
                            "verbs": rule.get("verbs") or [],
                            "nonResourceURLs": rule["nonResourceURLs"],
                        }
                    )
        return resource, non_resource, incomplete, aggregate(errors) if errors else ""


def _resource_rule(rule: dict[str, Any]) -> dict[str, Any]:
    out = {"verbs": rule.get("verbs") or [], "apiGroups": rule.get("apiGroups") or []}
    out["resources"] = rule.get("resources") or []
    if rule.get("resourceNames"):
        out["resourceNames"] = rule["resourceNames"]
    return out


def forbidden_message(attributes: Attributes) -> str:
    """responsewriters' forbiddenMessage."""
    user = quote(attributes.user.name if attributes.user is not None else "")
    if not attributes.resource_request:
        return f"User {user} cannot {attributes.verb} path {quote(attributes.path)}"
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    where = (
        f"in the namespace {quote(attributes.namespace)}"
        if attributes.namespace
        else "at the cluster scope"
    )
    return (
        f"User {user} cannot {attributes.verb} resource {quote(resource)} in API group "
        f"{quote(attributes.api_group)} {where}"
    )
