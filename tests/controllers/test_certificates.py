"""kube-controller-manager's certificate controllers on the virtual clock: csrsigning signs
approved requests for the built-in signers with the cluster CA (expirationSeconds honoured
within its bounds, the signers' rules kept, everything else never signed); csrapproving
approves nodes' client certificate requests its access reviews allow; csrcleaner deletes
requests after its durations."""

from __future__ import annotations

import asyncio
import copy
import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.client.conftest import Cluster
from tests.csr_requests import (
    CLIENT,
    KUBELET_CLIENT,
    KUBELET_SERVING,
    condition,
    csr,
    issued,
    pem_request,
)
from tests.support import acting_as

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.apiserver.auth import certs
from pinnace.apiserver.auth.user import UserInfo
from pinnace.controllers.certificates import CertificateControllers
from pinnace.controllers.csr_cleaner import due
from pinnace.controllers.csr_signing import CertificateAuthority, ClusterSigning

CSRS = catalog.kind("certificates.k8s.io", "certificatesigningrequests")
HOUR = 3600.0
NODE = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))


class Certificates(Cluster):
    """The API server and the certificate controllers, with a CA of `tmp_path` (or none)."""

    def __init__(
        self, pki: Path | None, duration: float = 365 * 24 * HOUR, allowed: tuple[str, ...] = ()
    ) -> None:
        super().__init__()
        signing = ClusterSigning(duration=duration)
        self.ca: x509.Certificate | None = None
        if pki is not None:
            pair = certs.ensure_ca(pki)
            signing = ClusterSigning(pair.cert.read_text(), pair.key.read_text(), duration)
            self.ca = x509.load_pem_x509_certificate(pair.cert.read_bytes())
        self.reviews: list[Object] = []
        self.allowed = set(allowed)
        self.controllers = CertificateControllers(self.client, signing, self.review)
        self.run(self.controllers.start())

    async def review(self, spec: Object) -> bool:
        self.reviews.append(spec)
        return spec["resourceAttributes"]["subresource"] in self.allowed

    def wait(self, seconds: float) -> None:
        self.run(asyncio.sleep(seconds))

    def create(self, obj: Object, user: UserInfo | None = None) -> Object:
        with acting_as(user):
            return copy.deepcopy(self.run(self.client.create(CSRS, "", obj)))

    def get(self, name: str) -> Object:
        return copy.deepcopy(self.run(self.client.get(CSRS, "", name)))

    def decide(self, name: str, kind: str) -> Object:
        return self.run(self.client.update_approval(CSRS, condition(self.get(name), kind)))

    def names(self) -> set[str]:
        return {o["metadata"]["name"] for o in self.run(self.client.list(CSRS, ""))["items"]}

    def stop(self) -> None:
        self.run(self.controllers.stop())
        self.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Certificates]:
    c = Certificates(tmp_path)
    yield c
    c.stop()


def approved(c: Certificates, obj: Object) -> Object:
    name = obj["metadata"]["name"]
    c.create(obj)
    c.decide(name, "Approved")
    c.wait(1)
    return c.get(name)


def at(c: Certificates, offset: float) -> datetime.datetime:
    """The virtual clock's now plus `offset` seconds, as a certificate's time (whole seconds)."""
    return datetime.datetime.fromtimestamp(int(c.loop.time()) + offset, datetime.UTC)


def test_an_approved_client_request_is_signed_by_the_cluster_ca(cluster: Certificates) -> None:
    obj = csr("jane", pem_request("jane", ("devs",)), usages=("digital signature", "client auth"))
    obj["spec"]["expirationSeconds"] = 86400
    done = approved(cluster, obj)
    cert = issued(done)
    assert cert is not None and cluster.ca is not None
    signed_at = at(cluster, -1)  # signed a second ago, when approved
    assert cert.subject == x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devs"),
            x509.NameAttribute(NameOID.COMMON_NAME, "jane"),
        ]
    )
    assert cert.issuer == cluster.ca.subject
    cert.verify_directly_issued_by(cluster.ca)
    # backdated 5 minutes, and (lasting 8 hours or more) ending 5 minutes early to match
    assert cert.not_valid_before_utc == signed_at - datetime.timedelta(minutes=5)
    assert cert.not_valid_after_utc == signed_at + datetime.timedelta(days=1, minutes=-5)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert [c["type"] for c in done["status"]["conditions"]] == ["Approved"]


