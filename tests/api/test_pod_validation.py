"""Pod create validation: field paths and messages as kube-apiserver v1.32 words them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinnace.api.core.pod import POD, validate_pod_template_spec
from pinnace.api.field import Path

DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def pod_with(**spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }
    POD.default(pod)
    POD.prepare_for_create(pod)
    return pod


def errors(pod: dict[str, Any]) -> list[str]:
    return [str(e) for e in POD.validate(pod)]


def container_errors(**fields: Any) -> list[str]:
    pod = pod_with()
    pod["spec"]["containers"][0].update(fields)
    POD.default(pod)
    return errors(pod)


def test_a_defaulted_minimal_pod_is_valid() -> None:
    assert errors(pod_with()) == []


def test_containers_are_required() -> None:
    assert errors(pod_with(containers=[])) == ["spec.containers: Required value"]


def test_container_names() -> None:
    assert container_errors(name="App") == [
        f'spec.containers[0].name: Invalid value: "App": {DNS_LABEL_MSG}'
    ]
    pod = pod_with(initContainers=[{"name": "app", "image": "busybox"}])
    assert errors(pod) == ['spec.initContainers[0].name: Duplicate value: "app"']


def test_image_is_required_and_trimmed() -> None:
    assert container_errors(image="") == ["spec.containers[0].image: Required value"]
    assert container_errors(image=" nginx") == [
        'spec.containers[0].image: Invalid value: " nginx": '
        "must not have leading or trailing whitespace"
    ]


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        (
            [{"containerPort": 0, "protocol": "TCP"}],
            "spec.containers[0].ports[0].containerPort: Required value",
        ),
        (
            [{"containerPort": 70000, "protocol": "TCP"}],
            "spec.containers[0].ports[0].containerPort:"
            " Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            [{"containerPort": 80, "protocol": "HTTP"}],
            "spec.containers[0].ports[0].protocol: "
            'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        ),
        (
            [
                {"name": "web", "containerPort": 80, "protocol": "TCP"},
                {"name": "web", "containerPort": 81, "protocol": "TCP"},
            ],
            'spec.containers[0].ports[1].name: Duplicate value: "web"',
        ),
        (
            [
                {"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
                {"containerPort": 81, "hostPort": 8080, "protocol": "TCP"},
            ],
            'spec.containers[0].ports[1].hostPort: Duplicate value: "TCP//8080"',
        ),
    ],
)
def test_ports(ports: list[dict[str, Any]], expected: str) -> None:
    assert container_errors(ports=ports) == [expected]


def test_env() -> None:
    assert container_errors(env=[{"name": "A", "valueFrom": {}}]) == [
        'spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: '
        "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
    ]
    ref = {"configMapKeyRef": {"name": "cfg", "key": ""}}
    assert container_errors(env=[{"name": "A", "valueFrom": ref}]) == [
        "spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Required value"
    ]
    both = {"configMapKeyRef": {"name": "c", "key": "k"}, "secretKeyRef": {"name": "s", "key": "k"}}
    assert container_errors(env=[{"name": "A", "valueFrom": both}]) == [
        'spec.containers[0].env[0].valueFrom: Invalid value: "": '
        "may not have more than one field specified at a time"
    ]
    field_ref = {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.phase"}}
    assert container_errors(env=[{"name": "A", "valueFrom": field_ref}]) == [
        "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
        '"status.phase": supported values: "metadata.name", "metadata.namespace", '
        '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", '
        '"status.hostIPs", "status.podIP", "status.podIPs"'
    ]
    assert container_errors(envFrom=[{"prefix": "A="}]) == [
        'spec.containers[0].envFrom[0].prefix: Invalid value: "A=": a valid environment '
        "variable name must consist only of printable ASCII characters other than '='",
        'spec.containers[0].envFrom: Invalid value: "": must specify one of: '
        "`configMapRef` or `secretRef`",
    ]


def test_volume_mounts_refer_to_volumes() -> None:
    assert container_errors(volumeMounts=[{"name": "data", "mountPath": "/data"}]) == [
        'spec.containers[0].volumeMounts[0].name: Not found: "data"'
    ]


def test_volumes() -> None:
    volumes = [
        {"name": "a", "configMap": {"name": "cfg"}, "secret": {"secretName": "s"}},
        {"name": "b", "emptyDir": {}},
        {"name": "b", "emptyDir": {}},
        {"name": "c", "configMap": {"name": "cfg", "items": [{"key": "", "path": "../x"}]}},
        {"name": "d", "hostPath": {"path": "/x", "type": "Dir"}},
    ]
    assert errors(pod_with(volumes=volumes)) == [
        "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
        'spec.volumes[2].name: Duplicate value: "b"',
        "spec.volumes[3].configMap.items[0].key: Required value",
        "spec.volumes[3].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'",
        'spec.volumes[4].hostPath.type: Unsupported value: "Dir": supported values: "", '
        '"BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", '
        '"FileOrCreate", "Socket"',
    ]


def test_a_spec_found_valid_is_checked_again_for_what_else_it_depends_on() -> None:
    """Pods of one template share a spec, whose checks are remembered; the pod's name still
    counts for its ephemeral volumes, and any change to the spec is checked."""
    ephemeral = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}
    pod = pod_with(volumes=[{"name": "scratch", "ephemeral": ephemeral}])
    assert errors(pod) == []
    long_name = copy.deepcopy(pod)
    long_name["metadata"]["name"] = "w" * 250
    assert errors(long_name) == [
        'spec.volumes[0].name: Invalid value: "scratch": PVC name "'
        + "w" * 250
        + '-scratch": must be no more than 253 characters'
    ]
    changed = copy.deepcopy(pod)
    changed["spec"]["containers"][0]["image"] = " nginx"
    assert errors(changed) == [
        'spec.containers[0].image: Invalid value: " nginx": must not have leading or '
        "trailing whitespace"
    ]
    assert errors(pod) == []


def token_volume_pod(volume: str, mount: str | None = None) -> dict[str, Any]:
    """A pod of one template, with its own kube-api-access volume as every pod gets one."""
    pod = pod_with(volumes=[{"name": volume, "projected": {"sources": []}}])
    mount = {"name": volume if mount is None else mount, "mountPath": "/var/run/secrets"}
    pod["spec"]["containers"][0]["volumeMounts"] = [mount]
    return pod


def test_a_template_spec_found_valid_is_checked_again_for_its_own_volume_names() -> None:
    """The pods of a template differ in the name of their token volume only, and are
    remembered as one: each pod's volume name is still its own to get wrong."""
    assert errors(token_volume_pod("kube-api-access-abcde")) == []
    assert errors(token_volume_pod("kube-api-access-fghjk")) == []
    assert errors(token_volume_pod("Kube-Api-Access")) == [
        f'spec.volumes[0].name: Invalid value: "Kube-Api-Access": {DNS_LABEL_MSG}',
        'spec.containers[0].volumeMounts[0].name: Not found: "Kube-Api-Access"',
    ]
    assert errors(token_volume_pod("kube-api-access-abcde", mount="kube-api-access-xyz")) == [
        'spec.containers[0].volumeMounts[0].name: Not found: "kube-api-access-xyz"'
    ]
    duplicate = token_volume_pod("kube-api-access-lmnpq")
    duplicate["spec"]["volumes"].append({"name": "kube-api-access-lmnpq", "emptyDir": {}})
    assert errors(duplicate) == ['spec.volumes[1].name: Duplicate value: "kube-api-access-lmnpq"']
    other = token_volume_pod("kube-api-access-rstvw")
    other["spec"]["volumes"].append({"name": "cache", "emptyDir": {}})
    assert errors(other) == []
    swapped = copy.deepcopy(other)
    swapped["spec"]["volumes"].reverse()
    swapped["spec"]["volumes"][0]["emptyDir"] = {"sizeLimit": "-1Gi"}
    assert errors(swapped) == [
        "spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid "
        "resource quantity"
    ]


