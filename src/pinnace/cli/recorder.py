"""What `pinnace record` runs (`pinnace.cli.record` has its flags): the recording, a plain
client of the Kubernetes API through the official `kubernetes` package."""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import urllib3
from kubernetes import config as kubeconfig
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from pinnace.cli.scheduler import DEFAULT_KUBECONFIG
from pinnace.sim.traces.recording import ADDED, DELETED, MODIFIED, RECORDED, header
from pinnace.sim.wording import counted

PAGE = 500
WATCH_SECONDS = 300
"""How long one watch request lasts before it is resumed (kube-apiserver's default is
randomised between 30 and 60 minutes; a shorter one notices a dead connection sooner)."""
RETRY_SECONDS = 1.0

_STOPPING = (signal.SIGINT, signal.SIGTERM)

Key = tuple[str, str]
Change = tuple[str, dict[str, Any]]
"""(ADDED, MODIFIED or DELETED, the object)."""


def run(args: argparse.Namespace) -> int:
    path = Path(args.kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG)
    try:
        api = kubeconfig.new_client_from_config(
            config_file=str(path.expanduser()), context=args.context
        )
    except (kubeconfig.ConfigException, OSError, ValueError) as e:
        print(f"pinnace record: cannot use kubeconfig {path}: {e}", file=sys.stderr)
        return 1
    try:
        with open(args.out, "w", encoding="utf-8") as out:
            count = Recorder(api, out).record(args.duration)
    except OSError as e:
        print(f"pinnace record: {e}", file=sys.stderr)
        return 1
    except (ApiException, urllib3.exceptions.HTTPError) as e:
        print(f"pinnace record: cannot list from {api.configuration.host}: {e}", file=sys.stderr)
        return 1
    print(f"Recorded {counted(count, 'change')} to {args.out}.")
    return 0


class Recorder:
    def __init__(self, api: ApiClient, out: IO[str]) -> None:
        self._api = api
        self._out = out
        self._stop = threading.Event()
        """Set when the recording ends, for the watch threads to end too."""
        self._interrupted = False
        """Set by SIGINT's and SIGTERM's handler."""
        self._changes: queue.Queue[tuple[float, str, dict[str, Any]]] = queue.Queue()
        self._started = 0.0
        self.count = 0

    def record(self, duration: float | None) -> int:
        """Record until `duration` seconds have passed (None: until SIGINT or SIGTERM); the
        number of changes written. Call it from the main thread: signals are handled there."""
        handlers = {signum: signal.signal(signum, self._interrupt) for signum in _STOPPING}
        try:
            self._record(duration)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            self._stop.set()
        self._drain(timeout=0)
        return self.count

    def _interrupt(self, signum: int, frame: object) -> None:
        # Only a flag. Python's own SIGINT handler raises KeyboardInterrupt wherever the main
        # thread is, even between a lock's acquire and the `with` block that releases it: the
        # changes queue's lock then stayed taken, and the last drain waited for it forever.
        self._interrupted = True

    def _record(self, duration: float | None) -> None:
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._write(header(self._api.configuration.host, started))
        self._started = time.monotonic()
        watches = []
        for group, resource in RECORDED:
            if self._interrupted:
                return
            kind = _Kind(self._api, group, resource)
            listed = kind.relist()
            if listed is None:
                print(f"pinnace record: {resource}: not served; not recorded", file=sys.stderr)
                continue
            for change in listed:
                self._line(0.0, *change)
            watches.append(threading.Thread(target=self._follow, args=(kind,), daemon=True))
        for thread in watches:
            thread.start()
        deadline = None if duration is None else self._started + duration
        while not self._interrupted and (deadline is None or time.monotonic() < deadline):
            self._drain(timeout=0.2)

    def _follow(self, kind: _Kind) -> None:
        """Watch `kind` until the recording stops, queueing what changes."""
        while not self._stop.is_set():
            try:
                for change in kind.watch(self._stop):
                    self._changes.put((time.monotonic() - self._started, *change))
            except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError):
                if self._stop.wait(RETRY_SECONDS):
                    return
                try:
                    for change in kind.relist() or ():
                        self._changes.put((time.monotonic() - self._started, *change))
                except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError):
                    continue

    def _drain(self, timeout: float) -> None:
        """Write the changes queued, waiting up to `timeout` for the first; not those queued
        meanwhile, or changes coming faster than they are written would keep the recording
        from ever seeing that it should end."""
        try:
            change = self._changes.get(timeout=timeout) if timeout else self._changes.get_nowait()
        except queue.Empty:
            pass
        else:
            self._line(*change)
            for _ in range(self._changes.qsize()):  # only this thread takes from the queue
                self._line(*self._changes.get_nowait())
        self._out.flush()

    def _line(self, at: float, kind: str, obj: dict[str, Any]) -> None:
        self._write({"t": round(at, 3), "type": kind, "object": obj})
        self.count += 1

    def _write(self, line: dict[str, Any]) -> None:
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")


