"""The tokens controller: legacy service account tokens in Secrets, as kube-controller-manager's
(pkg/controller/serviceaccount/tokens_controller.go, v1.32).

A Secret of type `kubernetes.io/service-account-token` naming a service account
(`kubernetes.io/service-account.name`) gets a legacy token for it (`auth.tokens`: issuer
`kubernetes/serviceaccount`, no expiry), the cluster's CA certificate and the namespace in its
`token`, `ca.crt` and `namespace` where it has none, and the account's uid in
`kubernetes.io/service-account.uid`.
A Secret whose account does not exist, or has another uid, is deleted; so are an account's
Secrets when it is deleted. A failed sync is retried with back-off.
"""

from __future__ import annotations

import asyncio
import base64

from pinnace.api import catalog
from pinnace.api.core.secret import SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_TOKEN
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.tokens import ServiceAccountTokens
from pinnace.client import Client, Informer
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers.controller_utils import WorkQueue

SECRETS = catalog.kind("", "secrets")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
SERVICE_ACCOUNT_UID_KEY = "kubernetes.io/service-account.uid"
_SECRET, _ACCOUNT = "secret", "account"


def _is_token_secret(secret: Object) -> bool:
    return secret.get("type") == SERVICE_ACCOUNT_TOKEN


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


class TokensController:
    def __init__(self, client: Client, tokens: ServiceAccountTokens, root_ca: str) -> None:
        """`tokens`: the issuer's key (kube-controller-manager's
        --service-account-private-key-file); `root_ca`: its --root-ca-file."""
        self._client = client
        self._tokens = tokens
        self._root_ca = root_ca
        self._queue = WorkQueue(client.clock)
        self._secrets = Informer(client, SECRETS)
        self._accounts = Informer(client, SERVICE_ACCOUNTS)
        self._secrets.add_event_handler(
            on_add=self._secret_changed, on_update=lambda old, new: self._secret_changed(new)
        )
        self._accounts.add_event_handler(on_delete=self._account_deleted)
        self._running: list[asyncio.Task[None]] = []
        self._deleted: dict[str, str] = {}
        """namespace/name of a deleted account -> its uid, until its Secrets are gone."""

    async def start(self) -> None:
        self._secrets.start()
        self._accounts.start()
        await self._secrets.wait_for_sync()
        await self._accounts.wait_for_sync()
        self._running.append(self._client.clock.loop.create_task(self._queue.run(self.sync)))

    async def stop(self) -> None:
        await cancel_and_wait(self._running)
        self._running.clear()
        await self._secrets.stop()
        await self._accounts.stop()

    def _secret_changed(self, secret: Object) -> None:
        if _is_token_secret(secret):
            m = secret["metadata"]
            self._queue.add(f"{_SECRET}/{m['namespace']}/{m['name']}")

    def _account_deleted(self, account: Object) -> None:
        m = account["metadata"]
        key = f"{_ACCOUNT}/{m['namespace']}/{m['name']}"
        self._deleted[key] = m.get("uid", "")
        self._queue.add(key)

    async def sync(self, key: str) -> None:
        what, namespace, name = key.split("/", 2)
        if what == _ACCOUNT:
            await self._delete_secrets_of(namespace, name, self._deleted.get(key, ""))
            self._deleted.pop(key, None)
        else:
            await self._sync_secret(namespace, name)

    async def _delete_secrets_of(self, namespace: str, account: str, uid: str) -> None:
        for secret in self._secrets.list(namespace):
            annotations = secret["metadata"].get("annotations") or {}
            if (
                _is_token_secret(secret)
                and annotations.get(SERVICE_ACCOUNT_NAME_KEY) == account
                and annotations.get(SERVICE_ACCOUNT_UID_KEY, uid) == uid
            ):
                await self._delete(secret)

    async def _sync_secret(self, namespace: str, name: str) -> None:
        secret = self._secrets.get(namespace, name)
        if secret is None or secret["metadata"].get("deletionTimestamp"):
            return
        annotations = secret["metadata"].get("annotations") or {}
        try:
            account = await self._client.get(
                SERVICE_ACCOUNTS, namespace, annotations.get(SERVICE_ACCOUNT_NAME_KEY, "")
            )
        except StatusError as e:
            if e.code != 404:
                raise
            await self._delete(secret)
            return
        uid = account["metadata"].get("uid", "")
        if annotations.get(SERVICE_ACCOUNT_UID_KEY, uid) != uid:
            await self._delete(secret)
            return
        data = secret.get("data") or {}
        if all(data.get(k) for k in ("token", "ca.crt", "namespace")):
            return
        filled = clone(secret)
        filled["metadata"]["annotations"] = {**annotations, SERVICE_ACCOUNT_UID_KEY: uid}
        filled["data"] = {
            **data,
            "token": data.get("token") or _b64(self._tokens.legacy_token(account, name)),
            "ca.crt": data.get("ca.crt") or _b64(self._root_ca),
            "namespace": data.get("namespace") or _b64(namespace),
        }
        try:
            await self._client.update(SECRETS, filled)
        except StatusError as e:
            if e.code != 409 and e.code != 404:
                raise
            # changed (or gone) meanwhile: the informer brings the news, and the sync again

    async def _delete(self, secret: Object) -> None:
        m = secret["metadata"]
        try:
            await self._client.delete(SECRETS, m["namespace"], m["name"])
        except StatusError as e:
            if e.code != 404:
                raise