def test_a_template_spec_found_valid_is_checked_again_for_a_changed_container() -> None:
    assert errors(token_volume_pod("kube-api-access-abcde")) == []
    changed = token_volume_pod("kube-api-access-zzzzz")
    changed["spec"]["containers"][0]["imagePullPolicy"] = "Sometimes"
    assert errors(changed) == [
        'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "IfNotPresent", "Never"'
    ]
    mounted_twice = token_volume_pod("kube-api-access-qqqqq")
    mounts = mounted_twice["spec"]["containers"][0]["volumeMounts"]
    mounts.append(dict(mounts[0]))
    assert errors(mounted_twice) == [
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/var/run/secrets": '
        "must be unique"
    ]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (
            {"limits": {"cpu": "500m"}, "requests": {"cpu": "1"}},
            [
                'spec.containers[0].resources.requests: Invalid value: "1": '
                "must be less than or equal to cpu limit of 500m"
            ],
        ),
        (
            {"requests": {"memory": "-1Mi"}},
            [
                'spec.containers[0].resources.requests[memory]: Invalid value: "-1Mi": '
                "must be greater than or equal to 0"
            ],
        ),
        (
            {"requests": {"example.com/gpu": "1"}},
            [
                "spec.containers[0].resources.limits: Required value: "
                "Limit must be set for non overcommitable resources"
            ],
        ),
        (
            {"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}},
            [
                'spec.containers[0].resources.requests: Invalid value: "1": '
                "must be equal to example.com/gpu limit of 2"
            ],
        ),
        (
            {"limits": {"example.com/gpu": "500m"}},
            [
                "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: 500m: "
                "must be an integer",
                "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 500m: "
                "must be an integer",
            ],
        ),
        (
            {"limits": {"hugepages-2Mi": "3Mi"}},
            [
                'spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": '
                "3Mi is not positive integer multiple of hugepages-2Mi",
                'spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: "3Mi": '
                "3Mi is not positive integer multiple of hugepages-2Mi",
                "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
            ],
        ),
        (
            {"limits": {"gpu": "1"}},
            [
                'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": '
                "must be a standard resource type or fully qualified",
                'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": '
                "must be a standard resource for containers",
                'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
                "must be a standard resource type or fully qualified",
                'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
                "must be a standard resource for containers",
            ],
        ),
        (
            # a standard name (a quota's), just not one for containers
            {"limits": {"requests.hugepages-2Mi": "2Mi"}},
            [
                "spec.containers[0].resources.limits[requests.hugepages-2Mi]: Invalid value: "
                '"requests.hugepages-2Mi": must be a standard resource for containers',
                "spec.containers[0].resources.requests[requests.hugepages-2Mi]: Invalid value: "
                '"requests.hugepages-2Mi": must be a standard resource for containers',
            ],
        ),
    ],
)
def test_resources(resources: dict[str, Any], expected: list[str]) -> None:
    pod = pod_with()
    pod["spec"]["containers"][0]["resources"] = resources
    POD.default(pod)
    assert errors(pod) == expected


