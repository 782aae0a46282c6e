"""The kubelet's service account token manager (pkg/kubelet/token/token_manager.go, v1.32),
which fills the `serviceAccountToken` sources of projected volumes (the kube-api-access
volume's `token`).

For each (pod, service account, audience, expirationSeconds) the manager asks the API server
for a token bound to the pod (serviceaccounts/token) and keeps it. It asks again once the token
is older than 24 hours or within 20% of its lifetime of the expiry the answer gave
(requiresRefresh), and the pod's volume is set up again with the new one. While a refresh
fails, the old token is used until it expires; a token never fetched fails the mount
(`failed to fetch token: ...`), retried with the volume manager's back-off.

The kubelet notices that a token needs refreshing when it sets the pod's volumes up again, on
each sync of the pod (not once the pod has finished); here a timer at the refresh time stands
for that sync, so the token is requested at the moment the kubelet would first consider it
due (its 10 s of jitter left out), and the volume set up again once it has come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api.status import StatusError
from pinnace.client import Client
from pinnace.clock import Clock, Timer
from pinnace.clock.rfc3339 import parse_time

MAX_TTL = 24 * 60 * 60
"""A token older than this is refreshed, whatever its expiry."""
RETRY_FIRST = 0.5
RETRY_MAX = 2 * 60 + 2
"""The volume manager's back-off between failed mounts (nestedpendingoperations)."""

TokenKey = tuple[str, str, str, str, str, int]
"""(namespace, service account, pod name, pod uid, audience, expirationSeconds)."""


@dataclass
class _Token:
    token: str = ""
    expires: float = 0.0
    """The answer's status.expirationTimestamp."""
    issued: float = 0.0
    """expires less the lifetime asked for (the manager's iat)."""
    error: str = ""
    """Why the last request failed."""
    retry_at: float = 0.0
    backoff: float = 0.0
    fetching: bool = False
    timer: Timer | None = None


class TokenManager:
    """The tokens of one kubelet's pods; `due(pod_uid)` is called when a pod's volumes should
    be set up again (a token came, or a request failed and may be retried); `syncing(pod_uid)`
    tells whether the kubelet still sets the pod's volumes up (it has not finished)."""

    def __init__(
        self, client: Client, due: Callable[[str], None], syncing: Callable[[str], bool]
    ) -> None:
        self.client = client
        self.clock: Clock = client.clock
        self._due = due
        self._syncing = syncing
        self._tokens: dict[TokenKey, _Token] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def token(self, pod: Mapping[str, Any], projection: Mapping[str, Any]) -> tuple[str, str]:
        """(token, "") when there is one to mount; ("", why) when the mount fails; ("", "")
        while the first one is being fetched."""
        m, spec = pod["metadata"], pod.get("spec") or {}
        expiration = int(projection.get("expirationSeconds") or 3600)
        key = (
            m["namespace"],
            spec.get("serviceAccountName") or "default",
            m["name"],
            m.get("uid", ""),
            projection.get("audience") or "",
            expiration,
        )
        entry = self._tokens.setdefault(key, _Token())
        now = self.clock.now()
        if entry.token and not self._requires_refresh(entry, expiration, now):
            return entry.token, ""
        if not entry.fetching and now >= entry.retry_at:
            self._fetch(key, entry)
        if entry.token and now <= entry.expires:
            return entry.token, ""  # kept while it is refreshed
        if entry.error:
            if entry.token:
                return "", f"token {_key_text(key)} expired and refresh failed: {entry.error}"
            return "", f"failed to fetch token: {entry.error}"
        return "", ""

    def forget(self, pod_uid: str) -> None:
        """The pod is gone: its tokens are dropped (DeleteServiceAccountToken)."""
        for key in [k for k in self._tokens if k[3] == pod_uid]:
            entry = self._tokens.pop(key)
            if entry.timer is not None:
                entry.timer.cancel()

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for entry in self._tokens.values():
            if entry.timer is not None:
                entry.timer.cancel()
        self._tokens.clear()

    @staticmethod
    def _requires_refresh(entry: _Token, expiration: int, now: float) -> bool:
        return now > entry.issued + MAX_TTL or now > entry.expires - expiration * 20 // 100

    def _fetch(self, key: TokenKey, entry: _Token) -> None:
        entry.fetching = True
        task = self.clock.loop.create_task(self._request(key, entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _request(self, key: TokenKey, entry: _Token) -> None:
        namespace, account, pod, uid, audience, expiration = key
        spec: dict[str, Any] = {
            "expirationSeconds": expiration,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid},
        }
        if audience:
            spec["audiences"] = [audience]
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        try:
            answer = await self.client.request_token(namespace, account, request)
        except StatusError as e:
            entry.error = e.message
            entry.backoff = min(entry.backoff * 2 or RETRY_FIRST, RETRY_MAX)
            entry.retry_at = self.clock.now() + entry.backoff
            retry = True
            wake = entry.retry_at
        else:
            entry.token = answer["status"]["token"]
            entry.expires = parse_time(answer["status"]["expirationTimestamp"])
            entry.issued = entry.expires - expiration
            entry.error, entry.backoff, entry.retry_at = "", 0.0, 0.0
            refresh = min(entry.issued + MAX_TTL, entry.expires - expiration * 20 // 100)
            retry = False
            wake = refresh + 1  # the first whole second past it, when `token` refreshes
        finally:
            entry.fetching = False
        if self._tokens.get(key) is not entry:
            return  # the pod went meanwhile
        if entry.timer is not None:
            entry.timer.cancel()
        if retry:
            entry.timer = self.clock.call_at(wake, self._due, uid)
        else:
            entry.timer = self.clock.call_at(wake, self._refresh, key, entry)
        self._due(uid)

    def _refresh(self, key: TokenKey, entry: _Token) -> None:
        """The token is due for a refresh: ask for the next one, if the pod still syncs."""
        entry.timer = None
        if self._tokens.get(key) is entry and not entry.fetching and self._syncing(key[3]):
            self._fetch(key, entry)


def _key_text(key: TokenKey) -> str:
    namespace, account, pod, uid, audience, expiration = key
    return f"{account!r}/{namespace!r}/{audience!r}/{expiration}/{pod}/{uid}"
