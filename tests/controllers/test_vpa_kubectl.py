"""The Vertical Pod Autoscaler through `pinnace up` and kubectl, as a user runs one: a
Deployment whose usage exceeds its requests gets larger requests once the updater evicts its
pods, and `kubectl get vpa` / `kubectl describe vpa` show the recommendation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

FAST = (
    "--nodes",
    "2",
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
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {sim.pinnace.dev/cpu: 600m, sim.pinnace.dev/memory: 300Mi}
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
metadata: {name: web}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updatePolicy: {updateMode: Auto}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-vpa"), flags=FAST)
    yield running
    stop(running)


def _requests(cluster: Cluster) -> list[dict[str, str]]:
    pods = json.loads(cluster.ok("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return [p["spec"]["containers"][0]["resources"] for p in live]


def test_usage_above_requests_gets_larger_requests_after_eviction(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=DEPLOYMENT).strip() == "deployment.apps/web created"
    created = cluster.ok("apply", "-f", "-", stdin=VPA).strip()
    assert created == "verticalpodautoscaler.autoscaling.k8s.io/web created"

    def resized() -> list[dict[str, str]]:
        resources = _requests(cluster)
        assert len(resources) == 2
        for r in resources:
            cpu, memory = r["requests"]["cpu"], r["requests"]["memory"]
            assert cpu.endswith("m") and int(cpu[:-1]) > 600, resources  # 600m plus margin
            assert memory != "64Mi", resources
        return resources

    for r in eventually(resized, timeout=60):
        # the limit keeps its ratio to the request: cpu 1 per 100m, memory 2 per 1
        assert int(r["limits"]["cpu"].removesuffix("m")) == 10 * int(r["requests"]["cpu"][:-1])
    evicted = cluster.ok("get", "events", "--field-selector", "reason=EvictedByVPA", "-o", "name")
    assert evicted.strip()

    header, row = cluster.ok("get", "vpa").splitlines()[:2]
    assert header.split() == ["NAME", "MODE", "CPU", "MEM", "PROVIDED", "AGE"]
    name, mode, cpu, memory, provided, _ = row.split()
    assert (name, mode, provided) == ("web", "Auto", "True")
    assert cpu.endswith("m") and int(cpu[:-1]) > 600 and memory.isdigit()
    described = cluster.ok("describe", "vpa", "web")
    for text in ("Target Ref:", "Recommendation:", "Container Recommendations:", "Lower Bound:"):
        assert text in described, described


def test_bad_vpa_gets_the_crds_validation_error(cluster: Cluster) -> None:
    bad = VPA.replace("updateMode: Auto", "updateMode: Sometimes").replace("web}", "bad}", 1)
    done = cluster.kubectl("apply", "-f", "-", stdin=bad)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        'spec.updatePolicy.updateMode: Unsupported value: "Sometimes": supported values: '
        '"Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto"'
    ), done.stderr


def test_patches_as_for_a_custom_resource(cluster: Cluster) -> None:
    applied = VPA.replace("web}", "patched}", 1)
    assert cluster.ok("apply", "--server-side", "-f", "-", stdin=applied).strip() == (
        "verticalpodautoscaler.autoscaling.k8s.io/patched serverside-applied"
    )
    change = '{"spec": {"updatePolicy": {"updateMode": "Initial"}}}'
    done = cluster.kubectl("patch", "vpa", "patched", "-p", change)
    assert done.returncode == 1
    # kubectl's default strategic merge patch meets the 415 a custom resource answers
    assert done.stderr.strip() == (
        "error: application/strategic-merge-patch+json is not supported by "
        "autoscaling.k8s.io/v1, Kind=VerticalPodAutoscaler: the body of the request was in an "
        "unknown format - accepted media types include: application/json-patch+json, "
        "application/merge-patch+json, application/apply-patch+yaml"
    )
    patched = cluster.ok("patch", "vpa", "patched", "--type", "merge", "-p", change)
    assert patched.strip() == "verticalpodautoscaler.autoscaling.k8s.io/patched patched"
    mode = cluster.ok("get", "vpa", "patched", "-o", "jsonpath={.spec.updatePolicy.updateMode}")
    assert mode == "Initial"


def _conditions(cluster: Cluster, name: str) -> dict[str, tuple[str, str, str]]:
    """type -> (status, reason, message) of the VPA's conditions."""
    status = json.loads(cluster.ok("get", "vpa", name, "-o", "json")).get("status") or {}
    return {
        c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or ()
    }


def test_a_target_that_cannot_be_read_is_config_unsupported(cluster: Cluster) -> None:
    ghost = VPA.replace("web}", "ghost}")
    cluster.ok("apply", "-f", "-", stdin=ghost)
    no_pods = ("True", "NoPodsMatched", "No pods match this VPA object")
    # the recommender's cluster feeder (getSelector), VPA 1.3's words
    unsupported = (
        "True",
        "",
        "Cannot read targetRef. Reason: Deployment default/ghost does not exist",
    )
    eventually(
        lambda: (
            _conditions(cluster, "ghost")
            == {
                "ConfigUnsupported": unsupported,
                "NoPodsMatched": no_pods,
                "RecommendationProvided": ("False", *no_pods[1:]),
            }
        )
    )
    status = json.loads(cluster.ok("get", "vpa", "ghost", "-o", "json"))["status"]
    assert "observedGeneration" not in status  # VPA 1.3's status has none
    described = cluster.ok("describe", "vpa", "ghost")
    assert "Cannot read targetRef. Reason: Deployment default/ghost does not exist" in described

    cluster.ok(
        "apply",
        "-f",
        "-",
        stdin=DEPLOYMENT.replace("web}", "ghost}").replace("app: web", "app: ghost"),
    )
    eventually(lambda: "ConfigUnsupported" not in _conditions(cluster, "ghost"))


def test_a_target_with_a_parent_is_config_unsupported(cluster: Cluster) -> None:
    cluster.ok("create", "deployment", "parent", "--image=nginx")

    def made() -> str:
        name = cluster.ok("get", "rs", "-l", "app=parent", "-o", "name").strip()
        assert name.startswith("replicaset.apps/")
        return name.removeprefix("replicaset.apps/")

    replica_set = eventually(made)
    vpa = VPA.replace("web}", "child}", 1).replace(
        "{apiVersion: apps/v1, kind: Deployment, name: web}",
        f"{{apiVersion: apps/v1, kind: ReplicaSet, name: {replica_set}}}",
    )
    cluster.ok("apply", "-f", "-", stdin=vpa)
    eventually(
        lambda: (
            _conditions(cluster, "child").get("ConfigUnsupported")
            == (
                "True",
                "",
                "The targetRef controller has a parent but it should point to a topmost "
                "well-known or scalable controller",
            )
        )
    )
