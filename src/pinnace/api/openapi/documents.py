"""The OpenAPI documents kube-apiserver serves: /openapi/v3 (an index of one document per
group version, each linked with a content hash), /openapi/v3/<group version> and /openapi/v2.

Documents are built once and shared: callers serialize them and must not change them. A
group version's hash is the SHA-512 of its document (compact JSON, keys sorted), in upper-case
hex as kube-apiserver writes it; clients cache a document under its hashed URL, so the hash
changes exactly when the document does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import cache
from typing import Any

from pinnace.api import catalog
from pinnace.api.discovery import GIT_VERSION
from pinnace.api.kind import Kind
from pinnace.api.openapi import definitions, operations
from pinnace.api.patch import strategies

_INFO = {"title": "Kubernetes", "version": GIT_VERSION.split("+")[0]}


def group_version_path(group: str, version: str) -> str:
    """The index key of a group version: "api/v1", "apis/apps/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def documented_kinds() -> tuple[Kind, ...]:
    """The kinds the documents describe: those of the Kubernetes API, whose types the
    generated strategies table holds (not autoscaling.k8s.io, which Pinnace serves without
    publishing its schema)."""
    return tuple(k for k in catalog.kinds() if k.kind in strategies.ROOTS)


def content_hash(document: dict[str, Any]) -> str:
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest().upper()


def _by_group_version(kinds: Iterable[Kind]) -> dict[str, list[Kind]]:
    grouped: dict[str, list[Kind]] = {}
    for kind in kinds:
        grouped.setdefault(group_version_path(kind.group, kind.version), []).append(kind)
    return grouped


def build_v3(kinds: tuple[Kind, ...]) -> dict[str, dict[str, Any]]:
    """{group version path: OpenAPI v3 document} for `kinds`."""
    defs = definitions.build(kinds, definitions.V3_REFS)
    documents = {}
    for path, served in _by_group_version(kinds).items():
        paths: dict[str, Any] = {}
        roots: set[str] = set()
        for kind in served:
            for item in operations.path_items(kind):
                paths[item.path] = operations.path_item_v3(
                    item, operations.tag(kind), definitions.V3_REFS
                )
                roots |= operations.referenced(item)
        documents[path] = {
            "openapi": "3.0.0",
            "info": _INFO,
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": defs.closure(roots)},
        }
    return documents


def build_v3_index(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={content_hash(doc)}"}
            for path, doc in sorted(documents.items())
        }
    }


def build_v2(kinds: tuple[Kind, ...]) -> dict[str, Any]:
    defs = definitions.build(kinds, definitions.V2_REFS)
    paths: dict[str, Any] = {}
    for kind in kinds:
        for item in operations.path_items(kind):
            paths[item.path] = operations.path_item_v2(
                item, operations.tag(kind), definitions.V2_REFS
            )
    return {
        "swagger": "2.0",
        "info": _INFO,
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(defs.schemas.items())),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{"BearerToken": []}],
    }


@cache
def _v3_documents() -> dict[str, dict[str, Any]]:
    return build_v3(documented_kinds())


@cache
def openapi_v3_index() -> dict[str, Any]:
    """/openapi/v3: each served group version and the hashed URL of its document."""
    return build_v3_index(_v3_documents())


def openapi_v3(path: str) -> dict[str, Any] | None:
    """/openapi/v3/<path> for "api/v1" or "apis/<group>/<version>"; None if not served."""
    return _v3_documents().get(path.strip("/"))


@cache
def openapi_v3_hash(path: str) -> str:
    """The hash of a served /openapi/v3/<path> document, as its index names it."""
    return content_hash(_v3_documents()[path.strip("/")])


@cache
def openapi_v2() -> dict[str, Any]:
    """/openapi/v2: one Swagger 2.0 document for every served kind."""
    return build_v2(documented_kinds())
