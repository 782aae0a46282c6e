"""Pod Security admission through `pinnace up`, as kubectl and the Python client meet it on
kube-apiserver v1.32: a namespace's `pod-security.kubernetes.io/*` labels are checked, the
enforce level refuses pods with a 403 naming every violation, the warn level prints
`Warning:` lines (for pod controllers too), and tightening enforce warns of the pods already
there."""

from __future__ import annotations

import json
from collections.abc import Iterator

import kubernetes
import pytest
from tests.http.conftest import Cluster, launch, stop

ENFORCE = "pod-security.kubernetes.io/enforce"
RESTRICTED_VIOLATIONS = (
    'allowPrivilegeEscalation != false (container "{c}" must set '
    "securityContext.allowPrivilegeEscalation=false), "
    'unrestricted capabilities (container "{c}" must set '
    'securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "{c}" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "{c}" must set securityContext.seccompProfile.type to '
    '"RuntimeDefault" or "Localhost")'
)

COMPLIANT = """\
apiVersion: v1
kind: Pod
metadata: {name: compliant}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: app
    image: busybox
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
"""

HOST = """\
apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: busybox
    securityContext: {privileged: true}
    ports: [{containerPort: 80, hostPort: 80}]
  volumes: [{name: root, hostPath: {path: /}}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-pod-security"), flags=("--no-scheduler",))
    yield running
    stop(running)


def test_enforce_refuses_a_pod_with_every_violation_named(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "locked")
    cluster.ok("label", "namespace", "locked", f"{ENFORCE}=restricted")
    refused = cluster.kubectl("run", "web", "--image=nginx", "-n", "locked")
    assert refused.returncode == 1
    assert refused.stderr == (
        'Error from server (Forbidden): pods "web" is forbidden: violates PodSecurity '
        f'"restricted:latest": {RESTRICTED_VIOLATIONS.format(c="web")}\n'
    )
    # Baseline's checks come first, then restricted's; hostPath counts once, as a volume type.
    host = cluster.kubectl("apply", "-n", "locked", "-f", "-", stdin=HOST)
    assert host.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "host" is forbidden: '
        'violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), '
        'hostPort (container "app" uses hostPort 80), '
        'privileged (container "app" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "app" must set '
        "securityContext.allowPrivilegeEscalation=false), "
        'unrestricted capabilities (container "app" must set '
        'securityContext.capabilities.drop=["ALL"]), '
        'restricted volume types (volume "root" uses restricted volume type "hostPath"), '
        'runAsNonRoot != true (pod or container "app" must set '
        "securityContext.runAsNonRoot=true), "
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type '
        'to "RuntimeDefault" or "Localhost")\n'
    )
    assert cluster.ok("apply", "-n", "locked", "-f", "-", stdin=COMPLIANT) == (
        "pod/compliant created\n"
    )
    assert cluster.ok("get", "pods", "-n", "locked", "-o", "name") == "pod/compliant\n"


def test_a_pinned_version_runs_that_version_of_the_checks(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "old-policy")
    cluster.ok(
        "label",
        "namespace",
        "old-policy",
        f"{ENFORCE}=restricted",
        f"{ENFORCE}-version=v1.21",
    )
    # capabilities.drop=["ALL"] is required from v1.22 on.
    refused = cluster.kubectl("run", "web", "--image=nginx", "-n", "old-policy")
    assert 'PodSecurity "restricted:v1.21": allowPrivilegeEscalation' in refused.stderr
    assert "unrestricted capabilities" not in refused.stderr


def test_labels_that_do_not_parse_are_refused_and_change_nothing(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "typo")
    bad_level = cluster.kubectl("label", "namespace", "typo", f"{ENFORCE}=strict")
    assert bad_level.returncode == 1
    assert bad_level.stderr == (
        'The Namespace "typo" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted\n'
    )
    bad_version = cluster.kubectl("label", "namespace", "typo", f"{ENFORCE}-version=1.32")
    assert bad_version.stderr == (
        'The Namespace "typo" is invalid: '
        "metadata.labels[pod-security.kubernetes.io/enforce-version]: "
        'Invalid value: "1.32": must be "latest" or "v1.x"\n'
    )
    labels = cluster.ok("get", "namespace", "typo", "-o", "jsonpath={.metadata.labels}")
    assert "pod-security" not in labels
    created = cluster.kubectl(
        "apply",
        "-f",
        "-",
        stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: born-bad\n"
        f"  labels: {{{ENFORCE}-version: latest, pod-security.kubernetes.io/warn: nope}}\n",
    )
    assert created.returncode == 1
    assert "metadata.labels[pod-security.kubernetes.io/warn]: " in created.stderr
    assert cluster.kubectl("get", "namespace", "born-bad").returncode == 1


def test_tightening_enforce_warns_of_the_pods_already_there(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "legacy")
    for name in ("b", "a", "solo"):
        cluster.ok("run", name, "--image=nginx", "-n", "legacy")
    cluster.ok("apply", "-n", "legacy", "-f", "-", stdin=HOST.replace("  hostNetwork: true\n", ""))
    labelled = cluster.kubectl("label", "namespace", "legacy", f"{ENFORCE}=baseline")
    assert labelled.returncode == 0
    assert labelled.stderr == (
        'Warning: existing pods in namespace "legacy" violate the new PodSecurity enforce level '
        '"baseline:latest"\n'
        "Warning: host: hostPath volumes, hostPort, privileged\n"
    )
    stricter = cluster.kubectl(
        "label", "namespace", "legacy", f"{ENFORCE}=restricted", "--overwrite"
    )
    assert stricter.stderr.splitlines()[1:] == [
        "Warning: a (and 2 other pods): allowPrivilegeEscalation != false, unrestricted "
        "capabilities, runAsNonRoot != true, seccompProfile",
        "Warning: host: hostPort, privileged, allowPrivilegeEscalation != false, unrestricted "
        "capabilities, restricted volume types, runAsNonRoot != true, seccompProfile",
    ]
    # Relaxing it says nothing.
    relaxed = cluster.kubectl("label", "namespace", "legacy", f"{ENFORCE}=baseline", "--overwrite")
    assert (relaxed.returncode, relaxed.stderr) == (0, "")


def test_warn_prints_what_a_deployment_template_would_violate(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "warned")
    cluster.ok("label", "namespace", "warned", "pod-security.kubernetes.io/warn=restricted")
    created = cluster.kubectl("create", "deployment", "web", "--image=nginx", "-n", "warned")
    assert created.returncode == 0
    assert created.stderr == (
        f'Warning: would violate PodSecurity "restricted:latest": '
        f"{RESTRICTED_VIOLATIONS.format(c='nginx')}\n"
    )
    pod = cluster.kubectl("run", "solo", "--image=nginx", "-n", "warned")
    assert pod.returncode == 0
    assert pod.stderr.startswith('Warning: would violate PodSecurity "restricted:latest": ')


def test_the_python_client_gets_the_forbidden_status(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "client-locked")
    cluster.ok("label", "namespace", "client-locked", f"{ENFORCE}=baseline")
    api = kubernetes.client.CoreV1Api(
        kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
    )
    pod = {
        "metadata": {"generateName": "probe-"},
        "spec": {"hostPID": True, "containers": [{"name": "c", "image": "busybox"}]},
    }
    with pytest.raises(kubernetes.client.ApiException) as refused:
        api.create_namespaced_pod("client-locked", pod)
    assert refused.value.status == 403
    body = json.loads(refused.value.body)
    assert body["reason"] == "Forbidden"
    assert body["details"]["kind"] == "pods"
    assert body["message"].endswith(
        'is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)'
    )
    assert body["message"].startswith('pods "probe-')
    assert api.list_namespaced_pod("client-locked").items == []


ADMISSION_CONFIGURATION = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: pod-security.yaml
"""

