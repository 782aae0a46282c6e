"""An HPA whose target is a custom resource, through kubectl against `pinnace up`: a CRD with
the scale subresource (as Argo Rollouts' or an operator's), a resource of it whose
status.selector names the pods it runs (here a Deployment's: nothing in the cluster runs
pods for it), and an HPA on their request rate that changes the resource's spec.replicas
through /scale; with the controllers in `pinnace up`'s process, and in a `pinnace
controller-manager` process that maps the target through discovery. `kubectl autoscale`
finds the kind scalable through discovery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: webapps.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: webapps, kind: WebApp}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
"""
MANIFESTS = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: loads
  labels: {metrics.sim.pinnace.dev/series: ""}
data:
  frontend_requests: "40"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations:
        metrics.sim.pinnace.dev/http_requests_per_second: "share frontend_requests"
    spec:
      containers:
      - {name: web, image: nginx}
---
apiVersion: example.com/v1
kind: WebApp
metadata:
  name: web
spec:
  replicas: 2
"""
SYNC = ("--horizontal-pod-autoscaler-sync-period", "2s")
HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: example.com/v1, kind: WebApp, name: web}
  minReplicas: 1
  maxReplicas: 6
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "10"}
"""


def test_an_hpa_scales_a_custom_resource_through_kubectl(tmp_path: Path) -> None:
    cluster = launch(tmp_path, flags=("--nodes", "1", *SYNC))
    try:
        autoscale_a_webapp(cluster)
    finally:
        stop(cluster)


def test_a_controller_manager_process_maps_the_target_through_discovery(tmp_path: Path) -> None:
    cluster = launch(tmp_path, flags=("--no-controllers", "--nodes", "1"))
    with open(tmp_path / "controller-manager.log", "w") as out:
        manager = subprocess.Popen(
            [sys.executable, "-m", "pinnace.cli.main", "controller-manager",
             "--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false", "--secure-port=0",
             *SYNC],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    try:
        autoscale_a_webapp(cluster)
    finally:
        manager.terminate()
        manager.wait(timeout=20)
        stop(cluster)


def autoscale_a_webapp(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=CRD)
    cluster.ok("wait", "--for", "condition=established", "crd/webapps.example.com")
    cluster.ok("apply", "-f", "-", stdin=MANIFESTS)
    status = {"status": {"replicas": 2, "selector": "app=web"}}
    cluster.ok(
        "patch", "webapp", "web", "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    autoscaled = json.loads(
        cluster.ok("autoscale", "webapp", "web", "--max=6", "--dry-run=server", "-o", "json")
    )
    assert autoscaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "name": "web",
    }
    cluster.ok("apply", "-f", "-", stdin=HPA)

    # 40 requests a second over the two pods, 10 a pod wanted: 4 replicas
    replicas = "jsonpath={.spec.replicas}"
    eventually(lambda: cluster.ok("get", "webapp", "web", "-o", replicas) == "4", 60, 0.5)
    hpa = json.loads(cluster.ok("get", "hpa", "web", "-o", "json"))
    able = [c for c in hpa["status"]["conditions"] if c["type"] == "AbleToScale"]
    assert able[0]["status"] == "True"
    events = cluster.ok("get", "events", "--field-selector", "reason=SuccessfulRescale")
    assert "New size: 4; reason: pods metric http_requests_per_second above target" in events
    assert cluster.ok("get", "deployment", "web", "-o", replicas) == "2"
