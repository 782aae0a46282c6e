"""A team's configuration through `pinnace up --nodes 1` and kubectl: ConfigMaps and Secrets as
a container's environment and files. What a running container was given at its start stays:
its environment (a command exec'd in it inherits the container's variables, whatever the
ConfigMap says since) and its subPath files, while a whole mounted volume follows the
ConfigMap."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.resources.lists import parse_quantity

APP = """
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "sleep 3600"]
    envFrom:
    - configMapRef: {name: settings}
      prefix: CFG_
    - secretRef: {name: credentials}
    volumeMounts:
    - {name: settings, mountPath: /etc/settings}
    - {name: settings, mountPath: /etc/level, subPath: level}
  volumes:
  - name: settings
    configMap: {name: settings}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-config"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_a_running_container_keeps_what_it_was_given_at_its_start(cluster: Cluster) -> None:
    cluster.ok("create", "configmap", "settings", "--from-literal=level=low")
    cluster.ok("create", "secret", "generic", "credentials", "--from-literal=password=s3cret")
    cluster.ok("apply", "-f", "-", stdin=APP)
    cluster.ok("wait", "--for=condition=Ready", "pod/app", "--timeout=30s")
    assert cluster.ok("exec", "app", "--", "printenv", "CFG_level", "password") == "low\ns3cret\n"

    cluster.ok("patch", "configmap", "settings", "-p", '{"data":{"level":"high"}}')
    cluster.ok("delete", "secret", "credentials")
    mounted = ("exec", "app", "--", "cat", "/etc/settings/level")
    assert eventually(lambda: cluster.ok(*mounted) == "high")
    assert cluster.ok("exec", "app", "--", "cat", "/etc/level") == "low"
    assert cluster.ok("exec", "app", "--", "printenv", "CFG_level", "password") == "low\ns3cret\n"


PODINFO = """
apiVersion: v1
kind: Pod
metadata:
  name: kubernetes-downwardapi-volume-example-2
  labels: {app: podinfo}
spec:
  containers:
  - name: client-container
    image: registry.k8s.io/busybox:1.27.2
    command: ["sh", "-c", "sleep 3600"]
    resources:
      requests: {memory: 32Mi, cpu: 125m}
      limits: {memory: 64Mi, cpu: 250m}
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - path: cpu_limit
        resourceFieldRef: {containerName: client-container, resource: limits.cpu, divisor: 1m}
      - path: cpu_request
        resourceFieldRef: {containerName: client-container, resource: requests.cpu, divisor: 1m}
      - path: mem_limit
        resourceFieldRef: {containerName: client-container, resource: limits.memory, divisor: 1Mi}
      - path: mem_request
        resourceFieldRef: {containerName: client-container, resource: requests.memory, divisor: 1Mi}
      - path: storage_limit
        resourceFieldRef: {containerName: client-container, resource: limits.ephemeral-storage}
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
"""


def test_a_downward_api_volume_holds_the_container_resources_it_names(cluster: Cluster) -> None:
    # The docs' "Expose Pod Information to Containers Through Files", its second example; an
    # unset limit is the node's allocatable, in bytes.
    cluster.ok("apply", "-f", "-", stdin=PODINFO)
    pod = "pod/kubernetes-downwardapi-volume-example-2"
    cluster.ok("wait", "--for=condition=Ready", pod, "--timeout=30s")
    read = ("exec", pod, "--", "sh", "-c", "for f in /etc/podinfo/*; do echo $f $(cat $f); done")
    jsonpath = "jsonpath={.items[0].status.allocatable.ephemeral-storage}"
    storage = parse_quantity(cluster.ok("get", "nodes", "-o", jsonpath)).value()
    assert cluster.ok(*read).splitlines() == [
        "/etc/podinfo/cpu_limit 250",
        "/etc/podinfo/cpu_request 125",
        '/etc/podinfo/labels app="podinfo"',
        "/etc/podinfo/mem_limit 64",
        "/etc/podinfo/mem_request 32",
        f"/etc/podinfo/storage_limit {storage}",
    ]


def test_a_missing_key_is_tried_again_and_the_failures_counted(cluster: Cluster) -> None:
    cluster.ok("create", "configmap", "partial", "--from-literal=other=1")
    overrides = (
        '{"spec":{"containers":[{"name":"strict","image":"busybox:1.36","command":["sleep","1d"],'
        '"env":[{"name":"LEVEL","valueFrom":{"configMapKeyRef":{"name":"partial","key":"level"}}}]}]}}'
    )
    cluster.ok("run", "strict", "--image=busybox:1.36", f"--overrides={overrides}")
    selector = "involvedObject.name=strict,reason=Failed"

    def failures() -> int:
        found = cluster.ok(
            "get", "events", "--field-selector", selector, "-o", "jsonpath={.items[*].count}"
        )
        return int(found or 0)

    assert eventually(lambda: failures() >= 3)  # one retry after backOffPeriod at least
    waiting = cluster.ok(
        "get", "pod", "strict", "-o", "jsonpath={.status.containerStatuses[0].state.waiting}"
    )
    assert json.loads(waiting) == {
        "reason": "CreateContainerConfigError",
        "message": "couldn't find key level in ConfigMap default/partial",
    }


def test_a_downward_api_volume_follows_the_pod_labels_and_annotations(cluster: Cluster) -> None:
    # The docs' first example: "if you change the labels, the file is updated".
    cluster.ok("apply", "-f", "-", stdin=PODINFO)
    pod = "pod/kubernetes-downwardapi-volume-example-2"
    cluster.ok("wait", "--for=condition=Ready", pod, "--timeout=30s")
    cluster.ok("label", pod, "zone=us-est-coast")
    labels = ("exec", pod, "--", "cat", "/etc/podinfo/labels")
    assert eventually(lambda: cluster.ok(*labels) == 'app="podinfo"\nzone="us-est-coast"')


SHARED = """
apiVersion: v1
kind: Pod
metadata:
  name: shared
spec:
  containers:
  - name: writer
    image: busybox
    command: ["sh", "-c", "echo hello > /out/greeting; sleep 1d"]
    volumeMounts:
    - {name: scratch, mountPath: /out}
  - name: reader
    image: busybox
    command: ["sleep", "1d"]
    volumeMounts:
    - {name: scratch, mountPath: /in, readOnly: true}
  volumes:
  - {name: scratch, emptyDir: {}}
"""


def test_a_read_only_mount_of_an_empty_dir_refuses_writes(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=SHARED)
    cluster.ok("wait", "--for=condition=Ready", "pod/shared", "--timeout=30s")
    assert cluster.ok("exec", "shared", "-c", "reader", "--", "cat", "/in/greeting") == "hello\n"
    write = ("exec", "shared", "-c", "reader", "--", "sh", "-c", "echo bye > /in/greeting")
    done = cluster.kubectl(*write)
    assert done.returncode == 1
    assert done.stderr.startswith("sh: can't create /in/greeting: Read-only file system\n")
    assert cluster.ok("exec", "shared", "-c", "writer", "--", "cat", "/out/greeting") == "hello\n"
