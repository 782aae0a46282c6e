"""CertificateSigningRequest (certificates.k8s.io/v1): the registry strategies of the object and
its status and approval subresources, and validation, as Kubernetes v1.32
(pkg/registry/certificates/certificates/strategy.go, pkg/apis/certificates/validation,
pkg/apis/core/validation ValidateSignerName).

Whoever creates a request does not choose who it says asked: the API server sets
spec.username, uid, groups and extra from the requester (`pinnace.apiserver.admission.
certificates`). Approved and Denied are set through /approval, the certificate through
/status, and neither is ever taken back.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

from cryptography import x509

from pinnace.api import field
from pinnace.api.certificates.request import (
    APPROVED,
    DENIED,
    FAILED,
    LEGACY_UNKNOWN,
    RequestError,
    certificate,
    conditions,
    parse_request,
    request_bytes,
)
from pinnace.api.certificates.usages import USAGES
from pinnace.api.core.pod_shape import as_dict, as_list, as_str
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label

MIN_EXPIRATION_SECONDS = 600
_MAX_SUBDOMAIN = 253
_ONLY_TRUE = (APPROVED, DENIED, FAILED)
_STATUSES = ("False", "True", "Unknown")
_SPEC = Path("spec")
_CONDITIONS = Path("status", "conditions")
_CERTIFICATE = Path("status", "certificate")


class GoBytes:
    """A []byte as a field error prints it (Go's %#v)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __str__(self) -> str:
        return "[]byte{" + ", ".join(f"0x{b:x}" for b in self._data) + "}"


def validate_signer_name(path: Path, name: str) -> list[FieldError]:
    """ValidateSignerName: `<DNS subdomain of two labels or more>/<DNS labels joined by .>`."""
    if not name:
        return [field.required(path)]
    segments = name.split("/")
    if len(segments) != 2:
        detail = "must be a fully qualified domain and path of the form 'example.com/signer-name'"
        return [field.invalid(path, name, detail)]
    domain, rest = segments
    errs: list[FieldError] = []
    if len(domain) > _MAX_SUBDOMAIN:
        errs.append(field.too_long(path, domain, _MAX_SUBDOMAIN))
    labels = domain.split(".")
    errs += _label_errors(path, domain, labels)
    if len(labels) < 2:
        errs.append(
            field.invalid(
                path, domain, "should be a domain with at least two segments separated by dots"
            )
        )
    errs += _label_errors(path, rest, rest.split("."))
    longest = _MAX_SUBDOMAIN - len(domain) - 1
    if len(rest) > longest:
        errs.append(field.too_long(path, rest, longest))
    return errs


def _label_errors(path: Path, segment: str, labels: list[str]) -> list[FieldError]:
    """The first bad label's errors (the others would read the same)."""
    for label in labels:
        messages = is_dns1123_label(label)
        if messages:
            return [
                field.invalid(path, segment, f"validating label {json.dumps(label)}: {m}")
                for m in messages
            ]
    return []


def _certificate_error(encoded: str) -> str:
    """validateCertificate: "" for no certificate or PEM CERTIFICATE blocks only."""
    if not encoded:
        return ""
    try:
        pem = base64.b64decode(encoded)
    except (binascii.Error, ValueError):
        return "must contain at least one CERTIFICATE PEM block"
    if not pem:
        return ""
    blocks = 0
    for block in pem.split(b"-----BEGIN ")[1:]:
        kind = block.split(b"-----", 1)[0].decode(errors="replace")
        if kind != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind}"'
        try:
            x509.load_pem_x509_certificate(b"-----BEGIN " + block)
        except ValueError:
            return "x509: malformed certificate"
        blocks += 1
    return "" if blocks else "must contain at least one CERTIFICATE PEM block"


