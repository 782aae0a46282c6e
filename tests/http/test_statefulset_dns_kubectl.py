"""A StatefulSet's pods by their stable DNS names through `pinnace up --nodes 1` and kubectl, as
the StatefulSet tutorial reaches them: `web-0.nginx` (and `web-0.nginx.default`, `….svc`,
`….svc.cluster.local`) names the pod whose hostname and subdomain they are, behind the headless
Service of that name, once it is ready."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

KLOG = re.compile(r"[EIWF]\d{4} ")

WEB = """
apiVersion: v1
kind: Service
metadata:
  name: nginx
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - {name: web, image: busybox, command: ["sleep", "1d"], ports: [{containerPort: 80}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
  - {name: client, image: busybox, command: ["sleep", "1d"]}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-sts-dns"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_a_pod_of_a_headless_service_is_reached_by_its_hostname(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=WEB)
    pods = ("pod/web-0", "pod/web-1", "pod/client")
    cluster.ok("wait", "--for=condition=Ready", *pods, "--timeout=60s")

    def wget(host: str) -> str:
        done = cluster.kubectl("exec", "client", "--", "wget", "-qO-", f"http://{host}")
        # wget's message, before kubectl's exit code line; kubectl may log first (klog's
        # "Unknown stream id 1" when the server's opening frame beats its stream set-up)
        said = [line for line in done.stderr.splitlines() if not KLOG.match(line)]
        return done.stdout or said[0]

    assert wget("web-0.nginx") == "<html><body>web-0</body></html>\n"
    assert wget("web-1.nginx.default") == "<html><body>web-1</body></html>\n"
    assert wget("web-1.nginx.default.svc") == "<html><body>web-1</body></html>\n"
    assert wget("web-0.nginx.default.svc.cluster.local") == "<html><body>web-0</body></html>\n"
    assert wget("web-2.nginx") == "wget: bad address 'web-2.nginx'"
    assert wget("web-0.nginx.other") == "wget: bad address 'web-0.nginx.other'"
