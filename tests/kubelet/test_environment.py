"""The environment a container gets, as the kubelet builds it, seen through what its command
prints: envFrom with a prefix, env in order with $(VAR) expansion, values from ConfigMaps,
pod fields and container resources, and $(VAR) in command and args."""

from __future__ import annotations

from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import CONFIG, EVENTS, Node, pod

from pinnace.api import catalog
from pinnace.kubelet.environment import expand


def printed(node: Node, name: str) -> list[str]:
    """What the pod's container `app` printed so far."""
    uid = node.get_pod(name)["metadata"]["uid"]
    run = node.agent.workers[uid].container_log("app", previous=False)
    assert run is not None
    return [line for _, line in run.log]


def running(node: Node, name: str, container: dict[str, Any], **spec: Any) -> list[str]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0].update(container)
    body["spec"].update(spec)
    node.create_pod(body)
    node.settle()
    return printed(node, name)


def test_expansion_as_the_kubelet_does_it() -> None:
    known = {"A": "1", "EMPTY": ""}.get
    assert expand("$(A)-$(EMPTY)-$(B)", known) == "1--$(B)"
    assert expand("$$(A) $$ $x $(A $", known) == "$(A) $ $x $(A $"
    assert expand("$(A)$(A)", known) == "11"


def test_env_from_with_prefix_then_env_in_order(node: Node) -> None:
    data = {"SPECIAL_LEVEL": "very", "SPECIAL_TYPE": "charm", "1st": "kept"}
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("special-config", **data)))
    env = [
        {"name": "GREETING", "value": "$(CFG_SPECIAL_LEVEL) $(LATER) $$(CFG_SPECIAL_TYPE)"},
        {"name": "LATER", "value": "later"},
        {"name": "CFG_SPECIAL_TYPE", "value": "replaced"},
        {
            "name": "LEVEL",
            "valueFrom": {"configMapKeyRef": {"name": "special-config", "key": "SPECIAL_LEVEL"}},
        },
        {
            "name": "NOTHING",
            "valueFrom": {
                "configMapKeyRef": {"name": "special-config", "key": "absent", "optional": True}
            },
        },
    ]
    lines = running(
        node,
        "env-demo",
        {
            "image": "busybox",
            "command": ["/bin/sh", "-c", "env"],
            "envFrom": [
                {"prefix": "CFG_", "configMapRef": {"name": "special-config"}},
                {"configMapRef": {"name": "special-config"}},
            ],
            "env": env,
        },
    )
    assert "CFG_SPECIAL_LEVEL=very" in lines and "CFG_1st=kept" in lines
    assert "SPECIAL_LEVEL=very" in lines
    # v1.30+ kubelets keep keys that are not C identifiers (relaxed names): no event either
    assert "1st=kept" in lines
    assert "GREETING=very $(LATER) $(CFG_SPECIAL_TYPE)" in lines
    assert "CFG_SPECIAL_TYPE=replaced" in lines
    assert "LEVEL=very" in lines
    assert "HOSTNAME=env-demo" in lines
    assert not [line for line in lines if line.startswith("NOTHING=")]
    events = node.run(node.client.list(EVENTS, "default"))["items"]
    assert not [e for e in events if e["reason"] == "InvalidEnvironmentVariableNames"]


def test_command_and_args_expand_the_environment(node: Node) -> None:
    # "Configure a Pod to Use a ConfigMap": /bin/echo with $(VAR) references
    node.run(
        node.client.create(
            CONFIG_MAPS, "default", config_map("special-config", SPECIAL_LEVEL="very")
        )
    )
    ref = {"configMapKeyRef": {"name": "special-config", "key": "SPECIAL_LEVEL"}}
    lines = running(
        node,
        "dapi-test-pod",
        {
            "command": ["/bin/echo", "$(SPECIAL_LEVEL_KEY) $(SPECIAL_TYPE_KEY)"],
            "env": [
                {"name": "SPECIAL_LEVEL_KEY", "valueFrom": ref},
                {"name": "SPECIAL_TYPE_KEY", "value": "charm"},
            ],
        },
        restartPolicy="Never",
    )
    assert lines == ["very charm"]
    assert node.get_pod("dapi-test-pod")["status"]["phase"] == "Succeeded"


