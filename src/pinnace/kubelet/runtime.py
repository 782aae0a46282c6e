"""The container runtime the node agent drives, and a simulated one.

`ContainerRuntime` is what the kubelet asks of a CRI runtime: start a container with its
cgroup settings (`LinuxContainerResources`), stop it (SIGTERM, then SIGKILL after a grace
period), remove it, and report what the running containers use (`list_container_stats`, as
CRI's ListContainerStats). The `ContainerStatus` a start returns is the container's record,
kept current by the runtime (state, exit code, log lines); the runtime reports the exit through
the callback given at the start. A restarted kubelet takes back the containers it had started
(`resume_container`). A runtime of real processes can implement the same interface.

`SimulatedRuntime` runs no processes: each container follows its `ContainerBehaviour` on the
clock (a resumed one as of its recorded start), on a `Machine` of so many cores and bytes of
memory, and the runtime plays the kernel:

- CPU: a container gets its demand up to its limit (the excess is throttled), and when the
  machine's cores cannot cover every container they are shared by cpu.shares
  (`pinnace.kubelet.usage.share_cpu`); a container given CPUs of its own (a cpuset) has them
  to itself, and the others share the rest. Computed when stats are asked for, never polled.
- Memory: a container whose working set goes above its memory limit is killed by the cgroup's
  OOM killer at that moment (exit code 137, reason OOMKilled). When the machine's memory (the
  system's own use included) would be exceeded, the node's OOM killer kills the running
  container with the highest oom_score (`pinnace.kubelet.oom`), one after another until the
  rest fit. Both moments are computed from the usage curves when containers start and stop, and
  set as timers; a node whose containers' peaks fit in its memory needs no timer at all.
"""

from __future__ import annotations

import functools
import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from pinnace.api.stats import ContainerStats
from pinnace.clock import Clock, Timer
from pinnace.kubelet.oom import OOMCandidate, oom_victim
from pinnace.kubelet.shapes import ShapeMemo
from pinnace.kubelet.usage import (
    MIN_CPU_SHARES,
    NANO,
    Started,
    cpu_shares,
    first_above,
    first_above_sum,
    share_cpu,
)
from pinnace.resources.names import CPU, MEMORY
from pinnace.resources.oom import CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, oom_score_adj
from pinnace.resources.pod import containers

if TYPE_CHECKING:
    from pinnace.kubelet.behaviour import ContainerBehaviour, ContainerUsage
    from pinnace.kubelet.shell import LogStream, Output, StartContext
    from pinnace.kubelet.volumes import WritableFiles

EXIT_CODE_SIGKILL = 137
EXIT_CODE_START_ERROR = 128
"""What containerd reports for a container whose process could not be started."""
REASON_START_ERROR = "StartError"
REASON_COMPLETED = "Completed"
REASON_ERROR = "Error"
REASON_OOM_KILLED = "OOMKilled"
CONTAINER_ID_SCHEME = "containerd://"
CRI_LOG_PREFIX_BYTES = len("2006-01-02T15:04:05.999999999Z stdout F ")
"""What the CRI log format adds to every line a container prints (timestamp, stream, tag)."""
CRI_MAX_LINE_BYTES = 16 * 1024
"""containerd's max_container_log_line_size: a longer line is written as partial lines (tag
P) of this many bytes, then the rest (tag F), each with its own prefix."""
CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024
"""The kubelet's default containerLogMaxSize (10Mi)."""
CONTAINER_LOG_MAX_FILES = 5
"""The kubelet's default containerLogMaxFiles."""


@dataclass(frozen=True)
class LogRotation:
    """The kubelet's container log rotation (containerLogMaxSize, containerLogMaxFiles)."""

    max_size: int = CONTAINER_LOG_MAX_SIZE
    max_files: int = CONTAINER_LOG_MAX_FILES


