"""One codec per cluster: a ControlPlane packs with its store's codec, shares it with the node
agents (whose workers keep the very bytes their pod informer packed), and two clusters in one
process learn apart."""

from __future__ import annotations

import asyncio

from pinnace.api import catalog
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet import node_configs
from pinnace.store import MemoryStore
from pinnace.store.codec import LEARN_AT

PODS = catalog.kind("", "pods")


def pod(name: str) -> dict:
    return {  # in the order the API server stores it
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "spec": {"nodeName": "pinnace-node-1", "containers": [{"name": "app", "image": "nginx"}]},
    }


def test_two_clusters_in_one_process_pack_with_codecs_of_their_own() -> None:
    loop = VirtualEventLoop()
    options = ClusterOptions(nodes=node_configs(1), scheduler=False, controllers=False)
    planes = [ControlPlane(MemoryStore(), Clock(loop), options) for _ in range(2)]
    # Enough pods in the first that its pods' dictionary is learned; the second's never is.
    counts = (min(LEARN_AT) + 6, 3)

    async def scenario() -> list[list[str]]:
        for plane, count in zip(planes, counts, strict=True):
            await plane.start()
            client = plane.client()
            for i in range(count):
                await client.create(PODS, "default", pod(f"web-{i}"))
        await asyncio.sleep(30)
        running = []
        for plane in planes:
            (agent,) = plane.nodes.agents.values()
            running.append(sorted(w.name for w in agent.workers.values()))
            await plane.stop()
        return running

    try:
        running = loop.run_until_complete(scenario())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert running == [sorted(f"web-{i}" for i in range(count)) for count in counts]
    for plane in planes:
        (agent,) = plane.nodes.agents.values()
        assert plane.codec is plane.store.codec is plane.nodes.codec is agent.codec
    assert planes[0].codec is not planes[1].codec
    # The first learned from its pods; the second, which packed none of them, did not.
    sizes = [len(plane.codec.pack(pod("web-1000"))) for plane in planes]
    assert sizes[0] < sizes[1] * 0.8, sizes
