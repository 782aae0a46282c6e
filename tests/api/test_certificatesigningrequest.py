"""CertificateSigningRequest (certificates.k8s.io/v1): validation and the registry strategies,
worded as kube-apiserver v1.32's pkg/apis/certificates/validation and
pkg/registry/certificates/certificates/strategy.go, and kubectl's table."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from tests.csr_requests import CLIENT, a_certificate, condition, csr, pem_request

from pinnace.api import catalog
from pinnace.api.certificates.csr import CERTIFICATE_SIGNING_REQUEST as CSR
from pinnace.api.fieldselector import field_set
from pinnace.api.tables import PRINTERS

REQUEST = pem_request("jane", ("devs",))


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def stored(**spec: Any) -> dict[str, Any]:
    obj = csr("jane", REQUEST, **spec)
    obj["metadata"]["resourceVersion"] = "1"
    CSR.prepare_for_create(obj)
    return obj


def test_served_cluster_wide_with_the_csr_short_name() -> None:
    assert catalog.resolve("csr") is CSR
    assert (CSR.namespaced, CSR.subresources) == (False, ("approval", "status"))


def test_a_well_formed_request_is_valid() -> None:
    assert CSR.validate(csr("jane", REQUEST, expirationSeconds=600)) == []


def test_the_request_must_be_a_signed_pem_certificate_request() -> None:
    bad = csr("jane", b"junk")
    assert messages(CSR.validate(bad)) == [
        "spec.request: Invalid value: []byte{0x6a, 0x75, 0x6e, 0x6b}: "
        "PEM block type must be CERTIFICATE REQUEST"
    ]
    tampered = REQUEST.replace(b"\n", b"", 1)[:-80] + REQUEST[-80:].replace(b"A", b"B", 1)
    assert CSR.validate(csr("jane", tampered)) != []


def test_signer_name_usages_and_expiration_are_checked() -> None:
    obj = csr("jane", REQUEST, "", (), expirationSeconds=599)
    assert messages(CSR.validate(obj)) == [
        "spec.usages: Required value",
        "spec.signerName: Required value",
        "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 "
        "seconds (10 minutes)",
    ]
    shapes = {
        "example": 'spec.signerName: Invalid value: "example": must be a fully qualified '
        "domain and path of the form 'example.com/signer-name'",
        "example/foo": 'spec.signerName: Invalid value: "example": should be a domain with at '
        "least two segments separated by dots",
        "Example.com/foo": 'spec.signerName: Invalid value: "Example.com": validating label '
        '"Example": a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "kubernetes.io/legacy-unknown": 'spec.signerName: Invalid value: "kubernetes.io/'
        'legacy-unknown": the legacy signerName is not allowed via this API version',
    }
    for signer, message in shapes.items():
        assert messages(CSR.validate(csr("jane", REQUEST, signer))) == [message]
    assert CSR.validate(csr("jane", REQUEST, "example.com/my-signer")) == []
    usages = messages(
        CSR.validate(csr("jane", REQUEST, CLIENT, ("client auth", "flying", "client auth")))
    )
    assert usages[0].startswith(
        'spec.usages[1]: Unsupported value: "flying": supported values: "any"'
    )
    assert usages[1] == 'spec.usages[2]: Duplicate value: "client auth"'


def test_a_new_request_starts_with_an_empty_status() -> None:
    obj = condition(csr("jane", REQUEST), "Approved")
    obj["status"]["certificate"] = "Zm9v"
    CSR.prepare_for_create(obj)
    assert obj["status"] == {}


def test_the_object_itself_changes_neither_spec_nor_status() -> None:
    old = stored()
    new = condition(copy.deepcopy(old), "Approved")
    new["spec"]["signerName"] = "example.com/other"
    new["metadata"]["labels"] = {"team": "a"}
    CSR.prepare_for_update(new, old)
    assert (new["spec"], new["status"]) == (old["spec"], old["status"])
    assert CSR.validate_update(new, old) == []


def approval(old: dict[str, Any], kind: str) -> tuple[dict[str, Any], list[str]]:
    new = condition(copy.deepcopy(old), kind)
    prepare, validate = CSR.subresource_updates["approval"]
    prepare(new, old)
    return new, messages(validate(new, old))


def test_approved_and_denied_are_exclusive_and_never_removed() -> None:
    approved, errs = approval(stored(), "Approved")
    assert errs == []
    assert [c["type"] for c in approved["status"]["conditions"]] == ["Approved"]
    _, errs = approval(approved, "Denied")
    assert errs == [
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions '
        "are mutually exclusive"
    ]
    emptied = copy.deepcopy(approved)
    emptied["status"]["conditions"] = []
    prepare, validate = CSR.subresource_updates["approval"]
    prepare(emptied, approved)
    assert messages(validate(emptied, approved)) == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Approved"'
    ]
    failed_false = condition(stored(), "Failed")
    failed_false["status"]["conditions"][0]["status"] = "False"
    assert messages(CSR.validate(failed_false)) == [
        'status.conditions[0].status: Unsupported value: "False": supported values: "True"'
    ]


def test_status_writes_set_the_certificate_once_and_keep_the_approval() -> None:
    approved, _ = approval(stored(), "Approved")
    pem = a_certificate()
    new = copy.deepcopy(approved)
    new["status"]["certificate"] = base64.b64encode(pem).decode()
    new["status"]["conditions"][0]["message"] = "rewritten"  # a signer cannot reword it
    CSR.prepare_for_status_update(new, approved)
    assert new["status"]["conditions"] == approved["status"]["conditions"]
    assert CSR.validate_status_update(new, approved) == []
    removed = copy.deepcopy(approved)
    removed["status"]["conditions"] = []
    CSR.prepare_for_status_update(removed, approved)
    assert messages(CSR.validate_status_update(removed, approved)) == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Approved"'
    ]
    again = copy.deepcopy(new)
    again["status"]["certificate"] = base64.b64encode(pem + pem).decode()
    assert messages(CSR.validate_status_update(again, new)) == [
        "status.certificate: Forbidden: updates may not modify existing certificate content"
    ]
    denied = condition(copy.deepcopy(approved), "Denied")
    CSR.prepare_for_status_update(denied, approved)
    assert messages(CSR.validate_status_update(denied, approved)) == [
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions '
        "are mutually exclusive",
        'status.conditions: Forbidden: updates may not add a condition of type "Denied"',
    ]
    through_approval = copy.deepcopy(approved)
    through_approval["status"]["certificate"] = new["status"]["certificate"]
    CSR.subresource_updates["approval"][0](through_approval, approved)
    assert "certificate" not in through_approval["status"]
    junk = copy.deepcopy(approved)
    junk["status"]["certificate"] = base64.b64encode(b"junk").decode()
    assert messages(CSR.validate_status_update(junk, approved)) == [
        'status.certificate: Invalid value: "<certificate data>": must contain at least one '
        "CERTIFICATE PEM block"
    ]


@pytest.mark.parametrize(
    ("conditions", "certificate", "shown"),
    [
        ((), False, "Pending"),
        (("Approved",), True, "Approved,Issued"),
        (("Denied",), False, "Denied"),
        (("Approved", "Failed"), False, "Approved,Failed"),
    ],
)
def test_the_table_shows_who_asked_for_how_long_and_where_it_stands(
    conditions: tuple[str, ...], certificate: bool, shown: str
) -> None:
    obj = csr("jane", REQUEST, expirationSeconds=86400, username="jane")
    obj["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    for kind in conditions:
        condition(obj, kind)
    if certificate:
        obj["status"]["certificate"] = "Zm9v"
    printer = PRINTERS[("certificates.k8s.io", "certificatesigningrequests")]
    assert [c.name for c in printer.columns] == [
        "Name",
        "Age",
        "SignerName",
        "Requestor",
        "RequestedDuration",
        "Condition",
    ]
    now = 1735689600 + 90
    assert printer.row(obj, now).cells == ["jane", "90s", CLIENT, "jane", "24h", shown]
    del obj["spec"]["expirationSeconds"]
    assert printer.row(obj, now).cells[4] == "<none>"


def test_spec_signer_name_is_selectable() -> None:
    fields = field_set("certificates.k8s.io", "CertificateSigningRequest", csr("jane", REQUEST))
    assert fields == {"metadata.name": "jane", "spec.signerName": CLIENT}
