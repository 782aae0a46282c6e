"""ConfigMaps through `pinnace up --nodes 1` and kubectl, in real time: the examples of
"Configure a Pod to Use a ConfigMap" print what the documentation shows, a pod whose ConfigMap
volume is missing waits with FailedMount events until it is created, and the logging
documentation's counter prints a line a second that `kubectl logs --tail` and `-f` show,
and its sidecar variant streams the files the counter appends to an emptyDir."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

WAIT = 30.0


def pod(name: str, command: str, extra: str = "", volume: str = "") -> str:
    """A busybox pod that runs `command` (a YAML flow list) once."""
    volumes = (
        f"""
    volumeMounts:
    - name: config-volume
      mountPath: /etc/config
  volumes:
  - name: config-volume
    configMap:
{volume}"""
        if volume
        else ""
    )
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Never
  containers:
  - name: test-container
    image: registry.k8s.io/busybox
    command: {command}{extra}{volumes}
"""


ECHO = pod(
    "dapi-test-pod",
    '[ "/bin/echo", "$(SPECIAL_LEVEL_KEY) $(SPECIAL_TYPE_KEY)" ]',
    """
    env:
    - name: SPECIAL_LEVEL_KEY
      valueFrom:
        configMapKeyRef:
          name: special-config
          key: SPECIAL_LEVEL
    - name: SPECIAL_TYPE_KEY
      valueFrom:
        configMapKeyRef:
          name: special-config
          key: SPECIAL_TYPE""",
)
ENV = pod(
    "dapi-env-pod",
    '[ "/bin/sh", "-c", "env" ]',
    """
    envFrom:
    - configMapRef:
        name: special-config""",
)
LS = pod(
    "dapi-ls-pod", '[ "/bin/sh", "-c", "ls /etc/config/" ]', volume="      name: special-config"
)
KEYS = pod(
    "dapi-keys-pod",
    '[ "/bin/sh","-c","cat /etc/config/keys" ]',
    volume="""      name: special-config
      items:
      - key: SPECIAL_LEVEL
        path: keys""",
)
LATE = pod("late-pod", '[ "/bin/sh", "-c", "cat /etc/config/color" ]', volume="      name: late")
COUNTER = """
apiVersion: v1
kind: Pod
metadata:
  name: counter
spec:
  containers:
  - name: count
    image: busybox:1.28
    args: [/bin/sh, -c,
            'i=0; while true; do echo "$i: $(date)"; i=$((i+1)); sleep 1; done']
"""
SHORT_LOOP = pod("short-loop", '["sh", "-c", "for i in 1 2 3; do echo $i; sleep 1; done"]')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-configmaps"), flags=("--nodes", "1"))
    yield running
    stop(running)


def phase(cluster: Cluster, name: str) -> str:
    return cluster.ok("get", "pod", name, "-o", "jsonpath={.status.phase}")


def test_the_configmap_documentation_examples(cluster: Cluster) -> None:
    cluster.ok(
        "create",
        "configmap",
        "special-config",
        "--from-literal=SPECIAL_LEVEL=very",
        "--from-literal=SPECIAL_TYPE=charm",
    )
    for manifest in (ECHO, ENV, LS, KEYS):
        cluster.ok("apply", "-f", "-", stdin=manifest)
    for name in ("dapi-test-pod", "dapi-env-pod", "dapi-ls-pod", "dapi-keys-pod"):
        eventually(lambda name=name: phase(cluster, name) == "Succeeded", timeout=WAIT)
    assert cluster.ok("logs", "dapi-test-pod") == "very charm\n"
    env = cluster.ok("logs", "dapi-env-pod").splitlines()
    assert "SPECIAL_LEVEL=very" in env and "SPECIAL_TYPE=charm" in env
    assert "HOSTNAME=dapi-env-pod" in env
    assert cluster.ok("logs", "dapi-ls-pod") == "SPECIAL_LEVEL\nSPECIAL_TYPE\n"
    assert cluster.ok("logs", "dapi-keys-pod") == "very\n"


