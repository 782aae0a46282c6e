"""A SubjectAccessReview asked of the API server, as a component asks one through client-go
(authorization/v1 SubjectAccessReviews().Create): the kubelet's webhook authorizer and the
csrapproving controller ask theirs here.
"""

from __future__ import annotations

from pinnace.api.authorization.reviews import SUBJECT_ACCESS_REVIEW
from pinnace.api.objects import Object
from pinnace.client.interface import Client


async def subject_access_review(client: Client, spec: Object) -> Object:
    """The status the API server gives a SubjectAccessReview of `spec` (its StatusError when
    the review fails)."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    answer = await client.create(SUBJECT_ACCESS_REVIEW, "", review)
    status: Object = answer.get("status") or {}
    return status