def test_overhead_is_checked_like_limits() -> None:
    assert errors(pod_with(overhead={"cpu": "-1"})) == [
        'spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_restart_policies() -> None:
    assert errors(pod_with(restartPolicy="Sometimes")) == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"'
    ]
    init = {
        "name": "init",
        "image": "busybox",
        "restartPolicy": "OnFailure",
        "readinessProbe": {"exec": {"command": ["true"]}},
    }
    assert errors(pod_with(initContainers=[init])) == [
        'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": '
        'supported values: "Always"',
        "spec.initContainers[0].readinessProbe: Forbidden: "
        "may not be set for init containers without restartPolicy=Always",
    ]
    sidecar = {
        "name": "log",
        "image": "busybox",
        "restartPolicy": "Always",
        "readinessProbe": {"exec": {"command": ["true"]}},
    }
    assert errors(pod_with(initContainers=[sidecar])) == []
    assert container_errors(restartPolicy="Always") == [
        "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"
    ]


def test_probes_and_hooks() -> None:
    probe = {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}, "successThreshold": 2}
    assert container_errors(livenessProbe=probe) == [
        "spec.containers[0].livenessProbe.tcpSocket: Forbidden: "
        "may not specify more than 1 handler type",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
    ]
    assert container_errors(lifecycle={"preStop": {"sleep": {"seconds": 60}}}) == [
        "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be greater than 0 "
        "and less than terminationGracePeriodSeconds (30). Enable "
        "AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
    ]
    assert container_errors(readinessProbe={"periodSeconds": 5}) == [
        "spec.containers[0].readinessProbe: Required value: must specify a handler type"
    ]


