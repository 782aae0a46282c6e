"""The stats summaries of the nodes `pinnace agent` processes run, as the metrics API and the
usage history read them: one request to each agent process for all of its nodes
(`pinnace.api.stats.SUMMARIES_PATH`), in place of one /stats/summary a node, which is how
metrics-server scrapes kubelets (and how an agent that does not serve that path is read).

Which process serves a node is learnt from the answers. Nodes go first by their kubelet port
(one process's, normally), asked at one of them, since any address of a process reaches all
of its nodes; from then on the nodes an answer covered are asked together, and those of the
group it did not cover (another process's, on another machine or address with the same port)
are asked next. A node the process cannot serve (the API server cannot reach it), or whose
process fails or does not answer, is left out, as metrics-server leaves out a node it could
not scrape, and told once until it answers again.

What is learnt and told of a node is kept for as long as it is an agent process's: a watch of
those Nodes (started at the first scrape) reports each one deleted, or no longer labelled as
an agent's, and it is forgotten then, at no cost to the scrapes (told again if it comes back
failing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import urlencode

import orjson

from pinnace.api.objects import Object
from pinnace.api.stats import SUMMARIES_PATH, Summary, from_compact, summary_of
from pinnace.api.status import StatusError
from pinnace.apiserver.kubelets import Kubelets
from pinnace.clock.component import StartedOnFirstUse

log = logging.getLogger(__name__)

FEW = 32
"""A request names the nodes it wants of a process when they are at most this many (pods'
metrics read only their pods' nodes); more, and it asks for all the process's."""
SCRAPES_AT_ONCE = 32
"""How many nodes' /stats/summary are read at the same time, of an agent without
SUMMARIES_PATH."""
NAMED = 3
"""Nodes named in a warning about many."""
UNANSWERED = (StatusError, OSError, ValueError, KeyError, TypeError, AttributeError)
"""What reading an agent raises when it cannot be reached, refuses, or answers no summaries."""


class NodeWatch(Protocol):
    """The agent processes' Nodes, as an informer of the client package watches them."""

    def add_event_handler(self, *, on_delete: Callable[[Object], Any]) -> Any: ...
    def start(self) -> Any: ...
    async def wait_for_sync(self) -> Any: ...
    async def stop(self) -> None: ...


async def fetch_summary(kubelets: Kubelets, node: Object) -> Summary:
    """The node's /stats/summary, what metrics-server scrapes: a StatusError when its kubelet
    cannot be reached or refuses, a ValueError or KeyError when its answer is no summary."""
    body = await kubelets.get(node, "/stats/summary")
    return summary_of(orjson.loads(b"".join([chunk async for chunk in body])))


class AgentSummaries:
    """Reads the summaries of agent processes' nodes; one per reader, which keeps what it has
    learnt of the processes and told of the nodes."""

    def __init__(
        self, kubelets: Kubelets, purpose: str = "", nodes: NodeWatch | None = None
    ) -> None:
        """`purpose`: what the warnings say the scrape was for (" for the usage history");
        `nodes`: the agent processes' Nodes, watched from the first scrape (until `stop`) to
        forget those deleted."""
        self.kubelets = kubelets
        self.purpose = purpose
        self._nodes = StartedOnFirstUse(() if nodes is None else (nodes,))
        if nodes is not None:
            nodes.add_event_handler(on_delete=self.forget)
        self._served_with: dict[str, str] = {}
        """Node -> the node it was last asked with, whose agent process answered for both."""
        self._unreachable: set[str] = set()
        """The nodes told of, whose last scrape failed."""
        self._turn = 0

    def remote(self, node: Object) -> bool:
        """Whether a `pinnace agent` process runs the Node's kubelet."""
        return self.kubelets.remote(node)

    async def start(self) -> None:
        """Nothing: the watch of the Nodes starts with the first scrape."""

    async def stop(self) -> None:
        await self._nodes.stop()

    def forget(self, node: Object) -> None:
        """The Node is gone, or no longer an agent process's: what was learnt and told of it
        goes (nodes asked with it are asked at another of their group next)."""
        name = node["metadata"]["name"]
        self._served_with.pop(name, None)
        self._unreachable.discard(name)

    async def scrape(
        self, nodes: Iterable[Object], timeout: float | None = None
    ) -> dict[str, Summary]:
        """The summaries of those of `nodes` that answer within `timeout` seconds (None: as
        long as their agents take), by node name; the others are left out."""
        await self._nodes.ready()
        wanted = {node["metadata"]["name"]: node for node in nodes}
        found: dict[str, Summary] = {}
        failed: dict[str, str] = {}
        self._turn += 1
        reading = asyncio.ensure_future(self._read(wanted, found, failed))
        try:
            await asyncio.wait([reading], timeout=timeout)
        finally:
            if not reading.done():
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
        if not reading.cancelled():
            reading.result()
        late = {name: "no answer in time" for name in wanted.keys() - found.keys() - failed.keys()}
        self._tell(failed | late)
        self._unreachable -= found.keys()
        return found

    async def _read(
        self, wanted: Mapping[str, Object], found: dict[str, Summary], failed: dict[str, str]
    ) -> None:
        """Ask the processes, in rounds, until every node wanted is answered for."""
        pending = dict(wanted)
        while pending:
            groups = self._groups(pending)
            asked = (self._ask(group, wanted, found, failed) for group in groups)
            covered = await asyncio.gather(*asked)
            for group, answered in zip(groups, covered, strict=True):
                asked_with = group[0]["metadata"]["name"]
                for name in answered:  # the group's, and others' the process turned out to run
                    self._served_with[name] = asked_with
                    pending.pop(name, None)
                for node in group:
                    name = node["metadata"]["name"]
                    if name in pending:  # another process's: asked next round, by port
                        self._served_with.pop(name, None)

    def _groups(self, pending: Mapping[str, Object]) -> list[list[Object]]:
        """The pending nodes by the process they are thought to run on, each group headed by
        the node to ask it at (each turn another, for a group not yet answered, so that a
        process gone does not keep those of another on the same port unasked)."""
        by_key: dict[tuple[str, str], list[Object]] = {}
        for name, node in pending.items():
            asked_with = self._served_with.get(name)
            key = ("with", asked_with) if asked_with else ("port", _port(node))
            by_key.setdefault(key, []).append(node)
        groups = []
        for key, group in by_key.items():
            if key[0] == "with":
                head = next((i for i, n in enumerate(group) if n["metadata"]["name"] == key[1]), 0)
            else:
                head = self._turn % len(group)
            groups.append([group[head], *group[:head], *group[head + 1 :]])
        return groups

    async def _ask(
        self,
        group: list[Object],
        wanted: Mapping[str, Object],
        found: dict[str, Summary],
        failed: dict[str, str],
    ) -> set[str]:
        """Ask the process at the group's first node for the group's summaries (for all of its
        nodes, when the group has more than FEW); the names of those wanted it answered for
        (the first node's always, as not found if the process does not run it)."""
        names = [node["metadata"]["name"] for node in group]
        path = SUMMARIES_PATH
        if len(names) <= FEW:
            path += "?" + urlencode([("node", name) for name in names])
        answered: set[str] = set()
        try:
            body = await self.kubelets.get(group[0], path)
            rest = b""
            async for chunk in body:  # a line at a time, as the process reads its nodes
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    answered |= _take(orjson.loads(line), wanted, found, failed)
            if rest.strip():
                answered |= _take(orjson.loads(rest), wanted, found, failed)
        except StatusError as e:
            if e.code == 404:  # an agent without SUMMARIES_PATH: each node's kubelet path
                return await self._each(group, found, failed)
            failed.update(dict.fromkeys(set(names) - answered, e.message))
            return set(names)
        except UNANSWERED as e:
            failed.update(dict.fromkeys(set(names) - answered, str(e)))
            return set(names)
        if names[0] not in answered:
            failed[names[0]] = f'nodes "{names[0]}" not found'
            answered.add(names[0])
        return answered

    async def _each(
        self, group: list[Object], found: dict[str, Summary], failed: dict[str, str]
    ) -> set[str]:
        at_once = asyncio.Semaphore(SCRAPES_AT_ONCE)

        async def scrape(node: Object) -> None:
            name = node["metadata"]["name"]
            async with at_once:
                try:
                    found[name] = await fetch_summary(self.kubelets, node)
                except UNANSWERED as e:
                    failed[name] = e.message if isinstance(e, StatusError) else str(e)

        await asyncio.gather(*(scrape(node) for node in group))
        return {node["metadata"]["name"] for node in group}

    def _tell(self, failed: Mapping[str, str]) -> None:
        """Warn of the nodes newly unanswered, one line for those failing alike."""
        by_why: dict[str, list[str]] = {}
        for name, why in failed.items():
            if name not in self._unreachable:
                self._unreachable.add(name)
                by_why.setdefault(why, []).append(name)
        for why, names in by_why.items():
            if len(names) == 1:
                which = f"node {names[0]}"
            else:
                more = ", …" if len(names) > NAMED else ""
                which = f"{len(names)} nodes ({', '.join(sorted(names)[:NAMED])}{more})"
            log.warning("Failed to scrape %s%s: %s", which, self.purpose, why)


def _take(
    line: Mapping[str, Any],
    wanted: Mapping[str, Object],
    found: dict[str, Summary],
    failed: dict[str, str],
) -> set[str]:
    """Take what a line of the answer says of the nodes wanted: the names it answered for."""
    summaries, unreachable = line["summaries"], line["unreachable"]
    read = {name: from_compact(row) for name, row in summaries.items() if name in wanted}
    cut_off = {name: str(why) for name, why in unreachable.items() if name in wanted}
    found.update(read)
    failed.update(cut_off)
    return read.keys() | cut_off.keys()


def _port(node: Object) -> str:
    """The Node's kubelet port, which the nodes of one process share."""
    endpoints = (node.get("status") or {}).get("daemonEndpoints") or {}
    return str((endpoints.get("kubeletEndpoint") or {}).get("Port"))
