"""node.k8s.io: runtime classes, with the handler that runs their pods."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Printer,
    Row,
    age_column,
    age_of,
    name_column,
    name_of,
)

RUNTIME_CLASSES = Printer(
    # v1.32 takes the Handler column's description from ObjectMeta's docs, which have no
    # `handler` field: it is empty.
    (name_column(), Column("Handler", "string", ""), age_column()),
    lambda rc, now: Row([name_of(rc), str(rc.get("handler") or ""), age_of(rc, now)]),
)
