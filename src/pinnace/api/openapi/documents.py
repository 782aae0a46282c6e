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
from dataclasses import replace
from functools import cache
from typing import Any

from pinnace.api import catalog, versions
from pinnace.api.autoscaling import vpa_schema
from pinnace.api.autoscaling.vpa import VERTICAL_POD_AUTOSCALER
from pinnace.api.discovery import GIT_VERSION
from pinnace.api.kind import Kind
from pinnace.api.openapi import custom, definitions, operations
from pinnace.api.patch import strategies
from pinnace.api.registry import KindRegistry

_INFO = {"title": "Kubernetes", "version": GIT_VERSION.split("+")[0]}


def group_version_path(group: str, version: str) -> str:
    """The index key of a group version: "api/v1", "apis/apps/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def documented_kinds() -> tuple[Kind, ...]:
    """The kinds the documents describe, at every version served: those of the Kubernetes
    API, whose types the generated strategies table holds (not autoscaling.k8s.io: see
    `documented_as_custom`)."""
    served = (*catalog.kinds(), *versions.other_versions())
    return tuple(k for k in served if (k.api_version, k.kind) in strategies.ROOTS)


def documented_as_custom() -> tuple[Kind, ...]:
    """The built-in kinds documented as the custom resources they are elsewhere, by their
    CRD's structural schema: the VerticalPodAutoscaler."""
    return (replace(VERTICAL_POD_AUTOSCALER, openapi_schema=vpa_schema.SCHEMA),)


def content_hash(document: dict[str, Any]) -> str:
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest().upper()


def _by_group_version(kinds: Iterable[Kind]) -> dict[str, list[Kind]]:
    grouped: dict[str, list[Kind]] = {}
    for kind in kinds:
        grouped.setdefault(group_version_path(kind.group, kind.version), []).append(kind)
    return grouped


def build_v3(
    kinds: tuple[Kind, ...], custom_kinds: tuple[Kind, ...] = ()
) -> dict[str, dict[str, Any]]:
    """{group version path: OpenAPI v3 document} for `kinds` and the custom resource kinds
    whose schemas are published."""
    defs = definitions.build(kinds, definitions.V3_REFS, custom_kinds)
    custom.add_kinds(defs, custom_kinds)
    documents = {}
    for path, served in _by_group_version(kinds + custom_kinds).items():
        paths: dict[str, Any] = {}
        roots: set[str] = set()
        for kind in served:
            root = _custom_root(kind)
            if root:
                roots |= {root, root + "List"}
            for item in operations.path_items(kind, root):
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


def build_v2(kinds: tuple[Kind, ...], custom_kinds: tuple[Kind, ...] = ()) -> dict[str, Any]:
    defs = definitions.build(kinds, definitions.V2_REFS, custom_kinds)
    custom.add_kinds(defs, custom_kinds)
    paths: dict[str, Any] = {}
    for kind in kinds + custom_kinds:
        for item in operations.path_items(kind, _custom_root(kind)):
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


def _custom_root(kind: Kind) -> str:
    """The definition a custom resource kind is documented by; "" for a built-in kind."""
    return custom.definition_name(kind) if kind.openapi_schema is not None else ""


@cache
def _v3_documents() -> dict[str, dict[str, Any]]:
    return build_v3(documented_kinds(), documented_as_custom())


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
    return build_v2(documented_kinds(), documented_as_custom())


class PublishedDocuments:
    """The documents one API server publishes: those of the built-in kinds (built once and
    shared) with those of its CRDs' served versions, built again when its registry of added
    kinds changes (v1.32's openapi controllers merge a CRD's specs in when it is created or
    changed, and take them out when it goes)."""

    def __init__(self, kinds: KindRegistry) -> None:
        self._kinds = kinds
        self._generation = -1
        self._custom: tuple[Kind, ...] = ()
        self._v2: dict[str, Any] | None = None
        self._v3: dict[str, dict[str, Any]] = {}
        self._v3_index: dict[str, Any] | None = None
        self._v3_hashes: dict[str, str] = {}

    def _current(self) -> tuple[Kind, ...]:
        if self._kinds.generation != self._generation:
            self._generation = self._kinds.generation
            self._custom = custom.published(self._kinds.added_served())
            self._v2, self._v3_index = None, None
            self._v3 = _v3_documents() | build_v3((), self._custom) if self._custom else {}
            self._v3_hashes = {}
        return self._custom

    @property
    def generation(self) -> int:
        """Moves whenever a document does."""
        self._current()
        return self._generation

    def v2(self) -> dict[str, Any]:
        if not self._current():
            return openapi_v2()
        if self._v2 is None:
            # The built-in document with the custom kinds' paths and definitions merged in
            # (the built-in ones they share, ObjectMeta and the like, as they were).
            built_in, added = openapi_v2(), build_v2((), self._custom)
            self._v2 = built_in | {
                key: dict(sorted((added[key] | built_in[key]).items()))
                for key in ("paths", "definitions")
            }
        return self._v2

    def v3_index(self) -> dict[str, Any]:
        if not self._current():
            return openapi_v3_index()
        if self._v3_index is None:
            self._v3_index = build_v3_index(self._v3)
        return self._v3_index

    def v3(self, path: str) -> dict[str, Any] | None:
        if not self._current():
            return openapi_v3(path)
        return self._v3.get(path.strip("/"))

    def v3_hash(self, path: str) -> str:
        if not self._current():
            return openapi_v3_hash(path)
        path = path.strip("/")
        if path not in self._v3_hashes:
            self._v3_hashes[path] = content_hash(self._v3[path])
        return self._v3_hashes[path]