def test_the_duration_asked_for_is_kept_within_the_controllers_bounds(tmp_path: Path) -> None:
    c = Certificates(tmp_path, duration=2 * HOUR)
    try:
        short = csr("short", pem_request("short"), expirationSeconds=600)
        cert = issued(approved(c, short))
        assert cert is not None
        # under 8 hours: not cut short by the backdating
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(
            minutes=15
        )
        for name, asked in (("long", {"expirationSeconds": 86400}), ("default", {})):
            cert = issued(approved(c, csr(name, pem_request(name), **asked)))
            assert cert is not None
            lasts = cert.not_valid_after_utc - cert.not_valid_before_utc
            assert lasts == datetime.timedelta(hours=2, minutes=5)  # --cluster-signing-duration
    finally:
        c.stop()


def test_pending_denied_and_other_signers_requests_are_never_signed(cluster: Certificates) -> None:
    cluster.create(csr("pending", pem_request("pending")))
    cluster.create(csr("denied", pem_request("denied")))
    cluster.decide("denied", "Denied")
    approved(cluster, csr("elsewhere", pem_request("elsewhere"), "example.com/my-signer"))
    cluster.wait(HOUR / 2)
    for name in ("pending", "denied", "elsewhere"):
        assert issued(cluster.get(name)) is None, name
    assert [c["type"] for c in cluster.get("denied")["status"]["conditions"]] == ["Denied"]


@pytest.mark.parametrize(
    ("signer", "subject", "usages", "why"),
    [
        (
            CLIENT,
            ("jane", ()),
            ("client auth", "server auth"),
            "invalid usage for client certificate: server auth",
        ),
        (
            CLIENT,
            ("jane", ()),
            ("digital signature",),
            "missing required usage for client certificate: client auth",
        ),
        (
            KUBELET_CLIENT,
            ("system:node:n1", ("devs",)),
            ("digital signature", "client auth"),
            "subject organization is not system:nodes",
        ),
        (
            KUBELET_SERVING,
            ("system:node:n1", ("system:nodes",)),
            ("digital signature", "server auth"),
            "DNS or IP subjectAltName is required",
        ),
    ],
    ids=["client-server-auth", "client-no-client-auth", "kubelet-client-org", "serving-no-san"],
)
def test_a_request_breaking_its_signers_rules_fails_and_is_not_signed(
    cluster: Certificates,
    signer: str,
    subject: tuple[str, tuple[str, ...]],
    usages: tuple[str, ...],
    why: str,
) -> None:
    request_ = pem_request(*subject)
    done = approved(cluster, csr("bad", request_, signer, usages))
    assert issued(done) is None
    failed = done["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"], failed["message"]) == (
        "Failed",
        "SignerValidationFailure",
        why,
    )


