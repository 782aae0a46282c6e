"""Reading the stats summaries of agent processes' nodes (`AgentSummaries`): one request an
agent process for all its nodes, the same figures as each node's /stats/summary, a node its
process cannot serve or a process gone left out and told once, each node's kubelet path for
an agent that does not serve the bulk one, and nothing kept of a node once gone."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.stats import (
    SUMMARIES_PATH,
    ContainerStats,
    NodeStats,
    PodStats,
    Summary,
    compact,
    summary_of,
)
from pinnace.api.status import StatusError
from pinnace.apiserver.agent_summaries import FEW, AgentSummaries
from pinnace.client import Informer, LocalClient
from pinnace.clock.virtual import VirtualClock
from pinnace.kubelet.config import AGENT_LABEL
from pinnace.kubelet.endpoints import stats_summary

MI = 1024 * 1024


def summary_on(node: str, t: float) -> Summary:
    main, side = ContainerStats("main", 250_000_000, 100 * MI), ContainerStats("side", 7, 3)
    pod = PodStats(f"uid-{node}", "default", f"pod-{node}", [main, side])
    return Summary(t + 0.4, NodeStats(300_000_000, memory_working_set_bytes=2 * 1024 * MI), [pod])


class Agents:
    """Agent processes as the API server reaches them (a `Kubelets`): each node at its own
    address, all on one port; a process answers SUMMARIES_PATH (unless `old`) and each node's
    /stats/summary, at any of its nodes' addresses."""

    def __init__(self, clock: Any, processes: dict[str, list[str]]) -> None:
        self.clock = clock
        self.process_of = {node: p for p, nodes in processes.items() for node in nodes}
        self.nodes = processes
        self.gone: set[str] = set()
        self.old: set[str] = set()
        self.cut_off: set[str] = set()
        self.asked: list[tuple[str, str]] = []

    def remote(self, node: Object) -> bool:
        return True

    async def get(self, node: Object, path: str) -> AsyncIterator[bytes]:
        name = node["metadata"]["name"]
        process = self.process_of[name]
        self.asked.append((process, path))
        if process in self.gone:
            raise StatusError(500, "", f'Get "http://{name}:10250{path}": connection refused')
        url = urlsplit(path)
        if url.path == SUMMARIES_PATH and process not in self.old:
            wanted = parse_qs(url.query).get("node") or self.nodes[process]
            ours = [n for n in wanted if n in self.nodes[process]]
            now = self.clock.now()
            answer = {
                "summaries": {
                    n: compact(summary_on(n, now)) for n in ours if n not in self.cut_off
                },
                "unreachable": {n: f'no route to node "{n}"' for n in ours if n in self.cut_off},
            }
            return _body(orjson.dumps(answer))
        if url.path == "/stats/summary":
            if name in self.cut_off:
                raise StatusError(503, "ServiceUnavailable", f'no route to node "{name}"')
            return _body(stats_summary(name, summary_on(name, self.clock.now()), [], 0.0, {}))
        raise StatusError(404, "NotFound", "404 page not found\n")

    async def post(self, node: Object, path: str) -> dict[str, Any]:
        raise AssertionError("not asked")

    async def upgrade(self, *args: Any) -> Any:
        raise AssertionError("not asked")


async def _body(data: bytes) -> AsyncIterator[bytes]:
    yield data


def nodes(*names: str) -> list[Object]:
    return [{"metadata": {"name": name}} for name in names]


def per_node(name: str, t: float) -> Summary:
    """What the node's /stats/summary answers, as metrics-server reads it."""
    return summary_of(orjson.loads(stats_summary(name, summary_on(name, t), [], 0.0, {})))


