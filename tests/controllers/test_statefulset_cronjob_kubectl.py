"""StatefulSets and CronJobs through `pinnace up --nodes 2` and kubectl: the documentation's
`web` StatefulSet comes up in order and rolls out, back and scales; `kubectl create cronjob`
and `kubectl create job --from=cronjob/...` work, and a bad schedule gets kube-apiserver's
error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

WEB = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: nginx
  serviceName: nginx
  replicas: 3
  minReadySeconds: 1
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.24
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      resources:
        requests:
          storage: 1Gi
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-sts"), flags=("--nodes", "2"))
    yield running
    stop(running)


def rolled_out(cluster: Cluster) -> str:
    return cluster.ok("rollout", "status", "sts/web", "--timeout=60s").strip()


def images(cluster: Cluster) -> list[str]:
    jsonpath = "jsonpath={range .items[*]}{.metadata.name}={.spec.containers[0].image} {end}"
    return cluster.ok("get", "pods", "-l", "app=nginx", "-o", jsonpath).split()


def test_a_stateful_set_through_kubectl(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=WEB).strip() == "statefulset.apps/web created"
    assert rolled_out(cluster).endswith(
        "partitioned roll out complete: 3 new pods have been updated..."
    )
    table = cluster.ok("get", "sts").splitlines()
    assert table[0].split() == ["NAME", "READY", "AGE"]
    assert table[1].split()[:2] == ["web", "3/3"]
    pods = [
        line.split()[:3] for line in cluster.ok("get", "pods", "-l", "app=nginx").splitlines()[1:]
    ]
    assert pods == [
        ["web-0", "1/1", "Running"],
        ["web-1", "1/1", "Running"],
        ["web-2", "1/1", "Running"],
    ]
    hostname = cluster.ok(
        "get", "pod", "web-1", "-o", "jsonpath={.spec.hostname}.{.spec.subdomain}"
    )
    assert hostname == "web-1.nginx"
    claim = cluster.ok(
        "get", "pod", "web-2", "-o", "jsonpath={.spec.volumes[0].persistentVolumeClaim.claimName}"
    )
    assert claim == "www-web-2"

    cluster.ok("set", "image", "sts/web", "nginx=registry.k8s.io/nginx-slim:0.21")
    rolled_out(cluster)
    assert images(cluster) == [f"web-{i}=registry.k8s.io/nginx-slim:0.21" for i in range(3)]
    history = cluster.ok("rollout", "history", "sts/web").splitlines()
    assert history[0].strip() == "statefulset.apps/web"
    assert [line.split() for line in history[2:] if line.strip()] == [
        ["1", "<none>"],
        ["2", "<none>"],
    ]
    assert cluster.ok("rollout", "undo", "sts/web").strip() == "statefulset.apps/web rolled back"
    rolled_out(cluster)
    assert images(cluster) == [f"web-{i}=registry.k8s.io/nginx-slim:0.24" for i in range(3)]

    assert (
        cluster.ok("scale", "sts", "web", "--replicas=1").strip() == "statefulset.apps/web scaled"
    )
    rolled_out(cluster)
    names = cluster.ok(
        "get", "pods", "-l", "app=nginx", "-o", "name", "--field-selector=status.phase=Running"
    )
    assert "pod/web-0" in names


def test_a_bad_stateful_set_gets_kube_apiservers_error(cluster: Cluster) -> None:
    bad = WEB.replace("name: web\n", "name: bad\n", 1).replace("podManagementPolicy", "x")
    bad = bad.replace("  replicas: 3\n", "  replicas: 3\n  podManagementPolicy: Sometimes\n")
    done = cluster.kubectl("apply", "-f", "-", stdin=bad)
    assert done.returncode == 1
    assert (
        'The StatefulSet "bad" is invalid: spec.podManagementPolicy: Invalid value: "Sometimes": '
        "must be 'OrderedReady' or 'Parallel'"
    ) in done.stderr


def test_cron_jobs_through_kubectl(cluster: Cluster) -> None:
    created = cluster.ok(
        "create", "cronjob", "hello", "--image=busybox:1.28", "--schedule=*/1 * * * *", "--", "date"
    )
    assert created.strip() == "cronjob.batch/hello created"
    table = cluster.ok("get", "cronjobs").splitlines()
    assert table[0].split() == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST",
        "SCHEDULE",
        "AGE",
    ]
    assert table[1].split()[:8] == ["hello", "*/1", "*", "*", "*", "*", "<none>", "False"]

    job = cluster.ok("create", "job", "manual", "--from=cronjob/hello")
    assert job.strip() == "job.batch/manual created"
    cluster.ok("wait", "--for=condition=complete", "job/manual", "--timeout=60s")
    owner = cluster.ok("get", "job", "manual", "-o", "jsonpath={.metadata.ownerReferences[0].name}")
    assert owner == "hello"

    done = cluster.kubectl("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *")
    assert done.returncode == 1
    assert done.stderr == (
        'error: failed to create cronjob: CronJob.batch "bad" is invalid: spec.schedule: Invalid '
        'value: "61 * * * *": end of range (61) above maximum (59): 61\n'
    )
