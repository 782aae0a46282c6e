"""Handlers registered with an interest: the informer hands them only the changes it names,
weighed when the handler would be called, and every other handler hears of every change."""

from __future__ import annotations

import asyncio

import pytest
from tests.client.conftest import CONFIG_MAPS, PODS, Cluster, config_map, pod

from pinnace.api.objects import Object
from pinnace.client import PatchType
from pinnace.client.informer import Informer
from pinnace.client.interest import Changed, Fact, in_namespaces, interest

SETTLE = 5.0


def _labels(obj: Object) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def _tagged(obj: Object) -> bool:
    return "tag" in _labels(obj)


class Heard:
    """What a handler was told, as (what, name)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def add(self, obj: Object) -> None:
        self.seen.append(("add", obj["metadata"]["name"]))

    def update(self, old: Object, new: Object) -> None:
        self.seen.append(("update", new["metadata"]["name"]))

    def delete(self, obj: Object) -> None:
        self.seen.append(("delete", obj["metadata"]["name"]))


def _listen(informer: Informer, **kwargs: object) -> Heard:
    heard = Heard()
    informer.add_event_handler(heard.add, heard.update, heard.delete, **kwargs)  # type: ignore[arg-type]
    return heard


def test_a_handler_hears_only_of_the_changes_its_interest_names(cluster: Cluster) -> None:
    """Of the pods of namespaces holding a ConfigMap; of their updates, those changing labels
    or of a pod being deleted; adds and deletes whatever changed. A handler without an
    interest, registered before and after, hears of everything, in order."""
    client = cluster.client
    pods, maps = Informer(client, PODS), Informer(client, CONFIG_MAPS)
    everything = _listen(pods)
    some = _listen(
        pods,
        interest=interest(
            in_namespaces(maps.namespaces()),
            (Changed((_labels,)), Fact(lambda p: p["metadata"].get("deletionTimestamp"))),
        ),
    )
    after = _listen(pods)

    async def scenario() -> None:
        await client.create(CONFIG_MAPS, "default", config_map("settings"))
        await client.create(PODS, "kube-system", pod("elsewhere", "kube-system"))
        maps.start()
        pods.start()
        await asyncio.gather(maps.wait_for_sync(), pods.wait_for_sync())
        await client.create(PODS, "default", pod("a"))
        patch = {"metadata": {"annotations": {"note": "1"}}}
        await client.patch(PODS, "default", "a", patch, PatchType.MERGE)
        await client.patch(PODS, "default", "a", {"metadata": {"labels": {"tag": "x"}}})
        await client.patch(PODS, "kube-system", "elsewhere", {"metadata": {"labels": {"t": "1"}}})
        await asyncio.sleep(SETTLE)
        await client.create(CONFIG_MAPS, "kube-system", config_map("now", "kube-system"))
        await asyncio.sleep(SETTLE)  # the ConfigMap cached: its namespace counts from now on
        await client.patch(PODS, "kube-system", "elsewhere", {"metadata": {"labels": {"t": "2"}}})
        await client.delete(PODS, "default", "a")
        await asyncio.sleep(SETTLE)
        await asyncio.gather(maps.stop(), pods.stop())

    cluster.run(scenario())
    assert some.seen == [
        ("add", "a"),
        ("update", "a"),  # labelled; the annotation alone was nothing to it
        ("update", "elsewhere"),
        ("update", "a"),  # being deleted
        ("delete", "a"),
    ]
    assert everything.seen == after.seen
    assert everything.seen == [
        ("add", "elsewhere"),
        ("add", "a"),
        ("update", "a"),
        ("update", "a"),
        ("update", "elsewhere"),
        ("update", "elsewhere"),
        ("update", "a"),
        ("delete", "a"),
    ]


def test_a_fact_of_the_old_object_or_the_new_one_meets_it(cluster: Cluster) -> None:
    """An update that takes away what the handler looks for still reaches it."""
    client = cluster.client
    pods = Informer(client, PODS)
    tagged = _listen(pods, interest=interest(Fact(_tagged)))

    async def scenario() -> None:
        pods.start()
        await pods.wait_for_sync()
        await client.create(PODS, "default", pod("plain"))
        await client.create(PODS, "default", pod("tagged", tag="x"))
        untag = {"metadata": {"labels": {"tag": None}}}
        for name in ("plain", "tagged"):
            await client.patch(PODS, "default", name, untag, PatchType.MERGE)
            await client.patch(PODS, "default", name, {"metadata": {"labels": {"other": "1"}}})
        await asyncio.sleep(SETTLE)
        await pods.stop()

    cluster.run(scenario())
    assert tagged.seen == [("add", "tagged"), ("update", "tagged")]


def test_conditions_are_weighed_again_after_a_handler_awaited(cluster: Cluster) -> None:
    """A condition reads the caches as the handler would have: a coroutine handler before it
    may change them meanwhile."""
    client = cluster.client
    pods, maps = Informer(client, PODS), Informer(client, CONFIG_MAPS)
    scoped = interest(in_namespaces(maps.namespaces()))
    before = _listen(pods, interest=scoped)

    async def make_a_config_map(obj: Object) -> None:
        await client.create(CONFIG_MAPS, obj["metadata"]["namespace"], config_map("made"))
        while "made" not in [m["metadata"]["name"] for m in maps.list()]:
            await asyncio.sleep(0.1)

    pods.add_event_handler(on_add=make_a_config_map)
    after = _listen(pods, interest=scoped)

    async def scenario() -> None:
        maps.start()
        pods.start()
        await asyncio.gather(maps.wait_for_sync(), pods.wait_for_sync())
        await client.create(PODS, "default", pod("a"))
        await asyncio.sleep(SETTLE)
        await asyncio.gather(maps.stop(), pods.stop())

    cluster.run(scenario())
    assert before.seen == []
    assert after.seen == [("add", "a")]


def test_a_handler_takes_an_interest_or_a_selection_not_both(cluster: Cluster) -> None:
    pods = Informer(cluster.client, PODS)
    with pytest.raises(ValueError, match="not both"):
        pods.add_event_handler(
            on_add=lambda _: None, selects=lambda _: True, interest=interest(Fact(_tagged))
        )
