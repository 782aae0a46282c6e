"""StatefulSets and CronJobs through `pinnace up --nodes 2`, kubectl and the official Python
client: the documentation's `web` StatefulSet comes up in order and rolls out, back and scales;
its `www` claims are created and bound on the default StorageClass; `kubectl create cronjob`
and `kubectl create job --from=cronjob/...` work, and a bad schedule gets kube-apiserver's
error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

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
    # The claims come from the templates, bound on the default class `pinnace up` creates.
    claims = [line.split() for line in cluster.ok("get", "pvc").splitlines()]
    assert claims[0] == [
        "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "AGE",
    ]  # fmt: skip
    assert [(c[0], c[1], c[3], c[4], c[5]) for c in claims[1:]] == [
        (f"www-web-{i}", "Bound", "1Gi", "RWO", "standard") for i in range(3)
    ]
    classes = cluster.ok("get", "storageclass").splitlines()
    assert classes[1].split()[:5] == [
        "standard", "(default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer",
    ]  # fmt: skip

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
    # whenScaled defaults to Retain: the scaled-down pods' claims stay.
    retained = cluster.ok("get", "pvc", "-o", "name").split()
    assert retained == [f"persistentvolumeclaim/www-web-{i}" for i in range(3)]


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


REPORT = """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "0 0 1 1 *"
  jobTemplate:
    metadata:
      labels:
        team: data
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: OnFailure
          securityContext:
            runAsUser: 1000
          volumes:
          - name: settings
            configMap:
              name: report-settings
          containers:
          - name: report
            image: busybox:1.28
            command: ["sh", "-c", "cat /settings/greeting; echo; echo $NODE"]
            envFrom:
            - configMapRef:
                name: report-settings
            env:
            - name: NODE
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
            volumeMounts:
            - name: settings
              mountPath: /settings
            readinessProbe:
              exec:
                command: ["true"]
"""


def test_a_job_from_a_cron_job_keeps_the_whole_template(cluster: Cluster) -> None:
    # kubectl sends the Job it builds from the CronJob's jobTemplate in protobuf.
    cluster.ok("create", "configmap", "report-settings", "--from-literal=greeting=hello")
    cluster.ok("apply", "-f", "-", stdin=REPORT)
    cluster.ok("create", "job", "report-now", "--from=cronjob/report")
    template = json.loads(
        cluster.ok("get", "cronjob", "report", "-o", "jsonpath={.spec.jobTemplate.spec.template}")
    )
    job = json.loads(cluster.ok("get", "job", "report-now", "-o", "json"))
    assert job["metadata"]["labels"] == {"team": "data"}
    assert job["spec"]["backoffLimit"] == 2
    assert job["spec"]["template"]["spec"] == template["spec"]
    cluster.ok("wait", "--for=condition=complete", "job/report-now", "--timeout=60s")
    greeting, node = cluster.ok("logs", "job/report-now").splitlines()
    assert greeting == "hello" and node.startswith("pinnace-node-")


def test_the_python_client_drives_stateful_sets_and_cron_jobs(cluster: Cluster) -> None:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    try:
        apps, batch = client.AppsV1Api(api_client), client.BatchV1Api(api_client)
        body = yaml.safe_load(WEB)
        body["metadata"]["name"] = "py"
        body["spec"] |= {"replicas": 2, "podManagementPolicy": "Parallel"}
        created = apps.create_namespaced_stateful_set("default", body)
        assert created.spec.update_strategy.rolling_update.partition == 0
        assert created.spec.persistent_volume_claim_retention_policy.when_scaled == "Retain"
        assert created.spec.volume_claim_templates[0].status.phase == "Pending"

        def ready() -> Any:
            status = apps.read_namespaced_stateful_set_status("py", "default").status
            assert status.ready_replicas == 2
            return status

        status = eventually(ready)
        assert status.current_revision == status.update_revision
        assert status.collision_count == 0
        scale = apps.read_namespaced_stateful_set_scale("py", "default")
        assert (scale.spec.replicas, scale.status.replicas) == (2, 2)
        assert scale.status.selector == "app=nginx"

        job_template = {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [{"name": "c", "image": "busybox:1.28"}],
                    }
                }
            }
        }
        cron = batch.create_namespaced_cron_job(
            "default",
            {
                "metadata": {"name": "py-cron"},
                "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC", "jobTemplate": job_template},
            },
        )
        assert (cron.spec.concurrency_policy, cron.spec.suspend) == ("Allow", False)
        assert (cron.spec.successful_jobs_history_limit, cron.spec.failed_jobs_history_limit) == (
            3,
            1,
        )
        with pytest.raises(client.ApiException) as e:
            batch.create_namespaced_cron_job(
                "default",
                {
                    "metadata": {"name": "py-bad"},
                    "spec": {"schedule": "@often", "jobTemplate": job_template},
                },
            )
        assert e.value.status == 422
        assert json.loads(e.value.body)["details"]["causes"] == [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "@often": unrecognized descriptor: @often',
                "field": "spec.schedule",
            }
        ]
    finally:
        api_client.close()
