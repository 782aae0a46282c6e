"""A pod's status as the kubelet computes it (generateAPIPodStatus, getPhase and the pod
condition generators of pkg/kubelet/status), from the containers' records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from pinnace.clock import Timer, format_time, parse_time
from pinnace.kubelet.hooks import HookRun
from pinnace.kubelet.runtime import ContainerState, ContainerStatus, Ended, container_key

if TYPE_CHECKING:
    from pinnace.kubelet.probes import Prober, ProbeType

PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
TERMINAL_PHASES = (SUCCEEDED, FAILED)
CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
RUN_CONTAINER_ERROR = "RunContainerError"
"""kubecontainer.ErrRunContainer: the runtime could not start the container's process."""
POST_START_HOOK_ERROR = "PostStartHookError"
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
KUBELET_CONDITIONS = frozenset(
    ("PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers")
)
"""The condition types the kubelet owns (PodConditionByKubelet): the others, set by the
scheduler, controllers or users (DisruptionTarget, readiness gates), it keeps as the API has
them."""
T = TypeVar("T")


class Flagged(Protocol):
    """An object whose booleans are bits of one int."""

    flags: int


class BitFlag:
    """A boolean attribute kept as one bit of the object's `flags` (an int): a slot for every
    boolean of an object a node keeps per pod or container adds up."""

    def __init__(self, bit: int, doc: str) -> None:
        self.bit = bit
        self.__doc__ = doc

    @overload
    def __get__(self, obj: None, owner: type) -> BitFlag: ...

    @overload
    def __get__(self, obj: Flagged, owner: type) -> bool: ...

    def __get__(self, obj: Flagged | None, owner: type) -> BitFlag | bool:
        return self if obj is None else bool(obj.flags & self.bit)

    def __set__(self, obj: Flagged, value: bool) -> None:
        obj.flags = obj.flags | self.bit if value else obj.flags & ~self.bit


(
    _INIT,
    _RESTARTABLE,
    _HOOK_RUNNING,
    _STARTUP_PASSED,
    _READINESS_PASSED,
    _PROBE_KILLED,
    _KILLING,
    _IMAGE_PULLED,
    _EPHEMERAL,
    _REDEFINED,
) = (1 << i for i in range(10))


@dataclass(slots=True)
class _Seldom:
    """What only some containers need: a back-off, lifecycle hooks."""

    backoff: float = 0.0
    backoff_updated: float = 0.0
    pre_stop: HookRun | None = None
    post_start: Timer | None = None
    pre_stop_end: Timer | None = None
    turn: tuple[float, float, Timer] | None = None


class _SeldomAttribute(Generic[T]):
    """An attribute of a ContainerRecord kept in its `_seldom`, made when first set to other
    than `default`: most containers never back off nor have hooks, and a slot each adds
    up. Its name is the `_Seldom` field's."""

    def __init__(self, default: T, doc: str) -> None:
        self.default = default
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _SeldomAttribute[T]: ...

    @overload
    def __get__(self, obj: ContainerRecord, owner: type) -> T: ...

    def __get__(self, obj: ContainerRecord | None, owner: type) -> _SeldomAttribute[T] | T:
        if obj is None:
            return self
        seldom = obj._seldom
        if seldom is None:
            return self.default
        value: T = getattr(seldom, self.name)
        return value

    def __set__(self, obj: ContainerRecord, value: T) -> None:
        if obj._seldom is None:
            if value == self.default:
                return
            obj._seldom = _Seldom()
        setattr(obj._seldom, self.name, value)


