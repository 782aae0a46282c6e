"""The event log of a simulation: every change its store commits, one JSON line each.

A line names the change as etcd's watch stream would (revision, type, and the object's kind,
namespace and name), the simulated time it was made at, and a short digest of the object's
JSON, so that two runs whose objects differ in any field give different logs. The log's SHA-256
is a simulation's fingerprint: the same scenario and seed give the same digest on any machine
and in any process (PYTHONHASHSEED included); `tests/sim/test_determinism.py` holds it to that.

The log observes commits through the store (`Store.observe`) rather than through a watch:
a watch has a buffer whose fill makes writers yield to the loop, and a task of its own, so a
run with a log would schedule differently from one without; an observer changes nothing.

    log = EventLog(plane.store, plane.clock, open("events.jsonl", "wb"))
    ... run the simulation ...
    log.close()
    print(log.sha256())
"""

from __future__ import annotations

import hashlib
from typing import BinaryIO

import orjson

from pinnace.clock import Clock
from pinnace.store import Store, WatchEvent

WORKLOAD_KINDS = frozenset(
    {"Pod", "ReplicaSet", "Deployment", "DaemonSet", "Job", "StatefulSet", "CronJob"}
)
DIGEST_BYTES = 8
"""Of the BLAKE2b digest of the object's JSON: 64 bits tell two runs apart as surely as the
whole would, and keep a line short. The JSON keeps the object's key order, so even a field that
lands in another place tells (and costs 3 us an object, against 5 with the keys sorted)."""


class EventLog:
    """Records every change `store` commits from now on, stamped with `clock`'s time in seconds
    since `start` (now, by default), to `out` (when given) as JSON lines:

        {"revision":42,"time":1.5,"type":"ADDED","kind":"Pod","namespace":"default",
         "name":"web-1","digest":"9f2c41d07a3b8e65"}

    Make it before the cluster's first write (before `ControlPlane.start()`) to hold every
    change from the first. `sha256()` is the digest of every line so far. With
    `lines=False` (and no `out`) only the counts are kept: no line is made and `sha256()` is
    "" (a run nothing fingerprints, a research episode, spares each change's JSON and digest).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        out: BinaryIO | None = None,
        *,
        start: float | None = None,
        lines: bool = True,
    ) -> None:
        if out is not None and not lines:
            raise ValueError("an event log without lines cannot write them to `out`")
        self._clock = clock
        self._start = clock.now() if start is None else start
        self._out = out
        self._hash = hashlib.sha256()
        self.events = 0
        """Changes recorded so far."""
        self.workload_changes = 0
        """Of those, changes to workload objects (WORKLOAD_KINDS): what tells a cluster that
        has settled from one still at work."""
        self._lines = lines
        self._text = store.text
        self._stop = store.observe(self._record if lines else self._count)

    def _record(self, event: WatchEvent) -> None:
        line = orjson.dumps(self.entry(event)) + b"\n"
        self._hash.update(line)
        if self._out is not None:
            self._out.write(line)
        self._count(event)

    def _count(self, event: WatchEvent) -> None:
        self.events += 1
        if event.object.get("kind") in WORKLOAD_KINDS:
            self.workload_changes += 1

    def entry(self, event: WatchEvent) -> dict[str, object]:
        """The line `event` gets, as a dict."""
        obj = event.object
        metadata = obj.get("metadata") or {}
        text = self._text(event)  # in the object's key order, as the API serves it
        return {
            "revision": event.revision,
            "time": round(self._clock.now() - self._start, 6),
            "type": event.type,
            "kind": obj.get("kind", ""),
            "namespace": metadata.get("namespace", ""),
            "name": metadata.get("name", ""),
            "digest": hashlib.blake2b(text, digest_size=DIGEST_BYTES).hexdigest(),
        }

    def sha256(self) -> str:
        """The SHA-256 of the log's lines so far, in hex ("" when it makes none)."""
        return self._hash.hexdigest() if self._lines else ""

    def close(self) -> None:
        """Stop recording and flush `out` (which stays open: it is the caller's)."""
        self._stop()
        self._stop = _nothing
        if self._out is not None:
            self._out.flush()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _nothing() -> None:
    pass
