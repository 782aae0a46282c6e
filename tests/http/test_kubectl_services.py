"""Services end to end with real kubectl and the `kubernetes` Python client against
`pinnace up --nodes 2`: a manifest holding a Deployment and a Service (the docs'
run-stateless-application example with a Service added), the get/describe tables, endpoints
and EndpointSlices following the pods, `kubectl expose`, a taken node port refused in
kube-apiserver's words, the Services' environment variables seen through `kubectl logs`, and
the Python client's create/read/patch/delete."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  replicas: 2
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - name: http
          containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: my-nginx
  labels:
    run: my-nginx
spec:
  ports:
  - port: 8080
    targetPort: http
    protocol: TCP
  selector:
    app: nginx
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-services"), flags=("--nodes", "2"))
    yield running
    stop(running)


def rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_a_deployment_and_a_service_in_one_manifest(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=MANIFEST) == (
        "deployment.apps/nginx-deployment created\nservice/my-nginx created\n"
    )
    table = rows(cluster.ok("get", "svc"))
    assert table[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    kubernetes, nginx = table[1], table[2]
    assert kubernetes[:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    assert nginx[0:2] == ["my-nginx", "ClusterIP"] and nginx[3:5] == ["<none>", "8080/TCP"]
    assert nginx[2].startswith("10.")

    def two_endpoints() -> str:
        out = cluster.ok(
            "get", "endpoints", "my-nginx", "-o", "jsonpath={.subsets[*].addresses[*].ip}"
        )
        assert len(out.split()) == 2
        return out

    ips = sorted(eventually(two_endpoints).split())
    listed = cluster.ok("get", "svc,endpoints,endpointslices", "-l", "run=my-nginx")
    assert "service/my-nginx" in listed
    assert f"endpoints/my-nginx   {ips[0]}:80,{ips[1]}:80" in listed or all(
        f"{ip}:80" in listed for ip in ips
    )
    slices = rows(cluster.ok("get", "endpointslices", "-l", "kubernetes.io/service-name=my-nginx"))
    assert slices[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert slices[1][0].startswith("my-nginx-")
    assert slices[1][1:3] == ["IPv4", "80"]
    assert sorted(slices[1][3].split(",")) == ips
    described = cluster.ok("describe", "svc", "my-nginx")
    assert re.search(r"Selector:\s+app=nginx", described)
    assert re.search(r"TargetPort:\s+http/TCP", described)
    assert re.search(r"Endpoints:\s+\S+:80,\S+:80", described)


def test_expose_and_a_node_port_already_taken(cluster: Cluster) -> None:
    cluster.ok("create", "deployment", "web", "--image=nginx:1.27", "--port=80")
    assert cluster.ok("expose", "deployment", "web", "--type=NodePort", "--port=80") == (
        "service/web exposed\n"
    )
    node_port = cluster.ok("get", "svc", "web", "-o", "jsonpath={.spec.ports[0].nodePort}")
    assert 30000 <= int(node_port) <= 32767
    taken = cluster.kubectl(
        "create", "service", "nodeport", "other", "--tcp=80:80", f"--node-port={node_port}"
    )
    assert taken.returncode == 1
    assert taken.stderr == (
        f'error: failed to create NodePort service: Service "other" is invalid: '
        f"spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated\n"
    )


def test_containers_see_the_services(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=MANIFEST)
    cluster.ok(
        "run",
        "envdemo",
        "--image=busybox:1.36",
        "--restart=Never",
        "--",
        "printenv",
        "KUBERNETES_SERVICE_HOST",
        "KUBERNETES_PORT",
        "MY_NGINX_PORT",
    )
    cluster_ip = cluster.ok("get", "svc", "my-nginx", "-o", "jsonpath={.spec.clusterIP}")

    def printed() -> str:
        phase = cluster.ok("get", "pod", "envdemo", "-o", "jsonpath={.status.phase}")
        assert phase == "Succeeded"
        return cluster.ok("logs", "envdemo")

    assert eventually(printed) == (f"10.96.0.1\ntcp://10.96.0.1:443\ntcp://{cluster_ip}:8080\n")


def test_the_python_client_creates_reads_patches_and_deletes(cluster: Cluster) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    body = client.V1Service(
        metadata=client.V1ObjectMeta(name="frontend", labels={"app": "frontend"}),
        spec=client.V1ServiceSpec(
            selector={"app": "frontend"},
            ports=[client.V1ServicePort(port=80, target_port=8080)],
        ),
    )
    created = core.create_namespaced_service("default", body)
    assert created.spec.cluster_ip.startswith("10.")
    assert created.spec.ports[0].protocol == "TCP"
    read = core.read_namespaced_service("frontend", "default")
    assert read.spec.cluster_ip == created.spec.cluster_ip
    patched = core.patch_namespaced_service(
        "frontend", "default", {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}
    )
    assert patched.spec.ports[0].target_port == 9090
    assert patched.spec.cluster_ip == created.spec.cluster_ip
    core.delete_namespaced_service("frontend", "default")
    names = [s.metadata.name for s in core.list_namespaced_service("default").items]
    assert "frontend" not in names


def test_the_python_clients_own_service_e2e(cluster: Cluster) -> None:
    # kubernetes-client/python e2e_test/test_client.py, test_service_apis
    api = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    name = "frontend-e2e"
    manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"labels": {"name": name}, "name": name, "resourceversion": "v1"},
        "spec": {
            "ports": [{"name": "port", "port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"name": name},
        },
    }
    resp = api.create_namespaced_service(body=manifest, namespace="default")
    assert resp.metadata.name == name and resp.status
    resp = api.read_namespaced_service(name=name, namespace="default")
    assert resp.metadata.name == name and resp.status
    manifest["spec"]["ports"] = [  # type: ignore[index]
        {"name": "new", "port": 8080, "protocol": "TCP", "targetPort": 8080}
    ]
    resp = api.patch_namespaced_service(body=manifest, name=name, namespace="default")
    assert len(resp.spec.ports) == 2 and resp.status
    api.delete_namespaced_service(name=name, body={}, namespace="default")


PREFER_CLOSE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: close
spec:
  selector:
    matchLabels:
      app: close
  replicas: 2
  template:
    metadata:
      labels:
        app: close
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels:
            app: close
      containers:
      - name: nginx
        image: nginx:1.14.2
---
apiVersion: v1
kind: Service
metadata:
  name: close
spec:
  trafficDistribution: PreferClose
  ports:
  - port: 80
  selector:
    app: close
"""


def test_prefer_close_gives_each_endpoint_its_zone_as_hint(cluster: Cluster) -> None:
    zones = {"pinnace-node-1": "zone-a", "pinnace-node-2": "zone-b"}
    for node, zone in zones.items():
        cluster.ok("label", "node", node, f"topology.kubernetes.io/zone={zone}")
    cluster.ok("apply", "-f", "-", stdin=PREFER_CLOSE)

    def endpoints() -> list[dict[str, object]]:
        found = json.loads(
            cluster.ok(
                "get", "endpointslices", "-l", "kubernetes.io/service-name=close", "-o", "json"
            )
        )
        listed = [e for s in found["items"] for e in s.get("endpoints") or ()]
        assert len(listed) == 2 and all(e["conditions"]["ready"] for e in listed)
        return listed

    for endpoint in eventually(endpoints):
        zone = zones[str(endpoint["nodeName"])]
        assert endpoint["zone"] == zone
        assert endpoint["hints"] == {"forZones": [{"name": zone}]}
    # Without it, the hints go.
    cluster.ok("patch", "svc", "close", "--type=json",
               "-p", '[{"op":"remove","path":"/spec/trafficDistribution"}]')  # fmt: skip
    assert eventually(lambda: all("hints" not in e for e in endpoints()))
