"""coordination.k8s.io: leases, with the identity of their holder."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    name_column,
    name_of,
    section,
)

LEASES = Printer(
    (name_column(), Column("Holder", "string", doc("V1LeaseSpec", "holderIdentity")), age_column()),
    lambda lease, now: Row(
        [
            name_of(lease),
            str(section(lease, "spec").get("holderIdentity") or ""),
            age_of(lease, now),
        ]
    ),
)
