"""Real kubectl against `pinnace up` prints kube-apiserver v1.32's pod and pod template warnings
(pkg/api/pod/warnings.go) as `Warning: ...` lines on stderr."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: arm
spec:
  nodeSelector:
    beta.kubernetes.io/arch: arm64
  containers:
  - name: app
    image: nginx
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector:
        beta.kubernetes.io/arch: arm64
      containers:
      - name: app
        image: nginx
        resources:
          requests: {memory: 100m}
"""

ARCH = 'deprecated since v1.14; use "kubernetes.io/arch" instead'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-pod-warnings"), flags=("--no-scheduler",))
    yield running
    stop(running)


def test_apply_of_a_pod_and_a_deployment_prints_the_warnings(cluster: Cluster) -> None:
    pod = cluster.kubectl("apply", "-f", "-", stdin=POD)
    assert pod.returncode == 0, pod.stderr
    assert pod.stdout == "pod/arm created\n"
    assert pod.stderr == f"Warning: spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}\n"

    deployment = cluster.kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    assert deployment.returncode == 0, deployment.stderr
    assert deployment.stdout == "deployment.apps/web created\n"
    assert deployment.stderr == (
        f"Warning: spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}\n"
        "Warning: spec.template.spec.containers[0].resources.requests[memory]: fractional byte "
        'value "100m" is invalid, must be an integer\n'
    )
    # Applying it unchanged bumps no generation: no warning again.
    again = cluster.kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    assert again.returncode == 0, again.stderr
    assert (again.stdout, again.stderr) == ("deployment.apps/web unchanged\n", "")


APPARMOR_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: hardened
  annotations:
    container.apparmor.security.beta.kubernetes.io/app: localhost/k8s-deny-write
spec:
  containers:
  - name: app
    image: nginx
"""


def test_a_pods_apparmor_annotation_is_warned_of_and_becomes_its_field(cluster: Cluster) -> None:
    pod = cluster.kubectl("apply", "-f", "-", stdin=APPARMOR_POD)
    assert pod.returncode == 0, pod.stderr
    assert pod.stderr == (
        "Warning: metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: "
        'deprecated since v1.30; use the "appArmorProfile" field instead\n'
    )
    profile = cluster.ok(
        "get", "pod", "hardened", "-o", "jsonpath={.spec.containers[0].securityContext}"
    )
    assert profile == '{"appArmorProfile":{"localhostProfile":"k8s-deny-write","type":"Localhost"}}'
