"""The phase the kubelet derives from its containers (getPhase)."""

from __future__ import annotations

import pytest

from pinnace.kubelet.pod_status import ContainerRecord, pod_phase
from pinnace.kubelet.runtime import ContainerStatus, Ended


def record(state: str, exit_code: int = 0, *, backing_off: bool = False) -> ContainerRecord:
    c = ContainerRecord("c", "img", init=False)
    if state == "waiting":
        return c
    c.current = ContainerStatus("id", "c", "img", "img@sha256:0", started_at=0.0)
    if state == "exited":
        c.current.ended = Ended(0.0, exit_code, "")
    if backing_off:
        c.waiting = ("CrashLoopBackOff", "")
    return c


@pytest.mark.parametrize(
    ("states", "policy", "phase"),
    [
        ([("waiting", 0)], "Always", "Pending"),
        ([("running", 0), ("waiting", 0)], "Always", "Pending"),
        ([("running", 0), ("exited", 0)], "Never", "Running"),
        ([("exited", 0), ("exited", 0)], "Never", "Succeeded"),
        ([("exited", 0), ("exited", 1)], "Never", "Failed"),
        ([("exited", 0), ("exited", 1)], "OnFailure", "Running"),
        ([("exited", 0)], "OnFailure", "Succeeded"),
        ([("exited", 0)], "Always", "Running"),
    ],
)
def test_phase_from_container_states(
    states: list[tuple[str, int]], policy: str, phase: str
) -> None:
    apps = [record(state, code) for state, code in states]
    assert pod_phase([], apps, policy) == phase


def test_a_container_in_back_off_is_stopped_not_waiting() -> None:
    assert pod_phase([], [record("exited", 1, backing_off=True)], "Always") == "Running"


def test_a_failed_init_container_under_never_fails_the_pod() -> None:
    init = record("exited", 1)
    init.init = True
    assert pod_phase([init], [record("waiting")], "Never") == "Failed"
    assert pod_phase([init], [record("waiting")], "OnFailure") == "Pending"


def test_a_deleted_pod_is_terminal_and_failed_if_anything_never_ran_or_failed() -> None:
    assert pod_phase([], [record("exited", 0)], "Always", terminal=True) == "Succeeded"
    assert pod_phase([], [record("exited", 143)], "Always", terminal=True) == "Failed"
    assert pod_phase([], [record("waiting")], "Always", terminal=True) == "Failed"