@dataclass(slots=True, init=False)
class ContainerRecord:
    """What the kubelet knows of one container of a pod across its restarts (slotted, and its
    booleans bits of one int: one per container of every pod a node runs)."""

    name: str
    image: str
    current: ContainerStatus | None
    previous: ContainerStatus | None
    restart_count: int
    waiting: tuple[str, str]
    """(reason, message) while not running: before the first start, or in back-off."""
    probers: dict[ProbeType, Prober] | None
    """Its probers from the pod's start, if it has probes."""
    flags: int
    _seldom: _Seldom | None

    def __init__(
        self,
        name: str,
        image: str,
        *,
        init: bool,
        restartable: bool = False,
        ephemeral: bool = False,
        waiting: tuple[str, str] = ("", ""),
    ) -> None:
        self.name, self.image = name, image
        self.current = self.previous = None
        self.restart_count = 0
        self.waiting = waiting
        self.probers = self._seldom = None
        self.flags = _STARTUP_PASSED | _READINESS_PASSED
        self.init, self.restartable, self.ephemeral = init, restartable, ephemeral

    init = BitFlag(_INIT, "An init container.")
    restartable = BitFlag(_RESTARTABLE, "A sidecar: an init container with restartPolicy Always.")
    ephemeral = BitFlag(_EPHEMERAL, "An ephemeral container: started once, never restarted.")
    hook_running = BitFlag(
        _HOOK_RUNNING,
        "The current run's postStart hook has not completed: it does not count as started.",
    )
    startup_passed = BitFlag(
        _STARTUP_PASSED, "The current run's startup probe succeeded (or it has none)."
    )
    readiness_passed = BitFlag(
        _READINESS_PASSED, "The current run's readiness probe succeeds (or it has none)."
    )
    probe_killed = BitFlag(
        _PROBE_KILLED,
        "Killed by the kubelet after a failed liveness or startup probe, to be restarted.",
    )
    killing = BitFlag(_KILLING, "The current run is being killed.")
    image_pulled = BitFlag(
        _IMAGE_PULLED, "Its image was just pulled for its next start (which then pulls no more)."
    )
    redefined = BitFlag(
        _REDEFINED,
        "Killed because its image changed: it starts again whatever the restart policy.",
    )
    # Not annotated: descriptors, not dataclass fields.
    backoff = _SeldomAttribute(0.0, "Its restart back-off (seconds); 0: none yet.")
    backoff_updated = _SeldomAttribute(0.0, "When it was last restarted after an exit.")
    pre_stop = _SeldomAttribute[HookRun | None](None, "The current run's preStop hook.")
    post_start = _SeldomAttribute[Timer | None](None, "While its postStart hook runs, its end.")
    pre_stop_end = _SeldomAttribute[Timer | None](
        None, "While the preStop hook of a kill runs, its end."
    )
    turn = _SeldomAttribute[tuple[float, float, Timer] | None](
        None,
        "A sidecar of a pod being stopped, waiting for its turn: since when, the grace period "
        "it had left then, and when the wait ends at the latest.",
    )

    @property
    def running(self) -> bool:
        return self.current is not None and self.current.ended is None

    @property
    def container_id(self) -> str:
        return self.current.id if self.current is not None else ""

    @property
    def started_at(self) -> float:
        return self.current.started_at if self.current is not None else 0.0

    @property
    def probing(self) -> bool:
        """Probes may run: running, past its postStart hook."""
        return self.running and not self.hook_running

    @property
    def started(self) -> bool:
        return self.probing and self.startup_passed

    @property
    def run_shown(self) -> bool:
        """Its status shows a run (running or terminated), not a wait."""
        current = self.current
        if current is None or self.hook_running:
            return False
        return current.state is ContainerState.RUNNING or not self.waiting[0]

    @property
    def exited(self) -> bool:
        return self.current is not None and self.current.ended is not None

    @property
    def succeeded(self) -> bool:
        return self.exited and self.current is not None and self.current.exit_code == 0

    @property
    def ready(self) -> bool:
        """As the kubelet's prober manager reports it: an init container that is not a
        sidecar once it has exited with 0; an ephemeral container never (the prober manager
        leaves its status alone); any other once started and its readiness probe has passed
        (or it has none)."""
        if self.ephemeral:
            return False
        if self.init and not self.restartable:
            return self.succeeded
        return self.started and self.readiness_passed


def _terminated(status: ContainerStatus) -> dict[str, Any]:
    message = status.message
    return {
        "terminated": {
            "exitCode": status.exit_code,
            "reason": status.reason,
            **({"message": message} if message else {}),
            "startedAt": format_time(status.started_at),
            "finishedAt": format_time(status.finished_at),
            "containerID": status.id,
        }
    }


def _waiting(reason: str, message: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason, **({"message": message} if message else {})}}


