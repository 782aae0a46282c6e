"""`pinnace bench store`: the versioned store's speed through its public API, per backend.

Writes come from `WRITERS` concurrent clients, as an API server under load would make them (so
SQLite's group commit is exercised); a write's latency runs from the call to its
acknowledgement. Reads are sequential; lists are timed whole and in kubectl-sized pages. The
watch figure counts events delivered to all watchers per second while writers update every
object once. Reopening times how long a SQLite store takes to read its file back.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path

from pinnace.bench import Figure, Figures, per_second, percentile, render_table
from pinnace.store import MemoryStore, Object, SQLiteStore, Store, Watch

BACKENDS = ("memory", "sqlite")
WRITERS = 16
"""Concurrent writing clients."""
LIST_REPEATS = 5
"""Lists timed; the median is reported."""
PAGE = 500
"""Objects per page of a paged list: kubectl's default --chunk-size."""
PREFIX = "pods/bench/"


def figures(objects: int, watchers: int) -> tuple[Figure, ...]:
    return (
        Figure("creates_per_s", "creates/s"),
        Figure("updates_per_s", "updates/s (with resourceVersion precondition)"),
        Figure("gets_per_s", "gets/s"),
        Figure("list_ms", f"list of {objects} objects (ms)"),
        Figure("paged_list_ms", f"list of {objects} objects in pages of {PAGE} (ms)"),
        Figure("watch_events_per_s", f"watch events/s delivered to {watchers} watchers"),
        Figure("write_latency_p50_ms", "write latency p50 (ms)"),
        Figure("write_latency_p99_ms", "write latency p99 (ms)"),
        Figure("reopen_ms", "reopen the file (ms)"),
    )


def run(backends: Sequence[str], objects: int, watchers: int) -> dict[str, Figures]:
    """Measure each backend on a fresh store, on its own event loop."""
    results = {}
    for backend in backends:
        with tempfile.TemporaryDirectory(prefix="pinnace-bench-") as directory:
            path = Path(directory) / "store.db"
            store = _open(backend, path)
            measured = asyncio.run(_measure_and_close(store, objects, watchers))
            measured["reopen_ms"] = _reopen_seconds(path) * 1000 if backend == "sqlite" else None
            results[backend] = measured
    return results


def render(results: dict[str, Figures], objects: int, watchers: int, as_json: bool) -> str:
    if as_json:
        document = {
            "benchmark": "store",
            "objects": objects,
            "watchers": watchers,
            "writers": WRITERS,
            "backends": results,
        }
        return json.dumps(document, indent=2)
    title = (
        f"Pinnace store benchmark: {objects} objects, {WRITERS} concurrent writers, "
        f"{watchers} watchers"
    )
    return render_table(title, figures(objects, watchers), results)


def _open(backend: str, path: Path) -> Store:
    if backend == "memory":
        return MemoryStore()
    if backend == "sqlite":
        return SQLiteStore(path)
    raise ValueError(f"unknown store backend {backend!r}; choose from {', '.join(BACKENDS)}")


def _reopen_seconds(path: Path) -> float:
    """How long opening the store's file takes: reading back every object and its history."""
    start = time.perf_counter()
    store = SQLiteStore(path)
    seconds = time.perf_counter() - start
    asyncio.run(store.close())
    return seconds


async def _measure_and_close(store: Store, objects: int, watchers: int) -> Figures:
    try:
        return await _measure(store, objects, watchers)
    finally:
        await store.close()


async def _measure(store: Store, objects: int, watchers: int) -> Figures:
    keys = [f"{PREFIX}pod-{i:06}" for i in range(objects)]
    revisions: dict[str, int] = {}
    latencies: list[float] = []

    created = [_pod(i, 1) for i in range(objects)]

    async def create(i: int) -> None:
        stored = await store.create(keys[i], created[i])
        revisions[keys[i]] = int(stored["metadata"]["resourceVersion"])

    create_seconds = await _concurrently(objects, create, latencies)

    updated = [_pod(i, 2) for i in range(objects)]

    async def update(i: int) -> None:
        key = keys[i]
        stored = await store.update(key, updated[i], revisions[key])
        revisions[key] = int(stored["metadata"]["resourceVersion"])

    update_seconds = await _concurrently(objects, update, latencies)

    start = time.perf_counter()
    for key in keys:
        await store.get(key)
    get_seconds = time.perf_counter() - start

    list_seconds = await _repeat(lambda: store.list(PREFIX))
    paged_list_seconds = await _repeat(lambda: _list_in_pages(store))

    watch_seconds = await _fan_out(store, keys, watchers)

    return {
        "creates_per_s": per_second(objects, create_seconds),
        "updates_per_s": per_second(objects, update_seconds),
        "gets_per_s": per_second(objects, get_seconds),
        "list_ms": statistics.median(list_seconds) * 1000,
        "paged_list_ms": statistics.median(paged_list_seconds) * 1000,
        "watch_events_per_s": per_second(objects * watchers, watch_seconds),
        "write_latency_p50_ms": percentile(latencies, 50) * 1000,
        "write_latency_p99_ms": percentile(latencies, 99) * 1000,
    }


async def _repeat(read: Callable[[], Awaitable[object]]) -> list[float]:
    seconds = []
    for _ in range(LIST_REPEATS):
        start = time.perf_counter()
        await read()
        seconds.append(time.perf_counter() - start)
    return seconds


async def _list_in_pages(store: Store) -> None:
    """Every object, a page at a time, all pages at the first page's revision (as kubectl's
    chunked lists are served)."""
    page = await store.list(PREFIX, limit=PAGE)
    while page.continue_key is not None:
        page = await store.list(
            PREFIX, revision=page.revision, limit=PAGE, start_after=page.continue_key
        )


async def _concurrently(
    count: int, write: Callable[[int], Awaitable[None]], latencies: list[float]
) -> float:
    """Run `write(0..count-1)` from WRITERS clients; the seconds it took overall."""
    todo: Iterator[int] = iter(range(count))

    async def client() -> None:
        for i in todo:
            start = time.perf_counter()
            await write(i)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(WRITERS)))
    return time.perf_counter() - start


async def _fan_out(store: Store, keys: list[str], watchers: int) -> float:
    """Seconds from the first of one update per key until every watcher has seen them all."""
    streams = [store.watch(PREFIX, store.revision) for _ in range(watchers)]

    async def consume(stream: Watch) -> None:
        seen = 0
        async for _ in stream:
            seen += 1
            if seen == len(keys):
                return

    replacements = [_pod(i, 3) for i in range(len(keys))]

    async def update(i: int) -> None:
        await store.update(keys[i], replacements[i], None)

    start = time.perf_counter()
    consumers = [asyncio.ensure_future(consume(stream)) for stream in streams]
    await _concurrently(len(keys), update, [])
    await asyncio.gather(*consumers)
    seconds = time.perf_counter() - start
    for stream in streams:
        stream.close()
    return seconds


def _pod(i: int, generation: int) -> Object:
    """A running pod of typical size (about 700 bytes of JSON)."""
    name = f"pod-{i:06}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"00000000-0000-4000-8000-{i:012}",
            "generation": generation,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "bench", "shard": str(i % 16)},
        },
        "spec": {
            "nodeName": f"node-{i % 100:03}",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                }
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.0.{i // 256 % 256}.{i % 256}",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
