"""RBAC's escalation check: nobody grants permissions they do not hold, as kube-apiserver v1.32's
RBAC registries check a write (pkg/registry/rbac/{role,clusterrole,rolebinding,
clusterrolebinding}/policybased/storage.go, pkg/registry/rbac/escalation_check.go,
pkg/registry/rbac/validation/rule.go ConfirmNoEscalation).

- A member of system:masters may write anything (so may Pinnace's in-process components).
- A role may be written by who holds every permission it lists, or may `escalate` roles.
- A binding may be written by who may `bind` the role it names, or holds its permissions.
- An aggregationRule needs cluster-admin's authority.
- An update that changes nothing but the garbage collector's fields is not checked.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import status
from pinnace.api.goquote import quote
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.rbac.kinds import GROUP
from pinnace.apiserver.auth.authorizer import FULL_AUTHORITY, Authorizer
from pinnace.apiserver.auth.rules import (
    Attributes,
    compact_rules,
    compact_string,
    covers,
    go_strings,
)
from pinnace.apiserver.auth.user import SYSTEM_MASTERS, UserInfo, requester

_ROLES = ("roles", "clusterroles")
_BINDINGS = ("rolebindings", "clusterrolebindings")
_GC_FIELDS = ("ownerReferences", "finalizers")
_SERVER_FIELDS = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")


def guards(kind: Kind) -> bool:
    """Whether writes of `kind` are checked (RBAC's kinds): callers skip `check` otherwise."""
    return kind.group == GROUP


async def check(authorizer: Authorizer, kind: Kind, obj: Object, old: Object | None) -> None:
    """Raises the 403 the RBAC registry answers when the requester would escalate."""
    who = requester()
    if not guards(kind) or who is None or SYSTEM_MASTERS in who.user.groups:
        return
    if old is not None and _only_gc_fields_changed(obj, old):
        return
    m = obj.get("metadata") or {}
    namespace, name = m.get("namespace", ""), m.get("name", "")
    await authorizer.resolver.load()
    if kind.plural in _ROLES:
        await _check_role(authorizer, kind, who.user, obj, old, namespace, name)
    elif kind.plural in _BINDINGS:
        await _check_binding(authorizer, kind, who.user, obj, namespace, name)


async def _check_role(
    authorizer: Authorizer,
    kind: Kind,
    user: UserInfo,
    role: Object,
    old: Object | None,
    namespace: str,
    name: str,
) -> None:
    escalate = Attributes(
        user,
        "escalate",
        namespace=namespace,
        api_group=kind.group,
        api_version="*",
        resource=kind.plural,
        name=name if old is not None else "",
    )
    if (await authorizer.authorize(escalate)).allowed:
        return
    if old is None or old.get("rules") != role.get("rules"):
        rules = [r for r in role.get("rules") or () if isinstance(r, dict)]
        missing = _missing(authorizer, user, namespace, rules)
        if missing is not None:
            raise status.forbidden(kind.plural, name, missing, kind.group)
    aggregation = role.get("aggregationRule")
    if aggregation is None or (old is not None and old.get("aggregationRule") == aggregation):
        return
    if _missing(authorizer, user, namespace, list(FULL_AUTHORITY)) is not None:
        raise status.forbidden(
            kind.plural,
            name,
            "must have cluster-admin privileges to use the aggregationRule",
            kind.group,
        )


async def _check_binding(
    authorizer: Authorizer, kind: Kind, user: UserInfo, binding: Object, namespace: str, name: str
) -> None:
    found = binding.get("roleRef")
    ref: dict[str, Any] = found if isinstance(found, dict) else {}
    bind = Attributes(
        user,
        "bind",
        namespace=namespace,
        api_group=str(ref.get("apiGroup") or ""),
        api_version="*",
        resource="roles" if ref.get("kind") == "Role" else "clusterroles",
        name=str(ref.get("name") or ""),
    )
    if (await authorizer.authorize(bind)).allowed:
        return
    rules, error = authorizer.resolver.role_reference_rules(ref, namespace)
    if error:
        raise status.forbidden(kind.plural, name, error, kind.group)
    missing = _missing(authorizer, user, namespace, rules)
    if missing is not None:
        raise status.forbidden(kind.plural, name, missing, kind.group)


def _missing(
    authorizer: Authorizer, user: UserInfo, namespace: str, rules: list[dict[str, Any]]
) -> str | None:
    """ConfirmNoEscalation's message, or None when the user holds every rule."""
    owned, errors = authorizer.resolver.rules_for(user, namespace)
    ok, missing = covers(owned, rules)
    if ok:
        return None
    described = sorted({compact_string(rule) for rule in compact_rules(missing)})
    message = (
        f"user {quote(user.name)} (groups={go_strings(user.groups)}) is attempting to grant "
        "RBAC permissions not currently held:\n" + "\n".join(described)
    )
    if errors:
        message += f"; resolution errors: [{' '.join(errors)}]"
    return message


def _only_gc_fields_changed(new: Object, old: Object) -> bool:
    def comparable(obj: Object) -> Object:
        m = {
            k: v
            for k, v in (obj.get("metadata") or {}).items()
            if k not in _GC_FIELDS + _SERVER_FIELDS
        }
        return {**obj, "metadata": m}

    return comparable(new) == comparable(old)
