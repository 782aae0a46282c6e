"""`pinnace node stop|start|partition|slow NAME` on a running cluster: the pool's faults
(`NodeAgentPool.fail_node`, `recover_node`, `partition`, `slow`) as the API server's
Pinnace-only path asks for them, answered with the node's state, or refused with the Status
that says why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pinnace.api import status
from pinnace.api.status import StatusError
from pinnace.kubelet.pool import NodeAgentPool, NotRunning

FAULTS: dict[str, Callable[[NodeAgentPool, str], Awaitable[None]]] = {
    "stop": NodeAgentPool.fail_node,
    "start": NodeAgentPool.recover_node,
    "partition": NodeAgentPool.partition,
}
SLOW = "slow"


async def inject(
    pool: NodeAgentPool, node: str, fault: str, query: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Inject `fault` ("stop", "start", "partition", or "slow" with the query's `factor`)
    into the simulated node `node`; its state afterwards."""
    try:
        if fault == SLOW:
            await pool.slow(node, _factor(query))
        elif fault in FAULTS:
            await FAULTS[fault](pool, node)
        else:
            known = ", ".join([*FAULTS, SLOW])
            raise StatusError(404, "NotFound", f'no node fault "{fault}" (one of {known})', {})
    except NotRunning as e:
        if node in pool.failed:
            raise status.conflict("nodes", node, "its kubelet is stopped: start it first") from e
        raise StatusError(
            404, "NotFound", f'node "{node}" is not a simulated node of this cluster', {}
        ) from e
    return node_state(pool, node)


def node_state(pool: NodeAgentPool, node: str) -> dict[str, Any]:
    """The node's agent: Running, Stopped or Partitioned, and how slowed its heartbeats are."""
    if node in pool.failed:
        state = "Stopped"
    elif node in pool.partitioned:
        state = "Partitioned"
    else:
        state = "Running"
    return {"node": node, "state": state, "slowness": pool.slowness(node)}


def _factor(query: Mapping[str, Sequence[str]]) -> float:
    text = (query.get("factor") or [""])[-1]
    try:
        factor = float(text)
    except ValueError:
        factor = 0.0
    if not factor >= 1 or factor == float("inf"):
        raise status.bad_request(f'slow needs a factor of at least 1, not "{text}"')
    return factor
