"""The RBAC authorizer, the escalation check and the bootstrap policy on the in-process API
server, with vectors of Kubernetes v1.32's tests (rbac_test.go TestAuthorizer) and the
messages kube-apiserver answers."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness
from tests.support import acting_as

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.authorizer import forbidden_message
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import UserInfo
from pinnace.controllers.clusterrole_aggregation import aggregated_rules

RBAC = "rbac.authorization.k8s.io"
ROLES = catalog.kind(RBAC, "roles")
CLUSTER_ROLES = catalog.kind(RBAC, "clusterroles")
ROLE_BINDINGS = catalog.kind(RBAC, "rolebindings")
CLUSTER_ROLE_BINDINGS = catalog.kind(RBAC, "clusterrolebindings")


def cluster_role(
    name: str, *rules: dict[str, Any], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}


def binding(
    name: str, role: str, *subjects: str, namespace: str = "", kind: str = "ClusterRole"
) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role},
        "subjects": [
            {"kind": s.split(":", 1)[0], "name": s.split(":", 1)[1], "apiGroup": RBAC}
            for s in subjects
        ],
    }


def allowed(
    api: Harness,
    user: UserInfo,
    verb: str,
    resource: str,
    namespace: str = "",
    subresource: str = "",
) -> bool:
    attributes = Attributes(
        user, verb, namespace=namespace, resource=resource, subresource=subresource
    )
    return api.call(api.server.authorizer.authorize, attributes).allowed


def test_a_role_binding_grants_in_its_namespace_only(api: Harness) -> None:
    api.call(
        api.server.create,
        CLUSTER_ROLES,
        "",
        cluster_role("all", {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
    )
    api.call(
        api.server.create,
        ROLE_BINDINGS,
        "default",
        binding("b", "all", "User:admin", "Group:admins", namespace="default"),
    )
    assert allowed(api, UserInfo("admin"), "get", "pods", "default")
    assert allowed(api, UserInfo("joe", groups=("group1", "admins")), "watch", "foobar", "default")
    assert not allowed(api, UserInfo("admin"), "get", "pods", "kube-public")
    assert not allowed(api, UserInfo("admin", groups=("admins",)), "get", "nodes")


def test_system_masters_may_do_anything_and_others_get_kube_apiservers_wording(
    api: Harness,
) -> None:
    assert allowed(api, UserInfo("root", groups=("system:masters",)), "delete", "nodes")
    bob = UserInfo("bob", groups=("system:authenticated",))
    assert not allowed(api, bob, "list", "pods", "default")
    attributes = Attributes(bob, "list", namespace="default", resource="pods")
    assert forbidden_message(attributes) == (
        'User "bob" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    cluster = Attributes(bob, "get", resource="nodes", subresource="status", api_group="")
    assert forbidden_message(cluster) == (
        'User "bob" cannot get resource "nodes/status" in API group "" at the cluster scope'
    )


def test_a_binding_to_a_missing_role_is_the_denial_reason(api: Harness) -> None:
    api.call(api.server.create, CLUSTER_ROLE_BINDINGS, "", binding("b", "missing", "User:bob"))
    decision = api.call(
        api.server.authorizer.authorize, Attributes(UserInfo("bob"), "get", resource="pods")
    )
    assert not decision.allowed
    assert decision.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found'


def test_bootstrap_bindings_give_discovery_to_authenticated_users_only(api: Harness) -> None:
    someone = UserInfo("someone", groups=("system:authenticated",))
    anonymous = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    api_path = Attributes(someone, "get", resource_request=False, path="/apis/apps/v1")
    healthz = Attributes(anonymous, "get", resource_request=False, path="/healthz")
    assert api.call(api.server.authorizer.authorize, api_path).allowed
    assert api.call(api.server.authorizer.authorize, healthz).allowed
    anonymous_api = Attributes(anonymous, "get", resource_request=False, path="/api")
    assert not api.call(api.server.authorizer.authorize, anonymous_api).allowed
    decision = api.call(
        api.server.authorizer.authorize,
        Attributes(
            someone, "create", api_group="authorization.k8s.io", resource="selfsubjectaccessreviews"
        ),
    )
    assert decision.reason == (
        'RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole '
        '"system:basic-user" to Group "system:authenticated"'
    )


def test_granting_what_one_does_not_hold_is_forbidden(api: Harness) -> None:
    api.call(
        api.server.create,
        CLUSTER_ROLES,
        "",
        cluster_role(
            "pod-reader", {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}
        ),
    )
    api.call(
        api.server.create,
        CLUSTER_ROLES,
        "",
        cluster_role(
            "rbac-writer",
            {"verbs": ["create"], "apiGroups": [RBAC], "resources": ["roles", "rolebindings"]},
        ),
    )
    api.call(
        api.server.create,
        ROLE_BINDINGS,
        "default",
        binding("w", "rbac-writer", "User:alice", namespace="default"),
    )
    alice = UserInfo("alice", groups=("system:authenticated",))
    with acting_as(alice), pytest.raises(StatusError) as e:
        api.call(
            api.server.create,
            ROLES,
            "default",
            {
                "metadata": {"name": "r", "namespace": "default"},
                "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}],
            },
        )
    assert e.value.code == 403
    assert e.value.message == (
        'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'
    )
    with acting_as(alice), pytest.raises(StatusError) as e:
        api.call(
            api.server.create,
            ROLE_BINDINGS,
            "default",
            binding("rb", "pod-reader", "User:eve", namespace="default"),
        )
    assert e.value.code == 403
    # Once she holds the permissions, she may grant them; `bind` also lets her.
    api.call(
        api.server.create,
        ROLE_BINDINGS,
        "default",
        binding("r", "pod-reader", "User:alice", namespace="default"),
    )
    with acting_as(alice):
        api.call(
            api.server.create,
            ROLE_BINDINGS,
            "default",
            binding("rb", "pod-reader", "User:eve", namespace="default"),
        )
    with acting_as(alice), pytest.raises(StatusError) as e:
        api.call(
            api.server.create,
            ROLE_BINDINGS,
            "default",
            binding("x", "missing", "User:eve", namespace="default"),
        )
    assert e.value.message == (
        'rolebindings.rbac.authorization.k8s.io "x" is forbidden: '
        'clusterrole.rbac.authorization.k8s.io "missing" not found'
    )


def test_aggregation_gathers_matching_roles_in_name_order_each_rule_once() -> None:
    get_pods = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    list_pods = {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}
    label = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    view = {
        "metadata": {"name": "view", "labels": label},
        "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]},
    }
    roles = [
        view,
        cluster_role("b", get_pods, list_pods, labels=label),
        cluster_role("a", list_pods, labels=label),
        cluster_role("c", {"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}),
    ]
    assert aggregated_rules(view, roles) == [list_pods, get_pods]


def test_bootstrap_is_reconciled_without_dropping_what_was_added(api: Harness) -> None:
    admin = api.call(api.server.get, CLUSTER_ROLES, "", "cluster-admin")
    extra = {"verbs": ["get"], "nonResourceURLs": ["/extra"]}
    updated = {**admin, "rules": [admin["rules"][0], extra]}
    api.call(api.server.update, CLUSTER_ROLES, "", "cluster-admin", updated)
    from pinnace.apiserver.bootstrap import bootstrap

    api.call(bootstrap, api.server)
    rules = api.call(api.server.get, CLUSTER_ROLES, "", "cluster-admin")["rules"]
    assert extra in rules and len(rules) == 3


def test_bootstrap_namespaced_roles_let_the_scheduler_read_its_configmaps(api: Harness) -> None:
    scheduler = UserInfo("system:kube-scheduler", groups=("system:authenticated",))
    reader = Attributes(
        scheduler,
        "get",
        namespace="kube-system",
        resource="configmaps",
        name="extension-apiserver-authentication",
    )
    decision = api.call(api.server.authorizer.authorize, reader)
    assert decision.reason == (
        'RBAC: allowed by RoleBinding "system::extension-apiserver-authentication-reader/'
        'kube-system" of Role "extension-apiserver-authentication-reader" to User '
        '"system:kube-scheduler"'
    )
    other = Attributes(scheduler, "get", namespace="kube-system", resource="configmaps", name="x")
    assert not api.call(api.server.authorizer.authorize, other).allowed


def test_controllers_service_accounts_get_their_roles(api: Harness) -> None:
    deployments = UserInfo(
        "system:serviceaccount:kube-system:deployment-controller",
        groups=("system:serviceaccounts", "system:serviceaccounts:kube-system"),
    )
    status = Attributes(
        deployments,
        "update",
        namespace="web",
        api_group="apps",
        resource="deployments",
        subresource="status",
    )
    decision = api.call(api.server.authorizer.authorize, status)
    assert decision.reason == (
        'RBAC: allowed by ClusterRoleBinding "system:controller:deployment-controller" of '
        'ClusterRole "system:controller:deployment-controller" to ServiceAccount '
        '"deployment-controller/kube-system"'
    )
    nodes = Attributes(deployments, "delete", resource="nodes", name="n1")
    assert not api.call(api.server.authorizer.authorize, nodes).allowed


def test_a_decision_asked_again_follows_every_change_of_roles_and_bindings(api: Harness) -> None:
    """RBAC's decisions are remembered (a scraper asks the same of every node each interval),
    but a change to any role or binding is seen by the next request, as from informers."""
    prometheus = UserInfo("prometheus", groups=("system:authenticated",))
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes/proxy"]}

    def scrape() -> bool:
        return allowed(api, prometheus, "get", "nodes", subresource="proxy")

    assert not scrape() and not scrape()
    nodes_only = cluster_role("scraper", {**rule, "resources": ["nodes"]})
    api.call(api.server.create, CLUSTER_ROLES, "", nodes_only)
    scraper = binding("s", "scraper", "User:prometheus")
    api.call(api.server.create, CLUSTER_ROLE_BINDINGS, "", scraper)
    assert not scrape()
    api.call(api.server.update, CLUSTER_ROLES, "", "scraper", cluster_role("scraper", rule))
    assert scrape() and scrape()
    api.call(api.server.delete, CLUSTER_ROLE_BINDINGS, "", "s")
    assert not scrape()
