"""Client certificates through CertificateSigningRequests, end to end on `pinnace up --tls`
with real kubectl, as a platform engineer gives a person one: the user makes a key and a
request, creates the CertificateSigningRequest, an admin approves it (`kubectl certificate
approve`), the signed certificate is read back, and kubectl with it is authenticated as the
user and authorised by RBAC bound to the user. Denied, unapproved and other signers' requests
are never signed; a requester without `approve` on the signer gets kube-apiserver's 403."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from tests.csr_requests import CLIENT, csr, key, pem_request
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.support import eventually

TOKENS = "tok-jane,jane,2001\ntok-alice,alice,2002\n"


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-csr")
    (workdir / "tokens.csv").write_text(TOKENS)
    running = launch(
        workdir,
        flags=("--tls", "--token-auth-file", "tokens.csv", "--no-scheduler", "--nodes", "1"),
    )
    # who may ask for certificates: jane and alice
    running.ok(
        "create",
        "clusterrole",
        "csr-requester",
        "--verb=create,get,list,watch",
        "--resource=certificatesigningrequests",
    )
    running.ok(
        "create",
        "clusterrolebinding",
        "csr-requesters",
        "--clusterrole=csr-requester",
        "--user=jane",
        "--user=alice",
    )
    # alice may also write approvals, though she may approve for no signer
    running.ok(
        "create",
        "clusterrole",
        "csr-approval-writer",
        "--verb=update",
        "--resource=certificatesigningrequests/approval",
    )
    running.ok(
        "create",
        "clusterrolebinding",
        "alice-approval-writer",
        "--clusterrole=csr-approval-writer",
        "--user=alice",
    )
    yield running
    stop(running)


def kubeconfig_as(cluster: Cluster, name: str, user: dict[str, str]) -> Path:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = user
    path = cluster.workdir / f"kubeconfig-{name}"
    path.write_text(yaml.safe_dump(config))
    return path


def kubectl_with(
    config: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(config), "--request-timeout=20s", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def as_token(
    cluster: Cluster, token: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return kubectl_with(kubeconfig_as(cluster, token, {"token": token}), *args, stdin=stdin)


def certificate_of(cluster: Cluster, name: str) -> str:
    return cluster.ok("get", "csr", name, "-o", "jsonpath={.status.certificate}")


def test_a_user_gets_a_client_certificate_and_kubectl_logs_in_with_it(secure: Cluster) -> None:
    private = key()
    request = csr("jane", pem_request("jane", ("devs",), private_key=private))
    request["spec"]["expirationSeconds"] = 86400
    made = as_token(secure, "tok-jane", "create", "-f", "-", stdin=json.dumps(request))
    assert made.returncode == 0, made.stderr
    listed = secure.ok("get", "csr", "jane").splitlines()
    assert listed[0].split() == [
        "NAME",
        "AGE",
        "SIGNERNAME",
        "REQUESTOR",
        "REQUESTEDDURATION",
        "CONDITION",
    ]
    assert listed[1].split()[2:] == [CLIENT, "jane", "24h", "Pending"]
    assert certificate_of(secure, "jane") == ""

    # alice may write approvals, but approve for no signer
    refused = as_token(secure, "tok-alice", "certificate", "approve", "jane")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): certificatesigningrequests.certificates.k8s.io "jane" '
        "is forbidden: user not permitted to approve requests with signerName "
        '"kubernetes.io/kube-apiserver-client"'
    )

    secure.ok("certificate", "approve", "jane")
    signed = eventually(lambda: certificate_of(secure, "jane"))
    assert "Approved,Issued" in secure.ok("get", "csr", "jane")
    described = secure.ok("describe", "csr", "jane")
    for line in ("Requesting User:     jane", "Requested Duration:  24h", "Approved,Issued"):
        assert line in described

    key_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    jane = kubeconfig_as(
        secure,
        "jane-cert",
        {
            "client-certificate-data": signed,
            "client-key-data": base64.b64encode(key_pem).decode(),
        },
    )
    whoami = json.loads(kubectl_with(jane, "auth", "whoami", "-o", "json").stdout)
    assert whoami["status"]["userInfo"] == {
        "username": "jane",
        "groups": ["devs", "system:authenticated"],
    }
    denied = kubectl_with(jane, "get", "pods", "-n", "default")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource '
        '"pods" in API group "" in the namespace "default"'
    )
    secure.ok("create", "rolebinding", "jane-view", "--clusterrole=view", "--user=jane")
    allowed = eventually(lambda: kubectl_with(jane, "get", "pods", "-n", "default").returncode == 0)
    assert allowed


def test_denied_unapproved_and_other_signers_requests_are_never_signed(secure: Cluster) -> None:
    for name, signer in (
        ("denied", CLIENT),
        ("waiting", CLIENT),
        ("elsewhere", "example.com/my-signer"),
    ):
        body = json.dumps(csr(name, pem_request(name), signer))
        made = as_token(secure, "tok-alice", "create", "-f", "-", stdin=body)
        assert made.returncode == 0, made.stderr
    secure.ok("certificate", "deny", "denied")
    secure.ok("certificate", "approve", "elsewhere")
    # a request approved after these is signed: the signer has looked at them all by then
    body = json.dumps(csr("later", pem_request("later")))
    assert as_token(secure, "tok-alice", "create", "-f", "-", stdin=body).returncode == 0
    secure.ok("certificate", "approve", "later")
    eventually(lambda: certificate_of(secure, "later"))
    rows = {row.split()[0]: row.split()[-1] for row in secure.ok("get", "csr").splitlines()[1:]}
    assert (rows["denied"], rows["waiting"], rows["elsewhere"]) == ("Denied", "Pending", "Approved")
    for name in ("denied", "waiting", "elsewhere"):
        assert certificate_of(secure, name) == ""
    # a denied request stays denied
    again = secure.kubectl("certificate", "approve", "denied")
    assert again.returncode == 1
    assert again.stderr == 'error: certificate signing request "denied" is already Denied\n'
    assert certificate_of(secure, "denied") == ""


def test_system_masters_cannot_be_asked_for(secure: Cluster) -> None:
    body = json.dumps(csr("root", pem_request("root", ("system:masters",))))
    refused = as_token(secure, "tok-alice", "create", "-f", "-", stdin=body)
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": '
        'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    )


def test_kubectl_explains_and_discovers_csrs(secure: Cluster) -> None:
    explained = secure.ok("explain", "csr.spec.expirationSeconds")
    assert "expirationSeconds" in explained and "integer" in explained
    resources = secure.ok("api-resources", "--api-group=certificates.k8s.io").splitlines()
    assert resources[1].split() == [
        "certificatesigningrequests",
        "csr",
        "certificates.k8s.io/v1",
        "false",
        "CertificateSigningRequest",
    ]
    roles = secure.ok("get", "clusterroles", "-o", "name")
    for signer in ("kube-apiserver-client", "kube-apiserver-client-kubelet", "kubelet-serving"):
        assert (
            f"clusterrole.rbac.authorization.k8s.io/system:certificates.k8s.io:{signer}-approver"
            in roles
        )
