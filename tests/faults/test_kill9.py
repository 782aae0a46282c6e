"""kill -9 of `pinnace up` under writers and watchers, restarted on the same SQLite data dir.

Writer threads create and update their own ConfigMaps over plain HTTP, each update carrying the
resourceVersion last answered and a counter one higher; watcher threads watch all of them. At a
random moment the server is killed with SIGKILL and restarted on the same data dir. Then: no
acknowledged write is lost (a write whose answer never came may or may not have happened), no
object's resourceVersion went backwards, and each watch resumed from its last resourceVersion
either continues without a gap (every object's counter rises by exactly one per event) or ends
in a clean 410 Gone, after which the watcher lists again. Short: 2 rounds; long: 40.
"""

from __future__ import annotations

import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import requests
from tests.faults.conftest import readyz_seconds, report, rss_mib, scale
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
OURS = "labelSelector=fault%3Dkill-9"
OBJECTS_PER_WRITER = 5
WATCH_SECONDS = 3
TIMEOUT = 10.0


class Server:
    """The running `pinnace up` (its port changes at each restart); `up` is set while it runs."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.up = threading.Event()
        self.up.set()
        self.stop = threading.Event()

    @property
    def url(self) -> str:
        return self.cluster.url


class Worker(threading.Thread):
    """A thread that parks (sets `parked`, waits for the server) whenever the server is down."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.parked = threading.Event()
        self.problems: list[str] = []

    def park(self) -> None:
        self.parked.set()
        self.server.up.wait()

    def run(self) -> None:
        try:
            self.work()
        except BaseException as e:  # reported by the test, not lost in a thread
            self.problems.append(f"{type(e).__name__}: {e}")
            self.parked.set()

    def work(self) -> None:
        raise NotImplementedError


@dataclass
class Tracked:
    """What a writer knows of one of its ConfigMaps."""

    n: int = -1
    """The last acknowledged counter (-1: no create acknowledged)."""
    rv: int = 0
    doubt: bool = False
    """A write was sent whose answer never came."""


def body(name: str, n: int, rv: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"fault": "kill-9"}}
    if rv:
        metadata["resourceVersion"] = str(rv)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"n": str(n)}}


class Writer(Worker):
    def __init__(self, server: Server, index: int, seed: int) -> None:
        super().__init__(server)
        self.objects = {f"w{index}-{k}": Tracked() for k in range(OBJECTS_PER_WRITER)}
        self.random = random.Random(seed)
        self.acknowledged = 0

    def work(self) -> None:
        session = requests.Session()
        while not self.server.stop.is_set():
            if not self.server.up.is_set():
                self.park()
                continue
            name = self.random.choice(sorted(self.objects))
            self.write(session, name, self.objects[name])

    def write(self, session: requests.Session, name: str, state: Tracked) -> None:
        try:
            if state.n < 0:
                answer = session.post(
                    self.server.url + CONFIGMAPS, json=body(name, 0, 0), timeout=TIMEOUT
                )
            else:
                answer = session.put(
                    f"{self.server.url}{CONFIGMAPS}/{name}",
                    json=body(name, state.n + 1, state.rv),
                    timeout=TIMEOUT,
                )
        except requests.RequestException:
            state.doubt = True
            session.close()
            self.park()
            return
        if answer.status_code not in (200, 201):
            self.problems.append(f"{name}: {answer.status_code} {answer.text[:200]}")
            return
        rv = int(answer.json()["metadata"]["resourceVersion"])
        if rv <= state.rv:
            self.problems.append(f"{name}: resourceVersion {rv} answered after {state.rv}")
        state.n, state.rv = state.n + 1, rv
        self.acknowledged += 1


