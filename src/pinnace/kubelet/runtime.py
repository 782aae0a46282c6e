"""The container runtime the node agent drives, and a simulated one.

`ContainerRuntime` is what the kubelet asks of a CRI runtime: start a container, stop it
(SIGTERM, then SIGKILL after a grace period), remove it. The `ContainerStatus` a start returns
is the container's record, kept current by the runtime (state, exit code, log lines); the
runtime reports the exit through the callback given at the start. `SimulatedRuntime` runs no
processes: each container follows its `ContainerBehaviour` on the clock. A runtime of real
processes can implement the same interface later.
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from pinnace.clock import Clock, Timer
from pinnace.kubelet.behaviour import ContainerBehaviour

EXIT_CODE_SIGKILL = 137
EXIT_CODE_SIGTERM = 143
REASON_COMPLETED = "Completed"
REASON_ERROR = "Error"
CONTAINER_ID_SCHEME = "containerd://"


class ContainerState(StrEnum):
    RUNNING = "running"
    EXITED = "exited"


@dataclass
class ContainerStatus:
    """One run of a container, as the runtime knows it."""

    id: str
    """With its scheme, as containerStatuses[].containerID shows it."""
    name: str
    image: str
    image_id: str
    started_at: float
    state: ContainerState = ContainerState.RUNNING
    finished_at: float = 0.0
    exit_code: int = 0
    reason: str = ""
    log: list[tuple[float, str]] = field(default_factory=list)
    """(time, line) as the container printed them."""


OnExit = Callable[[ContainerStatus], object]


class ContainerRuntime(ABC):
    @abstractmethod
    def start_container(
        self,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
    ) -> ContainerStatus:
        """Start a container of the pod sandbox `sandbox` (the pod's uid); `on_exit` hears
        of its end, however it comes."""

    @abstractmethod
    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """SIGTERM, then SIGKILL once `grace_seconds` have passed."""

    @abstractmethod
    def remove_container(self, container_id: str) -> None:
        """Forget an exited container (its log goes with it); stop it first if running."""


def image_reference(image: str) -> str:
    """An image as containerd names it: `nginx` is `docker.io/library/nginx:latest`."""
    name, tagged = image, ""
    if "@" in name:
        name, tagged = name.split("@", 1)
        tagged = "@" + tagged
    elif name.rfind(":") > name.rfind("/"):
        name, tag = name.rsplit(":", 1)
        tagged = ":" + tag
    else:
        tagged = ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    return name + tagged


def image_id(image: str) -> str:
    """A stable digest per image, as imageID shows it (`docker.io/library/nginx@sha256:…`)."""
    reference = image_reference(image)
    repository = reference.split("@", 1)[0]
    if repository.rfind(":") > repository.rfind("/"):
        repository = repository.rsplit(":", 1)[0]
    digest = hashlib.sha256(reference.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


class SimulatedRuntime(ContainerRuntime):
    """Containers that follow their behaviour model on `clock`; `node` makes IDs unique."""

    def __init__(self, clock: Clock, node: str) -> None:
        self._clock = clock
        self._node = node
        self._containers: dict[str, ContainerStatus] = {}
        self._behaviours: dict[str, ContainerBehaviour] = {}
        self._callbacks: dict[str, OnExit] = {}
        self._timers: dict[str, Timer] = {}
        self._term_sent: dict[str, float] = {}
        self._exits: dict[str, float] = {}
        """When a container being stopped will be gone."""
        self._started = 0

    def start_container(
        self,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
    ) -> ContainerStatus:
        self._started += 1
        seed = f"{self._node}/{sandbox}/{name}/{self._started}".encode()
        cid = CONTAINER_ID_SCHEME + hashlib.sha256(seed).hexdigest()
        now = self._clock.now()
        status = ContainerStatus(
            id=cid,
            name=name,
            image=image_reference(image),
            image_id=image_id(image),
            started_at=now,
        )
        if behaviour.log:
            status.log.extend((now, line) for line in behaviour.log.splitlines())
        self._containers[cid] = status
        self._behaviours[cid] = behaviour
        self._callbacks[cid] = on_exit
        if behaviour.run_seconds < math.inf:
            self._timers[cid] = self._clock.call_later(
                behaviour.run_seconds, self._exit, cid, behaviour.exit_code
            )
        return status

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """The container exits `stop_seconds` after the first SIGTERM (code 143), or is
        killed when the grace period ends first (137). Stopping again with a shorter grace
        period brings the kill forward."""
        status = self._containers.get(container_id)
        if status is None or status.state is not ContainerState.RUNNING:
            return
        now = self._clock.now()
        term_sent = self._term_sent.setdefault(container_id, now)
        on_term = term_sent + self._behaviours[container_id].stop_seconds
        kill = now + max(grace_seconds, 0.0)
        when, code = (on_term, EXIT_CODE_SIGTERM) if on_term <= kill else (kill, EXIT_CODE_SIGKILL)
        planned = self._exits.get(container_id)
        if planned is not None and planned <= when:
            return
        timer = self._timers.pop(container_id, None)
        if timer is not None:
            timer.cancel()
        self._exits[container_id] = when
        self._timers[container_id] = self._clock.call_at(when, self._exit, container_id, code)

    def remove_container(self, container_id: str) -> None:
        timer = self._timers.pop(container_id, None)
        if timer is not None:
            timer.cancel()
        for table in (
            self._containers,
            self._behaviours,
            self._callbacks,
            self._term_sent,
            self._exits,
        ):
            table.pop(container_id, None)

    def _exit(self, container_id: str, exit_code: int) -> None:
        self._timers.pop(container_id, None)
        self._term_sent.pop(container_id, None)
        self._exits.pop(container_id, None)
        status = self._containers.get(container_id)
        if status is None or status.state is not ContainerState.RUNNING:
            return
        status.state = ContainerState.EXITED
        status.finished_at = self._clock.now()
        status.exit_code = exit_code
        status.reason = REASON_COMPLETED if exit_code == 0 else REASON_ERROR
        callback = self._callbacks.pop(container_id, None)
        if callback is not None:
            callback(status)
