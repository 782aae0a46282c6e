"""PKCS#10 requests and CertificateSigningRequests for the tests, made with `cryptography` as a
user would make them with openssl."""

from __future__ import annotations

import base64
import datetime
import ipaddress
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"


def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def pem_request(
    common_name: str,
    organizations: tuple[str, ...] = (),
    *,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    emails: tuple[str, ...] = (),
    private_key: ec.EllipticCurvePrivateKey | None = None,
) -> bytes:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.RFC822Name(e) for e in emails]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    signed = builder.sign(private_key or key(), hashes.SHA256())
    return signed.public_bytes(serialization.Encoding.PEM)


def csr(
    name: str,
    request: bytes,
    signer: str = CLIENT,
    usages: tuple[str, ...] = ("client auth",),
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(request).decode(),
            "signerName": signer,
            "usages": list(usages),
            **spec,
        },
    }


def issued(obj: dict[str, Any]) -> x509.Certificate | None:
    """The certificate a request was issued, if any."""
    encoded = (obj.get("status") or {}).get("certificate")
    return x509.load_pem_x509_certificate(base64.b64decode(encoded)) if encoded else None


def condition(obj: dict[str, Any], kind: str, reason: str = "ByTest") -> dict[str, Any]:
    """`obj` with a True condition of `kind` added, as `kubectl certificate` adds one."""
    status = obj.setdefault("status", {})
    status.setdefault("conditions", []).append(
        {"type": kind, "status": "True", "reason": reason, "message": f"{kind} by the test"}
    )
    return obj


def a_certificate() -> bytes:
    """A PEM certificate, as a signer writes one."""
    private = key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "signed")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(private, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)
