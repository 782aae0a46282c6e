"""The Pod Security Standards' checks and PodSecurity admission, checked against
k8s.io/pod-security-admission v1.32's vectors (policy/check_*_test.go, api/helpers_test.go,
admission/admission_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.admission.pod_security import (
    existing_pods_warnings,
    validate_namespace,
    validate_pod,
    validate_pod_controller,
)
from pinnace.apiserver.admission.pod_security_checks import evaluate, forbidden_detail
from pinnace.apiserver.admission.pod_security_levels import (
    LATEST,
    Configuration,
    LevelVersion,
    Policy,
    policy_to_evaluate,
)

DEFAULTS = Configuration()
BASELINE = LevelVersion("baseline", LATEST)
RESTRICTED = LevelVersion("restricted", LATEST)


def detail(policy: LevelVersion, spec: dict[str, Any], meta: dict[str, Any] | None = None) -> str:
    return forbidden_detail(evaluate(policy, meta or {}, spec))


def namespace(**labels: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "ns",
            "labels": {
                f"pod-security.kubernetes.io/{k.replace('_', '-')}": v for k, v in labels.items()
            },
        }
    }


def test_labels_give_the_policy_and_defaults_stay_privileged_latest() -> None:
    policy, errors = policy_to_evaluate(
        {
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/warn-version": "v1.25",
        }
    )
    assert errors == []
    assert (str(policy.enforce), str(policy.audit), str(policy.warn)) == (
        "baseline:latest",
        "privileged:latest",
        "privileged:v1.25",
    )


def test_a_bad_enforce_label_fails_closed_and_bad_warn_fails_open() -> None:
    policy, errors = policy_to_evaluate(
        {"pod-security.kubernetes.io/enforce": "x", "pod-security.kubernetes.io/warn": "y"}
    )
    assert policy == Policy(enforce=RESTRICTED)
    assert [str(e) for e in errors] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "x": must be one '
        "of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "y": must be one of '
        "privileged, baseline, restricted",
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"hostPID": True, "hostIPC": True}, "host namespaces (hostIPC=true, hostPID=true)"),
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "securityContext": {"capabilities": {"add": ["NET_RAW", "CHOWN", "BPF"]}},
                    },
                    {"name": "b", "securityContext": {"capabilities": {"add": ["NET_RAW"]}}},
                ]
            },
            'non-default capabilities (containers "a", "b" must not include "BPF", "NET_RAW" '
            "in securityContext.capabilities.add)",
        ),
        (
            {
                "containers": [
                    {"name": "a", "ports": [{"hostPort": 81}, {"hostPort": 80}]},
                    {"name": "b", "ports": [{"containerPort": 9}]},
                ]
            },
            'hostPort (container "a" uses hostPorts 80, 81)',
        ),
        (
            {
                "securityContext": {
                    "sysctls": [{"name": "net.ipv4.tcp_rmem"}, {"name": "kernel.msgmax"}]
                }
            },
            "forbidden sysctls (kernel.msgmax)",
        ),
        (
            {
                "securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "u"}},
                "containers": [{"name": "a", "securityContext": {"seLinuxOptions": {"role": "r"}}}],
            },
            'seLinuxOptions (pod and container "a" set forbidden securityContext.seLinuxOptions: '
            'type "spc_t"; user may not be set; role may not be set)',
        ),
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "securityContext": {
                            "seccompProfile": {"type": "Unconfined"},
                            "procMount": "Unmasked",
                        },
                    }
                ]
            },
            'procMount (container "a" must not set securityContext.procMount to "Unmasked"), '
            'seccompProfile (container "a" must not set securityContext.seccompProfile.type to '
            '"Unconfined")',
        ),
        (
            {
                "securityContext": {
                    "appArmorProfile": {"type": "Unconfined"},
                    "windowsOptions": {"hostProcess": True},
                }
            },
            'forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined"), '
            "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
        ),
    ],
)
def test_baseline_checks_word_their_violations_as_v1_32(
    spec: dict[str, Any], expected: str
) -> None:
    assert detail(BASELINE, spec) == expected


def test_sysctls_follow_the_policy_version() -> None:
    spec = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}]}}
    assert detail(LevelVersion("baseline", 32), spec) == ""
    assert detail(LevelVersion("baseline", 31), spec) == "forbidden sysctls (net.ipv4.tcp_rmem)"


def test_restricted_replaces_the_baseline_checks_it_overrides() -> None:
    spec = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 0,
            "seccompProfile": {"type": "Unconfined"},
        },
        "containers": [
            {
                "name": "a",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_TIME"]},
                },
            }
        ],
        "volumes": [
            {"name": "h", "hostPath": {"path": "/"}},
            {"name": "n", "nfs": {}},
            {"name": "e", "emptyDir": {}},
        ],
    }
    assert detail(RESTRICTED, spec) == (
        'unrestricted capabilities (container "a" must not include "SYS_TIME" in '
        "securityContext.capabilities.add), "
        'restricted volume types (volumes "h", "n" use restricted volume types "hostPath", "nfs"), '
        "runAsUser=0 (pod must not set runAsUser=0), "
        'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'
    )
    assert detail(BASELINE, spec) == (
        'non-default capabilities (container "a" must not include "SYS_TIME" in '
        "securityContext.capabilities.add), "
        'hostPath volumes (volume "h"), '
        'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'
    )


def test_a_pod_update_is_judged_only_when_it_changes_what_the_checks_read() -> None:
    ns = namespace(enforce="baseline")
    pod = {
        "metadata": {"name": "p"},
        "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "a"}]},
    }
    relabelled = {**pod, "metadata": {"name": "p", "labels": {"x": "y"}}}
    assert validate_pod(DEFAULTS, "", ns, relabelled, pod, "") == []
    assert validate_pod(DEFAULTS, "", ns, pod, None, "status") == []
    new_image = {**pod, "spec": {**pod["spec"], "containers": [{"name": "c", "image": "b"}]}}
    with pytest.raises(StatusError) as refused:
        validate_pod(DEFAULTS, "", ns, new_image, pod, "")
    assert refused.value.code == 403
    assert refused.value.message == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": '
        "host namespaces (hostNetwork=true)"
    )


def test_controllers_are_only_warned_about() -> None:
    cron = {
        "spec": {
            "jobTemplate": {"spec": {"template": {"spec": {"hostIPC": True, "containers": []}}}}
        }
    }
    assert (
        validate_pod_controller(
            DEFAULTS, "", namespace(enforce="baseline"), "batch", "CronJob", cron
        )
        == []
    )
    assert validate_pod_controller(
        DEFAULTS, "", namespace(audit="baseline", warn="baseline"), "batch", "CronJob", cron
    ) == ['would violate PodSecurity "baseline:latest": host namespaces (hostIPC=true)']


def test_only_a_stricter_enforce_policy_checks_the_existing_pods() -> None:
    baseline, restricted = namespace(enforce="baseline"), namespace(enforce="restricted")
    assert validate_namespace(DEFAULTS, restricted, baseline) == ([], RESTRICTED)
    assert validate_namespace(DEFAULTS, baseline, restricted) == ([], None)
    pinned = namespace(enforce="restricted", enforce_version="v1.30")
    assert validate_namespace(DEFAULTS, pinned, restricted) == ([], LevelVersion("restricted", 30))
    # Labels that already failed to parse may stay as they are.
    bad = namespace(enforce="x")
    relabelled = {"metadata": {"name": "ns", "labels": {**bad["metadata"]["labels"], "a": "b"}}}
    assert validate_namespace(DEFAULTS, relabelled, bad) == ([], None)
    with pytest.raises(StatusError) as refused:
        validate_namespace(DEFAULTS, bad, None)
    assert refused.value.code == 422


def test_exemptions_and_defaults_of_the_configuration() -> None:
    config = Configuration(
        defaults=Policy(enforce=BASELINE),
        usernames=frozenset({"ci"}),
        namespaces=frozenset({"ns"}),
        runtime_classes=frozenset({"kata"}),
    )
    host = {"metadata": {"name": "p", "namespace": "team"}, "spec": {"hostPID": True}}
    unlabelled = {"metadata": {"name": "team"}}
    with pytest.raises(StatusError):
        validate_pod(config, "alice", unlabelled, host, None, "")
    assert validate_pod(config, "ci", unlabelled, host, None, "") == []
    kata = {**host, "spec": {"hostPID": True, "runtimeClassName": "kata"}}
    assert validate_pod(config, "alice", unlabelled, kata, None, "") == []
    exempt = {**host, "metadata": {"name": "p", "namespace": "ns"}}
    assert validate_pod(config, "alice", unlabelled, exempt, None, "") == []
    labelled = namespace(enforce="restricted", warn="baseline")
    assert validate_namespace(config, labelled, None) == (
        [
            'namespace "ns" is exempt from Pod Security, and the policy '
            "(enforce=restricted:latest, warn=baseline:latest) will be ignored"
        ],
        None,
    )
    assert validate_namespace(config, namespace(enforce="baseline"), None) == ([], None)


def test_existing_pods_share_a_warning_and_one_per_controller_is_checked_first() -> None:
    def pod(name: str, owner: str | None = None) -> dict[str, Any]:
        refs = [{"uid": owner, "controller": True}] if owner else []
        return {"metadata": {"name": name, "ownerReferences": refs}, "spec": {"hostPID": True}}

    pods = [pod("z"), pod("r1", "rs"), pod("r2", "rs"), pod("m")]
    assert existing_pods_warnings(DEFAULTS, "ns", BASELINE, pods) == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "m (and 3 other pods): host namespaces",
    ]
