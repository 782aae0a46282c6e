"""A `pinnace controller-manager --vpa-storage prometheus` process beside `pinnace up
--no-controllers`, driven by kubectl: its HPA scales a Deployment on a custom metric read
through custom.metrics.k8s.io, and its VPA recommender's first recommendation for a pod
reflects the pod's past usage, read from the API server's usage history over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.http.conftest import launch, stop
from tests.http.test_kubectl_custom_metrics import MANIFESTS as HPA_MANIFESTS
from tests.support import eventually

from pinnace.resources.lists import parse_quantity

BUSY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: busy
spec:
  replicas: 1
  selector:
    matchLabels: {app: busy}
  template:
    metadata:
      labels: {app: busy}
      annotations:
        sim.pinnace.dev/cpu: "spike 100m 900m at 0s for 25s"
    spec:
      containers:
      - {name: app, image: nginx}
"""
VPA = """
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: busy
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: busy}
  updatePolicy: {updateMode: "Off"}
"""
WAIT = 90.0


def test_custom_metrics_and_the_usage_history_reach_a_controller_manager_process(
    tmp_path: Path,
) -> None:
    cluster = launch(tmp_path, flags=("--no-controllers", "--nodes", "2"))
    log = tmp_path / "controller-manager.log"
    with open(log, "w") as out:
        manager = subprocess.Popen(
            [sys.executable, "-m", "pinnace.cli.main", "controller-manager",
             "--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false", "--secure-port=0",
             "--horizontal-pod-autoscaler-sync-period", "2s",
             "--vpa-storage", "prometheus", "--vpa-recommender-interval", "2s",
             "--vpa-history-resolution", "10s"],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    try:
        cluster.ok("apply", "-f", "-", stdin=HPA_MANIFESTS + "---" + BUSY)
        # the HPA: 40 requests a second shared by the pods, 10 a pod wanted: 4 pods
        replicas = "jsonpath={.spec.replicas}"
        eventually(lambda: cluster.ok("get", "deployment", "web", "-o", replicas) == "4", WAIT)

        # the VPA: created once busy's pod ran at 900m and the history holds it, and the spike
        # is over (the metrics API shows 100m)
        pod = (
            eventually(lambda: cluster.ok("get", "pods", "-l", "app=busy", "-o", "name"), WAIT)
            .strip()
            .removeprefix("pod/")
        )

        def spike_in_history() -> bool:
            path = f"/pinnace/history/namespaces/default/pods/{pod}"
            series = json.loads(cluster.ok("get", "--raw", path))
            return max(c for c in series["cpu"] if c is not None) > 0.85  # float32

        eventually(spike_in_history, WAIT)
        eventually(lambda: cluster.ok("top", "pod", pod, "--no-headers").split()[1] == "100m", WAIT)
        cluster.ok("apply", "-f", "-", stdin=VPA)
        target = "jsonpath={.status.recommendation.containerRecommendations[0].target.cpu}"
        cpu = eventually(lambda: cluster.ok("get", "vpa", "busy", "-o", target), WAIT)
        # the spike, read from the history, outweighs the 100m sampled since
        assert parse_quantity(cpu).milli_value() > 500, cpu
        assert "cannot get cluster history" not in log.read_text()
    finally:
        manager.terminate()
        manager.wait(timeout=20)
        stop(cluster)