def test_spec_scalars() -> None:
    assert errors(pod_with(activeDeadlineSeconds=0)) == [
        "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"
    ]
    assert errors(pod_with(dnsPolicy="Cluster")) == [
        'spec.dnsPolicy: Unsupported value: "Cluster": supported values: '
        '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"'
    ]
    # Kubernetes v1.32 accepts a negative grace period; deletion treats it as 1 second.
    assert errors(pod_with(terminationGracePeriodSeconds=-1)) == []
    assert errors(pod_with(nodeName="Node_1"))[0].startswith(
        'spec.nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain'
    )
    assert errors(pod_with(nodeSelector={"disk": "ssd!"}))[0].startswith(
        'spec.nodeSelector: Invalid value: "ssd!": a valid label must be'
    )


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (
            {"key": "k", "operator": "Exists", "value": "v"},
            'spec.tolerations[0].operator: Invalid value: "v": '
            "value must be empty when `operator` is 'Exists'",
        ),
        (
            {"operator": "Equal", "value": "v"},
            'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
            '`key` is empty, which means "match all values and all keys"',
        ),
        (
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60},
            'spec.tolerations[0].effect: Invalid value: "NoSchedule": '
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            {"key": "k", "operator": "Exists", "effect": "Never"},
            'spec.tolerations[0].effect: Unsupported value: "Never": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
        (
            {"key": "k", "operator": "Matches"},
            'spec.tolerations[0].operator: Unsupported value: "Matches": supported values: '
            '"Equal", "Exists"',
        ),
    ],
)
def test_tolerations(toleration: dict[str, Any], expected: str) -> None:
    assert errors(pod_with(tolerations=[toleration])) == [expected]


NODE_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        (
            {"matchExpressions": [{"key": "zone", "operator": "In"}]},
            f"{NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["1", "2"]}]},
            f"{NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Required value: "
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            {"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]},
            f"{NODE_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: "
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]},
            f"{NODE_AFFINITY}.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "
            '"metadata.uid": not a valid field selector key',
        ),
    ],
)
def test_required_node_affinity(term: dict[str, Any], expected: str) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert errors(pod_with(affinity=affinity)) == [expected]


def test_affinity_weights_and_terms() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 0,
                    "preference": {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["not valid!"]}
                        ]
                    },
                }
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "zone",
                    "matchLabelKeys": ["app"],
                    "mismatchLabelKeys": ["app"],
                }
            ]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"matchLabelKeys": ["app"], "topologyKey": "zone"}
            ]
        },
    }
    assert errors(pod_with(affinity=affinity)) == [
        f"{NODE_AFFINITY}.nodeSelectorTerms: Required value: "
        "must have at least one node selector term",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
        "Invalid value: 0: must be in the range 1-100",
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        '.matchLabelKeys[0]: Invalid value: "app": '
        "exists in both matchLabelKeys and mismatchLabelKeys",
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
    ]


