"""A `pinnace agent`'s kubelet endpoint asks the API server whether a caller may stream to a
node (a SubjectAccessReview), and keeps the answer as a kubelet's webhook authorizer does: an
allowed one for 5 minutes, a refusal for 30 seconds, on the clock of the process."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.clock import VirtualClock
from pinnace.kubelet.server import KubeletServer


class Reviews:
    """The API server's SubjectAccessReviews as the agent's client reaches them: each one asked
    is recorded, and allowed to the users in `allowed`."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.asked: list[dict[str, Any]] = []
        self.allowed = {"kube-apiserver-kubelet-client"}

    async def create(self, kind: Kind, namespace: str, review: Object) -> Object:
        self.asked.append(review["spec"])
        return {**review, "status": {"allowed": review["spec"]["user"] in self.allowed}}


class Pool:
    def __init__(self, client: Reviews) -> None:
        self.client = client


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with VirtualClock() as clock:
        yield clock


@pytest.fixture
def api(clock: VirtualClock) -> Reviews:
    return Reviews(clock)


@pytest.fixture
def kubelet(clock: VirtualClock, api: Reviews) -> Iterator[KubeletServer]:
    server = KubeletServer("127.0.0.1", 0, ssl.create_default_context())
    server.pool = Pool(api)  # type: ignore[assignment]
    yield server
    clock.run(server.stop())


def caller(user: str) -> dict[str, Any]:
    """The scope of a request by the user a client certificate names."""
    subject = ((("commonName", user),), (("organizationName", "kubeadm:cluster-admins"),))
    return {"extensions": {"tls": {"client_cert": {"subject": subject}}}}


def test_an_allowed_answer_is_kept_five_minutes(
    clock: VirtualClock, api: Reviews, kubelet: KubeletServer
) -> None:
    apiserver = caller("kube-apiserver-kubelet-client")
    clock.run(kubelet._authorize(apiserver, "GET", "far-1"))
    clock.run(kubelet._authorize(apiserver, "GET", "far-1"))
    assert len(api.asked) == 1
    # Another verb or node is another question.
    clock.run(kubelet._authorize(apiserver, "POST", "far-1"))
    clock.run(kubelet._authorize(apiserver, "GET", "far-2"))
    assert [(r["resourceAttributes"]["verb"], r["resourceAttributes"]["name"])
            for r in api.asked] == [("get", "far-1"), ("create", "far-1"),
                                           ("get", "far-2")]  # fmt: skip
    clock.advance(299)
    clock.run(kubelet._authorize(apiserver, "GET", "far-1"))
    assert len(api.asked) == 3
    clock.advance(1)
    clock.run(kubelet._authorize(apiserver, "GET", "far-1"))
    assert len(api.asked) == 4


def test_a_refusal_is_kept_thirty_seconds(
    clock: VirtualClock, api: Reviews, kubelet: KubeletServer
) -> None:
    scheduler = caller("system:kube-scheduler")
    for _ in range(2):
        with pytest.raises(StatusError) as refused:
            clock.run(kubelet._authorize(scheduler, "POST", "far-1"))
        assert (refused.value.code, refused.value.message) == (403, "Forbidden (user="
            "system:kube-scheduler, verb=create, resource=nodes, subresource=proxy)")  # fmt: skip
    assert len(api.asked) == 1
    # Allowed meanwhile (an RBAC binding made): the refusal stands until it expires.
    api.allowed.add("system:kube-scheduler")
    clock.advance(29)
    with pytest.raises(StatusError):
        clock.run(kubelet._authorize(scheduler, "POST", "far-1"))
    clock.advance(1)
    clock.run(kubelet._authorize(scheduler, "POST", "far-1"))
    assert len(api.asked) == 2