def container_status_entry(c: ContainerRecord) -> dict[str, Any]:
    """One entry of containerStatuses (or initContainerStatuses, ephemeralContainerStatuses:
    the prober manager sets `started` on the others only)."""
    cur = c.current
    last: dict[str, Any] = {}
    if cur is None:
        state = _waiting(*c.waiting)
    elif c.hook_running:
        # Shown as the kubelet last wrote it, before the start its postStart hook holds up.
        state = _waiting(*(c.waiting if c.waiting[0] else (CONTAINER_CREATING, "")))
    elif cur.state is ContainerState.RUNNING:
        state = {"running": {"startedAt": format_time(cur.started_at)}}
    elif c.waiting[0]:
        state, last = _waiting(*c.waiting), _terminated(cur)
    else:
        state = _terminated(cur)
    if cur is not None and not last and c.previous is not None:
        last = _terminated(c.previous)
    shown = cur or c.previous
    entry: dict[str, Any] = {
        "name": c.name,
        "state": state,
        "lastState": last,
        "ready": c.ready,
        "restartCount": c.restart_count,
        "image": shown.image if shown else c.image,
        "imageID": shown.image_id if shown else "",
    }
    if not c.ephemeral:
        entry["started"] = c.started
    if shown is not None:
        entry["containerID"] = shown.id
    return entry


def restore_record(c: ContainerRecord, entry: Mapping[str, Any], now: float) -> None:
    """Fill `c` from its entry in a status an earlier run of the agent wrote (it restarted), as
    far as the status tells: the current and the last run (without the lines they printed),
    the restart count, and why it waits. A container whose postStart hook had not completed
    shows no start time: it counts as started `now`."""
    state = entry.get("state") or {}
    last = (entry.get("lastState") or {}).get("terminated")
    cid = entry.get("containerID", "")
    image, image_id = entry.get("image") or c.image, entry.get("imageID", "")
    c.restart_count = entry.get("restartCount", 0)
    c.previous = _recorded_run(c.name, image, image_id, last, now) if last else None
    waiting = state.get("waiting") or {}
    c.waiting = (waiting.get("reason", ""), waiting.get("message", ""))
    if "terminated" in state:
        c.current = _recorded_run(c.name, image, image_id, state["terminated"], now)
    elif c.previous is not None and c.previous.id == cid:
        c.current, c.previous = c.previous, None  # waiting to restart it (CrashLoopBackOff)
    elif cid:
        started = _time(state.get("running") or {}, "startedAt", now)
        c.current = ContainerStatus(container_key(cid), c.name, image, image_id, started)
        c.waiting = ("", "")


def _recorded_run(
    name: str, image: str, image_id: str, terminated: Mapping[str, Any], now: float
) -> ContainerStatus:
    return ContainerStatus(
        key=container_key(terminated.get("containerID", "")),
        name=name,
        image=image,
        image_id=image_id,
        started_at=_time(terminated, "startedAt", now),
        ended=Ended(
            _time(terminated, "finishedAt", now),
            terminated.get("exitCode", 0),
            terminated.get("reason", ""),
            terminated.get("message", ""),
        ),
    )


def _time(fields: Mapping[str, Any], key: str, default: float) -> float:
    """A time of a status someone else may have written: `default` when it is not one."""
    try:
        return parse_time(fields[key])
    except (KeyError, TypeError, ValueError):
        return default


def pod_phase(
    inits: Sequence[ContainerRecord],
    apps: Sequence[ContainerRecord],
    restart_policy: str,
    *,
    terminal: bool = False,
) -> str:
    """getPhase: what the containers' states make of the pod."""
    for c in inits:
        if c.restartable:
            continue
        if c.exited and not c.succeeded and restart_policy == "Never":
            return FAILED
        if not c.succeeded:
            return PENDING
    running = waiting = stopped = succeeded = 0
    for c in apps:
        if c.probing:
            running += 1
        elif c.current is None or (c.hook_running and c.previous is None):
            waiting += 1
        else:
            stopped += 1
            if not c.waiting[0] and c.succeeded:
                succeeded += 1
    if terminal:
        # A container that never started cannot have succeeded.
        return SUCCEEDED if stopped == succeeded and not waiting else FAILED
    if waiting:
        return PENDING
    if running:
        return RUNNING
    if stopped:
        if restart_policy == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        if restart_policy == "Never":
            return FAILED
        return RUNNING
    return PENDING


