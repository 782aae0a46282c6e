"""The table kube-apiserver builds for a kind without a printer (LimitRange among the served
kinds): the name and the creation time as an RFC 3339 date (rest.NewDefaultTableConvertor)."""

from __future__ import annotations

from pinnace.api.tables.age import timestamp
from pinnace.api.tables.columns import Column, Object, Printer, Row, doc, meta, name_column, name_of
from pinnace.clock.rfc3339 import format_time

_ZERO_TIME = "0001-01-01T00:00:00Z"


def _created_at(obj: Object) -> str:
    created = timestamp(meta(obj).get("creationTimestamp"))
    return _ZERO_TIME if created is None else format_time(created)


DEFAULT = Printer(
    (name_column(), Column("Created At", "date", doc("V1ObjectMeta", "creationTimestamp"))),
    lambda obj, now: Row([name_of(obj), _created_at(obj)]),
)
