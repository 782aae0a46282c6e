"""The csrapproving controller (kube-controller-manager v1.32,
pkg/controller/certificates/approver/sarapprove.go): it approves a node's request for a client
certificate for kubernetes.io/kube-apiserver-client-kubelet when the requester may create
certificatesigningrequests/selfnodeclient (renewing its own: the request's common name is the
requester) or certificatesigningrequests/nodeclient, as a SubjectAccessReview answers. Every
other request waits for someone to approve or deny it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pinnace.api.certificates.request import (
    APPROVED,
    DENIED,
    KUBE_APISERVER_CLIENT_KUBELET,
    RequestError,
    common_name,
    has_condition,
    kubelet_client_error,
    parse_request,
    request_bytes,
)
from pinnace.api.objects import Object
from pinnace.client import Client, InformerFactory
from pinnace.client.access_review import subject_access_review
from pinnace.controllers.certificate_controller import CSRS, CertificateController

AccessReview = Callable[[Object], Awaitable[bool]]
"""Whether a SubjectAccessReview's spec is allowed (the API server answers it)."""

_RECOGNIZERS = (
    (
        "selfnodeclient",
        True,
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    ),
    ("nodeclient", False, "Auto approving kubelet client certificate after SubjectAccessReview."),
)
"""(subresource the requester must be allowed to create, whether the request must name the
requester, the approval's message), in the order they are tried."""


class NotApproved(Exception):
    """A node's request whose requester the access reviews did not allow (yet)."""


class CSRApprovingController:
    def __init__(self, client: Client, informers: InformerFactory, review: AccessReview) -> None:
        self._client = client
        self._review = review
        self._loop = CertificateController(client, informers, self._handle)

    async def run(self) -> None:
        await self._loop.run()

    async def _handle(self, csr: Object) -> None:
        if has_condition(csr, APPROVED) or has_condition(csr, DENIED):
            return
        spec: dict[str, Any] = csr.get("spec") or {}
        try:
            request = parse_request(request_bytes(csr))
        except RequestError as e:
            raise RequestError(f"unable to parse csr {csr['metadata']['name']!r}: {e}") from None
        if spec.get("signerName") != KUBE_APISERVER_CLIENT_KUBELET:
            return
        if kubelet_client_error(request, spec.get("usages") or ()):
            return
        tried = []
        for subresource, own, message in _RECOGNIZERS:
            if own and spec.get("username") != common_name(request):
                continue
            tried.append(subresource)
            if await self._review(_access_review(spec, subresource)):
                conditions = csr.setdefault("status", {}).setdefault("conditions", [])
                conditions.append(
                    {
                        "type": APPROVED,
                        "status": "True",
                        "reason": "AutoApproved",
                        "message": message,
                    }
                )
                await self._client.update_approval(CSRS, csr)
                return
        if tried:  # retried later, as an ignorable error is: a binding may come
            name = csr["metadata"]["name"]
            raise NotApproved(
                f"recognized csr {name!r} as {tried} but subject access review was not approved"
            )


def reviewed_by(client: Client) -> AccessReview:
    """Access reviews the API server answers: a SubjectAccessReview created through `client`,
    as kube-controller-manager's approver creates one."""

    async def review(spec: Object) -> bool:
        return bool((await subject_access_review(client, spec)).get("allowed"))

    return review


def _access_review(spec: dict[str, Any], subresource: str) -> Object:
    review: Object = {
        "user": spec.get("username") or "",
        "resourceAttributes": {
            "group": "certificates.k8s.io",
            "resource": "certificatesigningrequests",
            "verb": "create",
            "subresource": subresource,
        },
    }
    for key in ("uid", "groups", "extra"):
        if spec.get(key):
            review[key] = spec[key]
    return review