def test_pod_fields_and_container_resources(node: Node) -> None:
    def field(path: str) -> dict[str, Any]:
        return {"fieldRef": {"fieldPath": path}}

    def resource(name: str, divisor: str = "") -> dict[str, Any]:
        selector = {"resource": name, **({"divisor": divisor} if divisor else {})}
        return {"resourceFieldRef": selector}

    sources = {
        "MY_NODE_NAME": field("spec.nodeName"),
        "MY_POD_NAME": field("metadata.name"),
        "MY_POD_NAMESPACE": field("metadata.namespace"),
        "MY_POD_IP": field("status.podIP"),
        "MY_HOST_IP": field("status.hostIP"),
        "MY_POD_SERVICE_ACCOUNT": field("spec.serviceAccountName"),
        "TIER": field("metadata.labels['tier']"),
        "NOTE": field("metadata.annotations['note']"),
        "CPU_REQUEST_MILLI": resource("requests.cpu", "1m"),
        "CPU_LIMIT": resource("limits.cpu"),
        "MEMORY_REQUEST_MI": resource("requests.memory", "1Mi"),
        "MEMORY_LIMIT_MI": resource("limits.memory", "1Mi"),
        "STORAGE_LIMIT_GI": resource("limits.ephemeral-storage", "1Gi"),
    }
    body = pod("dapi-envars-fieldref", node="node-1")
    body["metadata"]["labels"] = {"tier": "backend"}
    body["metadata"]["annotations"] = {"note": "hello"}
    body["spec"]["serviceAccountName"] = "default"
    body["spec"]["containers"][0].update(
        command=["sh", "-c", "printenv " + " ".join(sources)],
        env=[{"name": k, "valueFrom": v} for k, v in sources.items()],
        resources={"requests": {"cpu": "250m"}, "limits": {"memory": "32Mi"}},
    )
    node.create_pod(body)
    node.settle()
    status = node.get_pod("dapi-envars-fieldref")["status"]
    allocatable = CONFIG.allocatable_list()
    assert dict(zip(sources, printed(node, "dapi-envars-fieldref"), strict=True)) == {
        "MY_NODE_NAME": "node-1",
        "MY_POD_NAME": "dapi-envars-fieldref",
        "MY_POD_NAMESPACE": "default",
        "MY_POD_IP": status["podIP"],
        "MY_HOST_IP": status["hostIP"],
        "MY_POD_SERVICE_ACCOUNT": "default",
        "TIER": "backend",
        "NOTE": "hello",
        "CPU_REQUEST_MILLI": "250",
        "CPU_LIMIT": "2",  # no limit: the node's allocatable
        "STORAGE_LIMIT_GI": str(-(-allocatable["ephemeral-storage"].value() // 2**30)),
        "MEMORY_REQUEST_MI": "32",  # defaulted from the limit
        "MEMORY_LIMIT_MI": "32",
    }


def test_a_missing_config_map_key_is_a_config_error_until_it_appears(node: Node) -> None:
    ref = {"configMapKeyRef": {"name": "settings", "key": "level"}}
    body = pod("strict", node="node-1")
    body["spec"]["containers"][0]["env"] = [{"name": "LEVEL", "valueFrom": ref}]
    body["spec"]["containers"][0]["command"] = ["sh", "-c", 'echo "level is $LEVEL"']
    node.create_pod(body)
    node.settle()
    waiting = node.get_pod("strict")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "settings" not found',
    }
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("settings", level="debug")))
    node.settle()
    assert printed(node, "strict")[0] == "level is debug"


def test_a_config_error_is_retried_and_recorded_at_each_failed_sync(node: Node) -> None:
    # The pod worker retries a failed sync after backOffPeriod (10 s); each retry finds the
    # image present and fails to make the environment again: `kubectl describe pod` counts
    # both events (Pulled and Failed, xN over the time waited).
    ref = {"configMapKeyRef": {"name": "settings", "key": "level"}}
    body = pod("strict", node="node-1")
    body["spec"]["containers"][0].update(image="busybox:1.36", command=["sleep", "3600"])
    body["spec"]["containers"][0]["env"] = [{"name": "LEVEL", "valueFrom": ref}]
    node.create_pod(body)

    def counts() -> dict[str, int]:
        events = node.run(node.client.list(EVENTS, "default"))["items"]
        return {e["message"]: e.get("count", 1) for e in events}

    failed = 'Error: configmap "settings" not found'
    present = 'Container image "busybox:1.36" already present on machine'
    node.settle(5)
    first = counts()
    node.settle(30)
    later = counts()
    assert later[failed] - first[failed] == 3
    assert later[present] - first.get(present, 0) == 3