def cri_log_bytes(line: str) -> int:
    """What one printed line takes in a CRI log file: its bytes and newline, split into
    partial lines of CRI_MAX_LINE_BYTES, each with a timestamp, stream and tag."""
    size = len(line.encode()) + 1
    return size + CRI_LOG_PREFIX_BYTES * max(1, -(-size // CRI_MAX_LINE_BYTES))


@dataclass(frozen=True, slots=True)
class LinuxContainerResources:
    """The cgroup settings of a container, as the kubelet gives them to a CRI runtime."""

    cpu_shares: int = MIN_CPU_SHARES
    cpu_limit_nano_cores: int = 0
    """The CFS quota as a number of nanocores; 0: no limit."""
    memory_limit_bytes: int = 0
    """0: no limit."""
    oom_score_adj: int = 0
    cpuset_cpus: frozenset[int] = frozenset()
    """The CPUs it runs on alone (the static CPU manager's exclusive CPUs); empty: the shared
    pool, every CPU no container holds alone."""


@dataclass(frozen=True)
class Machine:
    """What a simulated runtime runs on: its cores and memory, and the memory the system's
    own daemons (the kubelet, the runtime, the OS) hold."""

    cpu_nano_cores: float = math.inf
    memory_bytes: float = math.inf
    system_memory_bytes: float = 0.0


class ContainerState(StrEnum):
    RUNNING = "running"
    EXITED = "exited"


class Ended(NamedTuple):
    """How a container's run ended."""

    finished_at: float
    exit_code: int
    reason: str
    message: str = ""
    """The runtime's message (a StartError's: why the process could not start)."""


@dataclass(slots=True)
class ContainerStatus:
    """One run of a container, as the runtime knows it (slotted: a node keeps one or two for
    every container it runs)."""

    key: ContainerKey
    """Its ID, compactly (`container_key`)."""
    name: str
    image: str
    image_id: str
    started_at: float
    sandbox: str = ""
    """The pod sandbox it runs in (the pod's uid), as CRI's Container.pod_sandbox_id."""
    log: Sequence[tuple[float, str]] = ()
    """(time, line) as the container printed them: a list once it printed (most containers
    print nothing, and an empty list for each would take more than the rest of the status)."""
    ended: Ended | None = None
    """How the run ended; None while it runs (one slot for what only an exited one has)."""
    layer: WritableFiles | None = None
    """Its writable layer: what its commands, and commands exec'd in it, write outside its
    volumes (the kubelet gives it when it starts the run)."""
    context: StartContext | None = None
    """What the run keeps of its commands' context, made once for it (at its start, or at
    the first exec): a command exec'd in it inherits the environment the container started
    with and sees the subPath files as they were then, whatever its ConfigMaps and Secrets say
    since. Dropped when the run ends: nothing is exec'd in an exited container."""

    @property
    def state(self) -> ContainerState:
        return ContainerState.RUNNING if self.ended is None else ContainerState.EXITED

    @property
    def finished_at(self) -> float:
        return 0.0 if self.ended is None else self.ended.finished_at

    @property
    def exit_code(self) -> int:
        return 0 if self.ended is None else self.ended.exit_code

    @property
    def reason(self) -> str:
        return "" if self.ended is None else self.ended.reason

    @property
    def message(self) -> str:
        return "" if self.ended is None else self.ended.message

    def print(self, lines: Iterable[tuple[float, str]]) -> None:
        """Add (time, line) to its log."""
        if isinstance(self.log, list):
            self.log.extend(lines)
        else:
            self.log = [*self.log, *lines]

    @property
    def id(self) -> str:
        """With its scheme, as containerStatuses[].containerID shows it."""
        return container_id_of(self.key)


ContainerKey = bytes | str
"""A container ID as the runtime keeps it (one for every container a node runs): the 32 bytes
of a `containerd://` ID's SHA-256 digest (half the memory of its hex digits), any other ID as
it is."""


def container_key(container_id: str) -> ContainerKey:
    """The key of the container `container_id`."""
    digits = container_id[len(CONTAINER_ID_SCHEME) :]
    if container_id.startswith(CONTAINER_ID_SCHEME) and len(digits) == 64:
        try:
            digest = bytes.fromhex(digits)
        except ValueError:
            return container_id
        if digest.hex() == digits:
            return digest
    return container_id


def container_id_of(key: ContainerKey) -> str:
    """The ID of the container of `key`, with its scheme."""
    return key if isinstance(key, str) else CONTAINER_ID_SCHEME + key.hex()


OnExit = Callable[[ContainerStatus], object]


class ContainerRuntime(ABC):
    oom_kills = 0
    """Containers the OOM killer has ended on this node (what cAdvisor counts as OOM events)."""
    changes = 0
    """How many times the running containers have changed (one started, ended, or got new
    limits): stats read before the last change miss something."""

    @abstractmethod
    def start_container(
        self,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
        resources: LinuxContainerResources | None = None,
        start_error: str = "",
    ) -> ContainerStatus:
        """Start a container of the pod sandbox `sandbox` (the pod's uid) under `resources`
        (none: unlimited); `on_exit` hears of its end, however it comes. With `start_error`
        (why its process cannot start, as CRI's StartContainer fails), the container is
        created but exits at once with EXIT_CODE_START_ERROR, reason StartError and that
        message, and a start time of the Unix epoch, as containerd reports a task that never
        started."""

    @abstractmethod
    def resume_container(
        self,
        container_id: str,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
        resources: LinuxContainerResources | None,
        started_at: float,
    ) -> ContainerStatus:
        """Take back the container `container_id` that an earlier run of the kubelet started
        at `started_at` (as the pod's status recorded it); `on_exit` hears of its end from now
        on. A runtime of real processes finds it by its ID, running or exited meanwhile; one
        that went down with the kubelet runs it on as of `started_at`. What it printed before
        is not in the status returned."""

    @abstractmethod
    def update_container_resources(
        self, container_id: str, resources: LinuxContainerResources
    ) -> None:
        """CRI's UpdateContainerResources: a running container's cgroup settings change in
        place (an in-place resize)."""

    @abstractmethod
    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """SIGTERM, then SIGKILL once `grace_seconds` have passed."""

    @abstractmethod
    def exit_container(self, container_id: str, exit_code: int) -> None:
        """The running container's command has ended, now, with `exit_code`: a simulated
        command that read the stdin an attach gave it (a runtime of real processes sees its
        processes end by themselves)."""

    @abstractmethod
    def hold_output(self, container_id: str) -> None:
        """The running container prints nothing more by its own plan: a simulated command that
        waited on its stdin is run again with the input an attach gave it, and that run prints
        the rest (a runtime of real processes has nothing to hold)."""

    @abstractmethod
    def remove_container(self, container_id: str) -> None:
        """Forget an exited container (its log goes with it); stop it first if running."""

    @abstractmethod
    def list_container_stats(self) -> dict[str, ContainerStats]:
        """What each container the runtime holds uses now, by container id: a running one its
        CPU, memory, PIDs, writable layer and logs; an exited one its writable layer and logs,
        on disk until it is removed."""

    def container_stats(self, container_id: str) -> ContainerStats | None:
        """What one container uses now; None once it is removed."""
        return self.list_container_stats().get(container_id)

    def disk_usage(self) -> tuple[int, int]:
        """The bytes of the writable layers and of the logs of every container the runtime
        holds, in all, as their stats say."""
        stats = self.list_container_stats().values()
        return sum(s.rootfs_used_bytes for s in stats), sum(s.logs_used_bytes for s in stats)

    @abstractmethod
    def running_usage(self) -> Mapping[ContainerKey, tuple[int, int]]:
        """The CPU (nano-cores) and memory working set (bytes) each running container (by
        `ContainerStatus.key`) uses now, as its stats say (not to be changed)."""

    def cpu_and_memory(self, containers: Iterable[ContainerKey]) -> tuple[int, int]:
        """The CPU (nano-cores) and memory working set (bytes) these running containers (by
        `ContainerStatus.key`) use now, in all, as their stats say."""
        by_key = self.running_usage()
        cpu = memory = 0
        for key in set(containers):
            found = by_key.get(key)
            if found is not None:
                cpu += found[0]
                memory += found[1]
        return cpu, memory

    @abstractmethod
    def list_containers(self) -> list[ContainerStatus]:
        """Every container the runtime holds, running or exited (until removed)."""

    def resources_of(self, status: ContainerStatus) -> LinuxContainerResources | None:
        """The cgroup settings of a running container; None where the runtime does not say."""
        return None


def linux_container_resources(
    pod: Mapping[str, Any], container: str, memory_capacity: int
) -> LinuxContainerResources:
    """The cgroup settings the kubelet gives `container` of `pod` on a node of
    `memory_capacity` bytes: cpu.shares from its CPU request, the CFS quota from its CPU limit,
    its memory limit, and oom_score_adj by QoS class."""
    for c in containers(pod, "containers", "initContainers", "ephemeralContainers"):
        if c.name == container:
            cpu_request, cpu_limit = c.requests.get(CPU), c.limits.get(CPU)
            memory_limit = c.limits.get(MEMORY)
            return LinuxContainerResources(
                cpu_shares=cpu_shares(cpu_request.milli_value() if cpu_request else 0),
                cpu_limit_nano_cores=cpu_limit.milli_value() * 1_000_000 if cpu_limit else 0,
                memory_limit_bytes=memory_limit.value() if memory_limit else 0,
                oom_score_adj=oom_score_adj(pod, container, memory_capacity),
            )
    return LinuxContainerResources()


_RESOURCES_BY_SHAPE: ShapeMemo[LinuxContainerResources] = ShapeMemo(
    1024, lambda name: name in (CONFIG_SOURCE_ANNOTATION, CONFIG_MIRROR_ANNOTATION)
)
"""A container's cgroup settings by its pod's shape (and the annotations that make a pod
critical), its name and the node's memory: what they are worked out from."""


def shaped_container_resources(
    pod: Mapping[str, Any], container: str, memory_capacity: int
) -> LinuxContainerResources:
    """`linux_container_resources`, worked out once for the pods of one shape."""
    return _RESOURCES_BY_SHAPE.of(
        pod,
        lambda: linux_container_resources(pod, container, memory_capacity),
        container,
        memory_capacity,
    )


def image_repository(image: str) -> str:
    """The image's repository without tag or digest: `nginx:1.27` is
    `docker.io/library/nginx`."""
    repository = image_reference(image).split("@", 1)[0]
    if repository.rfind(":") > repository.rfind("/"):
        repository = repository.rsplit(":", 1)[0]
    return repository


# Cached: every container reports its image's reference and ID, and the pods of a node mostly
# run the same few images, so their statuses share one string each.
@functools.lru_cache(maxsize=1024)
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


@functools.lru_cache(maxsize=1024)
def image_id(image: str) -> str:
    """A stable digest per image, as imageID shows it (`docker.io/library/nginx@sha256:…`)."""
    digest = hashlib.sha256(image_reference(image).encode()).hexdigest()
    return f"{image_repository(image)}@sha256:{digest}"


class SimulatedRuntime(ContainerRuntime):
    """Containers that follow their behaviour model on `clock`, on `machine`; `node` makes IDs
    unique."""

    def __init__(
        self,
        clock: Clock,
        node: str,
        machine: Machine | None = None,
        log_rotation: LogRotation | None = None,
    ) -> None:
        self._clock = clock
        self._node = node
        self.machine = machine or Machine()
        self.log_rotation = log_rotation or LogRotation()
        self._timers: dict[ContainerKey, Timer] = {}
        self._oom_timers: dict[ContainerKey, Timer] = {}
        self._term_sent: dict[ContainerKey, float] = {}
        self._exits: dict[ContainerKey, float] = {}
        """When a container being stopped will be gone."""
        self._running: dict[ContainerKey, _Running] = {}
        """The running containers (with their status), by ID."""
        self._exited_runs: dict[ContainerKey, ContainerStatus] = {}
        """The statuses of the exited containers not yet removed: with the running ones, every
        container it holds (in one table or the other, not both: a node runs many)."""
        self._memory_peaks = 0.0
        """The running containers' highest working sets, each at most its limit: while the
        system's memory and these fit in the machine, the node cannot run out of memory."""
        self._node_oom_timer: Timer | None = None
        self._later: dict[ContainerKey, tuple[Timer, float, list[Output]]] = {}
        """By container: the timer of the next lines it prints (and files it writes), when,
        and the lines."""
        self._exited: dict[ContainerKey, ContainerStats] = {}
        """What exited containers leave on disk until they are removed."""
        self._started = 0
        self._steady_figures: tuple[int, dict[ContainerKey, tuple[int, int]]] | None = None
        """`_cpu_and_memory_now` as of `changes`, while every running container's CPU and
        memory curves are steady: sampling thousands of quiet nodes does not share their CPUs
        out again each time."""

    def start_container(
        self,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
        resources: LinuxContainerResources | None = None,
        start_error: str = "",
    ) -> ContainerStatus:
        self._started += 1
        now = self._clock.now()
        # The start time in the seed: a restarted agent's runtime counts from 1 again.
        seed = f"{self._node}/{sandbox}/{name}/{now!r}/{self._started}".encode()
        key = hashlib.sha256(seed).digest()
        running = _Running.of(key, sandbox, name, image, now, behaviour, on_exit, resources)
        if behaviour.log:
            running.print((now, line) for line in behaviour.log.splitlines())
            running.rotate(self.log_rotation)
        self._run(running, behaviour)
        if start_error:
            self._over_at_start(running, EXIT_CODE_START_ERROR, REASON_START_ERROR, start_error)
            running.started_at = 0.0
        elif behaviour.run_seconds <= 0:
            self._over_at_start(running, behaviour.exit_code)
        return running

    def resume_container(
        self,
        container_id: str,
        sandbox: str,
        name: str,
        image: str,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
        resources: LinuxContainerResources | None,
        started_at: float,
    ) -> ContainerStatus:
        """The container went down with the agent: its behaviour carries on as counted from
        `started_at` (its usage, its exit, the lines it prints from now on); one whose run
        ended meanwhile exits at once, as of when it ended."""
        key = container_key(container_id)
        running = _Running.of(key, sandbox, name, image, started_at, behaviour, on_exit, resources)
        self._run(running, behaviour)
        return running

    def _run(self, running: _Running, behaviour: ContainerBehaviour) -> None:
        """Run the container `running` from its start time on (timers in the past fire at
        once: the caller has not seen its status yet)."""
        cid, started = running.key, running.started_at
        if behaviour.later is not None:
            self._print_later(running, behaviour.later, started)
        memory, limit = behaviour.usage.memory, running.resources.memory_limit_bytes
        self._running[cid] = running
        self.changes += 1
        if behaviour.run_seconds < math.inf:
            end = started + behaviour.run_seconds
            self._timers[cid] = self._clock.call_at(
                end, self._exit, cid, behaviour.exit_code, "", end
            )
        crossing = first_above(memory, limit) if limit else None
        if crossing is not None:
            end = started + crossing
            self._oom_timers[cid] = self._clock.call_at(
                end, self._exit, cid, EXIT_CODE_SIGKILL, REASON_OOM_KILLED, end
            )
        self._memory_peaks += running.memory_peak
        self._plan_node_oom()

    def update_container_resources(
        self, container_id: str, resources: LinuxContainerResources
    ) -> None:
        """New limits from now on: its CPU share and quota at once, and its memory limit, which
        OOM-kills it now if it uses more already, or when it next goes above."""
        key = container_key(container_id)
        running = self._running.get(key)
        if running is None:
            return
        self._memory_peaks -= running.memory_peak
        running.resources = resources
        self.changes += 1
        self._memory_peaks += running.memory_peak
        timer = self._oom_timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        limit = resources.memory_limit_bytes
        age = self._clock.now() - running.started_at
        crossing = first_above(running.usage.memory, limit, age) if limit else None
        if crossing is not None:
            end = running.started_at + crossing
            self._oom_timers[key] = self._clock.call_at(
                end, self._exit, key, EXIT_CODE_SIGKILL, REASON_OOM_KILLED, end
            )
        self._plan_node_oom()

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """The container exits `stop_seconds` after the first SIGTERM (with its
        `stop_exit_code`), or is killed when the grace period ends first (137), as one whose
        PID 1 ignores SIGTERM always is. Stopping again with a shorter grace period brings the
        kill forward."""
        key = container_key(container_id)
        running = self._running.get(key)
        if running is None:
            return
        now = self._clock.now()
        term_sent = self._term_sent.setdefault(key, now)
        stops = running.stop_exit_code
        on_term = term_sent + running.stop_seconds
        kill = now + max(grace_seconds, 0.0)
        if stops is not None and on_term <= kill:
            when, code = on_term, stops
        else:
            when, code = kill, EXIT_CODE_SIGKILL
        planned = self._exits.get(key)
        if planned is not None and planned <= when:
            return
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._exits[key] = when
        self._timers[key] = self._clock.call_at(when, self._exit, key, code)

    def exit_container(self, container_id: str, exit_code: int) -> None:
        self._exit(container_key(container_id), exit_code)

    def hold_output(self, container_id: str) -> None:
        later = self._later.pop(container_key(container_id), None)
        if later is not None:
            later[0].cancel()

    def remove_container(self, container_id: str) -> None:
        key = container_key(container_id)
        self._stopped(key)
        for table in (
            self._exited_runs,
            self._exited,
            self._term_sent,
            self._exits,
        ):
            table.pop(key, None)

    def list_containers(self) -> list[ContainerStatus]:
        return [*self._running.values(), *self._exited_runs.values()]

    def resources_of(self, status: ContainerStatus) -> LinuxContainerResources | None:
        return status.resources if isinstance(status, _Running) else None

    def list_container_stats(self) -> dict[str, ContainerStats]:
        now = self._clock.now()
        running = list(self._running.values())
        demands = [r.usage.cpu.at(now - r.started_at) for r in running]
        wants = [min(demand, r.cpu_limit) for demand, r in zip(demands, running, strict=True)]
        got = self._share_cpu(running, wants)
        found = {container_id_of(key): stats for key, stats in self._exited.items()}
        for r, demand, want, cpu in zip(running, demands, wants, got, strict=True):
            age = now - r.started_at
            found[r.id] = ContainerStats(
                name=r.name,
                cpu_usage_nano_cores=round(cpu),
                cpu_throttled_nano_cores=round(demand - want),
                memory_working_set_bytes=round(r.usage.memory.at(age)),
                rootfs_used_bytes=round(r.usage.ephemeral_storage.at(age)),
                logs_used_bytes=r.log_bytes(),
                pids=round(r.usage.pids.at(age)),
            )
        return found

    def disk_usage(self) -> tuple[int, int]:
        # The sums of list_container_stats' two figures, without their CPU shares.
        now = self._clock.now()
        rootfs = logs = 0
        for key, stats in self._exited.items():
            if key not in self._running:
                rootfs += stats.rootfs_used_bytes
                logs += stats.logs_used_bytes
        for r in self._running.values():
            rootfs += round(r.usage.ephemeral_storage.at(now - r.started_at))
            logs += r.log_bytes()
        return rootfs, logs

    def running_usage(self) -> Mapping[ContainerKey, tuple[int, int]]:
        # The figures of list_container_stats, but only the two, and of running containers.
        figures = self._steady_figures
        if figures is None or figures[0] != self.changes:
            figures = self._cpu_and_memory_now()
        return figures[1]

    def _cpu_and_memory_now(self) -> tuple[int, dict[ContainerKey, tuple[int, int]]]:
        """Each running container's CPU share and working set now, by key, with `changes`;
        kept while they stay so (every curve steady), until the running containers change."""
        now = self._clock.now()
        running = list(self._running.values())
        wants = [min(r.usage.cpu.at(now - r.started_at), r.cpu_limit) for r in running]
        got = self._share_cpu(running, wants)
        figures = (
            self.changes,
            {
                r.key: (round(share), round(r.usage.memory.at(now - r.started_at)))
                for r, share in zip(running, got, strict=True)
            },
        )
        steady = all(
            r.usage.cpu.constant_amount is not None and r.usage.memory.constant_amount is not None
            for r in running
        )
        self._steady_figures = figures if steady else None
        return figures

    def _share_cpu(self, running: list[_Running], wants: list[float]) -> list[float]:
        """Containers with CPUs of their own get what they want of them; the others share the
        rest of the machine by cpu.shares."""
        held = frozenset[int]().union(*(r.resources.cpuset_cpus for r in running))
        if not held:
            shares = [r.resources.cpu_shares for r in running]
            return share_cpu(wants, shares, self.machine.cpu_nano_cores)
        pool = max(self.machine.cpu_nano_cores - NANO * len(held), 0.0)
        shared = [i for i, r in enumerate(running) if not r.resources.cpuset_cpus]
        got = list(wants)
        pooled = share_cpu(
            [wants[i] for i in shared], [running[i].resources.cpu_shares for i in shared], pool
        )
        for i, cpu in zip(shared, pooled, strict=True):
            got[i] = cpu
        return got

    def _over_at_start(
        self, running: _Running, exit_code: int, reason: str = "", message: str = ""
    ) -> None:
        """A run that takes no time (`sh -c "exit 1"`, or one that could not start) is over
        before its start returns: the kubelet, which sees its containers through relists a
        second apart, never sees it running (nor ready). Its exit is told once the caller
        holds its status."""
        self._end(running.key, exit_code, reason, message=message)
        self._clock.loop.call_soon(running.on_exit, running)

    def _exit(
        self, key: ContainerKey, exit_code: int, reason: str = "", at: float = math.inf
    ) -> None:
        """The container ends, at `at` if that has passed already (a resumed container whose
        run ended while its agent was down), else now."""
        running = self._end(key, exit_code, reason, at)
        if running is not None:
            running.on_exit(running)

    def _end(
        self,
        key: ContainerKey,
        exit_code: int,
        reason: str = "",
        at: float = math.inf,
        message: str = "",
    ) -> _Running | None:
        running = self._running.get(key)
        self._stopped(key)
        self._term_sent.pop(key, None)
        self._exits.pop(key, None)
        if running is None:
            return None
        if reason == REASON_OOM_KILLED:
            self.oom_kills += 1
        running.ended = Ended(
            min(at, self._clock.now()),
            exit_code,
            reason or (REASON_COMPLETED if exit_code == 0 else REASON_ERROR),
            message,
        )
        running.context = None
        return running

    def _print_later(self, status: ContainerStatus, stream: LogStream, since: float) -> None:
        """One timer per container for the next lines it prints, counted from `since` (its
        start, or its last lines); the lines due before now (a resumed container's) were
        printed before the restart and are gone with the log."""
        batch = stream.next_lines()
        while batch is not None and since + batch[0] < self._clock.now():
            since += batch[0]
            batch = stream.next_lines()
        if batch is not None:
            when = since + batch[0]
            timer = self._clock.call_at(when, self._print, status, stream, batch[1])
            self._later[status.key] = (timer, when, batch[1])

    def _print(self, status: ContainerStatus, stream: LogStream, lines: list[Output]) -> None:
        del self._later[status.key]
        _due(status, self._clock.now(), lines)
        if isinstance(status, _Running):
            status.rotate(self.log_rotation)
        self._print_later(status, stream, self._clock.now())

    def _stopped(self, key: ContainerKey) -> None:
        """The container no longer runs: its timers go, and its memory is the node's again."""
        for timers in (self._timers, self._oom_timers):
            timer = timers.pop(key, None)
            if timer is not None:
                timer.cancel()
        running = self._running.pop(key, None)
        later = self._later.pop(key, None)
        if later is not None:
            later[0].cancel()
            if running is not None and later[1] <= self._clock.now() + 1e-6:
                # due as it exits (`echo done` as a script's last word): printed first
                _due(running, later[1], later[2])
        if running is None:
            return
        self.changes += 1
        self._exited_runs[key] = running
        age = self._clock.now() - running.started_at
        self._exited[key] = ContainerStats(
            name=running.name,
            rootfs_used_bytes=round(running.usage.ephemeral_storage.at(age)),
            logs_used_bytes=running.log_bytes(),
        )
        self._memory_peaks -= running.memory_peak
        if not self._running:
            self._memory_peaks = 0.0  # no float drift left behind
        self._plan_node_oom()

    # --- the node's OOM killer ---------------------------------------------------------------

    def _plan_node_oom(self) -> None:
        """Set the node OOM timer for when the running containers' memory first goes above
        what the system leaves of the machine (none while their peaks fit)."""
        if self._node_oom_timer is not None:
            self._node_oom_timer.cancel()
            self._node_oom_timer = None
        room = self.machine.memory_bytes - self.machine.system_memory_bytes
        if self._memory_peaks <= room:
            return
        now = self._clock.now()
        crossing, searched = first_above_sum(self._memory_curves(), room, now, math.inf)
        if crossing is not None:
            self._node_oom_timer = self._clock.call_at(crossing, self._node_out_of_memory)
        elif searched < math.inf:
            self._node_oom_timer = self._clock.call_at(searched, self._plan_node_oom)

    def _memory_curves(self) -> list[Started]:
        return [Started(r.usage.memory, r.started_at) for r in self._running.values()]

    def _node_out_of_memory(self) -> None:
        """Kill the container with the highest oom_score; its exit plans the next check,
        which kills again at once if the rest still do not fit."""
        self._node_oom_timer = None
        now = self._clock.now()
        candidates = [
            OOMCandidate(
                r.id,
                r.usage.memory.at(now - r.started_at),
                r.resources.oom_score_adj,
            )
            for r in self._running.values()
        ]
        victim = oom_victim(candidates, self.machine.memory_bytes)
        if victim is None:
            return
        self._exit(container_key(victim), EXIT_CODE_SIGKILL, REASON_OOM_KILLED)


def _due(status: ContainerStatus, when: float, lines: list[Output]) -> None:
    """What a container's script does at `when`: print lines, write files."""
    for line in lines:
        if not isinstance(line, str):
            line()
    status.print((when, line) for line in lines if isinstance(line, str))


_UNLIMITED = LinuxContainerResources()


@dataclass(slots=True)
class _Running(ContainerStatus):
    """The status of a container of a simulated runtime, with what the runtime keeps at hand
    while it runs (the rest is derived): one object rather than two, as a node keeps one for
    every container it runs."""

    usage: ContainerUsage = field(kw_only=True)
    resources: LinuxContainerResources = field(kw_only=True)
    stop_seconds: float = field(kw_only=True)
    """How long it takes to exit after SIGTERM."""
    stop_exit_code: int | None = field(kw_only=True)
    """What it exits with then."""
    on_exit: OnExit = field(kw_only=True)
    _log_bytes: int = 0
    """What its current log file takes on disk in the CRI log format, counted as lines are
    printed."""
    _rotated: tuple[int, ...] = ()
    """The sizes of its rotated log files, oldest first."""

    @classmethod
    def of(
        cls,
        key: ContainerKey,
        sandbox: str,
        name: str,
        image: str,
        started_at: float,
        behaviour: ContainerBehaviour,
        on_exit: OnExit,
        resources: LinuxContainerResources | None,
    ) -> _Running:
        return cls(
            key,
            name,
            image_reference(image),
            image_id(image),
            started_at,
            sandbox,
            usage=behaviour.usage,
            resources=resources or _UNLIMITED,
            stop_seconds=behaviour.stop_seconds,
            stop_exit_code=behaviour.stop_exit_code,
            on_exit=on_exit,
        )

    @property
    def cpu_limit(self) -> float:
        """Its CFS quota or its CPUs of its own, whichever is less (nanocores)."""
        return min(
            self.resources.cpu_limit_nano_cores or math.inf,
            NANO * len(self.resources.cpuset_cpus) or math.inf,
        )

    @property
    def memory_peak(self) -> float:
        """Its highest working set; at most its limit, as it is killed there."""
        peak, limit = self.usage.memory.peak, self.resources.memory_limit_bytes
        return min(peak, limit) if limit else peak

    def print(self, lines: Iterable[tuple[float, str]]) -> None:
        printed = len(self.log)
        ContainerStatus.print(self, lines)
        self._log_bytes += sum(cri_log_bytes(line) for _, line in self.log[printed:])

    def rotate(self, rotation: LogRotation) -> None:
        """The container log manager's rotation: once the current file is above the maximum
        size it becomes the newest rotated file, the oldest ones go so that at most
        max_files files are left with the new (empty) current one, and `kubectl logs` reads
        the new one (a new list: a reader following the log finishes the old one first)."""
        if self._log_bytes <= rotation.max_size:
            return
        kept = rotation.max_files - 1
        self._rotated = (*self._rotated, self._log_bytes)[-kept:] if kept > 0 else ()
        self._log_bytes = 0
        self.log = []

    def log_bytes(self) -> int:
        """What its log files take on disk in the CRI log format."""
        return self._log_bytes + sum(self._rotated)
