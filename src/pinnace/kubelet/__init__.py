"""The node agent (kubelet) of simulated nodes: registration, lease and node status, pod
admission, pod lifecycle on a container runtime, logs.

`NodeAgent` is one node's kubelet; `NodeAgentPool` runs thousands of them in one process on
shared informers and one heartbeat wheel. Containers run on a `ContainerRuntime`; the
`SimulatedRuntime` follows the behaviour model of `pinnace.kubelet.behaviour`.

One module per job: `config` (a node's shape and kubelet settings), `node_status` (the Node,
its conditions and Lease), `admission` (second-phase admission), `sources` (the ConfigMaps
and Secrets a container needs before it is created), `worker` (one pod's containers over
time), `pod_status` (the status the kubelet reports), `runtime` and `behaviour` (the simulated
containers), `commands` (well-known commands), `usage` (usage over time, CPU sharing), `oom`
(the node's OOM killer), `stats` and `summary` (the stats summary), `gc` (container and image
garbage collection), `failures` (what a failed pass of one of its loops does), `agent` and
`pool` (wiring to the API).
"""

from pinnace.kubelet.agent import NodeAgent
from pinnace.kubelet.config import SIMULATED_LABEL, NodeConfig, node_configs
from pinnace.kubelet.pool import NodeAgentPool
from pinnace.kubelet.runtime import ContainerRuntime, SimulatedRuntime

__all__ = [
    "SIMULATED_LABEL",
    "ContainerRuntime",
    "NodeAgent",
    "NodeAgentPool",
    "NodeConfig",
    "SimulatedRuntime",
    "node_configs",
]
