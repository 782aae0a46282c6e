"""CertificateSigningRequests at admission, as kube-apiserver v1.32 admits them:

- the registry strategy's PrepareForCreate sets spec.username, uid, groups and extra from the
  requester, whatever the body says (pkg/registry/certificates/certificates/strategy.go; done
  here because only the API server knows who asks), and populateConditionTimestamps fills in
  the times of conditions written through /approval and /status;
- CertificateSubjectRestriction refuses a kube-apiserver-client request for system:masters;
- CertificateApproval lets only who may `approve` the signer (the `signers` resource of
  certificates.k8s.io, by name or `<domain>/*`) write /approval, and CertificateSigning only
  who may `sign` it change the certificate or conditions through /status
  (plugin/pkg/admission/certificates/{approval,signing,subjectrestriction}).

In-process components carry no requester and are trusted, as the loopback client is.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import status
from pinnace.api.certificates.request import (
    KUBE_APISERVER_CLIENT,
    RequestError,
    conditions,
    organizations,
    parse_request,
    request_bytes,
)
from pinnace.api.objects import Object
from pinnace.apiserver.auth.authorizer import Authorizer
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import SYSTEM_MASTERS, UserInfo, requester

GROUP = "certificates.k8s.io"
RESOURCE = "certificatesigningrequests"


def set_requester(csr: Object) -> None:
    """The spec names who asked: the requester of this request (nobody, in-process)."""
    spec = csr.get("spec")
    if not isinstance(spec, dict):
        return
    for key in ("username", "uid", "groups", "extra"):
        spec.pop(key, None)
    who = requester()
    if who is not None:
        spec.update(who.user.fields())


def stamp_conditions(new: Object, old: Object, now: str) -> None:
    """populateConditionTimestamps: a condition without lastUpdateTime gets now; one without
    lastTransitionTime keeps that of the same type and status before, else gets now."""
    before = conditions(old)
    for c in conditions(new):
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            c["lastTransitionTime"] = next(
                (
                    o["lastTransitionTime"]
                    for o in before
                    if (o.get("type"), o.get("status")) == (c.get("type"), c.get("status"))
                    and o.get("lastTransitionTime")
                ),
                now,
            )


def _name(csr: Object) -> str:
    return str((csr.get("metadata") or {}).get("name") or "")


def _signer(csr: Object) -> str:
    return str((csr.get("spec") or {}).get("signerName") or "")


def _forbidden(csr: Object, why: str) -> status.StatusError:
    return status.forbidden(RESOURCE, _name(csr), why, GROUP)


def check_subject(csr: Object) -> None:
    """CertificateSubjectRestriction."""
    if _signer(csr) != KUBE_APISERVER_CLIENT:
        return
    try:
        request = parse_request(request_bytes(csr))
    except RequestError as e:
        raise _forbidden(csr, f"failed to parse CSR: {e}") from None
    if SYSTEM_MASTERS in organizations(request):
        raise _forbidden(
            csr, f"use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed"
        )


async def may(authorizer: Authorizer, user: UserInfo, verb: str, signer: str) -> bool:
    """IsAuthorizedForSignerName: `verb` on the signer, or on every signer of its domain."""
    for name in (signer, signer.split("/")[0] + "/*"):
        attributes = Attributes(
            user, verb, api_group=GROUP, api_version="*", resource="signers", name=name
        )
        if (await authorizer.authorize(attributes)).allowed:
            return True
    return False


def _status_changed(new: Object, old: Object) -> bool:
    def part(obj: Object) -> tuple[Any, Any]:
        s = obj.get("status") or {}
        return s.get("certificate"), s.get("conditions") or None

    return part(new) != part(old)


async def validate(
    authorizer: Authorizer, operation: str, subresource: str, csr: Object, old: Object | None
) -> None:
    """The validating plugins' checks of a write."""
    if operation == "CREATE":
        check_subject(csr)
        return
    who = requester()
    if who is None or old is None:
        return
    signer = _signer(old)  # checked against the stored spec, which no update changes
    if subresource == "approval":
        verb = "approve"
    elif subresource == "status" and _status_changed(csr, old):
        verb = "sign"
    else:
        return
    if not await may(authorizer, who.user, verb, signer):
        raise _forbidden(old, f'user not permitted to {verb} requests with signerName "{signer}"')