def pod_conditions(
    inits: Sequence[ContainerRecord],
    apps: Sequence[ContainerRecord],
    phase: str,
    previous: Mapping[str | None, tuple[str | None, ...]],
    now: str,
    gates: Sequence[str] = (),
    others: Sequence[Mapping[str, Any]] = (),
    *,
    sandbox: bool = True,
) -> list[dict[str, Any]]:
    """PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled, in the
    order the kubelet lists them; a transition time moves only when the status changes from
    the `previous` one (status and lastTransitionTime, by type). Ready also waits for the
    conditions named by the pod's readiness `gates` among the `others` (the API's conditions
    the kubelet does not own). PodReadyToStartContainers is True while
    the pod's `sandbox` is ready: set up (its volumes mounted) and not yet stopped with the
    pod (PodSandboxChanged)."""
    # GeneratePodInitializedCondition: a sidecar is initialized once started; an app container
    # shown running or terminated means the pod was initialized, whatever its sidecars do now.
    initialized = any(a.run_shown for a in apps)
    incomplete = [
        c.name
        for c in inits
        if not initialized and not (c.started if c.restartable else c.succeeded)
    ]
    unready = [c.name for c in (*inits, *apps) if (not c.init or c.restartable) and not c.ready]
    wanted: list[tuple[str, str, str, str]] = [
        ("PodReadyToStartContainers", "True" if sandbox else "False", "", "")
    ]
    if phase == SUCCEEDED and inits:
        wanted.append(("Initialized", "True", POD_COMPLETED, ""))
    elif incomplete:
        message = f"containers with incomplete status: [{' '.join(incomplete)}]"
        wanted.append(("Initialized", "False", "ContainersNotInitialized", message))
    else:
        wanted.append(("Initialized", "True", "", ""))
    if phase == SUCCEEDED:
        ready: tuple[str, str, str] = ("False", POD_COMPLETED, "")
    elif phase == FAILED:
        # Whatever its containers still show while they stop (generate.go's terminal phase).
        ready = ("False", POD_FAILED, "")
    elif unready:
        ready = (
            "False",
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        )
    else:
        ready = ("True", "", "")
    containers_ready = ready
    if ready[0] == "True" and (unmet := _unmet_gates(gates, others)):
        ready = ("False", "ReadinessGatesNotReady", ", ".join(unmet))
    wanted += [
        ("Ready", *ready),
        ("ContainersReady", *containers_ready),
        ("PodScheduled", "True", "", ""),
    ]
    conditions = []
    for kind, status, reason, message in wanted:
        old = previous.get(kind)
        since = old[1] if old is not None and old[0] == status else None
        condition: dict[str, Any] = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": since or now,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        conditions.append(condition)
    return conditions


def _unmet_gates(gates: Sequence[str], others: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why each readiness gate not met is not, in GeneratePodReadyCondition's words."""
    status = {c.get("type"): c.get("status") for c in others}
    unmet = []
    for gate in gates:
        if gate not in status:
            unmet.append(f'corresponding condition of pod readiness gate "{gate}" does not exist.')
        elif status[gate] != "True":
            unmet.append(
                f'the status of pod readiness gate "{gate}" is not "True", but {status[gate]}'
            )
    return unmet


def merged_conditions(
    others: Sequence[Mapping[str, Any]],
    own: Sequence[dict[str, Any]],
    disruption: dict[str, Any] | None,
) -> list[Mapping[str, Any]]:
    """The conditions the kubelet writes (mergePodStatus): the API's conditions it does not own
    first, then its own; its DisruptionTarget replaces one already there, else is added."""
    conditions: list[Mapping[str, Any]] = [*others, *own]
    if disruption is None:
        return conditions
    kinds = [c.get("type") for c in conditions]
    if disruption["type"] in kinds:
        conditions[kinds.index(disruption["type"])] = disruption
    else:
        conditions.append(disruption)
    return conditions
