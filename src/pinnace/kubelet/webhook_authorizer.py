"""The kubelet's webhook authorizer: SubjectAccessReviews asked of the API server, their answers
kept for a while, as k8s.io/apiserver's plugin/pkg/authorizer/webhook (webhook.go) does for a
kubelet started with webhook authorization.

An answer is kept under the review's spec (user, groups and the resource attributes: verb,
resource, subresource, name …) for the kubelet's `--authorization-webhook-cache-authorized-ttl`
(5 min) when allowed and `--authorization-webhook-cache-unauthorized-ttl` (30 s) when not, on the
clock of the client asking, in a least-recently-used cache of 8192 answers. A review that fails
is not kept, nor is one whose attributes are too large to be worth keeping (webhook.go's
shouldCache).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from pinnace.client import Client
from pinnace.client.access_review import subject_access_review

AUTHORIZED_TTL = 300.0
"""The kubelet's --authorization-webhook-cache-authorized-ttl default, in seconds."""
UNAUTHORIZED_TTL = 30.0
"""The kubelet's --authorization-webhook-cache-unauthorized-ttl default, in seconds."""
CACHE_SIZE = 8192
MAX_CACHED_ATTRIBUTES = 10000
"""webhook.go's maxControlledAttrCacheSize: attributes this long or longer are never kept."""


class WebhookAuthorizer:
    def __init__(
        self,
        client: Client,
        authorized_ttl: float = AUTHORIZED_TTL,
        unauthorized_ttl: float = UNAUTHORIZED_TTL,
    ) -> None:
        self._client = client
        self._ttl = {True: authorized_ttl, False: unauthorized_ttl}
        self._answers: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    async def review(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The status of a SubjectAccessReview of `spec`: a kept one while it lasts, else the
        API server's (its StatusError when the review fails)."""
        key = json.dumps(spec, sort_keys=True)
        now = self._client.clock.monotonic()
        kept = self._answers.get(key)
        if kept is not None and kept[0] > now:
            self._answers.move_to_end(key)
            return kept[1]
        status = await subject_access_review(self._client, spec)
        if _worth_keeping(spec):
            expires = self._client.clock.monotonic() + self._ttl[bool(status.get("allowed"))]
            self._answers[key] = (expires, status)
            self._answers.move_to_end(key)
            if len(self._answers) > CACHE_SIZE:
                self._answers.popitem(last=False)
        return status


def _worth_keeping(spec: dict[str, Any]) -> bool:
    attributes = spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {}
    return sum(len(str(value)) for value in attributes.values()) < MAX_CACHED_ATTRIBUTES
