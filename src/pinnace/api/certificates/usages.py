"""The key usages a CertificateSigningRequest may name, and what each sets in the certificate
signed for it (k8s.io/kubernetes v1.32 pkg/controller/certificates/authority/policies.go
keyUsageDict and extKeyUsageDict; pkg/apis/certificates/validation allValidUsages).
"""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

KEY_USAGES: dict[str, str] = {
    "signing": "digital_signature",
    "digital signature": "digital_signature",
    "content commitment": "content_commitment",
    "key encipherment": "key_encipherment",
    "key agreement": "key_agreement",
    "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign",
    "crl sign": "crl_sign",
    "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}
"""A usage that sets a bit of the key usage extension, by its x509.KeyUsage flag."""
EXTENDED_KEY_USAGES: dict[str, x509.ObjectIdentifier] = {
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1"),
}
"""A usage that names an extended key usage, in Go's x509.ExtKeyUsage order, which the
certificate lists them in."""

USAGES = tuple(sorted(KEY_USAGES.keys() | EXTENDED_KEY_USAGES.keys()))
"""Every key usage a request may name, sorted as the validation's message lists them."""
