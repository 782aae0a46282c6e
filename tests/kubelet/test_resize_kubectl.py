"""In-place resize through `pinnace up --feature-gates InPlacePodVerticalScaling=true` and
kubectl, as a user meets it: `kubectl patch --subresource resize` of a running pod changes
its resources without a restart, a resize of anything but cpu and memory is refused as
kube-apiserver refuses it, and a VPA in InPlaceOrRecreate mode resizes its pods in place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

GATES = "InPlacePodVerticalScaling=true,InPlacePodVerticalScalingAllocatedStatus=true"
FAST_VPA = (
    "--vpa-recommender-interval",
    "1s",
    "--vpa-updater-interval",
    "2s",
    "--vpa-confidence-interval-cpu",
    "10s",
    "--vpa-confidence-interval-memory",
    "10s",
)
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: busy}
spec:
  replicas: 2
  selector: {matchLabels: {app: busy}}
  template:
    metadata:
      labels: {app: busy}
      annotations: {sim.pinnace.dev/cpu: 600m}
    spec:
      containers:
      - name: app
        image: nginx
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: "1", memory: 512Mi}
"""
VPA = """
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: busy}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: busy}
  updatePolicy: {updateMode: InPlaceOrRecreate}
  resourcePolicy:
    containerPolicies: [{containerName: "*", controlledResources: [cpu]}]
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    flags = ("--nodes", "1", "--feature-gates", GATES, *FAST_VPA)
    running = launch(tmp_path_factory.mktemp("pinnace-resize"), flags=flags)
    yield running
    stop(running)


def _pod(cluster: Cluster) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(cluster.ok("get", "pod", "web", "-o", "json"))
    return pod


def test_kubectl_patch_resize_changes_a_running_pod_in_place(cluster: Cluster) -> None:
    served = json.loads(cluster.ok("get", "--raw", "/api/v1"))["resources"]
    assert "pods/resize" in {r["name"] for r in served}
    assert cluster.ok("apply", "-f", "-", stdin=POD).strip() == "pod/web created"
    eventually(lambda: _pod(cluster)["status"].get("phase") == "Running")
    assert _pod(cluster)["spec"]["containers"][0]["resizePolicy"] == [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "NotRequired"},
    ]
    patch = '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"300m"}}}]}}'
    patched = cluster.ok("patch", "pod", "web", "--subresource", "resize", "--patch", patch)
    assert patched.strip() == "pod/web patched"

    def resized() -> dict[str, Any]:
        pod = _pod(cluster)
        status = pod["status"]["containerStatuses"][0]
        assert "resize" not in pod["status"], pod["status"]
        assert status["resources"]["requests"] == {"cpu": "300m", "memory": "64Mi"}, status
        return status

    status = eventually(resized)
    assert status["allocatedResources"] == {"cpu": "300m", "memory": "64Mi"}
    assert status["restartCount"] == 0
    assert _pod(cluster)["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "300m"

    storage = json.dumps(
        {
            "spec": {
                "containers": [
                    {"name": "app", "resources": {"limits": {"ephemeral-storage": "1Gi"}}}
                ]
            }
        }
    )
    refused = cluster.kubectl("patch", "pod", "web", "--subresource", "resize", "--patch", storage)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'The Pod "web" is invalid: spec: Forbidden: only cpu and memory resources are mutable'
    )


def _busy(cluster: Cluster) -> list[dict[str, Any]]:
    pods = json.loads(cluster.ok("get", "pods", "-l", "app=busy", "-o", "json"))["items"]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def test_a_vpa_in_place_or_recreate_resizes_its_pods_in_place(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=DEPLOYMENT)

    def running() -> list[str]:
        pods = _busy(cluster)
        assert len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)
        return [p["metadata"]["name"] for p in pods]

    names = eventually(running)
    cluster.ok("apply", "-f", "-", stdin=VPA)

    def resized() -> list[dict[str, Any]]:
        pods = _busy(cluster)
        for pod in pods:
            status = pod["status"]["containerStatuses"][0]
            cpu = status.get("resources", {}).get("requests", {}).get("cpu", "")
            assert cpu.endswith("m") and int(cpu[:-1]) > 600, status
        return pods

    pods = eventually(resized, timeout=60)
    assert [p["metadata"]["name"] for p in pods] == names
    assert all(p["status"]["containerStatuses"][0]["restartCount"] == 0 for p in pods)
    events = cluster.ok(
        "get", "events", "--field-selector", "reason=InPlaceResizedByVPA", "-o", "name"
    )
    assert len(events.split()) >= 2
    assert (
        cluster.ok("get", "events", "--field-selector", "reason=EvictedByVPA", "-o", "name") == ""
    )
