"""volumeMounts[].subPathExpr through `pinnace up --nodes 1` and kubectl, as the Kubernetes docs'
"Using subPath with expanded environment variables" shows it (on an emptyDir, the hostPath not
being modelled): the container writes below its mount, and the file is in the volume under the
pod's name; a variable that is not set fails the container start with the kubelet's message."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: pod1
spec:
  containers:
  - name: container1
    env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          apiVersion: v1
          fieldPath: metadata.name
    image: busybox:1.28
    command: [ "sh", "-c", "echo Hello >> /logs/hello.txt; sleep 3600" ]
    volumeMounts:
    - name: workdir1
      mountPath: /logs
      subPathExpr: $(POD_NAME)
    - name: workdir1
      mountPath: /all
  restartPolicy: Never
  volumes:
  - name: workdir1
    emptyDir: {}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-subpathexpr"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_the_container_writes_under_the_path_its_variables_name(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=POD)
    cluster.ok("wait", "--for=condition=Ready", "pod/pod1", "--timeout=30s")
    assert cluster.ok("exec", "pod1", "--", "ls", "/all") == "pod1\n"
    assert cluster.ok("exec", "pod1", "--", "cat", "/all/pod1/hello.txt") == "Hello\n"


def test_a_variable_not_set_fails_the_container_start(cluster: Cluster) -> None:
    bad = POD.replace("name: pod1", "name: bad").replace("$(POD_NAME)", "$(NOWHERE)")
    cluster.ok("apply", "-f", "-", stdin=bad)

    def waiting() -> dict[str, str]:
        pod = json.loads(cluster.ok("get", "pod", "bad", "-o", "json"))
        statuses = pod["status"].get("containerStatuses") or [{}]
        return dict(statuses[0].get("state", {}).get("waiting") or {})

    assert eventually(lambda: waiting().get("reason") == "CreateContainerConfigError")
    assert waiting() == {
        "reason": "CreateContainerConfigError",
        "message": "missing value for NOWHERE",
    }

    def failed() -> set[tuple[str, str]]:
        events = json.loads(cluster.ok("get", "events", "-o", "json"))["items"]
        return {
            (e["type"], e["message"])
            for e in events
            if e["involvedObject"]["name"] == "bad" and e["reason"] == "Failed"
        }

    assert eventually(failed) == {("Warning", "Error: missing value for NOWHERE")}
