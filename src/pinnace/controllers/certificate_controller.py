"""The loop every CertificateSigningRequest controller shares (kube-controller-manager v1.32,
pkg/controller/certificates/certificate_controller.go): each request added or changed is
handed to the controller's handler, unless it already holds its certificate; a handler that
fails is retried later through the work queue's rate limiter."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable

from pinnace.api import catalog
from pinnace.api.certificates.request import certificate
from pinnace.api.objects import Object
from pinnace.client import Client, Informer, InformerFactory
from pinnace.controllers.controller_utils import WorkQueue

CSRS = catalog.kind("certificates.k8s.io", "certificatesigningrequests")

Handler = Callable[[Object], Awaitable[None]]
"""Acts on a copy of a request that has no certificate yet."""


class CertificateController:
    def __init__(self, client: Client, informers: InformerFactory, handler: Handler) -> None:
        self._queue = WorkQueue(client.clock)
        self._handler = handler
        self._csrs: Informer = informers.informer(CSRS)
        self._csrs.add_event_handler(
            on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new)
        )

    def _enqueue(self, csr: Object) -> None:
        self._queue.add(csr["metadata"]["name"])

    async def run(self) -> None:
        """Handle requests forever; cancel the task to stop."""
        await self._csrs.wait_for_sync()
        await self._queue.run(self._sync)

    async def _sync(self, name: str) -> None:
        csr = self._csrs.get("", name)
        if csr is None or certificate(csr):
            return
        await self._handler(copy.deepcopy(csr))
