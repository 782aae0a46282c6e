"""rbac.authorization.k8s.io: role bindings, with the role they grant and to whom (wide).
Roles and cluster roles print the default NAME / CREATED AT table, as v1.32's printers do."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    items,
    name_column,
    name_of,
    section,
)


def _subjects(binding: Object, kind: str) -> str:
    names = []
    for subject in items(binding, "subjects"):
        if subject.get("kind") != kind:
            continue
        name = str(subject.get("name") or "")
        if kind == "ServiceAccount":
            name = f"{subject.get('namespace') or ''}/{name}"
        names.append(name)
    return ", ".join(names)


def _row(binding: Object, now: float) -> Row:
    role = section(binding, "roleRef")
    return Row(
        [
            name_of(binding),
            f"{role.get('kind') or ''}/{role.get('name') or ''}",
            age_of(binding, now),
            _subjects(binding, "User"),
            _subjects(binding, "Group"),
            _subjects(binding, "ServiceAccount"),
        ]
    )


BINDINGS = Printer(
    (
        name_column(),
        Column("Role", "string", doc("V1RoleBinding", "roleRef")),
        age_column(),
        Column("Users", "string", "Users in the roleBinding", 1),
        Column("Groups", "string", "Groups in the roleBinding", 1),
        Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", 1),
    ),
    _row,
)