class Watcher(Worker):
    """Watches the ConfigMaps, resuming from the last resourceVersion it saw."""

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.seen: dict[str, int] = {}
        self.rv = 0
        self.events = 0
        self.gone = 0
        self.resumed = 0
        self.finished = threading.Event()

    def work(self) -> None:
        self.relist()
        while not self.finished.is_set():
            try:
                self.watch()
            except requests.RequestException:
                self.park()
                self.resumed += 1

    def relist(self) -> None:
        while True:
            try:
                answer = requests.get(f"{self.server.url}{CONFIGMAPS}?{OURS}", timeout=TIMEOUT)
                break
            except requests.RequestException:
                self.park()
        answer.raise_for_status()
        listed = answer.json()
        self.seen = {item["metadata"]["name"]: int(item["data"]["n"]) for item in listed["items"]}
        self.rv = int(listed["metadata"]["resourceVersion"])

    def watch(self) -> None:
        query = f"?{OURS}&watch=1&resourceVersion={self.rv}&timeoutSeconds={WATCH_SECONDS}"
        with requests.get(
            self.server.url + CONFIGMAPS + query, stream=True, timeout=TIMEOUT
        ) as answer:
            if answer.status_code == 410:
                self.gone += 1
                self.relist()
                return
            answer.raise_for_status()
            for line in answer.iter_lines():
                if line and not self.take(json.loads(line)):
                    self.relist()
                    return

    def take(self, event: dict[str, Any]) -> bool:
        """Check one event; False after a 410 Gone."""
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            if obj.get("code") != 410:
                self.problems.append(f"watch error {obj}")
            self.gone += 1
            return False
        name, n, rv = (
            obj["metadata"]["name"],
            int(obj["data"]["n"]),
            int(obj["metadata"]["resourceVersion"]),
        )
        before = self.seen.get(name, -1)
        if n != before + 1 or kind != ("ADDED" if n == 0 else "MODIFIED"):
            self.problems.append(f"gap: {kind} {name} n={n} after n={before}")
        if rv <= self.rv:
            self.problems.append(f"{name}: event resourceVersion {rv} after {self.rv}")
        self.seen[name], self.rv = n, rv
        self.events += 1
        return True


@dataclass
class Tally:
    lost: int = 0
    backwards: int = 0
    in_doubt: int = 0
    problems: list[str] = field(default_factory=list)


def check_store(url: str, writers: list[Writer], tally: Tally) -> None:
    """After a restart, with every writer parked: each acknowledged write is there."""
    listed = requests.get(f"{url}{CONFIGMAPS}?{OURS}", timeout=TIMEOUT).json()
    stored = {item["metadata"]["name"]: item for item in listed["items"]}
    newest = max((s.rv for w in writers for s in w.objects.values()), default=0)
    if int(listed["metadata"]["resourceVersion"]) < newest:
        tally.backwards += 1
        tally.problems.append(f"list resourceVersion {listed['metadata']['resourceVersion']}")
    for writer in writers:
        for name, state in writer.objects.items():
            item = stored.get(name)
            n = -1 if item is None else int(item["data"]["n"])
            allowed = (state.n, state.n + 1) if state.doubt else (state.n,)
            if n not in allowed:
                tally.lost += 1
                tally.problems.append(f"{name}: stored n={n}, acknowledged n={state.n}")
            rv = 0 if item is None else int(item["metadata"]["resourceVersion"])
            if rv < state.rv:
                tally.backwards += 1
                tally.problems.append(f"{name}: resourceVersion {rv} after {state.rv}")
            tally.in_doubt += state.doubt
            state.n, state.rv, state.doubt = n, rv, False


def caught_up(watcher: Watcher, final: dict[str, int]) -> bool:
    """Whether the watcher has seen every final counter (or ended, which the test reports)."""
    return watcher.seen == final or not watcher.is_alive()


