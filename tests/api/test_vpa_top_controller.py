"""controllerFetcher.FindTopMostWellKnownOrScalable (`vpa_policy.top_controller`) over a
chain of controllers given by a getter, without a cluster."""

from __future__ import annotations

import asyncio

from pinnace.api.autoscaling.vpa_policy import Owner, top_controller
from pinnace.api.objects import Object


def _owned_by(api_version: str, kind: str, name: str) -> Object:
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
    return {"metadata": {"namespace": "default", "ownerReferences": [ref]}}


CHAIN: dict[str, Owner] = {
    "ReplicaSet": Owner(_owned_by("apps/v1", "Deployment", "web"), False),
    "Deployment": Owner(_owned_by("example.com/v1", "WebApp", "web"), True),
    "WebApp": Owner(_owned_by("example.com/v1", "Platform", "all"), True),
    "Platform": Owner({"metadata": {"namespace": "default"}}, True),
}


async def _get(api_version: str, kind: str, namespace: str, name: str) -> Owner | None:
    return CHAIN.get(kind)


def test_a_scalable_custom_resource_is_the_top_and_its_own_controller_is_not_followed() -> None:
    # Upstream reads a non-well-known kind's parent from its Scale, whose metadata has no
    # ownerReferences: the chain ends at the WebApp though the object names a Platform.
    pod = _owned_by("apps/v1", "ReplicaSet", "web-1")
    assert asyncio.run(top_controller(pod, _get)) == ("WebApp", "web")


def test_well_known_controllers_are_followed_to_the_top_most() -> None:
    pod = _owned_by("apps/v1", "ReplicaSet", "web-1")
    chain = {**CHAIN, "Deployment": Owner({"metadata": {}}, True)}

    async def get(api_version: str, kind: str, namespace: str, name: str) -> Owner | None:
        return chain.get(kind)

    assert asyncio.run(top_controller(pod, get)) == ("Deployment", "web")
