"""kube-apiserver v1.32's `Warning` headers for pods and pod templates (pkg/api/pod/warnings.go
and the strategies' WarningsOnCreate/WarningsOnUpdate), in its exact words."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.pod_warnings import pod_warnings
from pinnace.api.options import WriteOptions

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
ARCH = 'deprecated since v1.14; use "kubernetes.io/arch" instead'


def pod_spec(**spec: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "nginx"}], **spec}


def pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec(**spec)}


def deployment(**spec: Any) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec(**spec)},
        },
    }


def test_a_plain_pod_gets_no_warning() -> None:
    assert pod_warnings(pod()) == []


def test_deprecated_node_labels() -> None:
    term = {"matchExpressions": [{"key": "beta.kubernetes.io/os", "operator": "Exists"}]}
    obj = pod(
        nodeSelector={"beta.kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term}
                ],
            }
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "failure-domain.beta.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ],
    )
    os_message = 'beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead'
    assert pod_warnings(obj) == [
        f"spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}",
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        f".nodeSelectorTerms[0].matchExpressions[0].key: {os_message}",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        f".preference.matchExpressions[0].key: {os_message}",
        "spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone"
        ' is deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
        "spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in "
        "matching no pod",
    ]


def test_fractional_bytes_duplicate_env_and_ports() -> None:
    obj = pod()
    obj["spec"]["containers"][0].update(
        resources={"requests": {"memory": "100m"}, "limits": {"ephemeral-storage": "1.5"}},
        env=[
            {"name": "A", "value": "1"},
            {"name": "A", "value": "$(A)-more"},  # extends the previous value: fine
            {"name": "A", "value": "2"},
        ],
        ports=[{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "TCP"}],
    )
    assert pod_warnings(obj) == [
        'spec.containers[0].resources.requests[memory]: fractional byte value "100m" is '
        "invalid, must be an integer",
        'spec.containers[0].resources.limits[ephemeral-storage]: fractional byte value "1500m"'
        " is invalid, must be an integer",
        'spec.containers[0].env[2]: hides previous definition of "A", which may be dropped when '
        "using apply",
        "spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]",
    ]


def test_deprecated_annotations_grace_period_and_pod_name() -> None:
    obj = pod("web.example", terminationGracePeriodSeconds=-5)
    obj["metadata"]["annotations"] = {
        "scheduler.alpha.kubernetes.io/critical-pod": "",
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
    }
    assert pod_warnings(obj) == [
        "metadata.name: this is used in the Pod's hostname, which can result in surprising "
        "behavior; a DNS label is recommended: [must not contain dots]",
        "metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in "
        'v1.16+; use the "priorityClassName" field instead',
        "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in "
        'v1.27+; use the "seccompProfile" field instead',
        "spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will "
        "be treated as 1",
    ]


def test_pod_create_warns_and_pod_update_does_not(api: Any) -> None:
    created = api.call(
        api.server.create, PODS, "default", pod(nodeSelector={"beta.kubernetes.io/arch": "amd64"})
    )
    assert created.warnings == [f"spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"]
    changed = copy.deepcopy(created.obj)
    changed["metadata"]["labels"] = {"x": "y"}
    updated = api.call(api.server.update, PODS, "default", "web", changed)
    assert updated.warnings == []


def test_a_deployment_template_warns_on_create_and_on_a_spec_change(api: Any) -> None:
    body = deployment(nodeSelector={"beta.kubernetes.io/arch": "amd64"})
    warning = f"spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"
    dry = api.call(api.server.create, DEPLOYMENTS, "default", body, WriteOptions(dry_run=True))
    assert dry.warnings == [warning]
    created = api.call(api.server.create, DEPLOYMENTS, "default", body)
    assert created.warnings == [warning]
    # Only a write that bumps the generation is checked: not a label change, nor the status.
    relabelled = copy.deepcopy(created.obj)
    relabelled["metadata"]["labels"] = {"x": "y"}
    relabelled = api.call(api.server.update, DEPLOYMENTS, "default", "web", relabelled)
    assert relabelled.warnings == []
    status = copy.deepcopy(relabelled.obj)
    status["status"] = {"observedGeneration": 1}
    written = api.call(api.server.update, DEPLOYMENTS, "default", "web", status, None, "status")
    assert written.warnings == []
    scaled = copy.deepcopy(written.obj)
    scaled["spec"]["replicas"] = 3
    scaled = api.call(api.server.update, DEPLOYMENTS, "default", "web", scaled)
    assert scaled.warnings == [warning]


def test_workloads_whose_pods_are_named_after_them_warn_of_a_dotted_name() -> None:
    name_warning = (
        "metadata.name: this is used in Pod names and hostnames, which can result in surprising "
        "behavior; a DNS label is recommended: [must not contain dots]"
    )
    job = {"metadata": {"name": "pi.v1"}, "spec": {"template": {"spec": pod_spec()}}}
    assert catalog.kind("batch", "jobs").warnings_on_create(job) == [name_warning]
    # A StatefulSet's pods are named after it too, but v1.32 does not warn for it.
    assert catalog.kind("apps", "statefulsets").warnings_on_create(job) == []
    template = {"metadata": {"name": "t"}, "template": job["spec"]["template"]}
    template["template"]["spec"]["nodeSelector"] = {"beta.kubernetes.io/arch": "amd64"}
    assert catalog.kind("", "podtemplates").warnings_on_create(template) == [
        f"template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"
    ]


def test_claim_templates_with_fractional_storage() -> None:
    claim = {"spec": {"resources": {"requests": {"storage": "1.5"}}}}
    ephemeral = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": claim}}
    fraction = 'fractional byte value "1500m" is invalid, must be an integer'
    assert pod_warnings(pod(volumes=[ephemeral])) == [
        "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: "
        + fraction
    ]
    sts = {
        "metadata": {"name": "db", "generation": 1},
        "spec": {
            "template": {"spec": pod_spec()},
            "volumeClaimTemplates": [claim],
            "revisionHistoryLimit": -1,
        },
    }
    history = (
        "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value "
        ">= 0 is recommended"
    )
    statefulsets = catalog.kind("apps", "statefulsets")
    assert statefulsets.warnings_on_create(sts) == [
        f"spec.volumeClaimTemplates[0].resources.requests[storage]: {fraction}",
        history,
    ]
    # On update these come whether or not the generation moved, under v1.32's `Spec`.
    assert statefulsets.warnings_on_update(sts, sts) == [
        f"spec.volumeClaimTemplates[0].Spec.resources.requests[storage]: {fraction}",
        history,
    ]


def test_a_huge_indexed_job_warns_ahead_of_its_template() -> None:
    spec = {
        "completionMode": "Indexed",
        "completions": 200_000,
        "parallelism": 20_000,
        "template": {"spec": pod_spec(nodeSelector={"beta.kubernetes.io/arch": "amd64"})},
    }
    cron_job = {"metadata": {"name": "nightly"}, "spec": {"jobTemplate": {"spec": spec}}}
    assert catalog.kind("batch", "cronjobs").warnings_on_create(cron_job) == [
        "spec.jobTemplate.spec: In Indexed Jobs with a number of completions higher than 10^5 "
        "and a parallelism higher than 10^4, Kubernetes might not be able to track "
        "completedIndexes when a big number of indexes fail",
        f"spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}",
    ]


def test_projected_paths_that_clash_with_a_service_account_token() -> None:
    sources = [
        {"serviceAccountToken": {"path": "token"}},
        {
            "configMap": {
                "name": "cm",
                "items": [{"key": "a", "path": "a"}, {"key": "t", "path": "token"}],
            }
        },
        {"downwardAPI": {"items": [{"path": "token", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"clusterTrustBundle": {"signerName": "x/y", "path": "token"}},
    ]
    volumes = [
        {"name": "plain", "emptyDir": {}},
        {"name": "access", "projected": {"sources": sources}},
        {"name": "old", "gitRepo": {"repository": "r"}},
    ]
    clash = 'has duplicated path with ServiceAccountToken "token"'
    assert pod_warnings(pod(volumes=volumes)) == [
        "spec.volumes[2].gitRepo: deprecated in v1.11",
        f"spec.volumes[1].projected.sources.configMap[1]: {clash}",
        f"spec.volumes[1].projected.sources.downwardAPI[0]: {clash}",
        f"spec.volumes[1].projected.sources.ClusterTrustBundle: {clash}",
    ]


def test_pods_of_one_shape_each_get_their_own_warnings(api: Any) -> None:
    """The server remembers a valid spec's warnings by its shape (its volumes' names left
    out, as the ServiceAccount admission names each pod's own): every pod still gets its
    name's and its annotations' warnings, in their places."""

    def body(name: str, volume: str, annotations: dict[str, str] | None = None) -> Any:
        obj = pod(
            name,
            volumes=[
                {
                    "name": volume,
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token"}},
                            {"configMap": {"name": "cm", "items": [{"key": "t", "path": "token"}]}},
                        ]
                    },
                }
            ],
            serviceAccountName="default",
        )
        container = obj["spec"]["containers"][0]
        container["volumeMounts"] = [{"name": volume, "mountPath": "/var/run/access"}]
        container["resources"] = {"requests": {"memory": "100m"}}
        if annotations:
            obj["metadata"]["annotations"] = annotations
        return obj

    clash = (
        "spec.volumes[0].projected.sources.configMap[0]: has duplicated path with "
        'ServiceAccountToken "token"'
    )
    fraction = (
        'spec.containers[0].resources.requests[memory]: fractional byte value "100m" is '
        "invalid, must be an integer"
    )
    seccomp = (
        "metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: "
        'non-functional in v1.27+; use the "seccompProfile" field instead'
    )
    dotted = (
        "metadata.name: this is used in the Pod's hostname, which can result in surprising "
        "behavior; a DNS label is recommended: [must not contain dots]"
    )
    seccomp_annotation = {"container.seccomp.security.alpha.kubernetes.io/c": "unconfined"}
    for obj, expected in [
        (body("web-1", "access-a"), [clash, fraction]),
        (body("web-2", "access-b"), [clash, fraction]),
        (body("web.3", "access-c"), [dotted, clash, fraction]),
        (body("web-4", "access-d", seccomp_annotation), [clash, seccomp, fraction]),
        (body("web-5", "access-e", {"note": "x"}), [clash, fraction]),
    ]:
        created = api.call(api.server.create, PODS, "default", obj)
        assert created.warnings == expected
        assert pod_warnings(created.obj) == expected


APPARMOR = "container.apparmor.security.beta.kubernetes.io/c"
APPARMOR_WARNING = (
    f'metadata.annotations[{APPARMOR}]: deprecated since v1.30; use the "appArmorProfile" '
    "field instead"
)


def test_a_pods_apparmor_annotation_is_warned_of_and_becomes_its_field(api: Any) -> None:
    obj = pod("web-1")
    obj["metadata"]["annotations"] = {APPARMOR: "localhost/k8s-nginx"}
    created = api.call(api.server.create, PODS, "default", obj)
    assert created.warnings == [APPARMOR_WARNING]
    assert created.obj["spec"]["containers"][0]["securityContext"] == {
        "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-nginx"}
    }


def test_an_apparmor_annotation_the_pods_own_field_says_is_not_warned_of(api: Any) -> None:
    obj = pod("web-2", securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})
    obj["metadata"]["annotations"] = {APPARMOR: "runtime/default"}
    created = api.call(api.server.create, PODS, "default", obj)
    assert created.warnings == []
    assert "securityContext" not in created.obj["spec"]["containers"][0]


def test_an_apparmor_field_gets_its_annotation_without_a_warning(api: Any) -> None:
    obj = pod("web-3", securityContext={"appArmorProfile": {"type": "Unconfined"}})
    obj["spec"]["containers"].append(
        {
            "name": "d",
            "image": "nginx",
            "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
        }
    )
    created = api.call(api.server.create, PODS, "default", obj)
    assert created.warnings == []
    assert created.obj["metadata"]["annotations"] == {
        APPARMOR: "unconfined",
        "container.apparmor.security.beta.kubernetes.io/d": "runtime/default",
    }


def test_a_templates_apparmor_annotation_is_warned_of_unless_a_field_is_set(api: Any) -> None:
    body = deployment()
    body["spec"]["template"]["metadata"]["annotations"] = {APPARMOR: "runtime/default"}
    created = api.call(api.server.create, DEPLOYMENTS, "default", body)
    assert created.warnings == [f"spec.template.{APPARMOR_WARNING}"]
    body["metadata"]["name"] = "web-2"
    body["spec"]["template"]["spec"]["securityContext"] = {
        "appArmorProfile": {"type": "RuntimeDefault"}
    }
    assert api.call(api.server.create, DEPLOYMENTS, "default", body).warnings == []
