"""The paths that are not resources: discovery, /version, the health checks and OpenAPI."""

from __future__ import annotations

import email.utils
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from pinnace.api import discovery
from pinnace.api.kind import Kind
from pinnace.api.openapi.documents import PublishedDocuments
from pinnace.apiserver.http import negotiation, openapi_protobuf
from pinnace.apiserver.http.params import Query, first
from pinnace.apiserver.http.responses import (
    Response,
    go_json,
    json_response,
    raw_json_response,
    text_response,
)
from pinnace.apiserver.http.routes import Discovery, not_found

_LIVE_CHECKS = ("ping", "log", "etcd", "poststarthook/bootstrap-controller")
HEALTH_CHECKS = {
    "/healthz": _LIVE_CHECKS,
    "/livez": _LIVE_CHECKS,
    "/readyz": (
        "ping",
        "log",
        "etcd",
        "etcd-readiness",
        "informer-sync",
        "poststarthook/bootstrap-controller",
        "shutdown",
    ),
}
"""Each endpoint's checks in kube-apiserver's order: the etcd check on all three,
etcd-readiness and the shutdown check on /readyz only (k8s.io/apiserver's
EtcdOptions.addEtcdHealthEndpoint and GenericAPIServer.PrepareRun)."""
_HEALTH_PREFIXES = tuple(HEALTH_CHECKS)


def discovery_document(
    target: Discovery, accept: str, server_address: str, kinds: Iterable[Kind] | None = None
) -> Response:
    """The document `target` names, listing `kinds` (the catalog's when None)."""
    if target.group is None:
        version = negotiation.negotiate_discovery(accept)
        if version is not None:
            document = discovery.aggregated_discovery(target.core, kinds, version=version)
            return json_response(document, content_type=negotiation.discovery_content_type(version))
        if target.core:
            return json_response(discovery.api_versions(server_address))
        return json_response(discovery.api_group_list(kinds))
    if target.version is None:
        group = discovery.api_group(target.group, kinds)
        if group is None:
            raise not_found()
        return json_response(group)
    resources = discovery.api_resource_list(target.group, target.version, kinds)
    if resources is None:
        raise not_found()
    return json_response(resources)


def version() -> Response:
    return Response(200, _version_body())


@cache
def _version_body() -> bytes:
    """/version's body, as raw_json_response writes it: the build and the platform do not
    change while the process runs."""
    return raw_json_response(discovery.version_info()).body


def health_endpoint(
    path: str, endpoints: Mapping[str, Sequence[str]] = HEALTH_CHECKS
) -> str | None:
    """The health endpoint `path` is, or is one check of (/readyz for /readyz/etcd); None
    for other paths and for checks the endpoint does not have. `endpoints`: each endpoint's
    checks (kube-apiserver's unless given)."""
    if endpoints is HEALTH_CHECKS and not path.startswith(_HEALTH_PREFIXES):  # most, at once
        return None
    for endpoint, checks in endpoints.items():
        if path == endpoint or (
            path.startswith(endpoint + "/") and path[len(endpoint) + 1 :] in checks
        ):
            return endpoint
    return None


def health(
    endpoint: str,
    path: str,
    query: Mapping[str, Sequence[str]],
    failing: Mapping[str, str],
    endpoints: Mapping[str, Sequence[str]] = HEALTH_CHECKS,
) -> Response:
    """/healthz, /livez, /readyz (`endpoint`) or one of their checks (`path`, /readyz/ping),
    as k8s.io/apiserver's healthz handlers answer: `failing` holds the checks that fail now,
    with why. The endpoint lists every check with `?verbose` or when one fails (a 500, the
    reason withheld; a check's own path gives it); the checks `?exclude` names pass.
    `endpoints`: each endpoint's checks (kube-apiserver's unless given)."""
    if path != endpoint:
        check = path[len(endpoint) + 1 :]
        if check in failing:
            return text_response(f"internal server error: {failing[check]}\n", 500)
        return text_response("ok")
    excluded = set(query.get("exclude") or ())
    lines, failed = [], False
    for check in endpoints[endpoint]:
        if check in excluded:
            excluded.discard(check)
            lines.append(f"[+]{check} excluded: ok")
        elif check in failing:
            failed = True
            lines.append(f"[-]{check} failed: reason withheld")
        else:
            lines.append(f"[+]{check} ok")
    if excluded:
        names = ",".join(json.dumps(name, ensure_ascii=False) for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}")
    if failed:
        return text_response("\n".join(lines) + f"\n{endpoint[1:]} check failed\n", 500)
    if "verbose" not in query:
        return text_response("ok")
    return text_response("\n".join(lines) + f"\n{endpoint[1:]} check passed\n")


def openapi(
    path: str,
    accept: str,
    query: Query,
    now: float,
    documents: PublishedDocuments,
    v2_protobuf: openapi_protobuf.PublishedProtobuf,
) -> Response | None:
    """/openapi/v2 and /openapi/v3[/<group-version>] of the `documents` published now (and
    `v2_protobuf`, the protobuf form of their /openapi/v2); None for other paths.

    /openapi/v2 comes as JSON or, to a client that asks for it, in its protobuf form.
    """
    if path == "/openapi/v2":
        for media in negotiation.parse_media_types(accept or negotiation.JSON):
            if media.type in openapi_protobuf.MEDIA_TYPES:
                body = v2_protobuf.v2()
                return Response(200, body, openapi_protobuf.MEDIA_TYPES[0])
            if media.type in (negotiation.JSON, "application/*", "*/*"):
                return _openapi_response(documents.v2())
        raise negotiation.not_acceptable(accept)
    if path == "/openapi/v3":
        return _openapi_response(documents.v3_index())
    if path.startswith("/openapi/v3/"):
        group_version = path[len("/openapi/v3/") :]
        document = documents.v3(group_version)
        if document is None:
            raise not_found()
        etag = documents.v3_hash(group_version)
        return _openapi_v3_response(group_version, document, etag, first(query, "hash"), now)
    return None


def _openapi_v3_response(
    group_version: str, document: object, etag: str, hash_asked: str | None, now: float
) -> Response:
    """kube-openapi's handler3: the hash is the ETag; a document asked for by its hash may be
    cached for good (a year), one asked for by another hash is redirected to the current."""
    headers = [("Vary", "Accept"), ("Etag", f'"{etag}"')]
    if hash_asked is not None and hash_asked != etag:
        url = f"/openapi/v3/{group_version}?hash={etag}"
        body = f'<a href="{url}">Moved Permanently</a>.\n\n'
        headers.append(("Location", url))
        return Response(301, body.encode(), "text/html; charset=utf-8", headers)
    if hash_asked is not None:
        expires = email.utils.formatdate(now + 365 * 86400, usegmt=True)
        headers += [("Cache-Control", "public, immutable"), ("Expires", expires)]
    return Response(200, go_json(document), headers=headers)


def _openapi_response(document: object) -> Response:
    """kube-openapi's handlers write the marshalled document as it is, with no newline."""
    return Response(200, go_json(document))
