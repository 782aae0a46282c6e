"""Partial object metadata in the shape asked for, as handlers/response.go converts it: a GET
asked for a PartialObjectMetadataList, or a LIST for a PartialObjectMetadata, is 406; a watch
sends what it cannot convert as it is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.http.negotiation import negotiate_resource
from pinnace.apiserver.http.responses import Encoder
from pinnace.apiserver.http.watchstream import watch_stream

CONFIGMAPS = catalog.kind("", "configmaps")
DEPLOYMENTS = catalog.kind("apps", "deployments")
ONE = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


def encoder(kind: Any, accept: str) -> Encoder:
    return Encoder(kind, negotiate_resource(accept), "Metadata", now=lambda: 0.0)


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def test_an_object_asked_for_as_a_list_is_406() -> None:
    with pytest.raises(StatusError) as e:
        encoder(CONFIGMAPS, LIST).object(configmap("a"))
    assert (e.value.code, e.value.reason) == (406, "NotAcceptable")
    assert e.value.message == (
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        "(*core.ConfigMap)"
    )


def test_a_list_asked_for_as_one_object_is_406() -> None:
    listed = {"kind": "DeploymentList", "apiVersion": "apps/v1", "metadata": {}, "items": []}
    with pytest.raises(StatusError) as e:
        encoder(DEPLOYMENTS, ONE).list(listed)
    assert e.value.message == (
        "you requested PartialObjectMetadata, but the requested object is a list "
        "(*apps.DeploymentList)"
    )


def test_each_shape_where_it_fits() -> None:
    one = encoder(CONFIGMAPS, ONE).object(configmap("a"))
    assert b'"kind":"PartialObjectMetadata"' in one.body
    listed = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []}
    assert b'"kind":"PartialObjectMetadataList"' in encoder(CONFIGMAPS, LIST).list(listed).body


def test_a_watch_asked_for_lists_gets_whole_objects() -> None:
    async def events() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "ADDED", "object": configmap("a")}

    async def sent() -> bytes:
        return b"".join(
            [chunk async for chunk in watch_stream(events(), encoder(CONFIGMAPS, LIST))]
        )

    assert b'"kind":"ConfigMap"' in asyncio.run(sent())
