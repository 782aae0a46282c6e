"""pods/log: the API server finds the pod and its container, and the node agent running the pod
serves the text: the agents of the server's own process through the `LogSource` they register,
those of a `pinnace agent` process through its kubelet endpoint, as kube-apiserver proxies
pods/log to the kubelet's /containerLogs (pkg/registry/core/pod/rest/log.go)."""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from pinnace.api import catalog, field, status
from pinnace.api.objects import Object
from pinnace.api.options import LogOptions
from pinnace.apiserver.http import params
from pinnace.clock.rfc3339 import format_time, parse_time

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer


LogSource = Callable[[Object, str, LogOptions], AsyncIterator[str]]
"""(pod, container name, options) -> the container's log text, in chunks (as they come, when
following)."""


async def read_log(
    server: APIServer, namespace: str, name: str, options: LogOptions
) -> AsyncIterator[str]:
    """The log of a pod's container, as kube-apiserver proxies it from the kubelet."""
    errors = _validate(options)
    if errors:
        raise status.invalid("PodLogOptions", name, errors)
    pods = catalog.kind("", "pods")
    pod = await server.get(pods, namespace, name)
    container = _container(pod, options.container)
    if not (pod.get("spec") or {}).get("nodeName"):
        return _nothing()  # no node runs it yet: kube-apiserver answers with an empty log
    node = await remote_node(server, pod)
    if node is not None and server.kubelets is not None:
        meta = pod["metadata"]
        path = f"/containerLogs/{meta['namespace']}/{meta['name']}/{quote(container)}"
        query = log_query(options)
        chunks = await server.kubelets.get(node, path + (f"?{query}" if query else ""))
        return _decoded(chunks)
    if server.log_source is None:
        raise status.bad_request(
            f'container "{container}" in pod "{name}" is not available: no node agent serves logs'
        )
    return server.log_source(pod, container, options)


async def _decoded(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The text of a kubelet's answer, a character split between chunks kept whole."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    if rest := decoder.decode(b"", final=True):
        yield rest


async def remote_node(server: APIServer, pod: Object) -> Object | None:
    """The Node of the bound `pod` when its kubelet runs outside the API server's process
    (a `pinnace agent` process's): the API server reaches it over HTTP."""
    if server.kubelets is None:
        return None
    try:
        node = await server.get(catalog.kind("", "nodes"), "", pod["spec"]["nodeName"])
    except status.StatusError as e:
        if e.code == 404:
            return None
        raise
    return node if server.kubelets.remote(node) else None


def log_options(query: params.Query) -> LogOptions:
    """PodLogOptions from a request's query (the API server's and the kubelet's)."""
    since_time = params.first(query, "sinceTime")
    try:
        since = parse_time(since_time) if since_time else None
    except ValueError:
        raise status.bad_request(
            f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": cannot parse'
        ) from None
    return LogOptions(
        container=params.first(query, "container") or "",
        previous=bool(params.go_bool(query, "previous")),
        tail_lines=params.go_int(query, "tailLines"),
        timestamps=bool(params.go_bool(query, "timestamps")),
        follow=bool(params.go_bool(query, "follow")),
        since_seconds=params.go_int(query, "sinceSeconds"),
        since_time=since,
        limit_bytes=params.go_int(query, "limitBytes"),
    )


def log_query(options: LogOptions) -> str:
    """The query of the kubelet's /containerLogs for `options` (LogLocation's)."""
    fields: dict[str, object] = {
        "follow": options.follow and "true",
        "previous": options.previous and "true",
        "timestamps": options.timestamps and "true",
        "tailLines": options.tail_lines,
        "sinceSeconds": options.since_seconds,
        "sinceTime": None if options.since_time is None else format_time(options.since_time),
        "limitBytes": options.limit_bytes,
    }
    return urlencode({k: v for k, v in fields.items() if v is not None and v is not False})


async def log_text(server: APIServer, namespace: str, name: str, options: LogOptions) -> str:
    """The whole log at once (`options` without follow)."""
    return "".join([chunk async for chunk in await read_log(server, namespace, name, options)])


async def _nothing() -> AsyncIterator[str]:
    return
    yield


def _validate(options: LogOptions) -> list[field.FieldError]:
    """ValidatePodLogOptions."""
    errors = []
    if options.tail_lines is not None and options.tail_lines < 0:
        errors.append(
            field.invalid("tailLines", options.tail_lines, "must be greater than or equal to 0")
        )
    if options.limit_bytes is not None and options.limit_bytes < 1:
        errors.append(field.invalid("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        errors.append(
            field.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified")
        )
    elif options.since_seconds is not None and options.since_seconds < 1:
        errors.append(
            field.invalid("sinceSeconds", options.since_seconds, "must be greater than 0")
        )
    return errors


def _container(pod: Object, wanted: str) -> str:
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    others = [c.get("name", "") for c in spec.get("initContainers") or []] + [
        c.get("name", "") for c in spec.get("ephemeralContainers") or []
    ]
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in names and wanted not in others:
            raise status.bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(names) == 1:
        return names[0]
    raise status.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
        + (f" or one of the init containers: [{' '.join(others)}]" if others else "")
    )
