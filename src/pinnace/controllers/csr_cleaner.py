"""The csrcleaner controller (kube-controller-manager v1.32,
pkg/controller/certificates/cleaner/cleaner.go): every hour it deletes the requests nobody
needs any more: approved and issued ones an hour after approval, denied and failed ones an
hour after the condition, pending ones (no condition at all) a day after they were made, and
any whose issued certificate has expired.

The passes that could delete nothing are skipped (`pinnace.clock.periodic`): a pass says when
the next request comes due, and a request added or changed wakes the next pass.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math

from cryptography import x509

from pinnace.api.certificates.request import (
    APPROVED,
    DENIED,
    FAILED,
    certificate,
    conditions,
    has_condition,
)
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory
from pinnace.clock.periodic import Periodic
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.certificate_controller import CSRS

log = logging.getLogger(__name__)

POLLING_INTERVAL = 3600.0
APPROVED_EXPIRATION = 3600.0
DENIED_EXPIRATION = 3600.0
"""Failed requests go after the same hour (cleaner.go uses deniedExpiration for them)."""
PENDING_EXPIRATION = 24 * 3600.0


def _time(value: object) -> float | None:
    """A condition's or the metadata's timestamp; None when unset (Go's zero time)."""
    return parse_time(value) if isinstance(value, str) and value else None


def _not_after(csr: Object) -> float | None:
    """When the issued certificate expires; None without one (or one that does not parse, which
    cleaner.go reports and leaves)."""
    encoded = certificate(csr)
    if not encoded:
        return None
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(encoded))
    except (binascii.Error, ValueError):
        return None
    return cert.not_valid_after_utc.timestamp()


def due(csr: Object) -> float:
    """When the cleaner may delete the request (math.inf: never, as it stands): a request
    is deleted once it is strictly older than its duration (isOlderThan)."""
    found = conditions(csr)
    times: list[float] = []
    issued = bool(certificate(csr))
    for c in found:
        updated = _time(c.get("lastUpdateTime"))
        if updated is None:
            continue
        if c.get("type") == APPROVED and issued:
            times.append(updated + APPROVED_EXPIRATION)
        elif c.get("type") in (DENIED, FAILED):
            times.append(updated + DENIED_EXPIRATION)
    if not found:
        created = _time((csr.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            times.append(created + PENDING_EXPIRATION)
    if issued and has_condition(csr, APPROVED):
        expires = _not_after(csr)
        if expires is not None:
            times.append(expires)
    return min(times, default=math.inf)


class CSRCleanerController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._passes = Periodic(self._clock, POLLING_INTERVAL, self._pass)
        self._csrs: Informer = informers.informer(CSRS)
        self._csrs.add_event_handler(
            on_add=lambda _: self._passes.wake(),
            on_update=lambda old, new: self._passes.wake(),
        )

    async def run(self) -> None:
        await self._csrs.wait_for_sync()
        await self._passes.run()

    async def _pass(self) -> float | None:
        """Delete what is due; when the next request comes due (None: a delete failed, so
        the next pass comes a period later, as with wait.Until)."""
        now = self._clock.now()
        upcoming: float | None = math.inf
        for csr in self._csrs.list():
            when = due(csr)
            if when >= now:
                upcoming = None if upcoming is None else min(upcoming, when)
                continue
            name = csr["metadata"]["name"]
            options = DeleteOptions(precondition_uid=csr["metadata"]["uid"])
            try:
                await self._client.delete(CSRS, "", name, options)
            except StatusError as e:
                if e.code not in (404, 409):
                    log.warning("unable to delete CSR %r: %s", name, e.message)
                    upcoming = None
        return upcoming
