"""One informer per kind and selection, shared by every component that asks for it (as
client-go's SharedInformerFactory): one list and one watch feed them all."""

from __future__ import annotations

from pinnace.api.kind import Kind
from pinnace.client.informer import Informer
from pinnace.client.interface import Client

InformerKey = tuple[str, str, str, str, str]


class InformerFactory:
    def __init__(self, client: Client, *, resync_period: float = 0.0) -> None:
        self._client = client
        self._resync_period = resync_period
        self._informers: dict[InformerKey, Informer] = {}
        self._started = False

    def informer(
        self, kind: Kind, namespace: str = "", *, label_selector: str = "", field_selector: str = ""
    ) -> Informer:
        """The shared informer for this selection, made on first request (and started at once
        if the factory already is)."""
        key = (kind.group, kind.plural, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self._client,
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resync_period=self._resync_period,
            )
            self._informers[key] = informer
            if self._started:
                informer.start()
        return informer

    def informers(self) -> list[Informer]:
        """The informers made so far."""
        return list(self._informers.values())

    def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.start()

    async def wait_for_sync(self) -> None:
        for informer in list(self._informers.values()):
            await informer.wait_for_sync()

    async def stop(self) -> None:
        self._started = False
        for informer in self._informers.values():
            await informer.stop()
