"""The SQLite file behind SQLiteStore: an append-only log of changes, kine-style.

Table `log` has one row per retained change, and its row id is the change's revision (so it is
also the mod revision): key, the revision that created the key's current incarnation, the
revision of the key's previous change (0 if none), a deleted flag, and the object as JSON (for a
deletion, the last state stamped with the deletion revision). Table `meta` holds the compacted
revision. Nothing else: reads are served from memory, so the log needs no secondary index.

Every method runs on the store's one writer thread. The connection holds an exclusive lock on
the file for its lifetime, so a second process (or store) cannot open it and diverge.
WAL with synchronous=NORMAL: a committed transaction survives the process being killed; use
`synchronous="FULL"` to survive power loss too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from pinnace.store.interface import StoreInUseError

Row = tuple[int, str, int, int, int, bytes]
"""(revision, key, create_revision, prev_revision, deleted, value)"""

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS log (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        create_revision INTEGER NOT NULL,
        prev_revision INTEGER NOT NULL,
        deleted INTEGER NOT NULL,
        value BLOB NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_DELETE_CHUNK = 500  # ids per DELETE statement, under SQLite's bound-parameter limit
_PROBE_BYTES = 65536  # more than a page holds, whatever the page size: it needs new pages


class SQLiteLog:
    def __init__(self, path: str, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f'synchronous must be "NORMAL" or "FULL", not {synchronous!r}')
        # timeout=0: a file locked by another store fails at once instead of after 5 s.
        self._db = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            # After a checkpoint the WAL file is truncated to this, not left at its peak.
            self._db.execute("PRAGMA journal_size_limit=67108864")
            self._db.execute("BEGIN EXCLUSIVE")  # take the lock now, and keep it
            for statement in _SCHEMA:
                self._db.execute(statement)
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as e:
            self._db.close()
            if "locked" in str(e):
                raise StoreInUseError(path) from e
            raise

    def compacted_revision(self) -> int | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = 'compacted'").fetchone()
        return row[0] if row is not None else None

    def rows(self) -> Iterator[Row]:
        """Every row, in revision order."""
        return self._db.execute(
            "SELECT id, key, create_revision, prev_revision, deleted, value FROM log ORDER BY id"
        )

    def append(self, rows: Sequence[Row]) -> None:
        """Commit `rows` in one transaction."""
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?)", rows)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def probe(self, size: int) -> None:
        """Commit a change of `size` bytes that needs new pages and takes itself back (a row
        with overflow pages, deleted again): raises as a write of that size that cannot be
        stored would."""
        db = self._db
        db.execute("BEGIN")
        try:
            size = max(size, _PROBE_BYTES)
            db.execute("INSERT INTO log VALUES (-1, '', 0, 0, 1, zeroblob(?))", (size,))
            db.execute("DELETE FROM log WHERE id = -1")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def compact(self, revision: int, dropped: Sequence[int]) -> None:
        """Delete the rows at `dropped` and record `revision` as compacted, atomically."""
        db = self._db
        db.execute("BEGIN")
        try:
            for start in range(0, len(dropped), _DELETE_CHUNK):
                chunk = dropped[start : start + _DELETE_CHUNK]
                db.execute(f"DELETE FROM log WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            db.execute(
                "INSERT INTO meta VALUES ('compacted', ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (revision,),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()
