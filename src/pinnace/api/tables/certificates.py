"""certificates.k8s.io: certificate signing requests, with who asked, for how long, and where
they stand (pkg/printers/internalversion printCertificateSigningRequest, v1.32)."""

from __future__ import annotations

from pinnace.api.certificates.request import APPROVED, DENIED, FAILED, certificate, has_condition
from pinnace.api.objects import Object
from pinnace.api.tables.age import human_duration
from pinnace.api.tables.columns import (
    Column,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    name_column,
    name_of,
    section,
)

_SPEC = "V1CertificateSigningRequestSpec"


def condition(csr: Object) -> str:
    """Denied over Approved over Pending, then Failed and Issued (extractCSRStatus)."""
    decided = next((c for c in (DENIED, APPROVED) if has_condition(csr, c)), "Pending")
    failed = ",Failed" if has_condition(csr, FAILED) else ""
    return decided + failed + (",Issued" if certificate(csr) else "")


def _requested_duration(csr: Object) -> str:
    seconds = section(csr, "spec").get("expirationSeconds")
    return "<none>" if not isinstance(seconds, int) else human_duration(seconds)


CERTIFICATE_SIGNING_REQUESTS = Printer(
    (
        name_column(),
        age_column(),
        # v1.32 describes the Requestor column with the request field's documentation.
        Column("SignerName", "string", doc(_SPEC, "signerName")),
        Column("Requestor", "string", doc(_SPEC, "request")),
        Column("RequestedDuration", "string", doc(_SPEC, "expirationSeconds")),
        Column("Condition", "string", doc("V1CertificateSigningRequestStatus", "conditions")),
    ),
    lambda csr, now: Row(
        [
            name_of(csr),
            age_of(csr, now),
            str(section(csr, "spec").get("signerName") or "<none>"),
            str(section(csr, "spec").get("username") or ""),
            _requested_duration(csr),
            condition(csr),
        ]
    ),
)
