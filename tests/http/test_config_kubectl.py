"""A team's configuration through `pinnace up --nodes 1` and kubectl: ConfigMaps and Secrets as
a container's environment and files. What a running container was given at its start stays:
its environment (a command exec'd in it inherits the container's variables, whatever the
ConfigMap says since) and its subPath files, while a whole mounted volume follows the
ConfigMap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

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
