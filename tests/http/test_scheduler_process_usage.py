"""A `pinnace scheduler --config` process running TargetLoadPacking beside `pinnace up
--no-scheduler`: it reads node usage through the metrics API (what `kubectl top nodes` shows)
and packs pods onto the loaded node up to the target, as `pinnace up`'s own scheduler would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.http.conftest import launch, stop
from tests.support import eventually, score_only_config

CONFIG = score_only_config(
    "TargetLoadPacking", '{usageWindow: 1s, usageSampleInterval: 1s, defaultRequests: {cpu: "0"}}'
)
SAMPLE_INTERVAL = 1.0
NODE = "jsonpath={.spec.nodeName}"


def pod(name: str, cpu: str, node: str = "") -> str:
    """A pod using `cpu`: pinned to `node` without resources (TargetLoadPacking predicts the
    configured default, none, for it: only the measured usage counts), else limited to it."""
    container: dict = {"name": "app", "image": "nginx"}
    spec: dict = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    else:
        container["resources"] = {"limits": {"cpu": cpu}}
    metadata = {"name": name, "annotations": {"sim.pinnace.dev/cpu": cpu}}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def test_target_load_packing_in_a_scheduler_process_packs_the_loaded_node(
    tmp_path: Path,
) -> None:
    cluster = launch(tmp_path, flags=("--no-scheduler", "--nodes", "2"))
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG)
    log = tmp_path / "scheduler.log"
    with open(log, "w") as out:
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "pinnace.cli.main", "scheduler",
             "--kubeconfig", str(cluster.kubeconfig), "--config", str(config), "--secure-port=0"],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    try:
        # pinnace-node-2 uses 1 of its 4 cores, pinnace-node-1 nothing
        cluster.ok("create", "-f", "-", stdin=pod("busy", "1", "pinnace-node-2"))

        def top() -> dict[str, str]:
            lines = cluster.ok("top", "nodes", "--no-headers").splitlines()
            used = {line.split()[0]: line.split()[1] for line in lines}
            assert used.get("pinnace-node-2") == "1000m", used
            return used

        eventually(top)
        eventually(lambda: "successfully acquired lease" in log.read_text())
        time.sleep(3 * SAMPLE_INTERVAL)  # the scheduler's samples now hold the busy pod
        # Each 100m pod keeps pinnace-node-2 under the 40 % target (27.5 %, 30 %, 32.5 %:
        # scores 81, 85, 89 against pinnace-node-1's 44): packed there, one by one.
        for i in range(3):
            cluster.ok("create", "-f", "-", stdin=pod(f"packed-{i}", "100m"))
            node = eventually(lambda i=i: cluster.ok("get", "pod", f"packed-{i}", "-o", NODE))
            assert node == "pinnace-node-2"
        assert "Unable to update metrics" not in log.read_text()
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=20)
        stop(cluster)
