"""Changes as rows of the SQLite log, and back."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from pinnace.store.codec import Codec
from pinnace.store.interface import EventType, WatchEvent
from pinnace.store.mvcc import Version
from pinnace.store.sqlitelog import Row


def to_row(event: WatchEvent, create_revision: int, prev_revision: int) -> Row:
    """The log row of `event`. Raises TypeError if the object is not JSON."""
    return (
        event.revision,
        event.key,
        create_revision,
        prev_revision,
        event.type == "DELETED",
        orjson.dumps(event.object),
    )


def from_rows(rows: Iterable[Row], codec: Codec) -> tuple[list[Version], dict[str, int]]:
    """The changes of `rows` (in revision order), packed by `codec`, and the create revision
    of each live key."""
    versions: list[Version] = []
    created: dict[str, int] = {}
    for revision, key, create_revision, _, deleted, value in rows:
        if deleted:
            kind: EventType = "DELETED"
            created.pop(key, None)
        else:
            kind = "ADDED" if create_revision == revision else "MODIFIED"
            created[key] = create_revision
        versions.append(Version.from_json(kind, key, value, revision, codec))
    return versions, created
