"""The cluster's certificates, made with the `cryptography` library as kubeadm makes its own
(cmd/kubeadm/app/phases/certs): a self-signed CA (`ca.crt`, `ca.key`, CN kubernetes), the
API server's serving certificate for the loopback addresses, `localhost`, the host name and
the address it binds (`apiserver.crt`), and client certificates (the user in CN, its groups
in O) such as kubeadm's admin.conf carries (CN kubernetes-admin, O system:masters), and the
service account signing key beside them (`sa.key`, `sa.pub`, as kubeadm's).

Keys are ECDSA P-256; the CA lasts 10 years and what it signs 1 year, as kubeadm's.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
LEAF_DAYS = 365
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUP = "system:masters"

SigningKey = (
    ec.EllipticCurvePrivateKey
    | rsa.RSAPrivateKey
    | ed25519.Ed25519PrivateKey
    | ed448.Ed448PrivateKey
)
"""A private key that can sign certificates."""


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path

    def pem(self) -> tuple[bytes, bytes]:
        return self.cert.read_bytes(), self.key.read_bytes()


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> KeyPair:
    directory.mkdir(parents=True, exist_ok=True)
    pair = KeyPair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    fd = os.open(pair.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the key file was there already (the serving key is remade)
    with os.fdopen(fd, "wb") as f:
        f.write(key_pem)
    return pair


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 - as cryptography expects


def ca_certificate(
    public_key: CertificatePublicKeyTypes,
    serial: int,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
) -> x509.CertificateBuilder:
    """A self-signed CA certificate as kubeadm's, to be signed: CN kubernetes, CA:TRUE, and the
    key usages of a CA that signs certificates."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=True,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
    )


def ensure_ca(directory: Path) -> KeyPair:
    """The CA in `directory`, made on first use (kept across restarts)."""
    pair = KeyPair(directory / "ca.crt", directory / "ca.key")
    if pair.cert.exists() and pair.key.exists():
        return pair
    key = _key()
    now = _now()
    builder = ca_certificate(
        key.public_key(),
        x509.random_serial_number(),
        now - datetime.timedelta(minutes=5),
        now + datetime.timedelta(days=CA_DAYS),
    ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    cert = sign(builder, key)
    return _write(directory, "ca", cert, key)


def load_ca(cert_pem: bytes, key_pem: bytes) -> tuple[x509.Certificate, SigningKey]:
    """A CA's certificate and private key, from PEM; the key must be the certificate's (as
    kube-controller-manager's signer checks with tls.X509KeyPair)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, SigningKey):
        raise ValueError("the CA key is of a kind that cannot sign certificates")
    if key.public_key() != cert.public_key():
        raise ValueError("the CA key does not match the public key of its certificate")
    return cert, key


def sign(builder: x509.CertificateBuilder, key: SigningKey) -> x509.Certificate:
    """The certificate `builder` makes, signed with SHA-256 (Edwards keys take no hash)."""
    edwards = isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey)
    return builder.sign(key, None if edwards else hashes.SHA256())


def _signed(
    ca: KeyPair,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    alt_names: list[x509.GeneralName] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_cert, ca_key = load_ca(*ca.pem())
    key = _key()
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=LEAF_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    return sign(builder, ca_key), key


def serving_hosts(bind_address: str) -> list[str]:
    hosts = ["127.0.0.1", "::1", "localhost", socket.gethostname()]
    if bind_address not in ("0.0.0.0", "::", ""):
        hosts.append(bind_address)
    return list(dict.fromkeys(hosts))


def issue_serving(ca: KeyPair, directory: Path, hosts: Iterable[str]) -> KeyPair:
    """The API server's certificate for `hosts` (addresses or names), made anew each start so
    it names the address bound now."""
    alt_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    cert, key = _signed(ca, subject, ExtendedKeyUsageOID.SERVER_AUTH, alt_names)
    return _write(directory, "apiserver", cert, key)


def issue_client(
    ca: KeyPair, directory: Path, stem: str, user: str, groups: Iterable[str] = ()
) -> KeyPair:
    """A client certificate: the user as CN, each group an O."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    cert, key = _signed(ca, x509.Name(attributes), ExtendedKeyUsageOID.CLIENT_AUTH)
    return _write(directory, stem, cert, key)


def ensure_client(
    ca: KeyPair, directory: Path, stem: str, user: str, groups: Iterable[str] = ()
) -> KeyPair:
    pair = KeyPair(directory / f"{stem}.crt", directory / f"{stem}.key")
    if pair.cert.exists() and pair.key.exists():
        return pair
    return issue_client(ca, directory, stem, user, groups)


def ensure_service_account_key(directory: Path) -> str:
    """The service account signing key (PEM) in `directory`, made on first use (kept across
    restarts, so the tokens it signed stay good), with its public half in `sa.pub`."""
    path = directory / "sa.key"
    if not path.exists():
        key = _key()
        directory.mkdir(parents=True, exist_ok=True)
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        (directory / "sa.pub").write_bytes(public)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
    return path.read_text()