POD_SECURITY_CONFIGURATION = """\
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
exemptions:
  usernames: [ci]
  namespaces: [infra]
"""


def test_an_admission_configuration_file_sets_defaults_and_exemptions(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    workdir = tmp_path_factory.mktemp("pinnace-up-pod-security-config")
    (workdir / "admission.yaml").write_text(ADMISSION_CONFIGURATION)
    (workdir / "pod-security.yaml").write_text(POD_SECURITY_CONFIGURATION)
    configured = launch(
        workdir, flags=("--no-scheduler", "--admission-control-config-file", "admission.yaml")
    )
    try:
        # An unlabelled namespace has the default policy: baseline refuses a host pod.
        refused = configured.kubectl("apply", "-f", "-", stdin=HOST)
        assert refused.returncode == 1
        assert 'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' in (
            refused.stderr
        )
        # An exempt user's is admitted, and so is any pod of an exempt namespace.
        as_ci = ("--as", "ci", "--as-group", "system:masters")
        assert configured.ok("apply", "-f", "-", *as_ci, stdin=HOST) == "pod/host created\n"
        configured.ok("create", "namespace", "infra")
        labelled = configured.kubectl("label", "namespace", "infra", f"{ENFORCE}=restricted")
        assert labelled.stderr == (
            'Warning: namespace "infra" is exempt from Pod Security, and the policy '
            "(enforce=restricted:latest) will be ignored\n"
        )
        assert configured.ok("apply", "-n", "infra", "-f", "-", stdin=HOST) == (
            "pod/host created\n"
        )
    finally:
        stop(configured)
