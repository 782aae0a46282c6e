"""Secrets, ServiceAccounts and ReplicationControllers through `pinnace up --nodes 1`, real
kubectl and the official Python client, in real time: `kubectl create secret` of each kind,
a pod that reads a Secret through env and a volume (`kubectl logs`), the default account and
kube-root-ca.crt of a new namespace, kube-apiserver's refusals, and a ReplicationController
created, scaled and deleted."""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)
from cryptography.x509.oid import NameOID
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

WAIT = 30.0

READER = """
apiVersion: v1
kind: Pod
metadata:
  name: reader
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: registry.k8s.io/busybox
    command: ["/bin/sh", "-c", "echo user=$DB_USER; cat /etc/creds/password; echo; ls /etc/creds"]
    env:
    - name: DB_USER
      valueFrom:
        secretKeyRef:
          name: db-creds
          key: username
    volumeMounts:
    - name: creds
      mountPath: /etc/creds
      readOnly: true
  volumes:
  - name: creds
    secret:
      secretName: db-creds
"""

RC = """
apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up"), flags=("--nodes", "1"))
    yield running
    stop(running)


def _tls_pair(directory: Path) -> tuple[Path, Path]:
    key = Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.com")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, None)
    )
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(cert.public_bytes(Encoding.PEM))
    key_file.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return cert_file, key_file


def test_kubectl_creates_secrets_of_each_kind_and_lists_them(cluster: Cluster) -> None:
    cluster.ok(
        "create", "secret", "generic", "db-creds",
        "--from-literal=username=admin", "--from-literal=password=s3cr3t",
    )  # fmt: skip
    cert, key = _tls_pair(cluster.workdir)
    cluster.ok("create", "secret", "tls", "site", f"--cert={cert}", f"--key={key}")
    cluster.ok(
        "create", "secret", "docker-registry", "registry",
        "--docker-server=registry.example.com", "--docker-username=u", "--docker-password=p",
    )  # fmt: skip
    rows = [line.split()[:3] for line in cluster.ok("get", "secrets").splitlines()]
    assert rows == [
        ["NAME", "TYPE", "DATA"],
        ["db-creds", "Opaque", "2"],
        ["registry", "kubernetes.io/dockerconfigjson", "1"],
        ["site", "kubernetes.io/tls", "2"],
    ]
    secret = json.loads(cluster.ok("get", "secret", "db-creds", "-o", "json"))
    assert secret["data"] == {
        "password": base64.b64encode(b"s3cr3t").decode(),
        "username": base64.b64encode(b"admin").decode(),
    }
    assert "stringData" not in secret
    dockercfg = json.loads(cluster.ok("get", "secret", "registry", "-o", "json"))["data"]
    auths = json.loads(base64.b64decode(dockercfg[".dockerconfigjson"]))["auths"]
    assert list(auths) == ["registry.example.com"]
    assert "data:\n  password: czNjcjN0\n" in cluster.ok("get", "secret", "db-creds", "-o", "yaml")


def test_a_bad_secret_gets_kube_apiservers_error(cluster: Cluster) -> None:
    bad = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\ntype: kubernetes.io/tls\n"
    done = cluster.kubectl("create", "-f", "-", stdin=bad)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'The Secret "bad" is invalid: \n'
        "* data[tls.crt]: Required value\n"
        "* data[tls.key]: Required value"
    )


def test_a_pod_reads_a_secret_through_env_and_a_volume(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=READER)
    eventually(
        lambda: cluster.ok("get", "pod", "reader", "-o", "jsonpath={.status.phase}") == "Succeeded",
        WAIT,
    )
    assert cluster.ok("logs", "reader").splitlines() == [
        "user=admin",
        "s3cr3t",
        "password",
        "username",
    ]
    spec = json.loads(cluster.ok("get", "pod", "reader", "-o", "json"))["spec"]
    assert spec["serviceAccountName"] == "default"
    assert [v["name"][:16] for v in spec["volumes"]] == ["creds", "kube-api-access-"]


def test_a_new_namespace_gets_its_default_account_and_root_ca(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "team")
    rows = eventually(lambda: cluster.ok("get", "sa", "-n", "team").splitlines(), WAIT)
    assert [row.split()[:2] for row in rows] == [["NAME", "SECRETS"], ["default", "0"]]
    ca = cluster.ok(
        "get", "cm", "kube-root-ca.crt", "-n", "team", "-o", "jsonpath={.data.ca\\.crt}"
    )
    assert ca.startswith("-----BEGIN CERTIFICATE-----")
    done = cluster.kubectl("run", "p", "-n", "team", "--image=nginx", "--overrides",
                           '{"spec": {"serviceAccountName": "nope"}}')  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (Forbidden): pods "p" is forbidden: error looking up service '
        'account team/nope: serviceaccount "nope" not found'
    )


def test_kubectl_gets_and_scales_a_replication_controller(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=RC)

    def ready() -> list[str]:
        rows = cluster.ok("get", "rc", "nginx").splitlines()
        assert rows[1].split()[:4] == ["nginx", "3", "3", "3"], rows
        return rows

    assert ready()[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert cluster.ok("scale", "rc", "nginx", "--replicas=1").strip() == (
        "replicationcontroller/nginx scaled"
    )

    def scaled_down() -> bool:
        pods = cluster.ok("get", "pods", "-l", "app=nginx", "-o", "name").split()
        assert len(pods) == 1, pods
        return True

    eventually(scaled_down, WAIT)
    cluster.ok("delete", "rc", "nginx")


def test_the_python_clients_replication_controller_flow(cluster: Cluster) -> None:
    api = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    name = "frontend"
    manifest = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"labels": {"name": name}, "name": name},
        "spec": {
            "replicas": 2,
            "selector": {"name": name},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {
                    "containers": [
                        {
                            "image": "nginx",
                            "name": "nginx",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
    }
    created = api.create_namespaced_replication_controller(body=manifest, namespace="default")
    assert (created.metadata.name, created.spec.replicas) == (name, 2)
    read = api.read_namespaced_replication_controller(name=name, namespace="default")
    assert (read.metadata.name, read.spec.replicas) == (name, 2)
    scale = api.patch_namespaced_replication_controller_scale(
        name=name, namespace="default", body={"spec": {"replicas": 1}}
    )
    assert scale.spec.replicas == 1
    eventually(
        lambda: (
            api.read_namespaced_replication_controller_status(name, "default").status.replicas == 1
        ),
        WAIT,
    )
    api.delete_namespaced_replication_controller(
        name=name, namespace="default", propagation_policy="Background"
    )

    def gone() -> bool:
        pods = api.list_namespaced_pod("default", label_selector=f"name={name}").items
        return not [p for p in pods if p.metadata.deletion_timestamp is None]

    eventually(gone, WAIT)


def test_a_service_account_subject_has_no_api_group(cluster: Cluster) -> None:
    # SetDefaults_Subject leaves a ServiceAccount's apiGroup empty, which JSON omits; a User's
    # and a Group's is rbac.authorization.k8s.io.
    cluster.ok("create", "serviceaccount", "robot")
    cluster.ok("create", "rolebinding", "robot-view", "--clusterrole=view", "--user=ann")
    cluster.ok("set", "subject", "rolebinding", "robot-view", "--serviceaccount=default:robot")
    found = cluster.ok("get", "rolebinding", "robot-view", "-o", "jsonpath={.subjects}")
    assert json.loads(found) == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ann"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": "default"},
    ]
