"""`pinnace agent` started before its API server, as a kubelet under a service manager often
is: each node tries to register again and again (registerWithAPIServer's back-off), and
registers once the server answers; a SIGTERM meanwhile stops the process cleanly."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import yaml
from tests.http.conftest import Process, launch, stop

WAIT = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kubeconfig(path: Path, port: int) -> Path:
    """A kubeconfig naming plain HTTP on `port` (nothing authenticated there)."""
    cluster = {"name": "pinnace", "cluster": {"server": f"http://127.0.0.1:{port}"}}
    context = {"name": "pinnace", "context": {"cluster": "pinnace", "user": "admin"}}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "contexts": [context],
        "current-context": "pinnace",
        "users": [{"name": "admin", "user": {}}],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_agent_started_before_its_api_server_registers_its_nodes_once_it_answers(
    tmp_path: Path,
) -> None:
    port, nowhere = _free_port(), _free_port()
    agents = [
        Process(tmp_path, name, "agent", "--kubeconfig", str(_kubeconfig(tmp_path / name, p)),
                "--nodes", "2", "--name-prefix", name, "--port", "0")
        for name, p in (("early", port), ("alone", nowhere))
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT
        while not all(a.said("node registration failed: cannot connect to") for a in agents):
            assert all(a.popen.poll() is None for a in agents), [a.log.read_text() for a in agents]
            assert time.monotonic() < deadline, [a.log.read_text() for a in agents]
            time.sleep(0.2)
        early, alone = agents
        assert alone.terminate() == 0  # still registering: a SIGTERM stops it
        cluster = launch(tmp_path, flags=("--port", str(port)), command="apiserver")
        try:
            while True:
                nodes = json.loads(cluster.ok("get", "nodes", "-o", "json"))["items"]
                ready = sorted(
                    n["metadata"]["name"]
                    for n in nodes
                    if any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"].get("conditions", [])
                    )
                )
                if ready == ["early-1", "early-2"]:
                    break
                assert time.monotonic() < deadline + WAIT, early.log.read_text()
                time.sleep(0.5)
            assert early.terminate() == 0
        finally:
            stop(cluster)
        for agent in agents:
            assert "Traceback" not in agent.log.read_text()
    finally:
        for agent in agents:
            if agent.popen.poll() is None:
                agent.popen.kill()
                agent.popen.wait()