def _validate_conditions(csr: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(conditions(csr)):
        at = _CONDITIONS.index(i)
        kind, state = as_str(c.get("type")), as_str(c.get("status"))
        if not kind:
            errs.append(field.required(at.child("type")))
        allowed = ("True",) if kind in _ONLY_TRUE else _STATUSES
        if not state:
            errs.append(field.required(at.child("status")))
        elif state not in allowed:
            errs.append(field.not_supported(at.child("status"), state, allowed))
        if kind == APPROVED:
            approved = True
        elif kind == DENIED:
            denied = True
        if approved and denied and kind in (APPROVED, DENIED):
            errs.append(
                field.invalid(
                    at.child("type"), kind, "Approved and Denied conditions are mutually exclusive"
                )
            )
        if kind in seen:
            errs.append(field.duplicate(at.child("type"), kind))
        seen.add(kind)
    return errs


def _validate(csr: Any, old: Any = None) -> list[FieldError]:
    """validateCertificateSigningRequest with the options of a v1 write (`old`: the stored
    object of an update, whose certificate, if unchanged, is not checked again)."""
    errs = validate_object_meta(csr, namespaced=False, name_rule=lambda name: [])
    spec = as_dict(as_dict(csr).get("spec"))
    pem = request_bytes(csr)
    try:
        parse_request(pem)
    except RequestError as e:
        errs.append(field.invalid(_SPEC.child("request"), GoBytes(pem), str(e)))
    usages = [as_str(u) for u in as_list(spec.get("usages"))]
    if not usages:
        errs.append(field.required(_SPEC.child("usages")))
    for i, usage in enumerate(usages):
        if usage not in USAGES:
            errs.append(field.not_supported(_SPEC.child("usages").index(i), usage, USAGES))
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        if usage in seen:
            errs.append(field.duplicate(_SPEC.child("usages").index(i), usage))
        seen.add(usage)
    signer = as_str(spec.get("signerName"))
    signer_path = _SPEC.child("signerName")
    if signer == LEGACY_UNKNOWN:
        errs.append(
            field.invalid(
                signer_path, signer, "the legacy signerName is not allowed via this API version"
            )
        )
    else:
        errs += validate_signer_name(signer_path, signer)
    expiration = spec.get("expirationSeconds")
    if isinstance(expiration, int) and expiration < MIN_EXPIRATION_SECONDS:
        errs.append(
            field.invalid(
                _SPEC.child("expirationSeconds"),
                expiration,
                "may not specify a duration less than 600 seconds (10 minutes)",
            )
        )
    errs += _validate_conditions(csr)
    issued = certificate(csr)
    if old is None or issued != certificate(old):
        problem = _certificate_error(issued)
        if problem:
            errs.append(field.invalid(_CERTIFICATE, "<certificate data>", problem))
    return errs


def validate_csr(csr: Any) -> list[FieldError]:
    return _validate(csr)


def _of_type(csr: Any, kind: str) -> list[dict[str, Any]]:
    return [c for c in conditions(csr) if c.get("type") == kind]


def _validate_update(new: Any, old: Any, *, approval: bool, signing: bool) -> list[FieldError]:
    """validateCertificateSigningRequestUpdate: what each endpoint may change."""
    errs = _validate(new, old)
    for kind in (APPROVED, DENIED, FAILED):
        if len(_of_type(new, kind)) < len(_of_type(old, kind)):
            errs.append(
                field.forbidden(_CONDITIONS, f'updates may not remove a condition of type "{kind}"')
            )
    if not approval:
        for kind in (APPROVED, DENIED):
            new_ones, old_ones = _of_type(new, kind), _of_type(old, kind)
            if len(new_ones) > len(old_ones):
                errs.append(
                    field.forbidden(
                        _CONDITIONS, f'updates may not add a condition of type "{kind}"'
                    )
                )
            elif len(new_ones) == len(old_ones) and new_ones != old_ones:
                errs.append(
                    field.forbidden(
                        _CONDITIONS, f'updates may not modify a condition of type "{kind}"'
                    )
                )
    if certificate(new) != certificate(old):
        if not signing:
            errs.append(field.forbidden(_CERTIFICATE, "updates may not set certificate content"))
        elif certificate(old):
            errs.append(
                field.forbidden(_CERTIFICATE, "updates may not modify existing certificate content")
            )
    return errs + validate_object_meta_update(new, old)


def validate_csr_update(new: Any, old: Any) -> list[FieldError]:
    return _validate_update(new, old, approval=False, signing=False)


def validate_csr_status_update(new: Any, old: Any) -> list[FieldError]:
    return _validate_update(new, old, approval=False, signing=True)


def validate_csr_approval_update(new: Any, old: Any) -> list[FieldError]:
    return _validate_update(new, old, approval=True, signing=False)


def prepare_csr_for_create(csr: Any) -> None:
    """Nobody creates a request already approved or signed (the requester's identity is the
    API server's to set: `pinnace.apiserver.admission.certificates`)."""
    if isinstance(csr, dict):
        csr["status"] = {}


def _set(new: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        new.pop(key, None)
    else:
        new[key] = copy.deepcopy(value)


def prepare_csr_for_update(new: Any, old: Any) -> None:
    """Only the metadata changes through the object itself."""
    _set(new, "spec", old.get("spec"))
    _set(new, "status", old.get("status"))


def prepare_csr_for_status_update(new: Any, old: Any) -> None:
    """The spec stays, and so do the Approved and Denied conditions as they were (adding or
    removing one is left for validation to refuse)."""
    _set(new, "spec", old.get("spec"))
    found, before = conditions(new), conditions(old)
    for kind in (APPROVED, DENIED):
        old_ones = [i for i, c in enumerate(before) if c.get("type") == kind]
        new_ones = [i for i, c in enumerate(found) if c.get("type") == kind]
        if len(old_ones) == len(new_ones):
            for i, j in zip(new_ones, old_ones, strict=True):
                found[i] = copy.deepcopy(before[j])
    if found:
        new.setdefault("status", {})["conditions"] = found


def prepare_csr_for_approval(new: Any, old: Any) -> None:
    """Only the conditions change through /approval."""
    conditions = as_dict(new.get("status")).get("conditions")
    _set(new, "spec", old.get("spec"))
    status = copy.deepcopy(as_dict(old.get("status")))
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    new["status"] = status


CERTIFICATE_SIGNING_REQUEST = Kind(
    group="certificates.k8s.io",
    version="v1",
    kind="CertificateSigningRequest",
    plural="certificatesigningrequests",
    namespaced=False,
    model="V1CertificateSigningRequest",
    short_names=("csr",),
    subresources=("approval", "status"),
    prepare_for_create=prepare_csr_for_create,
    prepare_for_update=prepare_csr_for_update,
    prepare_for_status_update=prepare_csr_for_status_update,
    subresource_updates={"approval": (prepare_csr_for_approval, validate_csr_approval_update)},
    validate=validate_csr,
    validate_update=validate_csr_update,
    validate_status_update=validate_csr_status_update,
)
