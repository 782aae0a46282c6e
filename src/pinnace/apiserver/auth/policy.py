"""The roles and bindings every cluster starts with, and their reconciliation at start, as
kube-apiserver v1.32's RBAC post-start hook ensures them
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, pkg/registry/rbac/rest/
storage_rbac.go, pkg/registry/rbac/reconciliation).

A missing default is created; one that exists and is not annotated
`rbac.authorization.kubernetes.io/autoupdate: "false"` gets back the rules, labels,
annotations and subjects it lacks (extra ones are kept). admin, edit and view carry only an
aggregationRule: the cluster role aggregation controller fills their rules from
system:aggregate-to-admin/edit/view and any role labelled to join them.

kube-controller-manager's per-controller roles (`controller_policy`) are made too, though
Pinnace's controllers run in process, trusted; and kube-system's and kube-public's roles and
bindings. So is metrics-server's system:aggregated-metrics-reader, since the API server serves
metrics.k8s.io in metrics-server's place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinnace.api.objects import Object
from pinnace.api.rbac.kinds import CLUSTER_ROLE, CLUSTER_ROLE_BINDING, GROUP, ROLE, ROLE_BINDING
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.controller_policy import CONTROLLER_ROLES
from pinnace.apiserver.auth.policy_rules import (
    EVENTS,
    READ,
    READ_UPDATE,
    READ_WRITE,
    WRITE,
    rule,
    urls,
)
from pinnace.apiserver.auth.user import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    KUBE_CONTROLLER_MANAGER,
    KUBE_PROXY,
    KUBE_SCHEDULER,
    MONITORING_GROUP,
    SYSTEM_MASTERS,
)

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

AUTO_UPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
CONTROLLER_PREFIX = "system:controller:"
CERTIFICATES = "certificates.k8s.io"

_NODE = [
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(
        ["create"], ["authorization.k8s.io"], ["subjectaccessreviews", "localsubjectaccessreviews"]
    ),
    rule(READ, [""], ["services"]),
    rule(["create", "get", "list", "watch"], [""], ["nodes"]),
    rule(["update", "patch"], [""], ["nodes/status"]),
    rule(["update", "patch"], [""], ["nodes"]),
    rule(["create", "update", "patch"], [""], ["events"]),
    rule(READ, [""], ["pods"]),
    rule(["create", "delete"], [""], ["pods"]),
    rule(["update", "patch"], [""], ["pods/status"]),
    rule(["create"], [""], ["pods/eviction"]),
    rule(["get", "list", "watch"], [""], ["secrets", "configmaps"]),
    rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
    rule(["get"], [""], ["endpoints"]),
    rule(
        ["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"]
    ),
    rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"]),
    rule(["get"], ["storage.k8s.io"], ["volumeattachments"]),
    rule(["get", "update", "patch"], [""], ["persistentvolumeclaims/status"]),
    rule(["create"], [""], ["serviceaccounts/token"]),
    rule(["get", "watch", "list"], ["storage.k8s.io"], ["csidrivers"]),
    rule(["get", "create", "update", "patch", "delete"], ["storage.k8s.io"], ["csinodes"]),
    rule(["get", "list", "watch"], ["node.k8s.io"], ["runtimeclasses"]),
]

_AGGREGATE_TO_ADMIN = [
    rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    rule(READ_WRITE, [GROUP], ["roles", "rolebindings"]),
]
_AGGREGATE_TO_EDIT = [
    rule(
        READ,
        [""],
        ["pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"],
    ),
    rule(["impersonate"], [""], ["serviceaccounts"]),
    rule(WRITE, [""], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
    rule(["create"], [""], ["pods/eviction"]),
    rule(
        WRITE,
        [""],
        [
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/proxy",
            "persistentvolumeclaims",
            "configmaps",
            "secrets",
        ],
    ),
    rule(["create"], [""], ["serviceaccounts/token"]),
    rule(
        WRITE,
        ["apps"],
        [
            "statefulsets",
            "statefulsets/scale",
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "replicasets",
            "replicasets/scale",
        ],
    ),
    rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    rule(WRITE, ["batch"], ["jobs", "cronjobs"]),
    rule(
        WRITE,
        ["extensions"],
        [
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "ingresses",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
            "networkpolicies",
        ],
    ),
    rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    rule(WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
    rule(
        ["create", "delete", "deletecollection", "patch", "update"],
        ["coordination.k8s.io"],
        ["leases"],
    ),
]
_AGGREGATE_TO_VIEW = [
    rule(
        READ,
        [""],
        [
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "configmaps",
        ],
    ),
    rule(
        READ,
        [""],
        [
            "limitranges",
            "resourcequotas",
            "bindings",
            "events",
            "pods/status",
            "resourcequotas/status",
            "namespaces/status",
            "replicationcontrollers/status",
            "pods/log",
        ],
    ),
    rule(READ, [""], ["namespaces"]),
    rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    rule(
        READ,
        ["apps"],
        [
            "controllerrevisions",
            "statefulsets",
            "statefulsets/status",
            "statefulsets/scale",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/status",
            "deployments/scale",
            "replicasets",
            "replicasets/status",
            "replicasets/scale",
        ],
    ),
    rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    rule(READ, ["batch"], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
    rule(
        READ,
        ["extensions"],
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
            "networkpolicies",
        ],
    ),
    rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    rule(READ, ["networking.k8s.io"], ["networkpolicies", "ingresses", "ingresses/status"]),
    rule(READ, ["coordination.k8s.io"], ["leases"]),
]
_KUBE_SCHEDULER = [
    EVENTS,
    rule(["create"], ["coordination.k8s.io"], ["leases"]),
    rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
    rule(READ, [""], ["nodes"]),
    rule(["get", "list", "watch", "delete"], [""], ["pods"]),
    rule(["create"], [""], ["pods/binding", "bindings"]),
    rule(["patch", "update"], [""], ["pods/status"]),
    rule(READ, [""], ["services", "replicationcontrollers"]),
    rule(READ, ["apps", "extensions"], ["replicasets"]),
    rule(READ, ["apps"], ["statefulsets"]),
    rule(READ, ["policy"], ["poddisruptionbudgets"]),
    rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    rule(READ, ["storage.k8s.io"], ["csinodes"]),
    rule(READ, [""], ["namespaces"]),
    rule(READ, ["storage.k8s.io"], ["csidrivers"]),
    rule(READ, ["storage.k8s.io"], ["csistoragecapacities"]),
]
_KUBE_CONTROLLER_MANAGER = [
    EVENTS,
    rule(["create"], ["coordination.k8s.io"], ["leases"]),
    rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
    rule(["create"], [""], ["secrets", "serviceaccounts"]),
    rule(["delete"], [""], ["secrets"]),
    rule(["get"], [""], ["namespaces", "secrets", "serviceaccounts", "configmaps"]),
    rule(["update"], [""], ["secrets", "serviceaccounts"]),
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    rule(["list", "watch"], ["*"], ["*"]),
    rule(["create"], [""], ["serviceaccounts/token"]),
]


def node_rules() -> list[dict[str, Any]]:
    """The rules the Node authorizer grants beyond what it subdivides (bootstrappolicy's
    NodeRules), which are also system:node's."""
    return [dict(r) for r in _NODE]


