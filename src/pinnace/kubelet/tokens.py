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

In the simulated mode (`defer`) a refresh nobody observes is accounted for rather than made.
When one is due for a pod whose volumes, set up again, would change only their files (no
container of it waits for its configuration), on a node that reaches the API server, the
manager takes the token a request then would have got as its own (its issue time and expiry,
so the schedule goes on as it would) without asking, and leaves the pod's files as they were.
It asks when the token is read: a mount (`token`), a container about to read its files
(`files_stale`, then `token`), or before the node is cut off (`settle`), asking the API server
for the token as issued at the refresh's time (`Client.request_token`'s `issued_at`), which the
in-process API server answers at once. A pod's first token is asked for when the live mode
asks, as the volume is first set up, and granted unsigned (`Client.grant_token`: every check
made, the claims set) there and then: the in-process API server answers without waiting, as
the v1.32 kubelet's mount waits for its answer, so the volume is set up with a stand-in
(`UNSIGNED`) in that pass of the pod's worker (the live mode's request is a task of its own,
whose answer has the volume set up again), and a refusal fails that mount, retried with the
live mode's back-off. The token is signed when a container is about to read the pod's files
(`files_stale`). docs/simulation.md says what this leaves out.

In the live mode, the nodes of `pinnace up`'s own process (`sign_when_read`) ask for a pod's
first token in process as the kubelet asks, a task whose answer has the volume set up again,
but are granted it (`Client.grant_token`) rather than given it signed: the volume is set up with
the stand-in, signed when a container is about to read the pod's files, as above (its
refreshes are asked for signed). The claims, and so the token's text but for its signature
(ES256's is drawn afresh at each signing), are the API server's answer's, and nothing else
reads a pod's token: a start of thousands of pods signs only the tokens read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client
from pinnace.clock import Clock, Timer
from pinnace.clock.rfc3339 import parse_time, second_instant
from pinnace.kubelet.mount_backoff import INITIAL_DURATION_BEFORE_RETRY, MAX_DURATION_BEFORE_RETRY

_log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_TTL = 24 * 60 * 60
"""A token older than this is refreshed, whatever its expiry."""

UNSIGNED = "unsigned"
"""What stands for a granted token not yet signed (`_Token.unsigned`); no one reads it: a read
signs the token first."""

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
    granted: int = 0
    """The lifetime the last answer gave (its spec.expirationSeconds: the one asked for, or
    the API server's maximum)."""
    deferred_at: float | None = None
    """When a refresh accounted for (`defer`) but not yet asked for was due: `token` is the
    one before it, `issued` and `expires` already its."""
    unsigned: Callable[[], str] | None = None
    """Signs the first token, granted (`defer`) but not yet signed (`token` is `UNSIGNED`
    until read), the same text every time: kept until the refresh after the pod's files
    were read, for the files set up with the stand-in (`first_token`)."""


class TokenManager:
    """The tokens of one kubelet's pods; `due(pod_uid)` is called when a pod's volumes should
    be set up again (a token came, or a request failed and may be retried); `syncing(pod_uid)`
    tells whether the kubelet still sets the pod's volumes up (it has not finished);
    `files_only(pod_uid)` whether setting them up again would change only their files."""

    def __init__(
        self,
        client: Client,
        due: Callable[[str], None],
        syncing: Callable[[str], bool],
        files_only: Callable[[str], bool],
    ) -> None:
        self.client = client
        self.clock: Clock = client.clock
        self._due = due
        self._syncing = syncing
        self._files_only = files_only
        self._tokens: dict[TokenKey, _Token] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.defer = False
        self.sign_when_read = False
        """Ask for tokens granted (`Client.grant_token`: the client is in process), signed
        when read (the live mode's nodes of the API server's own process)."""
        """Account for the refreshes nobody observes, asking for them when read, and have the
        first tokens signed when read (the simulated mode, while the node reaches the API
        server)."""
        self._unseen: set[str] = set()
        """The pods with first tokens unsigned, or refreshes accounted for, since their
        volumes were last set up."""

    def token(self, pod: Mapping[str, Any], projection: Mapping[str, Any]) -> tuple[str, str]:
        """(token, "") when there is one to mount; ("", why) when the mount fails; ("", "")
        while one is being fetched and none can be mounted."""
        key = _token_key(pod, projection)
        expiration = key[5]
        entry = self._tokens.get(key)
        if entry is None:
            entry = self._tokens[key] = _Token()
        if entry.deferred_at is not None:
            self._ask_deferred(key, entry)
        now = self.clock.now()
        if entry.token and not self._requires_refresh(entry, expiration, now):
            return entry.token, ""
        if not entry.fetching and now >= entry.retry_at:
            if self.defer and not entry.token:
                self._grant(key, entry)
            else:
                self._fetch(key, entry)
        if entry.token and now <= entry.expires:
            return entry.token, ""  # kept while it is refreshed
        if entry.fetching:
            return "", ""  # the mount waits for the answer, as the kubelet's waits for its request
        if entry.error:
            if entry.token:
                return "", f"token {_key_text(key)} expired and refresh failed: {entry.error}"
            return "", f"failed to fetch token: {entry.error}"
        return "", ""

    def files_stale(self, pod_uid: str) -> bool:
        """Whether the pod's first tokens are still unsigned, or refreshes of its tokens were
        accounted for, since its volumes were set up (then once only): the first are signed
        now, and the volumes are to be set up again before its files are read."""
        if pod_uid not in self._unseen:
            return False
        self._unseen.discard(pod_uid)
        for key, entry in self._tokens.items():
            if key[3] == pod_uid:
                self._read(key, entry)
        return True

    def first_token(self, pod: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        """The pod's first token, signed: what a file set up with its stand-in (`UNSIGNED`)
        holds in the live mode, which wrote it there and keeps it while setting the volume up
        again fails. Asked for as the files are read (`files_stale`)."""
        entry = self._tokens.get(_token_key(pod, projection))
        if entry is None or entry.unsigned is None:
            return UNSIGNED  # no stand-in of this pod's was set up
        return entry.unsigned()

    def settle(self) -> None:
        """Ask for every refresh accounted for: the node is about to be cut off from the API
        server, which could not answer them later."""
        for key, entry in list(self._tokens.items()):
            if entry.deferred_at is not None:
                self._ask_deferred(key, entry)

    def forget(self, pod_uid: str) -> None:
        """The pod is gone: its tokens are dropped (DeleteServiceAccountToken)."""
        self._unseen.discard(pod_uid)
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
        self._unseen.clear()

    @staticmethod
    def _requires_refresh(entry: _Token, expiration: int, now: float) -> bool:
        return now > entry.issued + MAX_TTL or now > entry.expires - expiration * 20 // 100

    def _fetch(self, key: TokenKey, entry: _Token) -> None:
        entry.fetching = True
        task = self.clock.loop.create_task(self._request(key, entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _grant(self, key: TokenKey, entry: _Token) -> None:
        """The first token, in the simulated mode: granted at once (the in-process API server
        answers without waiting, as the kubelet's mount waits for its answer) and signed when
        read; the mount goes on with it in the same pass."""
        try:
            grant = _at_once(self.client.grant_token(key[0], key[1], _token_request(key)))
        except StatusError as e:
            self._refused(entry, e)
        else:
            self._answered(key, entry, UNSIGNED, grant.request)
            entry.unsigned = _SignedOnce(grant.sign)
            self._unseen.add(key[3])
        self._schedule(key, entry)

    async def _request(self, key: TokenKey, entry: _Token) -> None:
        namespace, account, _, uid, _, _ = key
        body = _token_request(key)
        try:
            if self.sign_when_read and not entry.token:  # the first
                grant = await self.client.grant_token(namespace, account, body)
                self._answered(key, entry, UNSIGNED, grant.request)
                entry.unsigned = _SignedOnce(grant.sign)
                self._unseen.add(uid)
            else:
                answer = await self.client.request_token(namespace, account, body)
                self._answered(key, entry, answer["status"]["token"], answer)
        except StatusError as e:
            self._refused(entry, e)
        finally:
            entry.fetching = False
        if self._tokens.get(key) is not entry:
            return  # the pod went meanwhile
        self._schedule(key, entry)
        self._due(uid)

    def _answered(self, key: TokenKey, entry: _Token, token: str, answer: Object) -> None:
        expiration = key[5]
        entry.token = token
        entry.expires = parse_time(answer["status"]["expirationTimestamp"])
        entry.issued = entry.expires - expiration
        entry.granted = int(answer["spec"].get("expirationSeconds") or expiration)
        entry.deferred_at = None
        entry.error, entry.backoff, entry.retry_at = "", 0.0, 0.0

    def _refused(self, entry: _Token, e: StatusError) -> None:
        entry.error = e.message
        entry.backoff = min(
            entry.backoff * 2 or INITIAL_DURATION_BEFORE_RETRY, MAX_DURATION_BEFORE_RETRY
        )
        entry.retry_at = self.clock.now() + entry.backoff

    def _schedule(self, key: TokenKey, entry: _Token) -> None:
        """After an answer: the mount is tried again once the back-off is over, or the token
        refreshed when due."""
        if entry.timer is not None:
            entry.timer.cancel()
        if entry.error:
            entry.timer = self.clock.call_at(entry.retry_at, self._due, key[3])
        else:
            entry.timer = self.clock.call_at(
                _refresh_time(entry, key[5]), self._refresh, key, entry
            )

    def _refresh(self, key: TokenKey, entry: _Token) -> None:
        """The token is due for a refresh: ask for the next one (or account for it), if the
        pod still syncs."""
        entry.timer = None
        uid = key[3]
        if uid not in self._unseen:
            entry.unsigned = None  # read since it was granted: no file holds its stand-in
        if self._tokens.get(key) is not entry or entry.fetching or not self._syncing(uid):
            return
        if self.defer and self._files_only(uid):
            self._defer(key, entry)
        else:
            self._fetch(key, entry)

    def _defer(self, key: TokenKey, entry: _Token) -> None:
        """Take the token a request now would get as the pod's, without asking for it: its
        expiry is the answer's (now plus the lifetime granted, to the second)."""
        now = self.clock.now()
        expiration = key[5]
        entry.deferred_at = now
        entry.expires = second_instant(now + entry.granted)
        entry.issued = entry.expires - expiration
        wake = _refresh_time(entry, expiration)
        entry.timer = self.clock.call_at(wake, self._refresh, key, entry)
        self._unseen.add(key[3])

    def _read(self, key: TokenKey, entry: _Token) -> None:
        """The token is about to be read: make the one accounted for."""
        if entry.deferred_at is not None:
            self._ask_deferred(key, entry)
        if entry.token == UNSIGNED and entry.unsigned is not None:
            entry.token = entry.unsigned()

    def _ask_deferred(self, key: TokenKey, entry: _Token) -> None:
        """Ask for the token of the refresh accounted for, as issued when it was due. Should
        the API server refuse it now (the ServiceAccount has gone since), the token before
        it stays (the first one, signed if it is still `unsigned`)."""
        issued_at, entry.deferred_at = entry.deferred_at, None
        request = self.client.request_token(
            key[0], key[1], _token_request(key), issued_at=issued_at
        )
        try:
            entry.token = _at_once(request)["status"]["token"]
        except StatusError as e:
            _log.info("deferred token refresh for %s failed: %s", _key_text(key), e.message)


class _SignedOnce:
    """A grant's `sign`, called at the first read only: one text, however often read (made
    for every pod's first token, where a functools.cache wrapper is dear to make)."""

    __slots__ = ("_sign", "_text")

    def __init__(self, sign: Callable[[], str]) -> None:
        self._sign: Callable[[], str] | None = sign
        self._text = ""

    def __call__(self) -> str:
        if self._sign is not None:
            self._text, self._sign = self._sign(), None
        return self._text


def _token_key(pod: Mapping[str, Any], projection: Mapping[str, Any]) -> TokenKey:
    m, spec = pod["metadata"], pod.get("spec") or {}
    return (
        m["namespace"],
        spec.get("serviceAccountName") or "default",
        m["name"],
        m.get("uid", ""),
        projection.get("audience") or "",
        int(projection.get("expirationSeconds") or 3600),
    )


def _token_request(key: TokenKey) -> dict[str, Any]:
    _, _, pod, uid, audience, expiration = key
    spec: dict[str, Any] = {
        "expirationSeconds": expiration,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid},
    }
    if audience:
        spec["audiences"] = [audience]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def _refresh_time(entry: _Token, expiration: int) -> float:
    """When the token is next refreshed (requiresRefresh): the first whole second past 24 hours
    of age or 80% of its lifetime, when `token` would find it due."""
    return min(entry.issued + MAX_TTL, entry.expires - expiration * 20 // 100) + 1


def _at_once(request: Coroutine[Any, Any, T]) -> T:
    """The answer of an in-process request that does not wait (the simulated mode's API
    server on its memory store answers at once): a first token for a mount under way, or one
    for a container reading its files now."""
    try:
        request.send(None)
    except StopIteration as done:
        answer: T = done.value
        return answer
    request.close()
    raise RuntimeError("a simulated token request waited for an answer")


def _key_text(key: TokenKey) -> str:
    namespace, account, pod, uid, audience, expiration = key
    return f"{account!r}/{namespace!r}/{audience!r}/{expiration}/{pod}/{uid}"