def test_no_acknowledged_write_is_lost_across_kill_9(tmp_path: Path) -> None:
    rounds, seed = scale(2, 40), 22
    chance = random.Random(seed)
    storage = ("--data-dir", str(tmp_path / "data"))
    server = Server(launch(tmp_path, *storage))
    writers = [Writer(server, i, seed + i) for i in range(scale(4, 8))]
    watchers = [Watcher(server) for _ in range(scale(2, 3))]
    tally, worst_readyz, worst_rss = Tally(), 0.0, 0.0
    try:
        for worker in (*writers, *watchers):
            worker.start()
        for _ in range(rounds):
            threading.Event().wait(chance.uniform(0.3, 1.5) * scale(1, 2))
            worst_rss = max(worst_rss, rss_mib(server.cluster.process.pid))
            server.up.clear()
            server.cluster.process.kill()
            server.cluster.process.wait()
            for worker in (*writers, *watchers):
                assert worker.parked.wait(30) and worker.is_alive(), worker.problems
            server.cluster = launch(tmp_path, *storage)
            worst_readyz = max(worst_readyz, readyz_seconds(server.cluster))
            check_store(server.url, writers, tally)
            for worker in (*writers, *watchers):
                worker.parked.clear()
            server.up.set()
        server.stop.set()
        for writer in writers:
            writer.join(30)
        listed = requests.get(f"{server.url}{CONFIGMAPS}?{OURS}", timeout=TIMEOUT).json()
        final = {item["metadata"]["name"]: int(item["data"]["n"]) for item in listed["items"]}
        for watcher in watchers:
            eventually(partial(caught_up, watcher, final), timeout=30)
            assert watcher.seen == final, watcher.problems
        for watcher in watchers:
            watcher.finished.set()
        for watcher in watchers:
            watcher.join(WATCH_SECONDS + TIMEOUT)
    finally:
        server.stop.set()
        server.up.set()
        for watcher in watchers:
            watcher.finished.set()
        if server.cluster.process.poll() is None:
            stop(server.cluster)
    problems = [*tally.problems, *(p for w in (*writers, *watchers) for p in w.problems)]
    report(
        "kill-9",
        rounds=rounds,
        writers=len(writers),
        watchers=len(watchers),
        acknowledged=sum(w.acknowledged for w in writers),
        in_doubt=tally.in_doubt,
        lost=tally.lost,
        rv_backwards=tally.backwards,
        watch_events=sum(w.events for w in watchers),
        watch_resumed=sum(w.resumed for w in watchers),
        watch_410=sum(w.gone for w in watchers),
        problems=len(problems),
        worst_readyz_s=worst_readyz,
        rss_mib=worst_rss,
    )
    assert problems == []
    assert (tally.lost, tally.backwards) == (0, 0)


def test_a_burst_of_acknowledged_creates_survives_kill_9(tmp_path: Path) -> None:
    """Creates sent together, which the SQLite store commits in shared transactions (group
    commit), all acknowledged and then `kill -9` at once: every one is there after the
    restart, as etcd keeps each write it acknowledged."""
    burst, storage = scale(32, 128), ("--data-dir", str(tmp_path / "data"))
    cluster = launch(tmp_path, *storage)
    start = threading.Barrier(burst)

    def create(i: int) -> int:
        with requests.Session() as session:
            session.get(f"{cluster.url}/readyz", timeout=TIMEOUT)  # connected beforehand
            start.wait(TIMEOUT)
            answer = session.post(
                cluster.url + CONFIGMAPS, json=body(f"burst-{i}", i, 0), timeout=TIMEOUT
            )
        return answer.status_code

    try:
        with ThreadPoolExecutor(burst) as pool:
            codes = list(pool.map(create, range(burst)))
    finally:
        cluster.process.kill()
        cluster.process.wait()
    assert codes == [201] * burst
    cluster = launch(tmp_path, *storage)
    try:
        listed = requests.get(f"{cluster.url}{CONFIGMAPS}?{OURS}", timeout=TIMEOUT).json()
    finally:
        stop(cluster)
    stored = sorted(int(item["data"]["n"]) for item in listed["items"])
    report("kill-9-burst", acknowledged=burst, stored=len(stored))
    assert stored == list(range(burst))
