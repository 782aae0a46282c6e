"""What a CertificateSigningRequest asks for, read from its PKCS#10 request, and the rules the
built-in signers hold it to (k8s.io/kubernetes pkg/apis/certificates/helpers.go ParseCSR,
ValidateKubeletClientCSR, ValidateKubeletServingCSR, and the kube-apiserver-client signer's
usages in pkg/controller/certificates/signer/signer.go, v1.32).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"

APPROVED = "Approved"
DENIED = "Denied"
FAILED = "Failed"

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"

_KUBELET_CLIENT_USAGES = (
    frozenset({"digital signature", "key encipherment", "client auth"}),
    frozenset({"digital signature", "client auth"}),
)
_KUBELET_SERVING_USAGES = (
    frozenset({"digital signature", "key encipherment", "server auth"}),
    frozenset({"digital signature", "server auth"}),
)


class RequestError(ValueError):
    """A request that is not a signed PKCS#10 CERTIFICATE REQUEST, in a sentence."""


def request_bytes(csr: object) -> bytes:
    """The PEM bytes of `spec.request` (base64 on the wire, as any []byte field)."""
    spec = csr.get("spec") if isinstance(csr, dict) else None
    text = spec.get("request") if isinstance(spec, dict) else None
    if not isinstance(text, str):
        return b""
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return b""


def parse_request(pem: bytes) -> x509.CertificateSigningRequest:
    """The request in the first PEM block, which must be a CERTIFICATE REQUEST whose signature
    holds (ParseCSR, then CheckSignature)."""
    start = pem.find(b"-----BEGIN ")
    if start < 0 or not pem[start:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:
        request = x509.load_pem_x509_csr(pem[start:])
    except ValueError:
        raise RequestError("x509: malformed certificate request") from None
    try:
        valid = request.is_signature_valid
    except Exception:  # an algorithm cryptography cannot check: Go cannot either
        valid = False
    if not valid:
        raise RequestError("x509: signature verification failure")
    return request


def organizations(request: x509.CertificateSigningRequest) -> list[str]:
    return [str(a.value) for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def common_name(request: x509.CertificateSigningRequest) -> str:
    found = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(found[0].value) if found else ""


def alt_names(
    request: x509.CertificateSigningRequest, *kinds: type[x509.GeneralName]
) -> list[x509.GeneralName]:
    """The request's subject alternative names of `kinds`, those of the first kind first."""
    try:
        found = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [name for kind in kinds for name in found if isinstance(name, kind)]


def _usages_message(usages: frozenset[str]) -> str:
    return "usages did not match [" + " ".join(sorted(usages)) + "]"


def kubelet_client_error(request: x509.CertificateSigningRequest, usages: Iterable[str]) -> str:
    """ValidateKubeletClientCSR: "" for a node's client certificate request, else why not."""
    if organizations(request) != [NODES_GROUP]:
        return "subject organization is not system:nodes"
    for kind, what in (
        (x509.DNSName, "DNS"),
        (x509.RFC822Name, "Email"),
        (x509.IPAddress, "IP"),
        (x509.UniformResourceIdentifier, "URI"),
    ):
        if alt_names(request, kind):
            return f"{what} subjectAltNames are not allowed"
    if not common_name(request).startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    if frozenset(usages) not in _KUBELET_CLIENT_USAGES:
        return _usages_message(_KUBELET_CLIENT_USAGES[0])
    return ""


def kubelet_serving_error(request: x509.CertificateSigningRequest, usages: Iterable[str]) -> str:
    """ValidateKubeletServingCSR: "" for a node's serving certificate request, else why not."""
    if organizations(request) != [NODES_GROUP]:
        return "subject organization is not system:nodes"
    if not alt_names(request, x509.DNSName, x509.IPAddress):
        return "DNS or IP subjectAltName is required"
    if alt_names(request, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if alt_names(request, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    if frozenset(usages) not in _KUBELET_SERVING_USAGES:
        return _usages_message(_KUBELET_SERVING_USAGES[0])
    if not common_name(request).startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    return ""


def apiserver_client_error(usages: Iterable[str]) -> str:
    """The kube-apiserver-client signer's usages: client auth, and optionally digital
    signature and key encipherment."""
    has_client_auth = False
    for usage in usages:
        if usage == "client auth":
            has_client_auth = True
        elif usage not in ("digital signature", "key encipherment"):
            return f"invalid usage for client certificate: {usage}"
    return "" if has_client_auth else "missing required usage for client certificate: client auth"


def conditions(csr: object) -> list[dict[str, Any]]:
    """`status.conditions`, the entries that are objects (a new list of the same objects)."""
    status = csr.get("status") if isinstance(csr, dict) else None
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def has_condition(csr: object, condition: str) -> bool:
    return any(c.get("type") == condition for c in conditions(csr))


def is_approved(csr: object) -> bool:
    """Approved and not Denied (certificates.GetCertApprovalCondition)."""
    return has_condition(csr, APPROVED) and not has_condition(csr, DENIED)


def certificate(csr: object) -> str:
    """`status.certificate` as sent (base64), "" when there is none."""
    status = csr.get("status") if isinstance(csr, dict) else None
    found = status.get("certificate") if isinstance(status, dict) else None
    return found if isinstance(found, str) else ""
