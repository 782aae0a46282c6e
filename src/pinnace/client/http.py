"""The client over real HTTP, for components in another process than the API server: the same
interface and semantics as `LocalClient`, through kube-apiserver's REST paths.

Requests go over keep-alive HTTP/1.1 connections (one per request in flight, at most 50 in
flight, up to 25 kept for reuse after); each watch holds a connection of its own. Over HTTPS
(`from_config`, a kubeconfig's server) it authenticates with the client certificate or bearer
token the kubeconfig gives; `acting_as` makes a client that impersonates another user over
the same connections. A connection failure is an `HTTPError`. As client-go's rest client
(transformResponse), a 2xx up to 206 is an answer, and anything else the `StatusError` its
Status body describes or, for a body that is none (a proxy's plain-text 502), the one
NewGenericServerResponse makes of the status code and text.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError, generic_server_response
from pinnace.client.interface import (
    Client,
    PatchType,
    TokenGrant,
    binding_body,
    delete_options_body,
    eviction_body,
)
from pinnace.client.kubeconfig import RestConfig
from pinnace.client.transport import JSON, Connection, HTTPError, NotStreamed
from pinnace.clock import Clock

PODS = catalog.kind("", "pods")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
MAX_IDLE_CONNECTIONS = 25
"""Connections kept open for reuse once a burst of requests has passed; the rest are closed
(client-go's transport keeps 25 idle per host). Each holds buffers (a TLS one 256 KiB)."""
MAX_REQUESTS_IN_FLIGHT = 50
"""Requests (watches aside) a client and those acting as others through it have open at
once; more wait their turn. A process of a thousand node agents would otherwise open a
connection per node in a burst, and the memory of their buffers stays with the process."""
SUCCESS = range(200, 207)
"""The status codes client-go takes for an answer (200 OK to 206 Partial Content)."""
MAX_UNSTRUCTURED_TEXT = 2048
"""client-go's maxUnstructuredResponseTextBytes: how much of an answer that is not a Status
its error quotes."""


class Answer(NamedTuple):
    code: int
    body: bytes
    content_type: str = ""
    retry_after: int = 0


def resource_path(kind: Kind, namespace: str = "", name: str = "", subresource: str = "") -> str:
    """`/api/v1/namespaces/default/pods/web/status`, `/apis/apps/v1/deployments`..."""
    path = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    if kind.namespaced and namespace:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{kind.plural}"
    if name:
        path += f"/{quote(name, safe='')}"
    if subresource:
        path += f"/{subresource}"
    return path


def _with_query(path: str, **params: Any) -> str:
    present = {k: v for k, v in params.items() if v not in ("", None, 0, False)}
    return f"{path}?{urlencode(present)}" if present else path


def status_error(
    code: int,
    body: bytes,
    method: str = "GET",
    content_type: str = "",
    retry_after: int = 0,
    *,
    kind: Kind | None = None,
    name: str = "",
) -> StatusError:
    """The StatusError a refused request's answer describes: its Status, else client-go's
    newUnstructuredResponseError of the answer (its text when the answer is text, "unknown"
    when not) for the `kind` and `name` asked for."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        return StatusError(
            int(answer.get("code") or code),
            str(answer.get("reason") or ""),
            str(answer.get("message") or ""),
            answer.get("details"),
        )
    text = "unknown"
    if _is_text(content_type):
        text = body[:MAX_UNSTRUCTURED_TEXT].decode("utf-8", "replace").strip()
    resource, group = (kind.plural, kind.group) if kind is not None else ("", "")
    return generic_server_response(code, method, text, resource, group, name, retry_after)


def _is_text(content_type: str) -> bool:
    """client-go's isTextResponse: no Content-Type, or a text/ one."""
    media = content_type.partition(";")[0].strip().lower()
    return not content_type or media.startswith("text/")


class HTTPClient(Client):
    """A client of the API server at `url` (`http://127.0.0.1:6443`), on `clock`'s loop.

    `field_manager` names this client's writes in managedFields (the server otherwise records
    them under the User-Agent it sends); `tls` verifies an https server and holds the client
    certificate; `headers` go with every request (a bearer token, impersonation).
    """

    def __init__(
        self,
        url: str,
        clock: Clock,
        *,
        field_manager: str = "",
        tls: ssl.SSLContext | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._url = url.rstrip("/")
        self._clock = clock
        self._field_manager = field_manager
        self._tls = tls
        self._headers = headers
        self._head = "".join(f"{name}: {value}\r\n" for name, value in headers)
        self._idle: list[Connection] = []
        self._in_flight = asyncio.Semaphore(MAX_REQUESTS_IN_FLIGHT)

    @classmethod
    def from_config(
        cls, config: RestConfig, clock: Clock, *, field_manager: str = ""
    ) -> HTTPClient:
        """A client of the server a kubeconfig names, with its credentials."""
        token = [("Authorization", f"Bearer {config.token}")] if config.token else []
        return cls(config.server, clock, field_manager=field_manager, tls=config.tls, headers=token)

    @property
    def secure(self) -> bool:
        """Over HTTPS (and so authenticated, unless anonymous)."""
        return self._url.startswith("https:")

    def acting_as(self, user: str, groups: Sequence[str] = ()) -> HTTPClient:
        """A client impersonating `user` in `groups` (Impersonate-User, Impersonate-Group),
        sharing this one's idle connections."""
        impersonation = [("Impersonate-User", user), *(("Impersonate-Group", g) for g in groups)]
        other = HTTPClient(
            self._url,
            self._clock,
            field_manager=self._field_manager,
            tls=self._tls,
            headers=[*self._headers, *impersonation],
        )
        other._idle = self._idle
        other._in_flight = self._in_flight
        return other

    @property
    def clock(self) -> Clock:
        return self._clock

    def close(self) -> None:
        """Close the idle connections (watches close when their iteration ends)."""
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = JSON,
        *,
        kind: Kind | None = None,
        name: str = "",
    ) -> Object:
        """`kind` and `name`: what the path asks for, for the error of an answer that is not
        a Status."""
        payload = b"" if body is None else json.dumps(body).encode()
        async with self._in_flight:
            answer = await self._exchange(method, path, payload, content_type)
        if answer.code not in SUCCESS:
            code, text, content_type, retry_after = answer
            raise status_error(code, text, method, content_type, retry_after, kind=kind, name=name)
        return json.loads(answer.body) if answer.body else {}

    async def _exchange(self, method: str, path: str, payload: bytes, content_type: str) -> Answer:
        """One request on an idle connection (or a new one), and its answer."""
        reused = bool(self._idle)
        connection = self._idle.pop() if reused else await self._open()
        try:
            code, body = await connection.request(method, path, payload, content_type, self._head)
        except HTTPError:
            connection.close()
            if not reused:
                raise
            # The server may close a keep-alive connection it found idle: try a fresh one.
            connection = await self._open()
            try:
                code, body = await connection.request(
                    method, path, payload, content_type, self._head
                )
            except BaseException:
                connection.close()
                raise
        except BaseException:
            connection.close()
            raise
        answer = Answer(code, body, connection.content_type, connection.retry_after)
        if len(self._idle) < MAX_IDLE_CONNECTIONS:
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    async def _open(self) -> Connection:
        return await Connection.open(self._url, self._tls)

    def _write_path(self, path: str) -> str:
        return _with_query(path, fieldManager=self._field_manager)

    # --- reads -------------------------------------------------------------------------------

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        return await self._call("GET", resource_path(kind, namespace, name), kind=kind, name=name)

    async def get_path(self, path: str) -> Object:
        """The JSON at a path outside the resources (as `kubectl get --raw PATH`)."""
        return await self._call("GET", path)

    async def post_path(self, path: str) -> Object:
        """POST to a path outside the resources, with no body; the JSON answered."""
        return await self._call("POST", path)

    async def list(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
    ) -> Object:
        path = _with_query(
            resource_path(kind, namespace),
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            **{"continue": continue_token},
        )
        listed = await self._call("GET", path, kind=kind)
        # kube-apiserver writes a built-in list's items without kind and apiVersion; a caller
        # gets them typed, as client-go's scheme types them.
        typed = {"kind": kind.kind, "apiVersion": kind.api_version}
        if listed.get("items"):
            listed["items"] = [i if "kind" in i else {**typed, **i} for i in listed["items"]]
        return listed

    async def watch(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
    ) -> AsyncIterator[Object]:
        path = _with_query(
            resource_path(kind, namespace),
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
        )
        connection = await self._open()
        try:
            try:
                await connection.stream(path, self._head)
            except NotStreamed as e:
                if e.status == 200:
                    raise
                content_type, retry_after = connection.content_type, connection.retry_after
                raise status_error(
                    e.status, e.body, "GET", content_type, retry_after, kind=kind
                ) from None
            async for line in connection.lines():
                if line.strip():
                    yield json.loads(line)
        finally:
            connection.close()

    # --- writes ------------------------------------------------------------------------------

    async def create(self, kind: Kind, namespace: str, obj: Object) -> Object:
        path = self._write_path(resource_path(kind, namespace))
        return await self._call("POST", path, obj, kind=kind)

    async def update(self, kind: Kind, obj: Object) -> Object:
        return await self._put(kind, obj, "")

    async def update_status(self, kind: Kind, obj: Object) -> Object:
        return await self._put(kind, obj, "status")

    async def update_finalize(self, kind: Kind, obj: Object) -> Object:
        return await self._put(kind, obj, "finalize")

    async def update_approval(self, kind: Kind, obj: Object) -> Object:
        return await self._put(kind, obj, "approval")

    async def _put(self, kind: Kind, obj: Object, subresource: str) -> Object:
        m = obj.get("metadata") or {}
        name = m.get("name") or ""
        path = resource_path(kind, m.get("namespace") or "", name, subresource)
        return await self._call("PUT", self._write_path(path), obj, kind=kind, name=name)

    async def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.STRATEGIC_MERGE,
        *,
        subresource: str = "",
    ) -> Object:
        path = self._write_path(resource_path(kind, namespace, name, subresource))
        return await self._call("PATCH", path, patch, patch_type.value, kind=kind, name=name)

    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Object:
        body = delete_options_body(options) if options is not None else None
        path = resource_path(kind, namespace, name)
        return await self._call("DELETE", path, body, kind=kind, name=name)

    async def delete_collection(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        options: DeleteOptions | None = None,
    ) -> Object:
        path = _with_query(
            resource_path(kind, namespace),
            labelSelector=label_selector,
            fieldSelector=field_selector,
        )
        body = delete_options_body(options) if options is not None else None
        return await self._call("DELETE", path, body, kind=kind)

    # --- subresources ------------------------------------------------------------------------

    async def bind(self, pod: Mapping[str, Any], node: str) -> None:
        m = pod["metadata"]
        path = resource_path(PODS, m["namespace"], m["name"], "binding")
        await self._call("POST", path, binding_body(pod, node), kind=PODS, name=m["name"])

    async def evict(self, namespace: str, name: str, options: DeleteOptions | None = None) -> None:
        path = resource_path(PODS, namespace, name, "eviction")
        body = eviction_body(namespace, name, options)
        await self._call("POST", path, body, kind=PODS, name=name)

    async def request_token(
        self,
        namespace: str,
        name: str,
        request: Mapping[str, Any],
        *,
        issued_at: float | None = None,
    ) -> Object:
        if issued_at is not None:
            raise ValueError("a token issued at an earlier time is asked for in process only")
        path = resource_path(SERVICE_ACCOUNTS, namespace, name, "token")
        return await self._call("POST", path, dict(request), kind=SERVICE_ACCOUNTS, name=name)

    async def grant_token(
        self, namespace: str, name: str, request: Mapping[str, Any]
    ) -> TokenGrant:
        raise ValueError("a token signed later is asked for in process only")

    async def get_scale(self, kind: Kind, namespace: str, name: str) -> Object:
        path = resource_path(kind, namespace, name, "scale")
        return await self._call("GET", path, kind=kind, name=name)

    async def update_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> Object:
        return await self.patch(
            kind,
            namespace,
            name,
            {"spec": {"replicas": replicas}},
            PatchType.MERGE,
            subresource="scale",
        )