def test_a_kubelet_serving_request_is_signed_with_its_names(cluster: Certificates) -> None:
    request = pem_request("system:node:n1", ("system:nodes",), dns=("n1",), ips=("10.0.0.1",))
    usages = ("digital signature", "key encipherment", "server auth")
    cert = issued(approved(cluster, csr("serving", request, KUBELET_SERVING, usages)))
    assert cert is not None
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["n1"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.1"]
    key_usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert (key_usage.digital_signature, key_usage.key_encipherment) == (True, True)


def test_a_client_certificate_carries_its_names_in_go_order(cluster: Certificates) -> None:
    """Go's crypto/x509 writes DNS names, then emails, then IPs, whatever the request's order."""
    request = pem_request("jane", dns=("jane.example",), ips=("10.0.0.7",), emails=("j@x.io",))
    cert = issued(approved(cluster, csr("named", request)))
    assert cert is not None
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [type(n).__name__ for n in names] == ["DNSName", "RFC822Name", "IPAddress"]


def test_nothing_is_signed_without_a_ca(tmp_path: Path) -> None:
    c = Certificates(None)
    try:
        assert issued(approved(c, csr("jane", pem_request("jane")))) is None
    finally:
        c.stop()


def node_client_request(name: str, common_name: str = "system:node:n1") -> Object:
    request = pem_request(common_name, ("system:nodes",))
    return csr(name, request, KUBELET_CLIENT, ("digital signature", "client auth"))


def test_a_signing_key_that_is_not_the_ca_certificates_is_refused(tmp_path: Path) -> None:
    ca, other = certs.ensure_ca(tmp_path / "a"), certs.ensure_ca(tmp_path / "b")
    signing = ClusterSigning(ca.cert.read_text(), other.key.read_text())
    with pytest.raises(ValueError, match="does not match"):
        CertificateAuthority(signing)


def test_a_nodes_own_client_request_is_approved_after_an_access_review(tmp_path: Path) -> None:
    c = Certificates(tmp_path, allowed=("selfnodeclient",))
    try:
        c.create(node_client_request("node-csr"), NODE)
        c.wait(1)
        done = c.get("node-csr")
        (approval,) = done["status"]["conditions"]
        assert (approval["type"], approval["reason"], approval["message"]) == (
            "Approved",
            "AutoApproved",
            "Auto approving self kubelet client certificate after SubjectAccessReview.",
        )
        assert issued(done) is not None
        assert c.reviews[0] == {
            "user": "system:node:n1",
            "groups": ["system:nodes", "system:authenticated"],
            "resourceAttributes": {
                "group": "certificates.k8s.io",
                "resource": "certificatesigningrequests",
                "verb": "create",
                "subresource": "selfnodeclient",
            },
        }
    finally:
        c.stop()


def test_node_requests_the_reviews_refuse_and_other_requests_wait(tmp_path: Path) -> None:
    c = Certificates(tmp_path, allowed=())
    try:
        # for another node's name: only nodeclient is tried, and refused
        c.create(node_client_request("other", "system:node:n2"), NODE)
        c.create(csr("jane", pem_request("jane")), UserInfo("jane"))
        c.wait(60)
        assert "conditions" not in c.get("other")["status"]
        assert "conditions" not in c.get("jane")["status"]
        subresources = {r["resourceAttributes"]["subresource"] for r in c.reviews}
        assert subresources == {"nodeclient"}
        c.allowed.add("nodeclient")  # a binding comes: the request is tried again
        c.wait(20 * 60)
        (approval,) = c.get("other")["status"]["conditions"]
        assert approval["message"] == (
            "Auto approving kubelet client certificate after SubjectAccessReview."
        )
        assert "conditions" not in c.get("jane")["status"]
    finally:
        c.stop()


def test_the_cleaner_deletes_requests_after_its_durations(cluster: Certificates) -> None:
    cluster.create(csr("pending", pem_request("pending")))
    cluster.create(csr("denied", pem_request("denied")))
    cluster.decide("denied", "Denied")
    approved(cluster, csr("issued", pem_request("issued")))
    approved(cluster, csr("failed", pem_request("failed"), usages=("server auth",)))
    cluster.create(csr("unsigned", pem_request("unsigned"), "example.com/my-signer"))
    cluster.decide("unsigned", "Approved")
    everything = {"pending", "denied", "issued", "failed", "unsigned"}
    cluster.wait(HOUR - 10)
    assert cluster.names() == everything
    cluster.wait(HOUR + 10)  # the first pass more than an hour after the decisions
    # approved but never issued: no rule of the cleaner's applies
    assert cluster.names() == {"pending", "unsigned"}
    cluster.wait(21 * HOUR)
    assert cluster.names() == {"pending", "unsigned"}
    cluster.wait(2 * HOUR)
    assert cluster.names() == {"unsigned"}
    cluster.wait(30 * 24 * HOUR)
    assert cluster.names() == {"unsigned"}


def test_the_cleaner_deletes_a_request_whose_certificate_expired(cluster: Certificates) -> None:
    done = approved(cluster, csr("short", pem_request("short"), expirationSeconds=600))
    cert = issued(done)
    assert cert is not None
    for c in done["status"]["conditions"]:
        del c["lastUpdateTime"]  # only the certificate's expiry is left to go by
    assert due(done) == cert.not_valid_after_utc.timestamp()
