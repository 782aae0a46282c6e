"""In-place resize through `pinnace up --feature-gates InPlacePodVerticalScaling=true` and
kubectl, as a user meets it: `kubectl patch --subresource resize` of a running pod changes
its resources without a restart, and a resize of anything but cpu and memory is refused as
kube-apiserver refuses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

GATES = "InPlacePodVerticalScaling=true,InPlacePodVerticalScalingAllocatedStatus=true"
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
    flags = ("--nodes", "1", "--no-vpa", "--feature-gates", GATES)
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
