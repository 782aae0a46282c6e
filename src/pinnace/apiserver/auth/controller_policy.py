"""The roles of kube-controller-manager's controllers, `system:controller:<name>`, each bound to
the service account `kube-system/<name>` the controller runs as, as kube-apiserver v1.32
reconciles them (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go; the
roles of features off by default in v1.32 are left out). Pinnace's own controllers run in
process and need none of them; they are there for what reads or binds them.
"""

from __future__ import annotations

from typing import Any

from pinnace.apiserver.auth.policy_rules import EVENTS, READ, rule

LEGACY_TOKEN_TRACKING = "kube-apiserver-legacy-service-account-token-tracking"
_SIGNERS = (
    "kubernetes.io/legacy-unknown",
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/kubelet-serving",
)
_APPS = ["extensions", "apps"]

CONTROLLER_ROLES: dict[str, list[dict[str, Any]]] = {
    "attachdetach-controller": [
        rule(["list", "watch"], [""], ["persistentvolumes", "persistentvolumeclaims"]),
        rule(READ, [""], ["nodes"]),
        rule(["patch", "update"], [""], ["nodes/status"]),
        rule(["list", "watch"], [""], ["pods"]),
        EVENTS,
        rule(
            ["get", "create", "delete", "list", "watch"], ["storage.k8s.io"], ["volumeattachments"]
        ),
        rule(["get", "watch", "list"], ["storage.k8s.io"], ["csidrivers"]),
        rule(["get", "watch", "list"], ["storage.k8s.io"], ["csinodes"]),
    ],
    "clusterrole-aggregation-controller": [
        rule(
            ["escalate", "get", "list", "watch", "update", "patch"],
            ["rbac.authorization.k8s.io"],
            ["clusterroles"],
        ),
    ],
    "cronjob-controller": [
        rule(["get", "list", "watch", "update"], ["batch"], ["cronjobs"]),
        rule(["get", "list", "watch", "create", "update", "delete", "patch"], ["batch"], ["jobs"]),
        rule(["update"], ["batch"], ["cronjobs/status"]),
        rule(["update"], ["batch"], ["cronjobs/finalizers"]),
        rule(["list", "watch", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "daemon-set-controller": [
        rule(READ, _APPS, ["daemonsets"]),
        rule(["update"], _APPS, ["daemonsets/status"]),
        rule(["update"], _APPS, ["daemonsets/finalizers"]),
        rule(["list", "watch"], [""], ["nodes"]),
        rule(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        rule(["create"], [""], ["pods/binding"]),
        rule(
            ["get", "list", "watch", "create", "delete", "update", "patch"],
            ["apps"],
            ["controllerrevisions"],
        ),
        EVENTS,
    ],
    "deployment-controller": [
        rule(["get", "list", "watch", "update"], _APPS, ["deployments"]),
        rule(["update"], _APPS, ["deployments/status"]),
        rule(["update"], _APPS, ["deployments/finalizers"]),
        rule(
            ["get", "list", "watch", "create", "update", "patch", "delete"],
            ["apps", "extensions"],
            ["replicasets"],
        ),
        rule(["get", "list", "watch", "update"], [""], ["pods"]),
        EVENTS,
    ],
    "disruption-controller": [
        rule(READ, _APPS, ["deployments"]),
        rule(READ, ["apps", "extensions"], ["replicasets"]),
        rule(READ, [""], ["replicationcontrollers"]),
        rule(READ, ["policy"], ["poddisruptionbudgets"]),
        rule(READ, ["apps"], ["statefulsets"]),
        rule(["update"], ["policy"], ["poddisruptionbudgets/status"]),
        rule(["patch", "update"], [""], ["pods/status"]),
        rule(["get"], ["*"], ["*/scale"]),
        EVENTS,
    ],
    "endpoint-controller": [
        rule(READ, [""], ["services", "pods"]),
        rule(["get", "list", "watch", "create", "update", "delete"], [""], ["endpoints"]),
        rule(["create"], [""], ["endpoints/restricted"]),
        EVENTS,
    ],
    "endpointslice-controller": [
        rule(READ, [""], ["services", "pods", "nodes"]),
        rule(["update"], [""], ["services/finalizers"]),
        rule(
            ["get", "list", "watch", "create", "update", "delete"],
            ["discovery.k8s.io"],
            ["endpointslices"],
        ),
        EVENTS,
    ],
    "endpointslicemirroring-controller": [
        rule(READ, [""], ["services", "endpoints"]),
        rule(["update"], [""], ["services/finalizers"]),
        rule(["update"], [""], ["endpoints/finalizers"]),
        rule(
            ["get", "list", "watch", "create", "update", "delete"],
            ["discovery.k8s.io"],
            ["endpointslices"],
        ),
        EVENTS,
    ],
    "expand-controller": [
        rule(["get", "list", "watch", "update", "patch"], [""], ["persistentvolumes"]),
        rule(["update", "patch"], [""], ["persistentvolumeclaims/status"]),
        rule(READ, [""], ["persistentvolumeclaims"]),
        EVENTS,
        rule(["get"], [""], ["services"]),
    ],
    "ephemeral-volume-controller": [
        rule(READ, [""], ["pods"]),
        rule(["update"], [""], ["pods/finalizers"]),
        rule(["get", "list", "watch", "create"], [""], ["persistentvolumeclaims"]),
        EVENTS,
    ],
    "generic-garbage-collector": [
        rule(["get", "list", "watch", "patch", "update", "delete"], ["*"], ["*"]),
        EVENTS,
    ],
    "horizontal-pod-autoscaler": [
        rule(READ, ["autoscaling"], ["horizontalpodautoscalers"]),
        rule(["update"], ["autoscaling"], ["horizontalpodautoscalers/status"]),
        rule(["get", "update"], ["*"], ["*/scale"]),
        rule(["list", "watch"], [""], ["pods"]),
        rule(["list", "watch"], ["metrics.k8s.io"], ["pods"]),
        rule(READ, ["custom.metrics.k8s.io"], ["*"]),
        rule(READ, ["external.metrics.k8s.io"], ["*"]),
        EVENTS,
    ],
    "job-controller": [
        rule(["get", "list", "watch", "update", "patch"], ["batch"], ["jobs"]),
        rule(["update"], ["batch"], ["jobs/status"]),
        rule(["update"], ["batch"], ["jobs/finalizers"]),
        rule(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        EVENTS,
    ],
    "namespace-controller": [
        rule(["get", "list", "watch", "delete"], [""], ["namespaces"]),
        rule(["update"], [""], ["namespaces/finalize", "namespaces/status"]),
        rule(["get", "list", "watch", "delete", "deletecollection"], ["*"], ["*"]),
    ],
    "node-controller": [
        rule(["get", "list", "watch", "update", "delete", "patch"], [""], ["nodes"]),
        rule(["patch", "update"], [""], ["nodes/status"]),
        rule(["patch", "update"], [""], ["pods/status"]),
        rule(["list", "watch", "get", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "persistent-volume-binder": [
        rule(["get", "list", "watch", "update", "create", "delete"], [""], ["persistentvolumes"]),
        rule(["update"], [""], ["persistentvolumes/status"]),
        rule(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        rule(["update"], [""], ["persistentvolumeclaims/status"]),
        rule(["list", "watch", "get", "create", "delete"], [""], ["pods"]),
        rule(READ, ["storage.k8s.io"], ["storageclasses"]),
        rule(["list", "watch"], [""], ["nodes"]),
        EVENTS,
        rule(["watch"], [""], ["events"]),
        rule(["get"], [""], ["services"]),
    ],
    "pod-garbage-collector": [
        rule(["list", "watch", "delete"], [""], ["pods"]),
        rule(READ, [""], ["nodes"]),
        rule(["patch"], [""], ["pods/status"]),
    ],
    "replicaset-controller": [
        rule(["get", "list", "watch", "update"], ["apps", "extensions"], ["replicasets"]),
        rule(["update"], ["apps", "extensions"], ["replicasets/status"]),
        rule(["update"], ["apps", "extensions"], ["replicasets/finalizers"]),
        rule(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "replication-controller": [
        rule(["get", "list", "watch", "update"], [""], ["replicationcontrollers"]),
        rule(["update"], [""], ["replicationcontrollers/status"]),
        rule(["update"], [""], ["replicationcontrollers/finalizers"]),
        rule(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "resourcequota-controller": [
        rule(["list", "watch"], ["*"], ["*"]),
        rule(["update"], [""], ["resourcequotas/status"]),
        EVENTS,
    ],
    "route-controller": [
        rule(["list", "watch"], [""], ["nodes"]),
        rule(["patch"], [""], ["nodes/status"]),
        EVENTS,
    ],
    "service-account-controller": [rule(["create"], [""], ["serviceaccounts"]), EVENTS],
    "service-controller": [
        rule(READ, [""], ["services"]),
        rule(["patch", "update"], [""], ["services/status"]),
        rule(["list", "watch"], [""], ["nodes"]),
        EVENTS,
    ],
    "statefulset-controller": [
        rule(["list", "watch"], [""], ["pods"]),
        rule(READ, ["apps"], ["statefulsets"]),
        rule(["update"], ["apps"], ["statefulsets/status"]),
        rule(["update"], ["apps"], ["statefulsets/finalizers"]),
        rule(["get", "create", "delete", "update", "patch"], [""], ["pods"]),
        rule(
            ["get", "create", "delete", "update", "patch", "list", "watch"],
            ["apps"],
            ["controllerrevisions"],
        ),
        rule(["get", "create", "list", "watch"], [""], ["persistentvolumeclaims"]),
        rule(["update", "delete"], [""], ["persistentvolumeclaims"]),
        rule(["update"], [""], ["pods/finalizers"]),
        EVENTS,
    ],
    "ttl-controller": [rule(["update", "patch", "list", "watch"], [""], ["nodes"]), EVENTS],
    "certificate-controller": [
        rule(
            ["get", "list", "watch", "delete"],
            ["certificates.k8s.io"],
            ["certificatesigningrequests"],
        ),
        rule(
            ["update"],
            ["certificates.k8s.io"],
            ["certificatesigningrequests/status", "certificatesigningrequests/approval"],
        ),
        rule(["approve"], ["certificates.k8s.io"], ["signers"], [_SIGNERS[2]]),
        rule(["sign"], ["certificates.k8s.io"], ["signers"], list(_SIGNERS)),
        rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        EVENTS,
    ],
    "pvc-protection-controller": [
        rule(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        rule(["list", "watch", "get"], [""], ["pods"]),
        EVENTS,
    ],
    "pv-protection-controller": [
        rule(["get", "list", "watch", "update"], [""], ["persistentvolumes"]),
        EVENTS,
    ],
    "ttl-after-finished-controller": [
        rule(["get", "list", "watch", "delete"], ["batch"], ["jobs"]),
        EVENTS,
    ],
    "root-ca-cert-publisher": [rule(["create", "update"], [""], ["configmaps"]), EVENTS],
    "validatingadmissionpolicy-status-controller": [
        rule(READ, ["admissionregistration.k8s.io"], ["validatingadmissionpolicies"]),
        rule(
            ["get", "patch", "update"],
            ["admissionregistration.k8s.io"],
            ["validatingadmissionpolicies/status"],
        ),
        EVENTS,
    ],
    "legacy-service-account-token-cleaner": [
        rule(["get"], [""], ["configmaps"], [LEGACY_TOKEN_TRACKING]),
        rule(["patch", "delete"], [""], ["secrets"]),
    ],
}
"""Controller name -> the rules of its role."""
