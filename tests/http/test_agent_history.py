"""The usage history of a `pinnace agent` process's node: `pinnace apiserver` scrapes the
agent's kubelet endpoint (its /stats/summary) every resolution, as metrics-server scrapes every
kubelet, so the history (the dashboard's charts, the VPA's `--vpa-storage prometheus`) has the
usage of pods that run there; an agent that is gone leaves its nodes out of later samples and
the sampling goes on."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from tests.http.conftest import Cluster, Process, launch, stop
from tests.http.test_component_processes import eventually, ready_nodes

MI = 1024 * 1024


def history(cluster: Cluster) -> dict[str, Any] | None:
    path = "/pinnace/history/namespaces/default/pods/hello/containers/hello"
    try:
        with urllib.request.urlopen(cluster.url + path, timeout=20) as response:
            found: dict[str, Any] = json.load(response)
            return found
    except urllib.request.HTTPError as e:
        assert e.code == 404, e.read()
        return None


def test_the_usage_history_samples_an_agent_process_s_pods(
    tmp_path: Path, processes: list[Process]
) -> None:
    cluster = launch(tmp_path, command="apiserver")
    try:
        agent = Process(tmp_path, "agent", "agent", "--kubeconfig", str(cluster.kubeconfig),
                        "--nodes", "1", "--port", "0", "--name-prefix", "far")  # fmt: skip
        processes.append(agent)
        eventually("the agent's node is Ready", lambda: ready_nodes(cluster) == ["far-1"])
        cluster.ok("run", "hello", "--image=busybox", "--command",
                   '--overrides={"spec": {"nodeName": "far-1"}}',
                   "--annotations=sim.pinnace.dev/cpu=250m",
                   "--annotations=sim.pinnace.dev/memory=100Mi",
                   "--", "sleep", "3600")  # fmt: skip
        cluster.ok("wait", "pod/hello", "--for=condition=Ready", "--timeout=60s")

        def sampled() -> bool:
            found = history(cluster)
            return found is not None and found["cpu"][-1] is not None

        eventually("a sample of the agent's pod", sampled)
        found = history(cluster)
        assert found is not None
        assert abs(found["cpu"][-1] - 0.25) < 1e-9
        assert found["memory"][-1] == 100 * MI

        agent.popen.kill()
        agent.popen.wait()
        count = len(found["time"])

        def sampled_without_it() -> bool:
            later = history(cluster)
            return later is not None and len(later["time"]) > count and later["cpu"][-1] is None

        eventually("a sample after the agent is gone, without its pod", sampled_without_it)
        assert cluster.process.poll() is None
        log = (tmp_path / "server.log").read_text()
        assert log.count("Failed to scrape node far-1 for the usage history") == 1
    finally:
        stop(cluster)
