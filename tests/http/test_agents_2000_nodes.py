"""Remote agents registering 2,000 nodes from two agent processes (the issue's figure): two
`pinnace agent`s of 1,000 nodes each against one `pinnace apiserver`, each node registering
its Node, its Lease and its status through the API server until every Node is Ready.
docs/processes.md ("Figures") has the time this takes and the processes' memory."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

from tests.http.conftest import Cluster, Process, launch, stop

NODES_PER_AGENT = 1000
LIMIT = 300.0
"""A generous bound on the whole registration (about a minute on a loaded 2-core machine),
so a registration that never finishes fails rather than hangs."""
POLL = 3.0
"""Between lists of the 2,000 Nodes (several MB each), so polling does not slow the server."""


def ready_nodes(cluster: Cluster) -> set[str]:
    with urllib.request.urlopen(f"{cluster.url}/api/v1/nodes", timeout=60) as response:
        nodes = json.load(response)["items"]
    return {
        n["metadata"]["name"]
        for n in nodes
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in n.get("status", {}).get("conditions", [])
        )
    }


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kib) / 1024


def test_two_agent_processes_register_2000_nodes_all_ready(
    tmp_path: Path, processes: list[Process]
) -> None:
    cluster = launch(tmp_path, command="apiserver")
    agents = {"east": 1, "west": 1 + NODES_PER_AGENT}
    expected = {f"{p}-{i}" for p in agents for i in range(1, NODES_PER_AGENT + 1)}
    try:
        started = time.monotonic()
        for prefix, first in agents.items():
            flags = ("--nodes", str(NODES_PER_AGENT), "--port", "0", "--first-index", str(first))
            kubeconfig = ("--kubeconfig", str(cluster.kubeconfig), "--name-prefix", prefix)
            processes.append(Process(tmp_path, f"agent-{prefix}", "agent", *kubeconfig, *flags))
        while (ready := ready_nodes(cluster)) != expected:
            assert ready <= expected
            assert all(p.popen.poll() is None for p in processes), "an agent process exited"
            assert time.monotonic() - started < LIMIT, f"{len(ready)} nodes Ready"
            time.sleep(POLL)
        agents_rss = ", ".join(f"{rss_mib(p.popen.pid):.0f}" for p in processes)
        print(
            f"\n{len(expected)} nodes Ready {time.monotonic() - started:.1f}s after the agents "
            f"started; the agents' RSS {agents_rss} MiB, the API server's "
            f"{rss_mib(cluster.process.pid):.0f} MiB"
        )
        for process in processes:
            assert process.terminate() == 0
            assert "Traceback" not in process.log.read_text()
    finally:
        stop(cluster)