def _role(
    name: str,
    rules: list[dict[str, Any]],
    aggregate_from: str = "",
    labels: dict[str, str] | None = None,
) -> Object:
    role: Object = {"metadata": {"name": name, "labels": {**(labels or {}), **BOOTSTRAPPING}}}
    role["metadata"]["annotations"] = {AUTO_UPDATE: "true"}
    if aggregate_from:
        selector = {"matchLabels": {f"{AGGREGATE_TO}{aggregate_from}": "true"}}
        role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
    else:
        role["rules"] = rules
    return role


def cluster_roles() -> list[Object]:
    to = AGGREGATE_TO
    return [
        _role("cluster-admin", [rule(["*"], ["*"], ["*"]), urls(["*"], ["*"])]),
        _role(
            "system:discovery",
            [
                urls(
                    ["get"],
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                )
            ],
        ),
        _role(
            "system:monitoring",
            [
                urls(
                    ["get"],
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                )
            ],
        ),
        _role(
            "system:basic-user",
            [
                rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        _role(
            "system:public-info-viewer",
            [urls(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])],
        ),
        _role("admin", [], "admin"),
        _role("edit", [], "edit", {f"{to}admin": "true"}),
        _role("view", [], "view", {f"{to}edit": "true"}),
        _role("system:aggregate-to-admin", _AGGREGATE_TO_ADMIN, labels={f"{to}admin": "true"}),
        _role("system:aggregate-to-edit", _AGGREGATE_TO_EDIT, labels={f"{to}edit": "true"}),
        _role("system:aggregate-to-view", _AGGREGATE_TO_VIEW, labels={f"{to}view": "true"}),
        _role(
            "system:heapster",
            [
                rule(READ, [""], ["events", "pods", "nodes", "namespaces"]),
                rule(READ, ["extensions"], ["deployments"]),
            ],
        ),
        _role("system:node", _NODE),
        _role(
            "system:node-problem-detector",
            [rule(["get"], [""], ["nodes"]), rule(["patch"], [""], ["nodes/status"]), EVENTS],
        ),
        _role(
            "system:kubelet-api-admin",
            [
                rule(["get", "list", "watch"], [""], ["nodes"]),
                rule(["proxy"], [""], ["nodes"]),
                rule(
                    ["*"],
                    [""],
                    [
                        "nodes/proxy",
                        "nodes/metrics",
                        "nodes/stats",
                        "nodes/log",
                        "nodes/healthz",
                        "nodes/pods",
                        "nodes/configz",
                    ],
                ),
            ],
        ),
        _role(
            "system:node-bootstrapper",
            [
                rule(
                    ["create", "get", "list", "watch"],
                    ["certificates.k8s.io"],
                    ["certificatesigningrequests"],
                )
            ],
        ),
        _role(
            "system:auth-delegator",
            [
                rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _role("system:kube-aggregator", [rule(READ, [""], ["services", "endpoints"])]),
        _role("system:kube-controller-manager", _KUBE_CONTROLLER_MANAGER),
        _role("system:kube-dns", [rule(["list", "watch"], [""], ["endpoints", "services"])]),
        _role(
            "system:persistent-volume-provisioner",
            [
                rule(["get", "list", "watch", "create", "delete"], [""], ["persistentvolumes"]),
                rule(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
                rule(READ, ["storage.k8s.io"], ["storageclasses"]),
                rule(["watch"], [""], ["events"]),
                EVENTS,
            ],
        ),
        *_certificate_requesters(),
        _role(
            "system:volume-scheduler",
            [
                rule(READ_UPDATE, [""], ["persistentvolumes"]),
                rule(READ, ["storage.k8s.io"], ["storageclasses"]),
                rule(READ_UPDATE, [""], ["persistentvolumeclaims"]),
            ],
        ),
        *_signer_approvers(),
        _role(
            "system:service-account-issuer-discovery",
            [
                urls(
                    ["get"],
                    [
                        "/.well-known/openid-configuration",
                        "/.well-known/openid-configuration/",
                        "/openid/v1/jwks",
                        "/openid/v1/jwks/",
                    ],
                )
            ],
        ),
        _role(
            "system:node-proxier",
            [
                rule(["list", "watch"], [""], ["services", "endpoints"]),
                rule(["get", "list", "watch"], [""], ["nodes"]),
                EVENTS,
                rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
            ],
        ),
        _role("system:kube-scheduler", _KUBE_SCHEDULER),
        *(_role(f"{CONTROLLER_PREFIX}{name}", rules) for name, rules in CONTROLLER_ROLES.items()),
        _aggregated_metrics_reader(),
    ]


def _certificate_requesters() -> list[Object]:
    """Who may have a node's client certificate request approved by the csrapproving
    controller: for any node, or for its own name."""
    return [
        _role(
            f"system:certificates.k8s.io:certificatesigningrequests:{subresource}",
            [rule(["create"], [CERTIFICATES], [f"certificatesigningrequests/{subresource}"])],
        )
        for subresource in ("nodeclient", "selfnodeclient")
    ]


def _signer_approvers() -> list[Object]:
    """One role per built-in signer that lets its holder approve requests for it."""
    return [
        _role(
            f"system:certificates.k8s.io:{signer}-approver",
            [rule(["approve"], [CERTIFICATES], ["signers"], [f"kubernetes.io/{signer}"])],
        )
        for signer in (
            "legacy-unknown",
            "kubelet-serving",
            "kube-apiserver-client",
            "kube-apiserver-client-kubelet",
        )
    ]


def _aggregated_metrics_reader() -> Object:
    """metrics-server's role (its components.yaml), which lets view, edit and admin read the
    metrics API that Pinnace's API server serves in metrics-server's place (`kubectl top`)."""
    labels = {"k8s-app": "metrics-server"}
    labels |= {f"{AGGREGATE_TO}{role}": "true" for role in ("admin", "edit", "view")}
    return {
        "metadata": {"name": "system:aggregated-metrics-reader", "labels": labels},
        "rules": [rule(READ, ["metrics.k8s.io"], ["pods", "nodes"])],
    }


def _binding(role: str, subjects: list[tuple[str, str]], name: str = "") -> Object:
    binding: Object = {
        "metadata": {
            "name": name or role,
            "labels": dict(BOOTSTRAPPING),
            "annotations": {AUTO_UPDATE: "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
    }
    if subjects:
        binding["subjects"] = [
            {"kind": "ServiceAccount", "name": n.split("/")[1], "namespace": n.split("/")[0]}
            if kind == "ServiceAccount"
            else {"apiGroup": GROUP, "kind": kind, "name": n}
            for kind, n in subjects
        ]
    return binding


def cluster_role_bindings() -> list[Object]:
    return [
        _binding("cluster-admin", [("Group", SYSTEM_MASTERS)]),
        _binding("system:monitoring", [("Group", MONITORING_GROUP)]),
        _binding("system:discovery", [("Group", ALL_AUTHENTICATED)]),
        _binding("system:basic-user", [("Group", ALL_AUTHENTICATED)]),
        _binding(
            "system:public-info-viewer",
            [("Group", ALL_AUTHENTICATED), ("Group", ALL_UNAUTHENTICATED)],
        ),
        _binding("system:node-proxier", [("User", KUBE_PROXY)]),
        _binding("system:kube-controller-manager", [("User", KUBE_CONTROLLER_MANAGER)]),
        _binding("system:kube-dns", [("ServiceAccount", "kube-system/kube-dns")]),
        _binding("system:kube-scheduler", [("User", KUBE_SCHEDULER)]),
        _binding("system:volume-scheduler", [("User", KUBE_SCHEDULER)]),
        _binding("system:node", []),
        _binding("system:service-account-issuer-discovery", [("Group", "system:serviceaccounts")]),
        *(
            _binding(f"{CONTROLLER_PREFIX}{name}", [("ServiceAccount", f"kube-system/{name}")])
            for name in CONTROLLER_ROLES
        ),
    ]


def _in(namespace: str, obj: Object, role_kind: str = "") -> Object:
    obj["metadata"]["namespace"] = namespace
    if role_kind:
        obj["roleRef"]["kind"] = role_kind
    return obj


def _leader_locking(component: str) -> Object:
    return _role(
        f"system::leader-locking-{component}",
        [
            rule(["watch"], [""], ["configmaps"]),
            rule(["get", "update"], [""], ["configmaps"], [component]),
        ],
    )


def roles() -> list[Object]:
    """bootstrappolicy's NamespaceRoles: kube-system's and kube-public's."""
    return [
        _in(
            "kube-system",
            _role(
                "extension-apiserver-authentication-reader",
                [rule(READ, [""], ["configmaps"], ["extension-apiserver-authentication"])],
            ),
        ),
        _in("kube-system", _leader_locking("kube-controller-manager")),
        _in("kube-system", _leader_locking("kube-scheduler")),
        _in(
            "kube-system",
            _role("system:controller:bootstrap-signer", [rule(READ, [""], ["secrets"])]),
        ),
        _in(
            "kube-system",
            _role(
                "system:controller:cloud-provider",
                [rule(["create", "get", "list", "watch"], [""], ["configmaps"])],
            ),
        ),
        _in(
            "kube-system",
            _role(
                "system:controller:token-cleaner",
                [rule(["delete", "get", "list", "watch"], [""], ["secrets"]), EVENTS],
            ),
        ),
        _in(
            "kube-public",
            _role(
                "system:controller:bootstrap-signer",
                [
                    rule(READ, [""], ["configmaps"]),
                    rule(["update"], [""], ["configmaps"], ["cluster-info"]),
                    EVENTS,
                ],
            ),
        ),
    ]


def role_bindings() -> list[Object]:
    """bootstrappolicy's NamespaceRoleBindings."""
    controller_manager = ("User", KUBE_CONTROLLER_MANAGER)
    scheduler = ("User", KUBE_SCHEDULER)
    return [
        _in(
            "kube-system",
            _binding(
                "extension-apiserver-authentication-reader",
                [controller_manager, scheduler],
                "system::extension-apiserver-authentication-reader",
            ),
            "Role",
        ),
        _in(
            "kube-system",
            _binding(
                "system::leader-locking-kube-controller-manager",
                [controller_manager, ("ServiceAccount", "kube-system/kube-controller-manager")],
            ),
            "Role",
        ),
        _in(
            "kube-system",
            _binding(
                "system::leader-locking-kube-scheduler",
                [scheduler, ("ServiceAccount", "kube-system/kube-scheduler")],
            ),
            "Role",
        ),
        *(
            _in(
                "kube-system",
                _binding(f"system:controller:{c}", [("ServiceAccount", f"kube-system/{c}")]),
                "Role",
            )
            for c in ("bootstrap-signer", "cloud-provider", "token-cleaner")
        ),
        _in(
            "kube-public",
            _binding(
                "system:controller:bootstrap-signer",
                [("ServiceAccount", "kube-system/bootstrap-signer")],
            ),
            "Role",
        ),
    ]


async def ensure(server: APIServer) -> None:
    """Create the defaults that are missing and put back what an auto-updated one lacks."""
    for kind, objects in (
        (CLUSTER_ROLE, cluster_roles()),
        (CLUSTER_ROLE_BINDING, cluster_role_bindings()),
        (ROLE, roles()),
        (ROLE_BINDING, role_bindings()),
    ):
        for wanted in objects:
            namespace = wanted["metadata"].get("namespace", "")
            name = wanted["metadata"]["name"]
            try:
                await server.create(kind, namespace, wanted)
                continue
            except StatusError as e:
                if e.code != 409:
                    raise
            new = _reconciled(await server.get(kind, namespace, name), wanted)
            if new is not None:
                await server.update(kind, namespace, name, new)


def _reconciled(existing: Object, wanted: Object) -> Object | None:
    """The existing object with what `wanted` adds, None when nothing is to change."""
    m = existing.get("metadata") or {}
    if (m.get("annotations") or {}).get(AUTO_UPDATE) == "false":
        return None
    new = {**existing, "metadata": dict(m)}
    for key in ("labels", "annotations"):
        have = m.get(key) or {}
        merged = {
            **have,
            **{k: v for k, v in wanted["metadata"].get(key, {}).items() if k not in have},
        }
        if merged:
            new["metadata"][key] = merged
    for field_name in ("rules", "subjects"):
        have = list(existing.get(field_name) or [])
        have += [item for item in wanted.get(field_name) or () if item not in have]
        if have:
            new[field_name] = have
    if "aggregationRule" in wanted:
        new["aggregationRule"] = wanted["aggregationRule"]
    return None if new == existing else new
