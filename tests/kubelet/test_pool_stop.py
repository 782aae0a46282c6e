"""The control plane's stop ends every node agent's kubelet: a status write still under way is
given up, not left running to fail against the store that closes next (which put a traceback
into `pinnace up`'s log at SIGTERM)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.kubelet.config import node_configs

PODS = catalog.kind("", "pods")


async def _others() -> list[asyncio.Task[Any]]:
    await asyncio.sleep(0)  # cancelled tasks end
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


def test_a_status_write_under_way_at_stop_is_given_up() -> None:
    cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=1))
    try:
        cluster.wait(1)
        answer = asyncio.Event()  # never set: the API server has not answered yet
        patch = cluster.server.patch

        async def unanswered(*args: Any, **kwargs: Any) -> Any:
            await answer.wait()
            return await patch(*args, **kwargs)

        cluster.server.patch = unanswered  # type: ignore[method-assign]
        pod = {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}
        body = {"metadata": {"name": "p"}, "spec": pod}
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(5)
        cluster.run(cluster.plane.stop())
        assert [t.get_coro() for t in cluster.run(_others())] == []
    finally:
        cluster.close()
