"""CertificateSigningRequests through the API server's pipeline, as kube-apiserver v1.32 admits
them: the requester fills the spec, the approve and sign verbs on the signer guard /approval
and /status (the bootstrap approver roles grant them), system:masters is no subject for the
kube-apiserver-client signer, and conditions get their timestamps."""

from __future__ import annotations

import base64
import copy
from types import MappingProxyType

import pytest
from tests.apiserver.conftest import Harness
from tests.csr_requests import a_certificate, condition, csr, pem_request
from tests.support import acting_as

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.user import UserInfo

CSRS = catalog.kind("certificates.k8s.io", "certificatesigningrequests")
CLUSTER_ROLE_BINDINGS = catalog.kind("rbac.authorization.k8s.io", "clusterrolebindings")
JANE = UserInfo(
    "jane",
    "1001",
    ("devs", "system:authenticated"),
    MappingProxyType({"scopes": ("read",)}),
)
APPROVER = UserInfo("ada", groups=("system:authenticated",))


def grant(api: Harness, role: str, user: str) -> None:
    binding = {
        "metadata": {"name": f"{user}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    api.call(api.server.create, CLUSTER_ROLE_BINDINGS, "", binding)


def created(api: Harness, name: str = "jane") -> dict:  # type: ignore[type-arg]
    body = csr(name, pem_request("jane", ("devs",)), username="mallory", groups=["system:masters"])
    with acting_as(JANE):
        # a copy: the object answered is the one the store holds
        return copy.deepcopy(api.call(api.server.create, CSRS, "", body).obj)


def test_the_spec_names_the_requester_whatever_the_body_says(api: Harness) -> None:
    spec = created(api)["spec"]
    assert (spec["username"], spec["uid"], spec["groups"]) == (
        "jane",
        "1001",
        ["devs", "system:authenticated"],
    )
    assert spec["extra"] == {"scopes": ["read"]}


def test_approval_needs_approve_on_the_signer(api: Harness) -> None:
    obj = condition(created(api), "Approved")
    with acting_as(APPROVER), pytest.raises(StatusError) as refused:
        api.call(api.server.update, CSRS, "", "jane", obj, subresource="approval")
    assert (refused.value.code, refused.value.message) == (
        403,
        'certificatesigningrequests.certificates.k8s.io "jane" is forbidden: user not '
        'permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"',
    )
    grant(api, "system:certificates.k8s.io:kube-apiserver-client-approver", "ada")
    with acting_as(APPROVER):
        approved = api.call(api.server.update, CSRS, "", "jane", obj, subresource="approval").obj
    (approval,) = approved["status"]["conditions"]
    assert approval["lastUpdateTime"] == approval["lastTransitionTime"] != ""


def test_only_a_signer_sets_the_certificate(api: Harness) -> None:
    obj = created(api)
    obj.setdefault("status", {})["certificate"] = base64.b64encode(a_certificate()).decode()
    with acting_as(APPROVER), pytest.raises(StatusError) as refused:
        api.call(api.server.update, CSRS, "", "jane", obj, subresource="status")
    assert refused.value.message.endswith(
        'user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client"'
    )


def test_system_masters_is_no_subject_for_the_kube_apiserver_client_signer(api: Harness) -> None:
    body = csr("root", pem_request("root", ("system:masters",)))
    with acting_as(JANE), pytest.raises(StatusError) as refused:
        api.call(api.server.create, CSRS, "", body)
    assert (refused.value.code, refused.value.message) == (
        403,
        'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
    )
    other = csr("root", pem_request("root", ("system:masters",)), "example.com/signer")
    with acting_as(JANE):
        api.call(api.server.create, CSRS, "", other)
