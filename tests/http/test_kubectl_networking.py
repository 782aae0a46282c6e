"""An ordinary application's manifests with real kubectl against `pinnace up`: an IngressClass,
an Ingress, a NetworkPolicy and a PodTemplate are applied, listed with v1.32's columns,
refused as kube-apiserver v1.32 refuses bad ones, read back through the official Python
client's NetworkingV1Api, and deleted with their namespace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
spec:
  ingressClassName: nginx
  tls:
  - hosts: [shop.example.com]
    secretName: shop-tls
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: db
  namespace: shop
spec:
  podSelector:
    matchLabels:
      role: db
  ingress:
  - from:
    - podSelector:
        matchLabels:
          role: web
    ports:
    - port: 5432
---
apiVersion: v1
kind: PodTemplate
metadata:
  name: worker
  namespace: shop
template:
  metadata:
    labels:
      app: worker
  spec:
    containers:
    - name: worker
      image: busybox:1.36
"""

BAD_INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bad
  namespace: shop
spec:
  rules:
  - http:
      paths:
      - path: app
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-networking"), flags=("--no-scheduler",))
    yield running
    stop(running)


@pytest.fixture(scope="module")
def applied(cluster: Cluster) -> Cluster:
    assert cluster.ok("apply", "-f", "-", stdin=MANIFEST).splitlines() == [
        "namespace/shop created",
        "ingressclass.networking.k8s.io/nginx created",
        "ingress.networking.k8s.io/web created",
        "networkpolicy.networking.k8s.io/db created",
        "podtemplate/worker created",
    ]
    return cluster


def test_kubectl_get_prints_v1_32_columns(applied: Cluster) -> None:
    listed = applied.ok("get", "ingress,networkpolicy,ingressclass,podtemplates", "-n", "shop")
    rows = [line.split() for line in listed.splitlines() if line]
    assert rows[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert rows[1][:5] == [
        "ingress.networking.k8s.io/web",
        "nginx",
        "shop.example.com",
        "80,",
        "443",
    ]
    assert rows[2] == ["NAME", "POD-SELECTOR", "AGE"]
    assert rows[3][:2] == ["networkpolicy.networking.k8s.io/db", "role=db"]
    assert rows[4] == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    assert rows[5][:3] == ["ingressclass.networking.k8s.io/nginx", "k8s.io/ingress-nginx", "<none>"]
    assert rows[6] == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"]
    assert rows[7] == ["podtemplate/worker", "worker", "busybox:1.36", "app=worker"]


def test_defaults_and_apply_again(applied: Cluster) -> None:
    spec = applied.ok("get", "netpol", "db", "-n", "shop", "-o", "jsonpath={.spec}")
    assert '"policyTypes":["Ingress"]' in spec
    assert '"ports":[{"port":5432,"protocol":"TCP"}]' in spec
    # A second apply is a strategic merge patch of the changed fields.
    changed = MANIFEST.replace("port: 5432", "port: 5433")
    out = applied.ok("apply", "-f", "-", stdin=changed)
    assert "networkpolicy.networking.k8s.io/db configured" in out.splitlines()
    ports = applied.ok(
        "get", "netpol", "db", "-n", "shop", "-o", "jsonpath={.spec.ingress[0].ports}"
    )
    assert ports == '[{"port":5433,"protocol":"TCP"}]'


def test_a_bad_ingress_gets_kube_apiservers_error(applied: Cluster) -> None:
    refused = applied.kubectl("apply", "-f", "-", stdin=BAD_INGRESS)
    assert refused.returncode == 1
    assert refused.stderr == (
        'The Ingress "bad" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "app": '
        "must be an absolute path\n"
    )


def test_kubectl_create_ingress_sends_protobuf_and_gets_the_default_class(applied: Cluster) -> None:
    created = applied.ok(
        "create",
        "ingress",
        "simple",
        "-n",
        "shop",
        "--rule=foo.com/bar=svc1:8080,tls=my-cert",
    )
    assert created == "ingress.networking.k8s.io/simple created\n"
    # DefaultIngressClass gave it the default class.
    class_name = applied.ok(
        "get", "ingress", "simple", "-n", "shop", "-o", "jsonpath={.spec.ingressClassName}"
    )
    assert class_name == "nginx"
    path = applied.ok(
        "get", "ingress", "simple", "-n", "shop", "-o", "jsonpath={.spec.rules[0].http.paths[0]}"
    )
    assert path == (
        '{"backend":{"service":{"name":"svc1","port":{"number":8080}}},"path":"/bar",'
        '"pathType":"Exact"}'
    )
    applied.ok("delete", "ingress", "simple", "-n", "shop")


def test_the_deprecated_class_annotation_gets_a_warning(applied: Cluster) -> None:
    annotated = (
        BAD_INGRESS.replace("name: bad", "name: annotated")
        .replace("path: app", "path: /app")
        .replace(
            "namespace: shop",
            "namespace: shop\n  annotations:\n    kubernetes.io/ingress.class: nginx",
        )
    )
    done = applied.kubectl("apply", "-f", "-", stdin=annotated)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ingress.networking.k8s.io/annotated created\n"
    assert done.stderr == (
        'Warning: annotation "kubernetes.io/ingress.class" is deprecated, please use '
        "'spec.ingressClassName' instead\n"
    )
    applied.ok("delete", "ingress", "annotated", "-n", "shop")


def test_the_python_client_reads_them_back(applied: Cluster) -> None:
    api_client = config.new_client_from_config(str(applied.kubeconfig))
    try:
        networking = client.NetworkingV1Api(api_client)
        ingress = networking.read_namespaced_ingress("web", "shop")
        assert ingress.spec.rules[0].http.paths[0].backend.service.port.number == 80
        assert ingress.metadata.generation == 1
        assert [i.metadata.name for i in networking.list_ingress_class().items] == ["nginx"]
        policy = networking.read_namespaced_network_policy("db", "shop")
        assert policy.spec.pod_selector.match_labels == {"role": "db"}
        status = networking.replace_namespaced_ingress_status(
            "web",
            "shop",
            {
                **api_client.sanitize_for_serialization(ingress),
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}},
            },
        )
        assert status.status.load_balancer.ingress[0].ip == "192.0.2.10"
        template = client.CoreV1Api(api_client).read_namespaced_pod_template("worker", "shop")
        assert template.template.spec.containers[0].image == "busybox:1.36"
    finally:
        api_client.close()
    address = applied.ok("get", "ingress", "web", "-n", "shop", "--no-headers").split()[3]
    assert address == "192.0.2.10"


def test_namespace_deletion_deletes_them(applied: Cluster) -> None:
    applied.ok("delete", "namespace", "shop", "--timeout=60s")
    for kind in ("ingress", "networkpolicy", "podtemplates"):
        assert applied.ok("get", kind, "-A", "-o", "name") == ""
    assert (
        applied.ok("get", "ingressclass", "-o", "name") == "ingressclass.networking.k8s.io/nginx\n"
    )