def test_topology_spread_constraints() -> None:
    constraints = [
        {
            "maxSkew": 0,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "minDomains": 2,
        },
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "nodeTaintsPolicy": "Maybe",
        },
    ]
    assert errors(pod_with(topologySpreadConstraints=constraints)) == [
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "
        '"{zone, ScheduleAnyway}"',
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: "
        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        'spec.topologySpreadConstraints[1].nodeTaintsPolicy: Unsupported value: "Maybe": '
        'supported values: "Honor", "Ignore"',
    ]


def test_scheduling_gates() -> None:
    gates = [{"name": "example.com/a"}, {"name": "example.com/a"}]
    assert errors(pod_with(schedulingGates=gates)) == [
        'spec.schedulingGates[1]: Duplicate value: "example.com/a"'
    ]
    pod = pod_with(schedulingGates=[{"name": "example.com/a"}], nodeName="node-1")
    assert errors(pod) == [
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"
    ]


def test_host_network_ports_must_match() -> None:
    pod = pod_with(hostNetwork=True)
    pod["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}
    ]
    assert errors(pod) == [
        "spec.containers[0].ports[0].hostPort: Invalid value: 8080: "
        "must match `containerPort` when `hostNetwork` is true"
    ]


def test_ephemeral_containers_cannot_be_set_on_create() -> None:
    pod = pod_with(ephemeralContainers=[{"name": "debug", "image": "busybox"}])
    assert errors(pod) == ["spec.ephemeralContainers: Forbidden: cannot be set on create"]


def template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "imagePullPolicy": "Always",
                    "terminationMessagePolicy": "File",
                }
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            **spec,
        },
    }


def test_template_spec() -> None:
    path = Path("spec", "template")
    assert validate_pod_template_spec(template(), path) == []
    bad = template(ephemeralContainers=[{"name": "x", "image": "y"}])
    bad["metadata"]["labels"] = {"app": "-web"}
    messages = [str(e) for e in validate_pod_template_spec(bad, path)]
    assert messages[0].startswith('spec.template.labels: Invalid value: "-web"')
    assert messages[-1] == (
        "spec.template.spec.ephemeralContainers: Forbidden: "
        "ephemeral containers not allowed in pod template"
    )
    # A template may leave hostPort for the Pod's defaulting to fill in.
    host = template(hostNetwork=True)
    host["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    assert validate_pod_template_spec(host, path) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
SPEC_KEYS = st.sampled_from(
    [
        "containers",
        "initContainers",
        "volumes",
        "affinity",
        "tolerations",
        "nodeSelector",
        "topologySpreadConstraints",
        "schedulingGates",
        "overhead",
        "dnsConfig",
        "hostNetwork",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "ephemeralContainers",
        "os",
    ]
)
CONTAINER_KEYS = st.sampled_from(
    [
        "name",
        "image",
        "ports",
        "env",
        "envFrom",
        "resources",
        "volumeMounts",
        "livenessProbe",
        "readinessProbe",
        "lifecycle",
        "restartPolicy",
        "startupProbe",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.dictionaries(SPEC_KEYS, JSON, max_size=4),
    container=st.dictionaries(CONTAINER_KEYS, JSON, max_size=4),
    whole=JSON,
)
def test_garbage_never_raises(spec: dict[str, Any], container: dict[str, Any], whole: Any) -> None:
    pod = {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [container], **spec}}
    for candidate in (pod, whole, {"metadata": {}, "spec": whole}):
        candidate = copy.deepcopy(candidate)
        if isinstance(candidate, dict):
            POD.default(candidate)
            POD.prepare_for_create(candidate)
            POD.validate_update(candidate, copy.deepcopy(candidate))
            POD.validate_status_update(candidate, pod)
        POD.validate(candidate)
        validate_pod_template_spec(candidate, Path("template"))
