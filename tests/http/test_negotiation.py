"""Which discovery document an Accept header asks for: kubectl 1.32 asks for aggregated
discovery (v2, then v2beta1) with plain JSON as its fallback."""

from __future__ import annotations

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.http.negotiation import discovery_content_type, negotiate_discovery


@pytest.mark.parametrize(
    ("accept", "form"),
    [
        (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            "v2",
        ),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            "v2beta1",
        ),
        ("application/json; g=apidiscovery.k8s.io; as=APIGroupDiscoveryList; v=v2", "v2"),
        ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,*/*", None),
        ("application/json", None),
        ("", None),
        ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", None),
    ],
)
def test_negotiate_discovery(accept: str, form: str | None) -> None:
    assert negotiate_discovery(accept) == form


def test_an_unservable_accept_is_406() -> None:
    with pytest.raises(StatusError) as e:
        negotiate_discovery("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList")
    assert e.value.code == 406


def test_aggregated_content_type() -> None:
    assert discovery_content_type("v2") == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
