"""Changes as rows of the SQLite log, and back."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from pinnace.store.interface import Object, WatchEvent
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


def from_rows(rows: Iterable[Row]) -> tuple[list[WatchEvent], dict[str, int]]:
    """The changes of `rows` (in revision order), and the create revision of each live key.

    A row whose previous change was compacted away gets no `prev_object`; only rows at or
    before the compacted revision can be such, and no watch replays those.
    """
    events: list[WatchEvent] = []
    live: dict[str, Object] = {}
    created: dict[str, int] = {}
    for revision, key, create_revision, _, deleted, value in rows:
        obj = orjson.loads(value)
        if deleted:
            event = WatchEvent("DELETED", key, obj, live.pop(key, None), revision)
            created.pop(key, None)
        else:
            if create_revision == revision:
                event = WatchEvent("ADDED", key, obj, None, revision)
            else:
                event = WatchEvent("MODIFIED", key, obj, live.get(key), revision)
            live[key] = obj
            created[key] = create_revision
        events.append(event)
    return events, created
