"""One HTTP request as the handlers see it: method, path, query, headers and its body.

A body is parsed on the event loop only when it is small: a large one (YAML above all, up to
the 3 MiB limit) takes long enough to parse that the server would stop answering everything
else meanwhile (`/readyz` included), so it is parsed in a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs

from pinnace.apiserver.auth import impersonation
from pinnace.apiserver.http.bodies import Receive, parse_json, read_body
from pinnace.apiserver.http.routes import Route, Routes, find, not_found

if TYPE_CHECKING:
    from pinnace.apiserver.http.connections import Upgrade

T = TypeVar("T")

PARSE_ON_LOOP_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (in well under a millisecond as
JSON); larger ones in a worker thread."""

Query = dict[str, list[str]]
PROTOCOL_HEADER = "sec-websocket-protocol"


@dataclass
class Request:
    method: str
    path: str
    query: Query
    headers: dict[str, str]
    """Lower-case names; repeated headers joined with ", "."""
    receive: Receive
    _body: bytes | None = field(default=None, repr=False)
    upgrade: Upgrade | None = field(default=None, repr=False)
    """How to hand over a connection that asks to upgrade to anything but WebSocket (SPDY);
    None when the server cannot."""
    scope: dict[str, Any] = field(default_factory=dict, repr=False)
    """The ASGI scope it came in (its header lines, its TLS extension)."""
    routes: Routes | None = field(default=None, repr=False)
    """The routes among the kinds the server serves now (its custom resources' among them);
    None: the catalog's."""
    impersonating: bool = False
    """Whether an Impersonate-* header came with it."""
    repeated: tuple[str, ...] = ()
    """The names of the headers that came in more than one line."""
    _route: Route | None = field(default=None, repr=False)
    _routed: bool = field(default=False, repr=False)

    @classmethod
    def from_scope(cls, scope: dict[str, Any], receive: Receive) -> Request:
        headers: dict[str, str] = {}
        repeated: tuple[str, ...] = ()
        for raw_name, raw_value in scope.get("headers", ()):
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            if name in headers:
                headers[name] = f"{headers[name]}, {value}"
                repeated += (name,)
            else:
                headers[name] = value
        if scope.get("subprotocols"):
            # A WebSocket's, which uvicorn's wsproto takes out of the headers: as the client
            # sent it, for a proxy to send on (the kubelet picks the protocol).
            headers[PROTOCOL_HEADER] = ", ".join(scope["subprotocols"])
        raw_query = scope.get("query_string", b"")
        query = parse_qs(raw_query.decode("latin-1"), keep_blank_values=True) if raw_query else {}
        upgrade = scope.get("extensions", {}).get("pinnace.upgrade")
        method, path = scope["method"].upper(), scope["path"]
        impersonating = any(name.startswith(impersonation.HEADER_PREFIX) for name in headers)
        return cls(
            method, path, query, headers, receive, upgrade=upgrade, scope=scope,
            impersonating=impersonating, repeated=repeated,
        )  # fmt: skip

    def target(self) -> Route | None:
        """The discovery document or resource the path names (None: nothing served), worked
        out once: the handler and the request metrics both ask."""
        if not self._routed:
            routes = self.routes
            found = find(self.path) if routes is None else routes.find(self.path)
            self._route, self._routed = found, True
        return self._route

    def route(self) -> Route:
        """`target`; a 404 StatusError when the path names nothing."""
        target = self.target()
        if target is None:
            raise not_found()
        return target

    def header(self, name: str) -> str:
        return self.headers.get(name, "")

    def last_header(self, name: str) -> str:
        """The value of the header's last line ("" without one)."""
        if name not in self.repeated:
            return self.headers.get(name, "")
        return [value for line, value in self.header_lines() if line == name][-1]

    def header_lines(self) -> list[tuple[str, str]]:
        """Every header line, names in lower case (repeated ones, such as Impersonate-Group,
        kept apart)."""
        return [
            (name.decode("latin-1").lower(), value.decode("latin-1"))
            for name, value in self.scope.get("headers", ())
        ]

    def client_certificate(self) -> dict[str, Any] | None:
        """The client certificate the TLS handshake verified (`http.connections` puts it in
        the scope's TLS extension)."""
        tls = (self.scope.get("extensions") or {}).get("tls") or {}
        certificate = tls.get("client_cert")
        return certificate if isinstance(certificate, dict) else None

    async def body(self) -> bytes:
        """The whole body, read once (413 past 3 MiB)."""
        if self._body is None:
            self._body = await read_body(self.receive, self.headers.get("content-length"))
        return self._body

    async def parsed(self, parse: Callable[..., T], *args: Any) -> T:
        """`parse(body, *args)`, in a worker thread when the body is large."""
        data = await self.body()
        if len(data) <= PARSE_ON_LOOP_BYTES:
            return parse(data, *args)
        return await asyncio.to_thread(parse, data, *args)

    async def options_body(self) -> Any | None:
        """A JSON options body (DeleteOptions), or None when the request has none."""
        data = await self.body()
        return await self.parsed(parse_json, self.header("content-type")) if data.strip() else None