class _Kind:
    """One kind's list and watch, and what the recording knows of its objects."""

    def __init__(self, api: ApiClient, group: str, resource: str) -> None:
        self._api = api
        version = "v1"
        self.path = f"/apis/{group}/{version}/{resource}" if group else f"/api/{version}/{resource}"
        self.resource = resource
        self.version = ""
        self.known: dict[Key, dict[str, Any]] = {}

    def relist(self) -> list[Change] | None:
        """List every object, and what changed since the objects known (all ADDED the first
        time); None if the cluster does not serve the kind."""
        try:
            items, self.version = self._list()
        except ApiException as e:
            if e.status == 404 and not self.known:
                return None
            raise
        changes: list[Change] = []
        seen = set()
        for obj in items:
            key = _key(obj)
            seen.add(key)
            before = self.known.get(key)
            if before is None:
                changes.append((ADDED, obj))
            elif before["metadata"].get("resourceVersion") != obj["metadata"].get(
                "resourceVersion"
            ):
                changes.append((MODIFIED, obj))
            self.known[key] = obj
        for key in [k for k in self.known if k not in seen]:
            changes.append((DELETED, self.known.pop(key)))
        return changes

    def _list(self) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", PAGE)]
            if token:
                query.append(("continue", token))
            page = json.loads(self._get(query).data)
            for item in page.get("items") or ():
                item.setdefault("apiVersion", page.get("apiVersion", ""))
                item.setdefault("kind", page.get("kind", "").removesuffix("List"))
                items.append(_trimmed(item))
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items, (page.get("metadata") or {}).get("resourceVersion", "")

    def watch(self, stop: threading.Event) -> Iterator[Change]:
        """The changes from the last resourceVersion seen, until the watch request ends (a 410
        Gone lists again, and yields what the list found changed)."""
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", WATCH_SECONDS),
            ("resourceVersion", self.version),
        ]
        response = self._get(query, timeout=WATCH_SECONDS + 30)
        try:
            for line in iter_resp_lines(response):
                if stop.is_set():
                    return
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        yield from self.relist() or ()
                        return
                    raise ValueError(f"{self.resource}: watch error: {obj.get('message')}")
                self.version = (obj.get("metadata") or {}).get("resourceVersion") or self.version
                if kind == "BOOKMARK":
                    continue
                obj = _trimmed(obj)
                if kind == DELETED:
                    self.known.pop(_key(obj), None)
                else:
                    self.known[_key(obj)] = obj
                yield kind, obj
        finally:
            response.release_conn()

    def _get(self, query: list[tuple[str, Any]], timeout: float = 60) -> Any:
        return self._api.call_api(
            self.path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _trimmed(obj: dict[str, Any]) -> dict[str, Any]:
    """Without managedFields: who wrote which field is not replayed."""
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj
