"""Leader election on the virtual clock, as client-go's leaderelection behaves with
kube-scheduler's timings (leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2 s)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.client import LocalClient
from pinnace.client.leaderelection import LEASES, LeaderElectionConfig, LeaderElector
from pinnace.client.transport import HTTPError
from pinnace.clock import Randomness, parse_time


class Reachable(LocalClient):
    """A client whose requests fail once `cut` (its process lost the API server)."""

    cut = False

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        self._check()
        return await super().get(kind, namespace, name)

    async def update(self, kind: Kind, obj: Object) -> Object:
        self._check()
        return await super().update(kind, obj)

    def _check(self) -> None:
        if self.cut:
            raise HTTPError("cannot connect")


KUBE_SCHEDULER = LeaderElectionConfig()


class Candidate:
    """One process campaigning for the kube-scheduler Lease; when it led, by the clock."""

    def __init__(
        self, api: Harness, identity: str, config: LeaderElectionConfig = KUBE_SCHEDULER
    ) -> None:
        self.client = Reachable(api.server)
        self.clock = self.client.clock
        self.holder_when_stopped = ""
        self.led: list[list[float]] = []
        """[started, stopped] per term; stopped is absent while it leads."""
        self.elector = LeaderElector(
            self.client,
            "kube-scheduler",
            identity,
            on_started_leading=self._started,
            on_stopped_leading=self._stopped,
            config=config,
            randomness=Randomness(len(identity)),
        )

    async def _started(self) -> None:
        self.led.append([self.clock.now()])

    async def _stopped(self) -> None:
        if self.led and len(self.led[-1]) == 1:
            self.led[-1].append(self.clock.now())
            lease = await LocalClient.get(self.client, LEASES, "kube-system", "kube-scheduler")
            self.holder_when_stopped = lease["spec"]["holderIdentity"]

    @property
    def leading(self) -> bool:
        return bool(self.led) and len(self.led[-1]) == 1


CANDIDATES: list[Candidate] = []


@pytest.fixture
def api() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    while CANDIDATES:
        harness.run(CANDIDATES.pop().elector.abandon())
    harness.loop.close()
    asyncio.set_event_loop(None)


def wait(api: Harness, seconds: float) -> None:
    api.run(asyncio.sleep(seconds))


def lease(api: Harness) -> dict[str, Any]:
    return api.call(api.server.get, LEASES, "kube-system", "kube-scheduler")["spec"]


def campaign(api: Harness) -> tuple[Candidate, Candidate]:
    a, b = Candidate(api, "host-a_1"), Candidate(api, "host-b_2")
    CANDIDATES.extend((a, b))
    a.elector.start()
    wait(api, 1)  # a asks first
    b.elector.start()
    wait(api, 60)
    return a, b


def test_one_of_two_candidates_leads_and_renews(api: Harness) -> None:
    a, b = campaign(api)
    assert a.leading and not b.leading
    assert b.elector.leader == "host-a_1"
    spec = lease(api)
    assert spec["holderIdentity"] == "host-a_1"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] < spec["renewTime"]  # renewed, the acquisition kept


def test_the_other_takes_over_a_lease_its_leader_stopped_renewing(api: Harness) -> None:
    a, b = campaign(api)
    api.run(a.elector.abandon())  # killed: no release
    last_renewal = parse_time(lease(api)["renewTime"])
    wait(api, 40)
    assert b.leading
    took_over = b.led[0][0] - last_renewal
    # Not before the lease as b observed it has run out; within a few retry periods after.
    assert 15 <= took_over <= 15 + 2 * 2 * (1 + 1.2)
    spec = lease(api)
    assert spec["holderIdentity"] == "host-b_2"
    assert spec["leaseTransitions"] == 1


def test_a_leader_cut_off_stops_leading_before_another_starts(api: Harness) -> None:
    a, b = campaign(api)
    a.client.cut = True
    cut_at = a.clock.now()
    wait(api, 40)
    assert a.elector.lost and not a.leading
    assert a.led[0][1] - cut_at <= 10 + 2  # within renewDeadline (and a retry)
    assert b.leading
    assert a.led[0][1] < b.led[0][0]  # never two leaders at once


def test_a_leader_stopped_gracefully_releases_the_lease(api: Harness) -> None:
    a, b = campaign(api)
    api.run(a.elector.stop())
    stopped_at = a.clock.now()
    assert not a.leading and not a.elector.lost
    assert a.holder_when_stopped == "host-a_1"  # released only once its components stopped
    assert lease(api)["holderIdentity"] == ""
    wait(api, 10)
    assert b.leading
    assert b.led[0][0] - stopped_at <= 2 * (1 + 1.2)  # its next retry: no lease to wait out
    assert lease(api)["leaseTransitions"] == 1


def test_timings_that_could_give_two_leaders_are_refused() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElectionConfig(lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renewDeadline must be greater"):
        LeaderElectionConfig(renew_deadline=2, retry_period=2)


def test_a_lease_duration_of_a_fraction_of_a_second_is_written_in_whole_seconds_cut_down(
    api: Harness,
) -> None:
    # client-go writes int(LeaseDuration / time.Second): 3.9 s is 3, never rounded up.
    config = LeaderElectionConfig(lease_duration=3.9, renew_deadline=3, retry_period=2)
    candidate = Candidate(api, "host-a_1", config)
    CANDIDATES.append(candidate)
    candidate.elector.start()
    wait(api, 5)
    assert candidate.leading
    assert lease(api)["leaseDurationSeconds"] == 3
