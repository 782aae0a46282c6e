"""Pod defaulting and the create strategy, checked against what kube-apiserver v1.32 stores."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api.core.pod import POD, default_pod_template
from pinnace.api.features import FeatureGates

DIGEST = "sha256:" + "a" * 64


def created(pod: dict[str, Any]) -> dict[str, Any]:
    POD.default(pod)
    POD.prepare_for_create(pod)
    return pod


def minimal_pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}], **spec},
    }


def test_minimal_pod_is_stored_as_kube_apiserver_stores_it() -> None:
    # `kubectl run nginx --image=nginx` then `kubectl get pod nginx -o yaml` on v1.32, minus
    # server metadata and what admission plugins add (service account, token volume,
    # default tolerations, priority).
    assert created(minimal_pod()) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx",
                    "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry.example.com:5000/team/app", "Always"),
        ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
        (f"nginx@{DIGEST}", "IfNotPresent"),
        (f"nginx:1.27@{DIGEST}", "IfNotPresent"),
        (f"nginx:latest@{DIGEST}", "Always"),
        ("Nginx", "IfNotPresent"),  # not a valid reference: no tag is found
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    pod = minimal_pod()
    pod["spec"]["containers"][0]["image"] = image
    POD.default(pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_explicit_values_are_kept() -> None:
    pod = minimal_pod(restartPolicy="Never", terminationGracePeriodSeconds=0, dnsPolicy="None")
    pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    POD.default(pod)
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 0
    assert pod["spec"]["dnsPolicy"] == "None"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_requests_default_to_limits_in_pods_only() -> None:
    resources = {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}}
    pod = minimal_pod(
        initContainers=[{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]
    )
    pod["spec"]["containers"][0]["resources"] = copy.deepcopy(resources)
    created(pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "250m",
        "memory": "128Mi",
    }
    assert pod["spec"]["initContainers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert pod["status"]["qosClass"] == "Burstable"

    template = {
        "spec": {"containers": [{"name": "c", "image": "x", "resources": copy.deepcopy(resources)}]}
    }
    default_pod_template(template)
    assert template["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
    assert "enableServiceLinks" not in template["spec"]
    assert template["spec"]["restartPolicy"] == "Always"
    assert template["spec"]["terminationGracePeriodSeconds"] == 30


def test_quantities_round_up_to_milli_precision() -> None:
    pod = minimal_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "100u"}}
    POD.default(pod)
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1m"},
        "requests": {"cpu": "1m"},
    }


def test_nested_defaults() -> None:
    probe = {"httpGet": {"port": 8080}}
    pod = minimal_pod(
        volumes=[
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "s"}},
            {"name": "host", "hostPath": {"path": "/var/log"}},
            {"name": "scratch"},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                },
            },
        ]
    )
    ctr = pod["spec"]["containers"][0]
    ctr["ports"] = [{"containerPort": 80}]
    ctr["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    ctr["livenessProbe"] = copy.deepcopy(probe)
    ctr["startupProbe"] = {"grpc": {"port": 9000}}
    ctr["lifecycle"] = {"preStop": {"httpGet": {"port": 80}}}
    POD.default(pod)
    assert ctr["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert ctr["env"][0]["valueFrom"]["fieldRef"] == {
        "fieldPath": "spec.nodeName",
        "apiVersion": "v1",
    }
    assert ctr["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert ctr["startupProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert ctr["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/", "scheme": "HTTP"}
    volumes = pod["spec"]["volumes"]
    assert volumes[0]["configMap"]["defaultMode"] == 420
    assert volumes[1]["secret"]["defaultMode"] == 420
    assert volumes[2]["hostPath"] == {"path": "/var/log", "type": ""}
    assert volumes[3] == {"name": "scratch", "emptyDir": {}}
    assert volumes[4]["downwardAPI"]["defaultMode"] == 420
    assert volumes[4]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"


def test_host_network_pods_get_host_ports() -> None:
    pod = minimal_pod(hostNetwork=True)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    POD.default(pod)
    assert pod["spec"]["containers"][0]["ports"][0]["hostPort"] == 8080


def test_overhead_is_left_alone() -> None:
    pod = minimal_pod(overhead={"cpu": "250m"})
    POD.default(pod)
    assert pod["spec"]["overhead"] == {"cpu": "250m"}


def test_defaulting_is_idempotent() -> None:
    once = created(minimal_pod())
    twice = copy.deepcopy(once)
    POD.default(twice)
    assert twice == once


def test_create_resets_status() -> None:
    pod = minimal_pod()
    pod["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
    assert created(pod)["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_each_pod_gets_the_qos_class_of_its_own_containers() -> None:
    def qos(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> str:
        spec: dict[str, Any] = {"containers": list(containers)}
        if init:
            spec["initContainers"] = list(init)
        pod = minimal_pod()
        pod["spec"] = spec
        return str(created(pod)["status"]["qosClass"])

    def ctr(requests: dict[str, str] | None = None, **limits: str) -> dict[str, Any]:
        resources = {"requests": requests or {}, "limits": limits}
        return {"name": "app", "image": "nginx", "resources": resources}

    equal = ctr(cpu="1", memory="1Gi")
    assert [qos(equal), qos(equal), qos(ctr({"cpu": "1"})), qos(equal)] == [
        "Guaranteed",
        "Guaranteed",
        "Burstable",
        "Guaranteed",
    ]
    assert qos(equal, init=(ctr({"cpu": "1"}),)) == "Burstable"
    assert qos(ctr(), init=(ctr(),)) == "BestEffort"
    assert qos({"name": "app", "image": "nginx", "resources": {"limits": {"cpu": "x"}}}) == (
        "BestEffort"
    )


def test_scheduling_gates_show_as_a_condition() -> None:
    pod = created(minimal_pod(schedulingGates=[{"name": "example.com/quota"}]))
    assert pod["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    ]


def test_match_label_keys_become_selector_requirements() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
        "matchLabelKeys": ["pod-template-hash", "absent"],
        "mismatchLabelKeys": ["tenant"],
    }
    pod = minimal_pod(
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    pod["metadata"]["labels"] = {"app": "web", "pod-template-hash": "abc", "tenant": "t1"}
    created(pod)
    stored = pod["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert stored["labelSelector"]["matchExpressions"] == [
        {"key": "pod-template-hash", "operator": "In", "values": ["abc"]},
        {"key": "tenant", "operator": "NotIn", "values": ["t1"]},
    ]
    assert stored["matchLabelKeys"] == ["pod-template-hash", "absent"]


@pytest.mark.parametrize(
    "pod",
    [
        minimal_pod(),
        minimal_pod(
            hostNetwork=True,
            overhead={"cpu": "0.1"},
            serviceAccount="builder",
            initContainers=[{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
            volumes=[{"name": "v", "secret": {"secretName": "s"}}],
        ),
        {
            **minimal_pod(),
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "app:1",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    }
                ]
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
    ],
)
def test_pod_defaults_fill_in_the_spec_alone(pod: dict[str, Any]) -> None:
    # What lets a write to pods/status skip them (Kind.status_write_discards_defaults): the
    # status strategy puts the stored spec back.
    defaulted = copy.deepcopy(pod)
    POD.default(defaulted)
    POD.default_with_features(defaulted, FeatureGates(in_place_pod_vertical_scaling=True))
    assert defaulted["spec"] != pod["spec"]
    assert {k: v for k, v in defaulted.items() if k != "spec"} == {
        k: v for k, v in pod.items() if k != "spec"
    }
    assert POD.status_write_discards_defaults
