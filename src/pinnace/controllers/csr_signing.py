"""The csrsigning controller (kube-controller-manager v1.32,
pkg/controller/certificates/signer): it signs approved requests for the built-in signers with
the cluster CA (--cluster-signing-cert-file and --cluster-signing-key-file, which kubeadm
points at its ca.crt and ca.key):

- kubernetes.io/kube-apiserver-client: any subject, usages among client auth, digital
  signature and key encipherment (client auth required);
- kubernetes.io/kube-apiserver-client-kubelet: a node's client certificate (O system:nodes,
  CN system:node:<name>, no subject alternative names);
- kubernetes.io/kubelet-serving: a node's serving certificate (O system:nodes, CN
  system:node:<name>, a DNS name or IP address).

A request that breaks its signer's rules gets a Failed condition and is never signed; one for
another signer (kubernetes.io/legacy-unknown among them: no v1 request names it) is left to
its signer. The certificate lasts spec.expirationSeconds, at least 10 minutes, at most
--cluster-signing-duration (a year), and never beyond the CA; it starts 5 minutes back, and a
certificate of 8 hours or more ends 5 minutes early to match (authority.PermissiveSigningPolicy).
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pinnace.api.certificates.csr import MIN_EXPIRATION_SECONDS
from pinnace.api.certificates.request import (
    FAILED,
    KUBE_APISERVER_CLIENT,
    KUBE_APISERVER_CLIENT_KUBELET,
    KUBELET_SERVING,
    alt_names,
    apiserver_client_error,
    has_condition,
    is_approved,
    kubelet_client_error,
    kubelet_serving_error,
    parse_request,
    request_bytes,
)
from pinnace.api.certificates.usages import EXTENDED_KEY_USAGES, KEY_USAGES
from pinnace.api.objects import Object
from pinnace.apiserver.auth.certs import load_ca, sign
from pinnace.client import Client, InformerFactory
from pinnace.controllers.certificate_controller import CSRS, CertificateController

DEFAULT_CLUSTER_SIGNING_DURATION = 365 * 24 * 3600.0
"""kube-controller-manager's --cluster-signing-duration: 8760h."""
BACKDATE = 300.0
SHORT = 8 * 3600.0

_SIGNER_RULES: dict[str, Callable[[x509.CertificateSigningRequest, list[str]], str]] = {
    KUBE_APISERVER_CLIENT: lambda request, usages: apiserver_client_error(usages),
    KUBE_APISERVER_CLIENT_KUBELET: kubelet_client_error,
    KUBELET_SERVING: kubelet_serving_error,
}

_CARRIED_NAMES = (x509.DNSName, x509.RFC822Name, x509.IPAddress, x509.UniformResourceIdentifier)
"""The subject alternative names a certificate carries over from its request, in the order Go's
crypto/x509 writes them (marshalSANs: DNS names, emails, IPs, URIs)."""


@dataclass(frozen=True)
class ClusterSigning:
    """The CA that signs for the built-in signers (PEM; empty: none) and the longest it signs
    for."""

    cert: str = ""
    key: str = ""
    duration: float = DEFAULT_CLUSTER_SIGNING_DURATION

    @property
    def configured(self) -> bool:
        return bool(self.cert and self.key)


class SigningError(Exception):
    """The CA cannot sign now (it has expired): the request is tried again later."""


class CertificateAuthority:
    def __init__(self, signing: ClusterSigning) -> None:
        self.certificate, self._key = load_ca(signing.cert.encode(), signing.key.encode())
        self.duration = signing.duration

    def ttl(self, expiration_seconds: object) -> float:
        """signer.duration: what the request asks for, within the controller's bounds."""
        if not isinstance(expiration_seconds, int):
            return self.duration
        return min(self.duration, max(float(MIN_EXPIRATION_SECONDS), float(expiration_seconds)))

    def sign(
        self,
        request: x509.CertificateSigningRequest,
        usages: Iterable[str],
        ttl: float,
        now: float,
    ) -> bytes:
        """The PEM certificate for `request` (CertificateAuthority.Sign with the permissive
        policy)."""
        start = datetime.datetime.fromtimestamp(now, datetime.UTC)
        not_before = start - datetime.timedelta(seconds=BACKDATE)
        lasts = ttl if ttl < SHORT else ttl - BACKDATE
        ca_not_after = self.certificate.not_valid_after_utc
        not_after = min(start + datetime.timedelta(seconds=lasts), ca_not_after)
        if not_before >= ca_not_after:
            raise SigningError(f"the signer has expired: NotAfter={ca_not_after}")
        if start >= ca_not_after:
            raise SigningError(
                f"refusing to sign a certificate that expired in the past: NotAfter={ca_not_after}"
            )
        builder = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.certificate.subject)
            .public_key(request.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        wanted = set(usages)
        bits = {flag for usage, flag in KEY_USAGES.items() if usage in wanted}
        if bits:
            builder = builder.add_extension(_key_usage(bits), critical=True)
        extended = list(
            dict.fromkeys(oid for usage, oid in EXTENDED_KEY_USAGES.items() if usage in wanted)
        )
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
        names = alt_names(request, *_CARRIED_NAMES)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        try:
            ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski.value),
                critical=False,
            )
        except x509.ExtensionNotFound:
            pass
        return sign(builder, self._key).public_bytes(serialization.Encoding.PEM)


def _key_usage(bits: set[str]) -> x509.KeyUsage:
    flags = (
        "digital_signature", "content_commitment", "key_encipherment", "data_encipherment",
        "key_agreement", "key_cert_sign", "crl_sign", "encipher_only", "decipher_only",
    )  # fmt: skip
    on = {flag: flag in bits for flag in flags}
    if not on["key_agreement"]:  # cryptography refuses these two without key agreement
        on["encipher_only"] = on["decipher_only"] = False
    return x509.KeyUsage(**on)


class CSRSigningController:
    def __init__(self, client: Client, informers: InformerFactory, signing: ClusterSigning) -> None:
        self._client = client
        self._authority = CertificateAuthority(signing)
        self._loop = CertificateController(client, informers, self._handle)

    async def run(self) -> None:
        await self._loop.run()

    async def _handle(self, csr: Object) -> None:
        if not is_approved(csr) or has_condition(csr, FAILED):
            return
        spec = csr.get("spec") or {}
        rules = _SIGNER_RULES.get(spec.get("signerName") or "")
        if rules is None:
            return
        request = parse_request(request_bytes(csr))
        usages = [u for u in spec.get("usages") or () if isinstance(u, str)]
        problem = rules(request, usages)
        status = csr.setdefault("status", {})
        if problem:
            status.setdefault("conditions", []).append(
                {
                    "type": FAILED,
                    "status": "True",
                    "reason": "SignerValidationFailure",
                    "message": problem,
                    "lastUpdateTime": self._client.clock.now_rfc3339(),
                }
            )
        else:
            ttl = self._authority.ttl(spec.get("expirationSeconds"))
            pem = self._authority.sign(request, usages, ttl, self._client.clock.now())
            status["certificate"] = base64.b64encode(pem).decode()
        await self._client.update_status(CSRS, csr)
