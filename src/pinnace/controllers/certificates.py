"""kube-controller-manager's certificate controllers on one informer: csrsigning (when it has
a CA to sign with), csrapproving and csrcleaner."""

from __future__ import annotations

import asyncio

from pinnace.client import Client, InformerFactory
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers.csr_approving import AccessReview, CSRApprovingController
from pinnace.controllers.csr_cleaner import CSRCleanerController
from pinnace.controllers.csr_signing import ClusterSigning, CSRSigningController


class CertificateControllers:
    def __init__(self, client: Client, signing: ClusterSigning, review: AccessReview) -> None:
        """`signing`: the CA of the built-in signers (none configured: nothing is signed, as
        kube-controller-manager skips csrsigning without --cluster-signing-cert-file);
        `review`: who answers the approver's SubjectAccessReviews."""
        self._loop = client.clock.loop
        self.informers = InformerFactory(client)
        self.signing = (
            CSRSigningController(client, self.informers, signing) if signing.configured else None
        )
        self.approving = CSRApprovingController(client, self.informers, review)
        self.cleaner = CSRCleanerController(client, self.informers)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.informers.start()
        controllers = [c for c in (self.signing, self.approving, self.cleaner) if c is not None]
        self._tasks = [self._loop.create_task(c.run()) for c in controllers]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks = []
        await self.informers.stop()