def test_a_missing_configmap_volume_waits_until_it_is_created(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=LATE)

    def failed_mount() -> bool:
        return "FailedMount" in cluster.ok(
            "get", "events", "--field-selector", "reason=FailedMount"
        )

    eventually(failed_mount, timeout=WAIT)
    events = cluster.ok(
        "get",
        "events",
        "--field-selector",
        "reason=FailedMount",
        "-o",
        "jsonpath={.items[0].message}",
    )
    assert (
        events == 'MountVolume.SetUp failed for volume "config-volume" : configmap "late" not found'
    )
    waiting = cluster.ok(
        "get",
        "pod",
        "late-pod",
        "-o",
        "jsonpath={.status.containerStatuses[0].state.waiting.reason}",
    )
    assert (phase(cluster, "late-pod"), waiting) == ("Pending", "ContainerCreating")
    cluster.ok("create", "configmap", "late", "--from-literal=color=blue")
    eventually(lambda: phase(cluster, "late-pod") == "Succeeded", timeout=WAIT)
    assert cluster.ok("logs", "late-pod") == "blue\n"  # a partial last line ends a line here


def test_the_counter_prints_every_second(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=COUNTER)
    cluster.ok("apply", "-f", "-", stdin=SHORT_LOOP)

    def counted() -> bool:
        done = cluster.kubectl("logs", "counter")
        return done.returncode == 0 and len(done.stdout.splitlines()) >= 3

    eventually(counted, timeout=WAIT)
    tail = cluster.ok("logs", "counter", "--tail", "2").splitlines()
    assert len(tail) == 2
    numbers = []
    for line in tail:
        found = re.fullmatch(r"(\d+): \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}", line)
        assert found, line
        numbers.append(int(found.group(1)))
    assert numbers[1] == numbers[0] + 1 >= 2

    eventually(lambda: phase(cluster, "short-loop") in ("Running", "Succeeded"), timeout=WAIT)
    assert cluster.ok("logs", "-f", "short-loop") == "1\n2\n3\n"
    eventually(lambda: phase(cluster, "short-loop") == "Succeeded", timeout=WAIT)


# The logging documentation's "sidecar container with a logging agent" pod, as it is written.
COUNTER_SIDECARS = """
apiVersion: v1
kind: Pod
metadata:
  name: counter-sidecars
spec:
  containers:
  - name: count
    image: busybox:1.28
    args:
    - /bin/sh
    - -c
    - >
      i=0;
      while true;
      do
        echo "$i: $(date)" >> /var/log/1.log;
        echo "$(date) INFO $i" >> /var/log/2.log;
        i=$((i+1));
        sleep 1;
      done
    volumeMounts:
    - name: varlog
      mountPath: /var/log
  - name: count-log-1
    image: busybox:1.28
    args: [/bin/sh, -c, 'tail -n+1 -F /var/log/1.log']
    volumeMounts:
    - name: varlog
      mountPath: /var/log
  - name: count-log-2
    image: busybox:1.28
    args: [/bin/sh, -c, 'tail -n+1 -F /var/log/2.log']
    volumeMounts:
    - name: varlog
      mountPath: /var/log
  volumes:
  - name: varlog
    emptyDir: {}
"""


def test_sidecars_stream_the_files_the_counter_appends_to(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=COUNTER_SIDECARS)

    def streamed() -> list[str]:
        done = cluster.kubectl("logs", "counter-sidecars", "-c", "count-log-1")
        lines = done.stdout.splitlines() if done.returncode == 0 else []
        return lines if len(lines) >= 3 else []

    lines = eventually(streamed, timeout=WAIT)
    for n, line in enumerate(lines[:3]):
        assert re.fullmatch(rf"{n}: \w{{3}} \w{{3}} [ \d]\d \d\d:\d\d:\d\d UTC \d{{4}}", line), line
    second = cluster.ok("logs", "counter-sidecars", "-c", "count-log-2").splitlines()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4} INFO 0", second[0])
    assert cluster.ok("logs", "counter-sidecars", "-c", "count") == ""
