"""The ServiceAccount controller: a `default` ServiceAccount in every active namespace,
created again if it is deleted (pkg/controller/serviceaccount/serviceaccounts_controller.go,
v1.32). Pods need it: the ServiceAccount admission plugin refuses a pod whose account does not
exist."""

from __future__ import annotations

from pinnace.api import catalog
from pinnace.api.core.serviceaccount import DEFAULT_SERVICE_ACCOUNT
from pinnace.api.objects import Object
from pinnace.client import Client
from pinnace.controllers.namespace_objects import NamespaceObjectController, is_active

SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
ACCOUNTS_TO_ENSURE = (DEFAULT_SERVICE_ACCOUNT,)


class ServiceAccountsController(NamespaceObjectController):
    def __init__(self, client: Client) -> None:
        super().__init__(client, SERVICE_ACCOUNTS)
        self._objects.add_event_handler(on_delete=self._account_deleted)

    def _account_deleted(self, account: Object) -> None:
        self._queue.add(account["metadata"]["namespace"])

    async def sync(self, namespace: str) -> None:
        ns = self._namespaces.get("", namespace)
        if ns is None or not is_active(ns):
            return
        for name in ACCOUNTS_TO_ENSURE:
            if self._objects.get(namespace, name) is None:
                await self._create(namespace, {"metadata": {"name": name}})