def told(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Failed")]


def test_each_agent_process_is_asked_once_for_all_its_nodes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two processes on one port (two machines): the first answer tells which nodes are the
    asked process's, the others are asked of the other; from then on, one request each. A node
    its process cannot serve is left out and told once; a process gone, once for its nodes."""
    big = [f"a-{i}" for i in range(1, FEW + 10)]
    scraped: list[dict[str, Summary]] = []

    async def scenario() -> None:
        reader = AgentSummaries(agents, " for the test")
        wanted = nodes(*big, "b-1", "b-2")
        scraped.append(await reader.scrape(wanted))
        first = len(agents.asked)
        agents.asked.clear()
        scraped.append(await reader.scrape(wanted, timeout=1.0))
        assert sorted(p for p, _ in agents.asked) == ["a", "b"]
        assert all(path == SUMMARIES_PATH for p, path in agents.asked if p == "a")
        assert first <= 3
        agents.gone.add("b")
        scraped.append(await reader.scrape(wanted, timeout=1.0))
        scraped.append(await reader.scrape(wanted, timeout=1.0))

    with VirtualClock() as clock, caplog.at_level(logging.WARNING):
        agents = Agents(clock, {"a": big, "b": ["b-1", "b-2"]})
        agents.cut_off.add("a-3")
        clock.run(scenario())
    answering = set(big) - {"a-3"}
    assert set(scraped[0]) == set(scraped[1]) == answering | {"b-1", "b-2"}
    assert set(scraped[2]) == set(scraped[3]) == answering
    assert all(s == per_node(name, s.time) for name, s in scraped[0].items())
    a_3, b = told(caplog)
    assert a_3 == 'Failed to scrape node a-3 for the test: no route to node "a-3"'
    assert b.startswith('Failed to scrape 2 nodes (b-1, b-2) for the test: Get "http://b-')
    assert b.endswith(": connection refused")


def test_an_agent_without_the_bulk_path_has_each_node_scraped() -> None:
    scraped: dict[str, Summary] = {}

    async def scenario() -> None:
        scraped.update(await AgentSummaries(agents).scrape(nodes("old-1", "old-2")))

    with VirtualClock() as clock:
        agents = Agents(clock, {"old": ["old-1", "old-2"]})
        agents.old.add("old")
        clock.run(scenario())
    assert scraped == {n: per_node(n, scraped[n].time) for n in ("old-1", "old-2")}
    assert [path for _, path in agents.asked].count("/stats/summary") == 2


def test_nodes_first_seen_later_are_asked_with_the_rest_of_their_process() -> None:
    """An agent's nodes register over time: once an answer for all of the process's nodes has
    covered those first seen later, one request a turn reads them all."""
    names = [f"a-{i}" for i in range(1, 2 * FEW + 20)]
    last: dict[str, Summary] = {}

    async def scenario() -> None:
        reader = AgentSummaries(agents)
        await reader.scrape(nodes(*names[: FEW + 5]))
        await reader.scrape(nodes(*names))
        agents.asked.clear()
        last.update(await reader.scrape(nodes(*names)))

    with VirtualClock() as clock:
        agents = Agents(clock, {"a": names})
        clock.run(scenario())
    assert sorted(last) == sorted(names)
    assert agents.asked == [("a", SUMMARIES_PATH)]


NODES = catalog.kind("", "nodes")


def test_a_node_gone_is_forgotten_and_told_of_again_if_it_comes_back_failing(
    api: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """What a reader learnt and told of a node goes with the node (deleted, or no longer an
    agent process's), as its watch of the agent processes' Nodes reports it: a node of the
    same name that fails later is told of again."""
    client = LocalClient(api.server)
    agents = Agents(api.server.clock, {"a": ["a-1", "a-2"]})
    agents.cut_off.add("a-2")
    watched = Informer(client, NODES, label_selector=AGENT_LABEL)
    reader = AgentSummaries(agents, " for the test", nodes=watched)

    def register(name: str) -> None:
        body = {"metadata": {"name": name, "labels": {AGENT_LABEL: "a"}}}
        api.run(client.create(NODES, "", body))

    def scrape() -> set[str]:
        listed = api.run(client.list(NODES, "", label_selector=AGENT_LABEL))["items"]
        return set(api.run(reader.scrape(listed)))

    register("a-1")
    register("a-2")
    with caplog.at_level(logging.WARNING):
        assert scrape() == {"a-1"}
        assert scrape() == {"a-1"}  # told once
        api.run(client.delete(NODES, "", "a-2"))
        api.run(asyncio.sleep(1))
        assert "a-2" not in reader._served_with  # nothing is kept of a node gone
        register("a-2")  # the same name, still failing
        assert scrape() == {"a-1"}
        node = clone(api.run(client.get(NODES, "", "a-2")))
        del node["metadata"]["labels"][AGENT_LABEL]  # no longer an agent process's
        api.run(client.update(NODES, node))
        api.run(asyncio.sleep(1))
        node = clone(api.run(client.get(NODES, "", "a-2")))
        node["metadata"].setdefault("labels", {})[AGENT_LABEL] = "a"  # its last label went
        api.run(client.update(NODES, node))
        assert scrape() == {"a-1"}
    api.run(reader.stop())
    warning = 'Failed to scrape node a-2 for the test: no route to node "a-2"'
    assert told(caplog) == [warning] * 3
