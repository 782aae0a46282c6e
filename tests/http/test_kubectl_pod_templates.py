"""Real kubectl against `pinnace up` creates the pods of one manifest one after another, as a
controller's pods come: each gets its own name, uid and token volume, and every PodSecurity
label set on the namespace between them shows in the very next create (the API server remembers
what its pipeline made of the manifest, `pinnace.apiserver.create_memo`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

POD = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: web-
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx
"""

RESTRICTED = 'would violate PodSecurity "restricted:latest"'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-pod-templates"), flags=("--no-scheduler",))
    yield running
    stop(running)


def _create(cluster: Cluster) -> tuple[str, str]:
    done = cluster.kubectl("create", "-f", "-", stdin=POD)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_pods_of_one_manifest_are_each_their_own_and_see_every_label(cluster: Cluster) -> None:
    quiet = [_create(cluster) for _ in range(3)]
    assert all(stderr == "" for _, stderr in quiet)
    cluster.ok("label", "namespace", "default", "pod-security.kubernetes.io/warn=restricted")
    warned = [_create(cluster) for _ in range(3)]
    assert all(stderr.startswith(f"Warning: {RESTRICTED}: ") for _, stderr in warned)
    cluster.ok("label", "namespace", "default", "pod-security.kubernetes.io/enforce=restricted")
    refused = cluster.kubectl("create", "-f", "-", stdin=POD)
    assert refused.returncode == 1
    assert 'is forbidden: violates PodSecurity "restricted:latest"' in refused.stderr

    pods = json.loads(cluster.ok("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    assert len(pods) == 6
    created = sorted(stdout for stdout, _ in quiet + warned)
    assert created == sorted(f"pod/{p['metadata']['name']} created\n" for p in pods)
    assert len({p["metadata"]["uid"] for p in pods}) == 6
    volumes = [p["spec"]["volumes"] for p in pods]
    assert len({v[0]["name"] for v in volumes}) == 6
    for pod, (volume,) in zip(pods, volumes, strict=True):
        (mount,) = pod["spec"]["containers"][0]["volumeMounts"]
        assert mount["name"] == volume["name"]
        assert volume["name"].startswith("kube-api-access-")
