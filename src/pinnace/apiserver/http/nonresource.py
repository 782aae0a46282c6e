"""The paths that are not resources: discovery, /version, the health checks and OpenAPI."""

from __future__ import annotations

import email.utils
from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from pinnace.api import discovery
from pinnace.api.kind import Kind
from pinnace.api.openapi.documents import PublishedDocuments
from pinnace.apiserver.http import negotiation, openapi_protobuf
from pinnace.apiserver.http.params import Query, first, go_bool
from pinnace.apiserver.http.responses import (
    Response,
    go_json,
    json_response,
    raw_json_response,
    text_response,
)
from pinnace.apiserver.http.routes import Discovery, not_found

HEALTH_CHECKS = {
    "/healthz": ("ping", "log", "etcd", "poststarthook/bootstrap-controller"),
    "/livez": ("ping", "log", "etcd", "poststarthook/bootstrap-controller"),
    "/readyz": ("ping", "log", "etcd", "informer-sync", "poststarthook/bootstrap-controller"),
}
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


def health(
    path: str, query: Mapping[str, Sequence[str]], failing: Mapping[str, str] | None = None
) -> Response | None:
    """/healthz, /livez, /readyz (and their single checks, /readyz/ping); None for other
    paths. `failing` holds the checks that fail now, with why; every other check passes (the
    store is in process). As k8s.io/apiserver's healthz: a failure is a 500 that lists every
    check, the reason withheld (a single check's own path gives it)."""
    if not path.startswith(_HEALTH_PREFIXES):
        return None
    failing = failing or {}
    for prefix, checks in HEALTH_CHECKS.items():
        failed = [check for check in checks if check in failing]
        if path == prefix:
            if failed or go_bool(query, "verbose"):
                lines = [
                    f"[-]{check} failed: reason withheld" if check in failing else f"[+]{check} ok"
                    for check in checks
                ]
                outcome = "failed" if failed else "passed"
                return text_response(
                    "\n".join(lines) + f"\n{prefix[1:]} check {outcome}\n",
                    500 if failed else 200,
                )
            return text_response("ok")
        check = path[len(prefix) + 1 :]
        if path.startswith(prefix + "/") and check in checks:
            if check in failing:
                return text_response(f"internal server error: {failing[check]}\n", 500)
            return text_response("ok")
    return None


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
