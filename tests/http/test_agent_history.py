"""The usage history of a `pinnace agent` process's nodes: `pinnace apiserver` scrapes the
agent's kubelet endpoint (the summaries of all its nodes at once) every resolution, so the
history (the dashboard's charts, the VPA's `--vpa-storage prometheus`) has the usage of pods
that run there, and `kubectl top` reads it; a node the API server cannot reach, or an agent
that is gone, leaves its nodes out of later samples (told once) and the sampling goes on."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from tests.http.conftest import Cluster, Process, launch, stop
from tests.http.test_component_processes import eventually, ready_nodes

from pinnace.api.stats import SUMMARIES_PATH, from_compact, summary_of

MI = 1024 * 1024


def history(cluster: Cluster, pod: str = "hello") -> dict[str, Any] | None:
    path = f"/pinnace/history/namespaces/default/pods/{pod}/containers/{pod}"
    try:
        with urllib.request.urlopen(cluster.url + path, timeout=20) as response:
            found: dict[str, Any] = json.load(response)
            return found
    except urllib.request.HTTPError as e:
        assert e.code == 404, e.read()
        return None


def run_on(cluster: Cluster, pod: str, node: str, cpu: str, memory: str) -> None:
    cluster.ok("run", pod, "--image=busybox", "--command",
               f'--overrides={{"spec": {{"nodeName": "{node}"}}}}',
               f"--annotations=sim.pinnace.dev/cpu={cpu}",
               f"--annotations=sim.pinnace.dev/memory={memory}",
               "--", "sleep", "3600")  # fmt: skip
    cluster.ok("wait", f"pod/{pod}", "--for=condition=Ready", "--timeout=60s")


def test_the_usage_history_samples_an_agent_process_s_pods(
    tmp_path: Path, processes: list[Process]
) -> None:
    cluster = launch(tmp_path, command="apiserver")
    try:
        agent = Process(tmp_path, "agent", "agent", "--kubeconfig", str(cluster.kubeconfig),
                        "--nodes", "2", "--port", "0", "--name-prefix", "far")  # fmt: skip
        processes.append(agent)
        eventually(
            "the agent's nodes are Ready", lambda: ready_nodes(cluster) == ["far-1", "far-2"]
        )
        run_on(cluster, "hello", "far-1", "250m", "100Mi")
        run_on(cluster, "there", "far-2", "100m", "50Mi")

        def sampled(pod: str) -> bool:
            found = history(cluster, pod)
            return found is not None and found["cpu"][-1] is not None

        eventually("a sample of the agent's pods", lambda: sampled("hello") and sampled("there"))
        found = history(cluster)
        assert found is not None
        assert abs(found["cpu"][-1] - 0.25) < 1e-9
        assert found["memory"][-1] == 100 * MI
        assert cluster.ok("top", "pod", "hello", "--no-headers").split() == [
            "hello",
            "250m",
            "100Mi",
        ]
        # what the history and kubectl top read of the agent: its nodes' /stats/summary figures
        bulk: dict[str, Any] = {}
        for line in cluster.ok(
            "get", "--raw", f"/api/v1/nodes/far-1/proxy{SUMMARIES_PATH}"
        ).split():
            bulk |= json.loads(line)["summaries"]
        assert sorted(bulk) == ["far-1", "far-2"]
        for node in bulk:
            each = summary_of(
                json.loads(cluster.ok("get", "--raw", f"/api/v1/nodes/{node}/proxy/stats/summary"))
            )
            read = from_compact(bulk[node])
            assert (read.node, read.pods) == (each.node, each.pods) and read.pods

        # far-2 cut off from the API server: left out of the samples and of kubectl top
        empty = tmp_path / "empty"
        empty.write_text("")
        cluster.ok("create", "--raw", "/pinnace/nodes/far-2/partition", "-f", str(empty))

        def left_out() -> bool:
            there = history(cluster, "there")
            return there is not None and there["cpu"][-1] is None and sampled("hello")

        eventually("a sample without the pod of the node cut off", left_out)
        for _ in range(2):
            rows = [r.split() for r in cluster.ok("top", "node", "--no-headers").splitlines()]
            assert [r[0] for r in rows] == ["far-1", "far-2"]
            assert rows[1][1:] == ["<unknown>"] * 4 and rows[0][1] != "<unknown>"
        log = (tmp_path / "server.log").read_text()
        assert log.count("Failed to scrape node far-2 for the usage history") == 1
        assert log.count("Failed to scrape node far-2: ") == 1  # kubectl top's, told once

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
        assert log.count("Failed to scrape node far-2 for the usage history") == 1
    finally:
        stop(cluster)
