"""The Node authorizer and NodeRestriction: a kubelet's identity reaches only what concerns its
node, with kube-apiserver v1.32's reasons and 403s."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.auth.test_authorizer import acting_as
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.eviction import evict

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
NODE_1 = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))


@pytest.fixture
def node_api(api: Harness) -> Harness:
    api.server.authorizer.modes = ("Node", "RBAC")
    return api


def decide(api: Harness, user: UserInfo, verb: str, resource: str, **more: Any) -> tuple[bool, str]:
    decision = api.call(
        api.server.authorizer.authorize, Attributes(user, verb, resource=resource, **more)
    )
    return decision.allowed, decision.reason


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "i",
        "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
    }
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [container], **spec},
    }


def test_a_node_reads_its_own_node_and_what_its_pods_use(node_api: Harness) -> None:
    node_api.call(node_api.server.create, PODS, "default", pod("mine", "n1"))
    node_api.call(
        node_api.server.create,
        PODS,
        "default",
        pod("theirs", "n2", volumes=[{"name": "v", "secret": {"secretName": "s2"}}]),
    )
    assert decide(node_api, NODE_1, "get", "nodes", name="n1") == (True, "")
    assert decide(node_api, NODE_1, "get", "nodes", name="n2") == (
        False,
        "node 'n1' cannot read 'n2', only its own Node object",
    )
    assert decide(node_api, NODE_1, "get", "configmaps", namespace="default", name="cm")[0]
    assert decide(node_api, NODE_1, "get", "secrets", namespace="default", name="s2") == (
        False,
        "no relationship found between node 'n1' and this object",
    )
    assert decide(node_api, NODE_1, "get", "pods", namespace="default", name="mine")[0]
    assert not decide(node_api, NODE_1, "get", "pods", namespace="default", name="theirs")[0]
    assert decide(node_api, NODE_1, "list", "pods", field_selector="spec.nodeName=n1")[0]
    assert decide(node_api, NODE_1, "list", "pods") == (
        False,
        "can only list/watch pods with spec.nodeName field selector",
    )
    lease = {"api_group": "coordination.k8s.io", "namespace": "kube-node-lease"}
    assert decide(node_api, NODE_1, "update", "leases", name="n1", **lease)[0]
    assert decide(node_api, NODE_1, "update", "leases", name="n2", **lease) == (
        False,
        "can only access node lease with the same name as the requesting node",
    )
    # what is not subdivided follows the system:node rules
    assert decide(node_api, NODE_1, "list", "services")[0]
    assert not decide(node_api, NODE_1, "delete", "namespaces", name="default")[0]


def test_node_restriction_keeps_a_node_to_its_own_objects(node_api: Harness) -> None:
    node_api.call(node_api.server.create, PODS, "default", pod("theirs", "n2"))
    with acting_as(NODE_1), pytest.raises(StatusError) as e:
        node_api.call(node_api.server.create, PODS, "default", pod("p", "n1"))
    assert (e.value.code, e.value.message) == (
        403,
        'pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, '
        'node "n1" can only create mirror pods',
    )
    with acting_as(NODE_1), pytest.raises(StatusError) as e:
        node_api.call(node_api.server.delete, PODS, "default", "theirs")
    assert e.value.message == (
        'pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set '
        "to itself"
    )
    with acting_as(NODE_1), pytest.raises(StatusError) as e:
        node_api.call(node_api.server.create, NODES, "", {"metadata": {"name": "n2"}})
    assert (
        e.value.message == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    )
    with acting_as(NODE_1):
        node_api.call(node_api.server.create, NODES, "", {"metadata": {"name": "n1"}})


def test_node_restriction_lets_a_node_evict_only_its_own_pods(node_api: Harness) -> None:
    for name, node in (("mine", "n1"), ("theirs", "n2")):
        node_api.call(node_api.server.create, PODS, "default", pod(name, node))
    with acting_as(NODE_1), pytest.raises(StatusError) as e:
        node_api.call(evict, node_api.server, "default", "theirs", eviction("theirs"))
    assert (e.value.code, e.value.message) == (
        403,
        'pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to '
        "itself",
    )
    node_api.call(node_api.server.get, PODS, "default", "theirs")  # still there
    with acting_as(NODE_1):
        answer = node_api.call(evict, node_api.server, "default", "mine", eviction("mine"))
    assert answer["status"] == "Success"


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