@pytest.mark.parametrize(
    "env",
    [
        {"env": [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k"}}}]},
        {"envFrom": [{"configMapRef": {"name": "x"}}]},
    ],
)
def test_a_container_running_no_command_still_fails_on_its_environment(
    node: Node, env: dict[str, Any]
) -> None:
    # Nothing reads the environment of a container whose image's command is not known, but
    # the kubelet makes it before creating the container all the same.
    body = pod("quiet", node="node-1")
    body["spec"]["containers"][0].update(image="example.com/quiet:1", **env)
    node.create_pod(body)
    node.settle()
    waiting = node.get_pod("quiet")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "x" not found',
    }


SERVICES = catalog.kind("", "services")


def test_the_docs_command_demo_prints_kubernetes_port(node: Node) -> None:
    # https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/
    lines = running(
        node,
        "command-demo",
        {
            "command": ["printenv"],
            "args": ["HOSTNAME", "KUBERNETES_PORT"],
        },
        restartPolicy="OnFailure",
    )
    assert lines == ["command-demo", "tcp://10.96.0.1:443"]


def test_service_links_for_the_services_there_when_the_container_starts(node: Node) -> None:
    service = {
        "metadata": {"name": "my-db"},
        "spec": {
            "clusterIP": "10.96.0.20",
            "ports": [
                {"name": "postgres", "port": 5432},
                {"name": "metrics", "port": 9187, "protocol": "UDP"},
            ],
        },
    }
    node.run(node.client.create(SERVICES, "default", service))
    headless = {
        "metadata": {"name": "peers"},
        "spec": {"clusterIP": "None", "ports": [{"port": 1}]},
    }
    node.run(node.client.create(SERVICES, "default", headless))
    node.settle()
    names = [
        "KUBERNETES_SERVICE_HOST",
        "KUBERNETES_SERVICE_PORT",
        "KUBERNETES_SERVICE_PORT_HTTPS",
        "KUBERNETES_PORT_443_TCP_ADDR",
        "MY_DB_SERVICE_HOST",
        "MY_DB_SERVICE_PORT",
        "MY_DB_SERVICE_PORT_METRICS",
        "MY_DB_PORT",
        "MY_DB_PORT_5432_TCP",
        "MY_DB_PORT_5432_TCP_PROTO",
        "MY_DB_PORT_5432_TCP_PORT",
        "MY_DB_PORT_5432_TCP_ADDR",
        "MY_DB_PORT_9187_UDP",
        "DB_URL",
    ]
    lines = running(
        node,
        "client",
        {
            "command": [
                "sh",
                "-c",
                "printenv " + " ".join(names) + "; printenv PEERS_SERVICE_HOST",
            ],
            "env": [{"name": "DB_URL", "value": "postgres://$(MY_DB_SERVICE_HOST):5432"}],
        },
        restartPolicy="Never",
    )
    assert lines == [
        "10.96.0.1",
        "443",
        "443",
        "10.96.0.1",
        "10.96.0.20",
        "5432",
        "9187",
        "tcp://10.96.0.20:5432",
        "tcp://10.96.0.20:5432",
        "tcp",
        "5432",
        "10.96.0.20",
        "udp://10.96.0.20:9187",
        "postgres://10.96.0.20:5432",
    ]


def test_without_service_links_only_the_kubernetes_service(node: Node) -> None:
    service = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    node.run(node.client.create(SERVICES, "default", service))
    node.settle()
    lines = running(
        node,
        "quiet",
        {"command": ["sh", "-c", "printenv KUBERNETES_SERVICE_HOST; printenv WEB_SERVICE_HOST"]},
        restartPolicy="Never",
        enableServiceLinks=False,
    )
    assert lines == ["10.96.0.1"]
