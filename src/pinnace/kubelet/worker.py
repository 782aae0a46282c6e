"""One pod's life on the node: its containers started in order, restarted as its restartPolicy
says with the kubelet's back-off, stopped when it is deleted (pkg/kubelet's pod workers and
kuberuntime SyncPod, reduced to what a simulated runtime needs).

The pod's volumes (configMap, secret, downwardAPI, projected) are mounted before any
container starts (`pinnace.kubelet.volumes`; until they can be, the pod stays in
ContainerCreating). A volume that fails to be set up records a FailedMount event and is tried
again only after the volume manager's back-off (`pinnace.kubelet.mount_backoff`), each failed
try another event: a ConfigMap created meanwhile is mounted at the next try. Each container is
given the environment the kubelet builds for it (`pinnace.kubelet.environment`) and the files
of its volumeMounts, both once per start. Each container's image is made present first, as the
kubelet's image manager does (`pinnace.kubelet.image_service`): pulled as its imagePullPolicy
says, the pod's later containers waiting for the pull; a failed pull leaves it waiting in
ErrImagePull, then ImagePullBackOff until the pull back-off ends.

Init containers run one at a time, each to success, before the app containers start; a
sidecar (an init container with restartPolicy Always) starts in its turn and keeps running. A
container that exits is restarted under restartPolicy Always (any exit) or OnFailure (non-zero
exit). The first restart is immediate; each later one waits out a back-off that starts at 10 s
and doubles up to 5 minutes, counted from when the container exited, during which it waits
with the reason CrashLoopBackOff. A container that exits more than twice the maximum back-off
(10 minutes) after its last restart starts again from 10 s.

Probes (`pinnace.kubelet.probes`) run on their own timers from admission: a failed startup or
liveness probe kills the container (it is restarted as its restartPolicy says), readiness
decides whether it is ready. A container's postStart hook (`pinnace.kubelet.hooks`) holds up
the start of the containers after it, and a failed one kills it; every kill (deletion, probe,
deadline) runs the preStop hook first, within the grace period, then stops the container with
what is left of it, never less than 2 s. When the whole pod is stopped, a sidecar's SIGTERM
waits until the app containers and the sidecars after it have stopped (terminationOrdering).

A pod whose status shows its node's agent started it, handed to an agent that has no worker for
it, is taken back where that status left it (`resume`): the agent restarted, and as a restarted
kubelet finds its containers still running in the runtime, the pod keeps its start time, IP,
container IDs, restart counts and ready flags, a running container carries on as of when it
started, completed init containers are not run again, and a pod being deleted has its
containers stopped. Back-offs are forgotten, as a restarted kubelet forgets them: a container
waiting in CrashLoopBackOff restarts at once.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import operator
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from pinnace.api.core.image_reference import image_name_error
from pinnace.api.core.pod_shape import pod_containers
from pinnace.api.objects import Object
from pinnace.client import EventRecorder
from pinnace.clock import Clock, Timer, format_time, parse_time
from pinnace.kubelet.behaviour import (
    COMMAND_NOT_MODELLED,
    BehaviourError,
    ContainerBehaviour,
    container_argv,
    container_behaviour,
    context_free_behaviour,
    reads_context,
)
from pinnace.kubelet.commands import UnknownOutcome
from pinnace.kubelet.environment import ConfigError, expand_command, may_fail
from pinnace.kubelet.etc_files import container_hostname, etc_files
from pinnace.kubelet.eviction_storage import has_storage_limit
from pinnace.kubelet.exec import Attached
from pinnace.kubelet.hooks import POST_START, PRE_STOP, HookRun, hook_run
from pinnace.kubelet.image_files import start_error
from pinnace.kubelet.image_service import (
    ERR_IMAGE_NEVER_PULL,
    ERR_IMAGE_PULL,
    IMAGE_PULL_BACK_OFF,
    INVALID_IMAGE_NAME,
    ImageService,
    PullResult,
    pull_duration,
    should_pull,
)
from pinnace.kubelet.interning import Interned
from pinnace.kubelet.ipam import PodIP, PodIPs
from pinnace.kubelet.listeners import listens
from pinnace.kubelet.mount_backoff import MountBackoff
from pinnace.kubelet.pod_status import (
    CONTAINER_CREATING,
    CRASH_LOOP_BACK_OFF,
    CREATE_CONTAINER_CONFIG_ERROR,
    FAILED,
    KUBELET_CONDITIONS,
    PENDING,
    POD_INITIALIZING,
    POST_START_HOOK_ERROR,
    RUN_CONTAINER_ERROR,
    TERMINAL_PHASES,
    BitFlag,
    ContainerRecord,
    container_status_entry,
    merged_conditions,
    pod_conditions,
    pod_phase,
    restore_record,
)
from pinnace.kubelet.probes import (
    ProbeOutcomes,
    Prober,
    ProbeType,
    container_probes,
    probe_outcomes,
)
from pinnace.kubelet.runtime import (
    ContainerRuntime,
    ContainerStatus,
    LinuxContainerResources,
    OnExit,
)
from pinnace.kubelet.shell import ShellContext, StartContext, WebGet
from pinnace.kubelet.sources import SourceLookup, SourceName, referenced_sources
from pinnace.kubelet.volumes import (
    FAILED_MOUNT,
    Filesystem,
    PodVolumes,
    TokenSource,
    WritableFiles,
    mounts_sub_path,
)
from pinnace.resources.lists import ResourceList
from pinnace.resources.oom import is_critical_pod
from pinnace.store.codec import Codec

if TYPE_CHECKING:
    from pinnace.kubelet.admission import Hold
    from pinnace.kubelet.eviction import UsageCeiling
    from pinnace.kubelet.resize import PodAllocation

_log = logging.getLogger(__name__)
INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0
MINIMUM_GRACE_PERIOD = 2
"""The kubelet always gives a container this long between SIGTERM and SIGKILL."""
PULL_ERROR_RESYNC = 1.0
"""After a failed pull, the pod shows ErrImagePull until its next sync (prompted by the
failure), then ImagePullBackOff until the back-off ends."""
DEFAULT_GRACE_PERIOD = 30
_NO_NAMES: frozenset[SourceName] = frozenset()
_SOURCE_NAMES: Interned[frozenset[SourceName]] = Interned()
"""Most pods use only their namespace's kube-root-ca.crt."""
_NO_PROBERS: Mapping[ProbeType, Prober] = MappingProxyType({})


class PodHost(Protocol):
    """What a pod worker needs of its node agent."""

    clock: Clock
    runtime: ContainerRuntime
    recorder: EventRecorder
    host_ip: str
    sources: SourceLookup
    tokens: TokenSource
    """The service account tokens of projected volumes (`TokenManager.token`)."""
    packed_pod: PackedLookup
    codec: Codec
    pod_ips: PodIPs
    """The node's pod IPs: a sandbox's is allocated, a resumed pod's reserved."""
    image_service: ImageService
    """The node's image service: what its containers' images are pulled through."""
    unknown_command: UnknownOutcome
    """What a program the shell model does not know does in a container that is to finish."""
    booted: float
    """When the node started (what `uptime` in its containers counts from)."""

    def web(self, namespace: str) -> WebGet:
        """How a container of `namespace` reaches URLs (`wget`)."""

    def container_environment(
        self, pod: Mapping[str, Any], container: str, pod_ip: str
    ) -> dict[str, str]:
        """The container's environment. Raises ConfigError (a missing ConfigMap or Secret)."""

    def container_resources(
        self, pod: Mapping[str, Any], container: str
    ) -> LinuxContainerResources:
        """The cgroup settings the container runs under."""

    def node_allocatable(self) -> ResourceList:
        """The node's allocatable (a downward API resourceFieldRef of a limit not set)."""

    def files_read(self, uid: str) -> None:
        """A container of pod `uid` is about to read its files: bring them up to date (the
        token refreshes the simulated mode made no one see yet)."""

    def status_changed(self, worker: PodWorker) -> None:
        """The worker's status() changed: write it (and delete the pod once terminated)."""

    def pod_failed(self, worker: PodWorker, error: Exception) -> None:
        """A timer of the worker's raised `error`: the pod's failure, not the node's."""

    @property
    def container_exited(self) -> OnExit:
        """What the runtime is to call when a container of its exits: `PodWorker.exited` of
        the worker of the container's sandbox (the same object on every read)."""


PackedLookup = Callable[[Mapping[str, Any]], bytes | None]
"""A pod -> the compact form (`Codec.pack`) its informer's cache holds, or held, of that version
of it (`Informer.packed`), if any."""


def started_on_node(pod: Mapping[str, Any]) -> bool:
    """The pod's status says the agent of its node started it: an agent that has no worker
    for it restarted since."""
    return bool((pod.get("status") or {}).get("startTime"))


@dataclass(frozen=True)
class _Plan:
    """What one run of a container is given, from the pod as it is at the start."""

    behaviour: ContainerBehaviour
    post_start: HookRun | None = None
    pre_stop: HookRun | None = None
    outcomes: Mapping[ProbeType, ProbeOutcomes] | None = None
    context: StartContext | None = None
    """What it keeps of its context, when its start made it (`ContainerStatus.context`)."""
    argv: Sequence[str] = ()
    """What it runs: its command and args (`container_argv`)."""


def differs_semantically(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """v1.32's podsDifferSemantically (pkg/kubelet/config/config.go): whether the two versions
    of a pod differ in spec, labels, annotations or deletion (timestamp, grace period). Its
    annotations' comparison leaves out the kubelet's own (config.source and the like), which
    the API's pods have none of; this compares them all, so a change of one only takes the
    longer way (`PodWorker.update`)."""
    m, n = old["metadata"], new["metadata"]
    return (
        old.get("spec") != new.get("spec")
        or m.get("labels") != n.get("labels")
        or m.get("annotations") != n.get("annotations")
        or m.get("deletionTimestamp") != n.get("deletionTimestamp")
        or m.get("deletionGracePeriodSeconds") != n.get("deletionGracePeriodSeconds")
    )


def _container_specs(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["name"]: c for c in pod_containers(pod.get("spec") or {})}


def _transitions(conditions: Iterable[Mapping[str, Any]]) -> tuple[str | None, ...]:
    """The type, status and lastTransitionTime of each condition, in a row: all that the next
    status needs of them, in a fraction of their memory (a node keeps them for every pod), and
    shared by the pods whose conditions changed alike in the same second."""
    transitions = tuple(
        sys.intern(v) if isinstance(v, str) else v
        for c in conditions
        for v in (c.get("type"), c.get("status"), c.get("lastTransitionTime"))
    )
    return _TRANSITIONS(transitions)


def _own_transitions(conditions: Iterable[Mapping[str, Any]]) -> tuple[str | None, ...]:
    """`_transitions` of the conditions `pod_conditions` made: each has the three fields, of
    strings shared already (constants, a second's `format_time`, the transitions before)."""
    return _TRANSITIONS(tuple(itertools.chain.from_iterable(map(_TRANSITION, conditions))))


_TRANSITION = operator.itemgetter("type", "status", "lastTransitionTime")
_TRANSITIONS: Interned[tuple[str | None, ...]] = Interned(1024)
_ENVIRONMENTS: Interned[tuple[tuple[str, str], ...]] = Interned(1024)
"""What the running containers keep of their environments (`StartContext`): the pods of one
template are given the same."""


def _conditions(transitions: Sequence[str | None]) -> dict[str | None, tuple[str | None, ...]]:
    """The (status, lastTransitionTime) of each condition of `transitions`, by type."""
    rows = zip(transitions[::3], transitions[1::3], transitions[2::3], strict=True)
    return {t: (s, since) for t, s, since in rows}


def _copy(pod: Object) -> Object:
    """A copy of `pod` that shares nothing with it, as unpacking gives."""
    copied: Object = orjson.loads(orjson.dumps(pod))
    return copied


def go_duration(seconds: float) -> str:
    """A whole number of seconds as Go prints a time.Duration: 10s, 1m20s, 5m0s."""
    whole = int(seconds)
    minutes, rest = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{rest}s"
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


class _PodReader:
    """The worker's pod for one pass of its sync: unpacked at the first read (`read_pod`),
    unless given, then the same dict for the rest of the pass, which only reads it; and its
    containers' specs by name, found once in the pass (`container`)."""

    __slots__ = ("_pod", "_read", "_specs")

    def __init__(self, read: Callable[[], Object], pod: Object | None = None) -> None:
        self._read = read
        self._pod = pod
        self._specs: dict[str, Mapping[str, Any]] | None = None

    def __call__(self) -> Object:
        pod = self._pod
        if pod is None:
            pod = self._pod = self._read()
        return pod

    def container(self, name: str) -> Mapping[str, Any]:
        """The spec of the pod's container `name` ({} when it has none of that name)."""
        specs = self._specs
        if specs is None:
            specs = self._specs = _container_specs(self())
        return specs.get(name) or {}


class PodWorker:
    """The pod itself is kept packed (`read_pod` unpacks it), in the very bytes its informer's
    cache holds when it has them (`PodHost.packed_pod`), or, with a codec that does not deflate,
    as given (`read_pod` copies it): a node keeps a worker for every pod it runs, and reads
    the whole pod only to start a container or to evict it. What is read more often is kept
    apart, read without unpacking: its identity, deletion, recorded phase, QoS
    class, priority and criticality, and what it requests (its `hold`). It also keeps what its
    agent holds for the pod (`hold`, `ceiling`, the status writer): one object per pod rather
    than an entry in a dict by uid for each."""

    # Slots: over 30 attributes would give every worker a dict of its own (~2 KB).
    __slots__ = (
        "_deadline",
        "_etc",
        "_failure",
        "_foreign",
        "_gates",
        "_given",
        "_grace",
        "_ip",
        "_mount_backoff",
        "_mount_failures",
        "_mount_retry",
        "_packed",
        "_recorded_phase",
        "_timer",
        "_transitions",
        "allocation",
        "apps",
        "ceiling",
        "ceiling_annotations",
        "ceiling_ephemerals",
        "ephemerals",
        "flags",
        "hold",
        "host",
        "inits",
        "name",
        "namespace",
        "phase",
        "priority",
        "qos_class",
        "resource_version",
        "restart_policy",
        "source_names",
        "start_time",
        "status_written",
        "uid",
        "volumes",
        "writer",
    )

    begun = BitFlag(1, "Started or resumed: until then, nothing runs.")
    deleting = BitFlag(2, "Its pod has a deletionTimestamp.")
    terminating = BitFlag(4, "Its containers are being stopped after a deletion.")
    terminated = BitFlag(8, "All containers stopped after a deletion: the pod may be deleted now.")
    _reported = BitFlag(
        16, "Its own status was made (the conditions carry on from the API's until then)."
    )
    dirty = BitFlag(32, "Its status changed since the agent's writer last took it.")
    unsynced = BitFlag(
        64, "The agent's last write of its status failed: it is tried again at the next sync."
    )
    critical = BitFlag(
        128, "A static, mirror or system-critical pod: the eviction manager never evicts it."
    )
    storage_limited = BitFlag(
        256, "It has an ephemeral-storage limit, which its disk use may exceed (and be evicted)."
    )
    pulling = BitFlag(
        512, "An image of its is being pulled: its sync waits for it, as the kubelet's blocks."
    )

    def __init__(self, host: PodHost, pod: Mapping[str, Any]) -> None:
        self.host = host
        self.flags = 0
        m = pod["metadata"]
        self.uid: str = m["uid"]
        self.namespace: str = sys.intern(m["namespace"])
        self.name: str = m["name"]
        spec = pod.get("spec") or {}
        self.restart_policy: str = sys.intern(spec.get("restartPolicy") or "Always")
        # Tuples: the containers are fixed, and most pods have no init container (an empty
        # tuple is shared, an empty list is not).
        self.inits: tuple[ContainerRecord, ...] = tuple(
            ContainerRecord(
                sys.intern(c["name"]),
                sys.intern(c.get("image", "")),
                init=True,
                restartable=c.get("restartPolicy") == "Always",
                waiting=(POD_INITIALIZING, ""),
            )
            for c in spec.get("initContainers") or ()
        )
        first_wait = POD_INITIALIZING if self.inits else CONTAINER_CREATING
        self.apps: tuple[ContainerRecord, ...] = tuple(
            ContainerRecord(
                sys.intern(c["name"]),
                sys.intern(c.get("image", "")),
                init=False,
                waiting=(first_wait, ""),
            )
            for c in spec.get("containers") or ()
        )
        self.ephemerals: tuple[ContainerRecord, ...] = ()
        """Its ephemeral containers', in the order they were added (`set_pod`)."""
        self.volumes = PodVolumes.of(pod)
        names = referenced_sources(pod) | self.volumes.source_names(pod)
        self.source_names = _SOURCE_NAMES(frozenset(names)) if names else _NO_NAMES
        """The ConfigMaps and Secrets its containers take environment or files from."""
        self._mount_failures: Sequence[str] = ()
        self._mount_backoff: MountBackoff | None = None
        self._mount_retry: Timer | None = None
        """Set while claim volumes wait: when the sync's wait for them times out."""
        self._ip: PodIP = ""
        self._etc: WritableFiles | None = None
        """Its /etc files (`etc_files`), once a container's commands first look."""
        self.start_time = 0.0
        self.phase = "Pending"
        self._grace = 0
        """The grace period its containers are being stopped with (its deletion's, its
        failure's, or its own for its sidecars): a later kill may only shorten it."""
        self._transitions: tuple[str | None, ...] = ()
        """Of the conditions last reported, or the API's until then."""
        self._timer: Timer | None = None
        self._deadline: Timer | None = None
        self._failure: tuple[str, str, dict[str, Any] | None] | None = None
        """Why the kubelet failed the pod as a whole: status.reason and status.message, and
        the DisruptionTarget condition of an evicted pod (one slot: few pods fail)."""
        self.hold: Hold | None = None
        """What the agent counts it as holding of the node, until it finishes."""
        self.allocation: PodAllocation | None = None
        """With in-place resize on: the resources its containers are allocated and run with
        (`pinnace.kubelet.resize`)."""
        self.ceiling: UsageCeiling | None = None
        """The most the agent counts it as using, as of its annotations and ephemeral
        containers then."""
        self.ceiling_annotations: tuple[tuple[str, str], ...] = ()
        self.ceiling_ephemerals = 0
        self.writer: asyncio.Task[None] | None = None
        """The agent's task writing its status, while it runs."""
        self.status_written: int | None = None
        """The resourceVersion of the agent's last write of its status."""
        self._given: Mapping[str, Any] | None = None
        """The pod as last given (`set_pod`) until its volumes are first set up: its start, and
        the sync that follows the first token (which its volumes wait for), read it rather than
        unpack it again (the pod's informer gave it a moment before)."""
        self.set_pod(pod)

    def empty_dir_used_bytes(self) -> dict[str, int]:
        return self.volumes.empty_dir_used_bytes()

    def read_pod(self) -> Object:
        """The pod as the API last gave it, but for its status, of which only the QoS class is
        kept: unpacked on every call (a new dict), so only for what needs the whole pod."""
        held = self._packed
        pod = self.host.codec.unpack(held) if isinstance(held, bytes) else _copy(held)
        pod["status"] = {"qosClass": self.qos_class} if self.qos_class else {}
        return pod

    def _as_read(self, pod: Mapping[str, Any]) -> Object:
        """`pod`, the version the worker holds, as `read_pod` gives it: its parts shared with
        `pod`, to be read only."""
        return {**pod, "status": {"qosClass": self.qos_class} if self.qos_class else {}}

    def set_pod(self, pod: Mapping[str, Any]) -> None:
        """Take `pod` as its latest version (packed, and what is read often kept apart)."""
        m, spec = pod["metadata"], pod.get("spec") or {}
        self.deleting = bool(m.get("deletionTimestamp"))
        self.priority: int = spec.get("priority") or 0
        self.critical = is_critical_pod(pod)
        self.storage_limited = has_storage_limit(pod)
        gates = spec.get("readinessGates") or ()
        self._gates = tuple(g.get("conditionType", "") for g in gates)
        self._add_ephemerals(spec)
        self._take_status(pod)

    def reconciles(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Whether `new` is for this worker a reconcile of `old`, the version it last took:
        the same in all that v1.32's config source weighs (podsDifferSemantically: spec,
        labels, annotations, deletion), so the kubelet takes only its status (checkAndUpdatePod
        makes it a RECONCILE, which starts no sync of the pod's workers). Only where taking it
        whole (`update`) would do nothing more: a worker begun, neither deleting, nor waiting
        for its configuration, nor following its labels in files, nor resizing in place."""
        return (
            self.begun
            and not self.deleting
            and self.allocation is None
            and not self.volumes.follows_labels
            and int(old["metadata"].get("resourceVersion") or 0) == self.resource_version
            and not self.config_blocked
            and not differs_semantically(old, new)
        )

    def reconcile(self, pod: Mapping[str, Any]) -> None:
        """Take `pod`, a reconcile of the version last taken (`reconciles`): its status."""
        self._take_status(pod)

    def _take_status(self, pod: Mapping[str, Any]) -> None:
        """Take the pod's version, status and packed form (`set_pod`)."""
        m, status = pod["metadata"], pod.get("status") or {}
        # An int: half the memory of the string (0: none); mostly the version of the agent's
        # last status write, and then the same int.
        version = int(m.get("resourceVersion") or 0)
        self.resource_version = version if version != self.status_written else self.status_written
        self._recorded_phase: str = sys.intern(status.get("phase", PENDING))
        self.qos_class: str = sys.intern(status.get("qosClass") or "")
        conditions = status.get("conditions") or ()
        if not self._reported:
            self._transitions = _transitions(conditions)
        # The API's conditions of others, kept in every status written (mergePodStatus).
        self._foreign = tuple(c for c in conditions if c.get("type") not in KUBELET_CONDITIONS)
        # The status is the worker's to write: the API's is not read (nor kept in a pack of
        # the worker's own).
        shared = self.host.packed_pod(pod)
        if shared is not None:
            self._packed: bytes | Object = shared
        elif self.host.codec.deflates:
            self._packed = self.host.codec.pack({**pod, "status": {}})
        else:
            # A codec that does not deflate keeps nothing smaller than the pod itself (the
            # informer's cache holds it so): its parts are held as given, copied when read.
            self._packed = {**pod, "status": {}}
        self._given = pod if not self.begun or not self.volumes.mounted else None

    def _add_ephemerals(self, spec: Mapping[str, Any]) -> None:
        """Records for the ephemeral containers added to the pod since (they are never
        removed), waiting as convertToAPIContainerStatuses shows a container not yet made.
        None once the pod has stopped: v1.32's pod worker takes no update of a terminated pod,
        so the kubelet never gives such a container a status."""
        added = spec.get("ephemeralContainers") or ()
        if len(added) == len(self.ephemerals) or self.stopped:
            return
        known = {c.name for c in self.ephemerals}
        first_wait = POD_INITIALIZING if self.inits else CONTAINER_CREATING
        self.ephemerals += tuple(
            ContainerRecord(
                sys.intern(c["name"]),
                sys.intern(c.get("image", "")),
                init=False,
                ephemeral=True,
                waiting=(first_wait, ""),
            )
            for c in added
            if c["name"] not in known
        )

    @property
    def containers(self) -> tuple[ContainerRecord, ...]:
        """The records of its init, app and ephemeral containers."""
        return self.inits + self.apps + self.ephemerals

    def requested(self, resource: str) -> int:
        """Its effective request of `resource`, as its agent admitted it (its `hold`: cpu in
        millicores, the rest in units); 0 once it holds nothing."""
        for name, amount in self.hold.requests if self.hold is not None else ():
            if name == resource:
                return amount
        return 0

    def metadata(self) -> Mapping[str, Any]:
        """The pod's identity as of its last version: what its status patches, its deletion
        and its events name it by."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resourceVersion": str(self.resource_version) if self.resource_version else "",
        }

    def reference(self) -> Mapping[str, Any]:
        """The pod as its events name it (their involvedObject)."""
        return {"apiVersion": "v1", "kind": "Pod", "metadata": self.metadata()}

    @property
    def pod_ip(self) -> str:
        """Its IP, once its sandbox is set up."""
        ip = self._ip
        return ip if type(ip) is str else self.host.pod_ips.text(ip)

    @property
    def config_blocked(self) -> bool:
        """A container waits for its configuration (a ConfigMap, a Secret, a model
        annotation), or the volumes for their ConfigMaps and Secrets."""
        return not self.volumes.mounted or any(
            c.waiting[0] == CREATE_CONTAINER_CONFIG_ERROR for c in self.inits + self.apps
        )

    @property
    def follows_sources(self) -> bool:
        """Waits for a ConfigMap or Secret, or has files to keep up to date with theirs."""
        return self.config_blocked or bool(self.volumes.sources)

    def source_changed(self) -> None:
        """A ConfigMap or Secret it uses changed: retry what waits for it, update mounted
        files."""
        if self.terminating or self.finished:
            return
        if self.config_blocked:
            self.sync()
        else:
            self.volumes.mount(
                self.read_pod(), self.host.sources, self.host.tokens, self.host.node_allocatable
            )

    @property
    def finished(self) -> bool:
        """In a terminal phase: nothing more is started (its sidecars and ephemeral containers
        may still be stopping)."""
        return self.phase in TERMINAL_PHASES

    @property
    def stopped(self) -> bool:
        """Finished and none of its containers running: the v1.32 pod worker's terminated
        pod, which no longer holds node resources (filterOutInactivePods) nor takes updates."""
        return self.finished and not any(c.running for c in self.containers)

    # --- events ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start what can start (`sync`)."""
        self.start_time = self.host.clock.now()
        read = self._reader()
        self._begin(read)
        self._sync(read)

    def resume(self, pod: Mapping[str, Any]) -> None:
        """Take the pod back where the status an earlier run of the agent wrote left it, as a
        restarted kubelet finds its containers in the runtime: its start time, IP and
        containers carry on (a running one as of its start, completed init containers are not
        run again); then `sync`, or stop them if the pod is being deleted. `pod` is the one
        the worker was made with."""
        self._given = None
        status = pod.get("status") or {}
        now = self.host.clock.now()
        try:
            self.start_time = parse_time(status["startTime"])
        except ValueError:
            self.start_time = now
        recorded = status.get("podIP") or ""
        if recorded:
            self._ip = self.host.pod_ips.reserve(recorded)
        entries = {
            e.get("name"): e
            for e in (
                *(status.get("initContainerStatuses") or ()),
                *(status.get("containerStatuses") or ()),
                *(status.get("ephemeralContainerStatuses") or ()),
            )
        }
        for c in self.containers:
            entry = entries.get(c.name)
            if entry is not None:
                restore_record(c, entry, now)
        self._begin(_PodReader(self.read_pod))
        for c in self.containers:
            entry = entries.get(c.name)
            if entry is not None and c.current is not None:
                self._resume(c, entry)
        self.phase = pod_phase(self.inits, self.apps, self.restart_policy)
        if self.deleting:
            self.terminate(pod["metadata"].get("deletionGracePeriodSeconds"))
        else:
            self.sync()

    def _guarded(self, callback: Callable[..., None], *args: Any) -> None:
        """A timer's or a prober's `callback`: what it raises is the pod's failure
        (PodHost.pod_failed)."""
        try:
            callback(*args)
        except Exception as e:
            self.host.pod_failed(self, e)

    def _begin(self, read: _PodReader) -> None:
        """Probers for the containers that run on, and the active deadline, from the pod's
        start."""
        self.begun = True
        for c in self.inits + self.apps:
            if not c.init or c.restartable:
                self._add_probers(c, read.container(c.name))
        deadline = (read().get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is not None:
            self._deadline = self.host.clock.call_at(
                self.start_time + deadline, self._guarded, self._deadline_exceeded
            )

    def update(self, pod: Mapping[str, Any]) -> None:
        ephemerals = len(self.ephemerals)
        self.set_pod(pod)
        grace = pod["metadata"].get("deletionGracePeriodSeconds")
        if self.deleting and (not self.terminating or (grace is not None and grace < self._grace)):
            self.terminate(grace)  # again when a second delete shortened the grace period
        elif self._new_images(pod) or self.config_blocked or len(self.ephemerals) > ephemerals:
            # A new image to run, annotations that may be fixed now, or an ephemeral container
            self.sync()
        elif self.volumes.follows_labels and not self.finished:
            host = self.host
            failures = self.volumes.follow_labels(
                pod, host.sources, host.tokens, host.node_allocatable
            )
            self._mount_failed(list(dict.fromkeys([*self._mount_failures, *failures])))

    def _new_images(self, pod: Mapping[str, Any]) -> bool:
        """Take the images the pod's containers name now (the one field of a container an
        update may change); whether one changed. A running container whose image changed is
        killed to start again from the new one, whatever the restart policy (computePodActions:
        "Container X definition changed, will be restarted"); one that waits or has exited
        takes it at its next start. The new definition has a back-off of its own (the stable
        key of kuberuntime's doBackOff holds the container's hash): none yet."""
        if self.terminating or self.finished:
            return False
        spec = pod.get("spec") or {}
        changed = False
        for records, specs in (
            (self.inits, spec.get("initContainers")),
            (self.apps, spec.get("containers")),
        ):
            for c, ctr in zip(records, specs or (), strict=False):
                image = ctr.get("image") if isinstance(ctr, dict) else None
                if not image or image == c.image or (c.init and c.succeeded):
                    continue
                c.image, c.backoff, changed = image, 0.0, True
                if c.running and not c.killing and not c.init:
                    c.probe_killed = c.redefined = True  # restarted at once
                    message = f"Container {c.name} definition changed, will be restarted"
                    self._kill(c, message, self._pod_grace())
        return changed

    def terminate(self, grace: int | None) -> None:
        """The pod is being deleted: stop its containers within its grace period (its
        deletionGracePeriodSeconds)."""
        again = self.terminating
        self.terminating = True
        self._cancel_timer()
        self._grace = grace or 0
        self._stop_probers(ProbeType.LIVENESS, ProbeType.STARTUP)
        for c in self.containers:
            c.waiting = ("", "") if c.current is not None else c.waiting
            if not c.running or c.current is None:
                continue
            if again or c.killing:
                self._kill_sooner(c, self._grace)
            else:
                self._kill(c, f"Stopping container {c.name}", self._grace, ordered=True)
        self._check_stopped()

    def forget(self) -> None:
        """The pod is gone from the API: drop its containers, its IP and its pull back-offs
        (a pull under way is then ignored)."""
        self.begun = False
        self._given = None
        self.host.image_service.forget(self._pull_key(c.image) for c in self.containers)
        self._cancel_timer()
        for timer in (self._deadline, self._mount_retry):
            if timer is not None:
                timer.cancel()
        self._stop_probers(*ProbeType)
        for c in self.containers:
            self._end_hooks(c)
        for c in self.containers:
            for status in (c.current, c.previous):
                if status is not None:
                    self.host.runtime.remove_container(status.id)
        if self._ip != "":
            self.host.pod_ips.release(self._ip)
            self._ip = ""

    # --- sync --------------------------------------------------------------------------------

    def sync(self) -> None:
        """Start or restart what should run now; publish the status if it changed."""
        self._sync(self._reader())

    def _reader(self) -> _PodReader:
        """The pod for one pass: the one given, while the worker holds it."""
        given = self._given
        return _PodReader(self.read_pod, self._as_read(given) if given is not None else None)

    def _sync(self, read: _PodReader) -> None:
        """`sync`, reading the pod through `read`: once at most in a pass."""
        if self.terminating or self.finished:
            return
        self._cancel_timer()
        if not self.volumes.mounted and not self._mount(read()):
            self.host.status_changed(self)
            return
        self._given = None
        wake: list[float] = []
        if self._ip == "":  # the sandbox, once the volumes are mounted
            self._ip = self.host.pod_ips.allocate()
            # computePodActions returns once it has planned the sandbox and first init
            # container: ephemeral containers wait for the next sync.
            if self.ephemerals:
                wake.append(self.host.clock.now())
        else:
            for c in self.ephemerals:
                if c.current is None:  # started once, even before initialization, never again
                    self._start(c, wake, read)
        if self._sync_init_containers(wake, read):
            for c in self.apps:
                if c.current is None:
                    self._start(c, wake, read)
                elif c.exited and (c.redefined or self._should_restart(c.current.exit_code)):
                    self._restart(c, wake, read)
                if c.hook_running:
                    break  # the kubelet starts the next container once the hook completes
        self.phase = pod_phase(self.inits, self.apps, self.restart_policy)
        if self.finished:
            self._stop_probers(*ProbeType)
            self._stop_sidecars()
        elif wake:
            self._timer = self.host.clock.call_later(
                max(min(wake) - self.host.clock.now(), 0.0), self._guarded, self.sync
            )
        self.host.status_changed(self)

    def _mount(self, pod: Mapping[str, Any]) -> bool:
        """Set up the pod's volumes but those waiting out their back-off; a FailedMount event
        for each that fails, and a sync when the first may be tried again."""
        host, backoff = self.host, self._mount_backoff
        now = host.clock.now()
        waiting = backoff.waiting(now) if backoff is not None else ()
        failures = self.volumes.mount(
            pod, host.sources, host.tokens, host.node_allocatable, waiting
        )
        self._mount_failures = tuple(failures.values())  # most pods: the empty one, shared
        if failures and backoff is None:
            backoff = self._mount_backoff = MountBackoff()  # only a failing pod pays for one
        if backoff is not None:
            for volume, message in failures.items():
                host.recorder.event(self.reference(), "Warning", FAILED_MOUNT, message)
                backoff.failed(volume, now)
            backoff.forget(v for v in self.volumes.files if v not in waiting and v not in failures)
            self._retry_mount_at(backoff.next_try())
        return self.volumes.mounted

    def _retry_mount_at(self, when: float | None) -> None:
        """Sync at `when`, the first time a waiting volume may be tried again (none: no
        volume waits, or all are mounted)."""
        if self._mount_retry is not None:
            self._mount_retry.cancel()
            self._mount_retry = None
        if when is not None and not self.volumes.mounted:
            self._mount_retry = self.host.clock.call_at(when, self._guarded, self._retry_mount)

    def _retry_mount(self) -> None:
        self._mount_retry = None
        self.sync()

    def _mount_failed(self, failures: list[str]) -> None:
        """A FailedMount event for each of `failures` that is new; they are the volumes'
        failures now."""
        for message in failures:
            if message not in self._mount_failures:
                self.host.recorder.event(self.reference(), "Warning", FAILED_MOUNT, message)
        self._mount_failures = failures

    def _sync_init_containers(self, wake: list[float], read: _PodReader) -> bool:
        """Run the init containers in order; True once all have succeeded. A sidecar (an init
        container with restartPolicy Always) only has to be running for the next to start,
        and is restarted whenever it exits."""
        for c in self.inits:
            if c.restartable:
                if c.current is None:
                    self._start(c, wake, read)
                elif c.exited:
                    self._restart(c, wake, read)
                if not c.started:
                    return False
                continue
            if c.succeeded:
                continue
            if c.current is None:
                self._start(c, wake, read)
            elif c.exited and self.restart_policy != "Never":
                self._restart(c, wake, read)
            return False
        return True

    def _should_restart(self, exit_code: int) -> bool:
        return self.restart_policy == "Always" or (
            self.restart_policy == "OnFailure" and exit_code != 0
        )

    def _restart(self, c: ContainerRecord, wake: list[float], read: _PodReader) -> None:
        """Restart `c` now, or wait out its back-off (kuberuntime's doBackOff)."""
        assert c.current is not None
        last_exit = c.current
        if c.probe_killed:
            # The kubelet decided this restart when it killed the container, still running:
            # the back-off counts from the run before, if there was one.
            c.probe_killed = False
            if c.previous is None:
                c.restart_count += 1
                self._start(c, wake, read)
                return
            last_exit = c.previous
        finished, now = last_exit.finished_at, self.host.clock.now()
        # client-go's Backoff: an entry stamped at the restart (Next) is forgotten once an exit
        # comes more than twice the maximum after it.
        expired = finished - c.backoff_updated > 2 * MAX_BACKOFF
        if c.backoff and not expired and now - finished < c.backoff:
            if c.waiting[0] != CRASH_LOOP_BACK_OFF:
                delay = go_duration(c.backoff)
                pod = f"{self.name}_{self.namespace}({self.uid})"
                c.waiting = (
                    CRASH_LOOP_BACK_OFF,
                    f"back-off {delay} restarting failed container={c.name} pod={pod}",
                )
                self._event(
                    c,
                    "Warning",
                    "BackOff",
                    f"Back-off restarting failed container {c.name} in pod {pod}",
                )
            wake.append(finished + c.backoff)
            return
        c.backoff = INITIAL_BACKOFF if not c.backoff or expired else min(2 * c.backoff, MAX_BACKOFF)
        c.backoff_updated = now
        c.restart_count += 1
        self._start(c, wake, read)

    def _plan(
        self,
        c: ContainerRecord,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        layer: WritableFiles,
    ) -> _Plan | str:
        """What a run of `c` (of container spec `spec`) is given now, over its writable
        `layer`, or why it cannot be created."""
        probers = c.probers or _NO_PROBERS
        try:
            pod_ip = self.pod_ip
            now = self.host.clock.now
            argv = container_argv(pod, c.name)
            behaviour, context = self._behaviour(pod, c.name, spec, argv, layer)
            return _Plan(
                behaviour,
                hook_run(pod, spec, POST_START, now),
                hook_run(pod, spec, PRE_STOP, now),
                {
                    kind: probe_outcomes(pod, spec, prober.probe, pod_ip, now)
                    for kind, prober in probers.items()
                },
                context,
                argv,
            )
        except (BehaviourError, ConfigError) as e:
            return str(e)

    def _behaviour(
        self,
        pod: Mapping[str, Any],
        name: str,
        spec: Mapping[str, Any],
        command: Sequence[str],
        layer: WritableFiles,
    ) -> tuple[ContainerBehaviour, StartContext | None]:
        """Container `name`'s model for a run of `command` over `layer`, and what the run
        keeps of its context when that had to be made now (it has a command, or an
        environment that may fail). Raises ConfigError (its environment cannot be made: a
        missing ConfigMap or Secret) or BehaviourError."""
        unknown = self.host.unknown_command
        if not command and not may_fail(spec):
            return context_free_behaviour(pod, name, unknown), None
        # a commandless one's creation fails all the same, and exec'd commands inherit it
        if reads_context(command, bool(spec.get("stdin"))):
            context, kept = self._start_context(pod, name, spec, layer)
            return container_behaviour(pod, name, context, unknown), kept
        kept = self._kept_context(pod, name, spec, layer)
        return context_free_behaviour(pod, name, unknown), kept

    def _start_context(
        self, pod: Mapping[str, Any], name: str, spec: Mapping[str, Any], layer: WritableFiles
    ) -> tuple[ShellContext, StartContext]:
        """What container `name`'s commands see at the start of a run over the writable
        `layer`, and what the run keeps of it. Raises ConfigError."""
        env = self.host.container_environment(pod, name, self.pod_ip)
        files = self._filesystem(pod, spec, env, layer)
        kept = StartContext(
            _ENVIRONMENTS(tuple(env.items())), files if mounts_sub_path(spec) else None
        )
        return self._shell_context(pod, spec, env, files), kept

    def _kept_context(
        self, pod: Mapping[str, Any], name: str, spec: Mapping[str, Any], layer: WritableFiles
    ) -> StartContext:
        """What a run of container `name` over `layer` keeps of its context, for a command
        that does not read it: `_start_context`'s, failing alike, without the files and shell
        that only a subPath's copies need at the start (exec makes them)."""
        env = self.host.container_environment(pod, name, self.pod_ip)
        files = self._filesystem(pod, spec, env, layer) if mounts_sub_path(spec) else None
        return StartContext(_ENVIRONMENTS(tuple(env.items())), files)

    def _shell_context(
        self,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        environment: Mapping[str, str],
        files: Filesystem,
    ) -> ShellContext:
        """What the commands of container `spec` see, with its `environment` and `files`."""
        return ShellContext(
            environment,
            files,
            self.host.clock.now,
            container_hostname(pod),
            web=self.host.web(self.namespace),
            booted=self.host.booted,
            stdin_open=bool(spec.get("stdin")),
            image=str(spec.get("image") or ""),
        )

    def _filesystem(
        self,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        environment: Mapping[str, str],
        layer: WritableFiles,
    ) -> Filesystem:
        """The files of container `spec` over the writable `layer` of its run. Raises
        ConfigError (a subPathExpr that `environment` cannot expand)."""
        if self._etc is None:
            self._etc = etc_files(pod, self.pod_ip)
        # By the pod's uid, not this worker: a running container keeps its files, and its
        # run outlives the worker (the runtime's record of it).
        files_read = functools.partial(self.host.files_read, self.uid)
        return self.volumes.filesystem(spec, environment, layer, self._etc, files_read)

    def exec_context(self, name: str) -> ShellContext | None:
        """What a command exec'd in container `name` sees; None unless it runs."""
        attached = self.attach_target(name)
        return attached.context if attached is not None else None

    def listener(self, port: int) -> Mapping[str, Any] | None:
        """The spec of the running container that listens on `port`, if one does."""
        pod = self.read_pod()
        for name, spec in _container_specs(pod).items():
            if listens(spec, port) and self.attach_target(name) is not None:
                return spec
        return None

    def attach_target(self, name: str) -> Attached | None:
        """Container `name`'s run, its command and what that sees; None unless it runs."""
        for c in self.containers:
            if c.name == name and c.current is not None and c.current.ended is None:
                pod = self.read_pod()
                spec = _container_specs(pod).get(name) or {}
                layer = c.current.layer
                if layer is None:  # a run the kubelet did not start: none given
                    layer = c.current.layer = WritableFiles()
                try:
                    context = self._exec_context(c.current, pod, spec, layer)
                except ConfigError:
                    return None
                argv = expand_command(container_argv(pod, name), context.environment)
                runtime, current = self.host.runtime, c.current.id
                return Attached(
                    c.current,
                    argv,
                    context,
                    bool(spec.get("stdinOnce")),
                    functools.partial(runtime.exit_container, current),
                    functools.partial(runtime.hold_output, current),
                )
        return None

    def _exec_context(
        self,
        run: ContainerStatus,
        pod: Mapping[str, Any],
        spec: Mapping[str, Any],
        layer: WritableFiles,
    ) -> ShellContext:
        """What a command exec'd in the running `run` of container `spec` sees: what the run
        kept of its start (made now, and kept, for one whose start made none), with the pod's
        volumes as they are now. Raises ConfigError."""
        if run.context is None:
            context, run.context = self._start_context(pod, run.name, spec, layer)
            return context
        env = dict(run.context.environment)
        files = run.context.files
        if files is None:
            files = self._filesystem(pod, spec, env, layer)
        return self._shell_context(pod, spec, env, files)

    def _use_plan(self, c: ContainerRecord, plan: _Plan) -> None:
        c.pre_stop = plan.pre_stop
        probers = c.probers or _NO_PROBERS
        for kind, outcomes in (plan.outcomes or {}).items():
            probers[kind].outcomes = outcomes

    def _start(self, c: ContainerRecord, wake: list[float], read: _PodReader) -> None:
        pod, spec = read(), read.container(c.name)
        if not self._ensure_image(c, spec, wake):
            return
        layer = WritableFiles()  # a new run's: what the last one wrote is gone
        plan = self._plan(c, pod, spec, layer)
        if isinstance(plan, str):
            self._event(c, "Warning", "Failed", f"Error: {plan}")
            c.waiting = (CREATE_CONTAINER_CONFIG_ERROR, plan)
            # The pod worker's retry after a failed sync (a change of what it reads comes
            # sooner: source_changed).
            wake.append(self.host.clock.now() + INITIAL_BACKOFF)
            return
        probers = c.probers or _NO_PROBERS
        if c.previous is not None:
            self.host.runtime.remove_container(c.previous.id)
        c.previous = c.current
        failure = start_error(c.image, plan.argv) or ""
        c.current = self.host.runtime.start_container(
            self.uid,
            c.name,
            c.image,
            plan.behaviour,
            self.host.container_exited,
            self.host.container_resources(pod, c.name),
            failure,
        )
        c.current.layer, c.current.context = layer, plan.context
        c.waiting = ("", "")
        if failure:  # created, not started (kuberuntime's startContainer)
            self._event(c, "Normal", "Created", f"Created container: {c.name}")
            self._event(c, "Warning", "Failed", f"Error: {failure}")
            c.waiting = (RUN_CONTAINER_ERROR, failure)
            return
        c.startup_passed = ProbeType.STARTUP not in probers
        c.readiness_passed = ProbeType.READINESS not in probers
        c.probe_killed = c.redefined = False
        if self.allocation is not None and not c.init:
            self.allocation.started(c.name)
        self._use_plan(c, plan)
        self._event(c, "Normal", "Created", f"Created container: {c.name}")
        self._event(c, "Normal", "Started", f"Started container {c.name}")
        if plan.behaviour.not_modelled:
            message = plan.behaviour.not_modelled
            _log.info("%s/%s %s: %s", self.namespace, self.name, c.name, message)
            self._event(c, "Normal", COMMAND_NOT_MODELLED, message)
        if plan.post_start is None:
            self._container_running(c)
            return
        c.hook_running = True
        c.post_start = self.host.clock.call_later(
            plan.post_start.seconds,
            self._guarded,
            self._post_start_done,
            c,
            c.current,
            plan.post_start,
        )

    def _ensure_image(self, c: ContainerRecord, spec: Mapping[str, Any], wake: list[float]) -> bool:
        """Whether `c`'s image is there to start it from (image_manager's
        EnsureImageExists); if not, a pull is started, or `c` waits with the reason why not."""
        if self.pulling:
            return False
        if c.image_pulled:
            c.image_pulled = False
            return True
        images, image = self.host.image_service, c.image
        unparsed = image_name_error(image)
        if unparsed is not None:
            message = f'Failed to apply default image tag "{image}": {unparsed}'
            if c.waiting != (INVALID_IMAGE_NAME, message):
                self._event(c, "Warning", "InspectFailed", message)
                self._event(c, "Warning", "Failed", f"Error: {INVALID_IMAGE_NAME}")
            c.waiting = (INVALID_IMAGE_NAME, message)
            return False
        present = images.has(image)
        if not should_pull(spec.get("imagePullPolicy") or "IfNotPresent", present):
            if present:
                message = f'Container image "{image}" already present on machine'
                self._event(c, "Normal", "Pulled", message)
                return True
            message = f'Container image "{image}" is not present with pull policy of Never'
            if c.waiting != (ERR_IMAGE_NEVER_PULL, message):
                self._event(c, "Warning", ERR_IMAGE_NEVER_PULL, message)
                self._event(c, "Warning", "Failed", f"Error: {ERR_IMAGE_NEVER_PULL}")
            c.waiting = (ERR_IMAGE_NEVER_PULL, message)
            # The pod worker's retry after a failed sync: another pod may have pulled it.
            wake.append(self.host.clock.now() + INITIAL_BACKOFF)
            return False
        backoff = images.in_backoff(self._pull_key(c.image))
        if backoff is not None:
            delay, failed_at = backoff
            resync = failed_at + PULL_ERROR_RESYNC
            if c.waiting[0] == ERR_IMAGE_PULL and self.host.clock.now() < resync:
                wake.append(resync)
                return False
            message = f'Back-off pulling image "{image}"'
            if c.waiting[0] != IMAGE_PULL_BACK_OFF:
                self._event(c, "Normal", "BackOff", message)
                self._event(c, "Warning", "Failed", f"Error: {IMAGE_PULL_BACK_OFF}")
            c.waiting = (IMAGE_PULL_BACK_OFF, message)
            wake.append(failed_at + delay)
            return False
        self._event(c, "Normal", "Pulling", f'Pulling image "{image}"')
        result = images.pull(image, lambda result: self._pulled(c, image, result))
        if result is None:
            self.pulling = True
            return False
        if self._pull_result(c, image, result):
            return True
        wake.append(self.host.clock.now() + PULL_ERROR_RESYNC)
        return False

    def _pull_key(self, image: str) -> str:
        """The image manager's back-off key: the pod and the image."""
        return f"{self.uid}_{image}"

    def _pulled(self, c: ContainerRecord, image: str, result: PullResult) -> None:
        """A pull of `image` that took time ended: the pod syncs again (`c` starts, or waits;
        or, its image changed meanwhile, has the new one pulled)."""
        self.pulling = False
        if not self.begun or self.terminating or self.finished:
            return
        c.image_pulled = self._pull_result(c, image, result) and image == c.image
        self.sync()

    def _pull_result(self, c: ContainerRecord, image: str, result: PullResult) -> bool:
        """The events of the end of `c`'s pull of `image`, and the back-off of a failed one;
        whether it pulled."""
        if result.error:
            self._event(c, "Warning", "Failed", f'Failed to pull image "{image}": {result.error}')
            self._event(c, "Warning", "Failed", f"Error: {ERR_IMAGE_PULL}")
            self.host.image_service.failed(self._pull_key(image))
            if image == c.image:
                c.waiting = (ERR_IMAGE_PULL, result.error)
            return False
        took, total = pull_duration(result.pull_seconds), pull_duration(result.total_seconds)
        self._event(
            c,
            "Normal",
            "Pulled",
            f'Successfully pulled image "{image}" in {took} ({total} including waiting). '
            f"Image size: {result.size} bytes.",
        )
        return True

    def _resume(self, c: ContainerRecord, entry: Mapping[str, Any]) -> None:
        """Carry on with the restored record of `c`: a running container on the runtime
        again, its probes from the results its status showed (the postStart hook is not run
        again)."""
        assert c.current is not None
        if not c.running:
            return
        probers = c.probers or _NO_PROBERS
        started = bool(entry.get("started"))
        c.startup_passed = started or ProbeType.STARTUP not in probers
        c.readiness_passed = (
            bool(entry.get("ready")) if started else ProbeType.READINESS not in probers
        )
        read = _PodReader(self.read_pod)
        pod = read()
        layer = WritableFiles()  # what it wrote before the agent restarted is not kept
        plan = self._plan(c, pod, read.container(c.name), layer)
        if isinstance(plan, str):
            # It runs already: a model its pod no longer gives (a ConfigMap deleted while the
            # agent was down) does not stop it; it runs on until it is stopped.
            plan = _Plan(ContainerBehaviour())
        self._use_plan(c, plan)
        recorded = c.current
        c.current = self.host.runtime.resume_container(
            recorded.id,
            self.uid,
            c.name,
            c.image,
            plan.behaviour,
            self.host.container_exited,
            self.host.container_resources(pod, c.name),
            recorded.started_at,
        )
        c.current.layer, c.current.context = layer, plan.context
        readiness = probers.get(ProbeType.READINESS)
        if readiness is not None:
            readiness.resume(c.readiness_passed)
        self._container_running(c)

    def _post_start_done(self, c: ContainerRecord, status: ContainerStatus, run: HookRun) -> None:
        c.post_start = None
        if c.current is not status or not c.running:
            return
        if run.error is not None:
            self._event(c, "Warning", "FailedPostStartHook", "PostStartHook failed")
            c.waiting = (POST_START_HOOK_ERROR, run.error)
            self._kill(c, "FailedPostStartHook", self._pod_grace())
            self.host.status_changed(self)
            return
        c.hook_running = False
        self._container_running(c)
        self.sync()

    def _container_running(self, c: ContainerRecord) -> None:
        """Past its postStart hook: probes start, and readiness is probed at once."""
        for kind, prober in (c.probers or _NO_PROBERS).items():
            if kind is ProbeType.READINESS:
                prober.trigger()
            else:
                prober.wake()

    # --- probes ------------------------------------------------------------------------------

    def _add_probers(self, c: ContainerRecord, spec: Mapping[str, Any]) -> None:
        probes = container_probes(spec)
        if not probes:
            return
        c.probers = {
            kind: Prober(
                self.host.clock,
                probe,
                c,
                lambda prober, success: self._guarded(self._probe_result, c, prober, success),
                lambda prober, message: self._guarded(self._probe_failed, c, prober, message),
            )
            for kind, probe in probes.items()
        }

    def _probe_failed(self, c: ContainerRecord, prober: Prober, message: str) -> None:
        self._event(c, "Warning", "Unhealthy", f"{prober.probe.type} probe failed: {message}")

    def _probe_result(self, c: ContainerRecord, prober: Prober, success: bool) -> None:
        kind = prober.probe.type
        if kind is ProbeType.READINESS:
            c.readiness_passed = success
            self.host.status_changed(self)
        elif success:  # the startup probe: the other probes may begin
            c.startup_passed = True
            self._container_running(c)
            self.sync()
        elif not self.terminating and c.running:
            if c.restartable:
                # computeInitContainerActions: a sidecar is restarted whatever the pod's
                # restartPolicy, and its kill says so in words of its own.
                message = f"Init container {c.name} failed {kind.lower()} probe"
            else:
                message = f"Container {c.name} failed {kind.lower()} probe"
                if self.restart_policy != "Never":
                    message += ", will be restarted"
            grace = prober.probe.termination_grace
            c.probe_killed = True
            self._kill(c, message, self._pod_grace() if grace is None else grace)

    def restart_to_resize(self, c: ContainerRecord) -> None:
        """Kill `c` to start it again at once with its new resources (its resizePolicy says
        RestartContainer), as kuberuntime's SyncPod kills and starts it."""
        if self.terminating or not c.running or c.current is None or c.killing:
            return
        c.probe_killed = True  # the restart is decided now, not by the restart policy's back-off
        self._kill(c, f"Container {c.name} resize requires restart", self._pod_grace())

    def _stop_probers(self, *kinds: ProbeType) -> None:
        for c in self.inits + self.apps:
            for kind in kinds:
                if c.probers is not None and kind in c.probers:
                    c.probers[kind].stop()

    # --- stopping containers -----------------------------------------------------------------

    def _pod_grace(self) -> int:
        grace = (self.read_pod().get("spec") or {}).get("terminationGracePeriodSeconds")
        return DEFAULT_GRACE_PERIOD if grace is None else grace

    def _kill(
        self, c: ContainerRecord, message: str, grace: float, *, ordered: bool = False
    ) -> None:
        """killContainer: the Killing event, the preStop hook for as long as it runs within
        the grace period, then SIGTERM with what is left of it (at least 2 s) before SIGKILL.
        In a kill of the whole pod (`ordered`), a sidecar waits for its turn before its
        SIGTERM (`_await_turn`)."""
        assert c.current is not None
        self._event(c, "Normal", "Killing", message)
        if c.post_start is not None:
            c.post_start.cancel()  # the hook dies with the container
            c.post_start = None
        in_turn = ordered and c.restartable
        pre_stop = c.pre_stop
        if pre_stop is None or grace <= 0:
            c.killing, c.pre_stop_end = True, None
            self._stop(c, c.current, grace, in_turn)
            return
        waited = min(pre_stop.seconds, grace)
        failed = pre_stop.error is not None and pre_stop.seconds <= grace
        c.killing = True
        c.pre_stop_end = self.host.clock.call_later(
            waited,
            self._guarded,
            self._pre_stop_done,
            c,
            c.current,
            failed,
            grace - int(waited),
            in_turn,
        )

    def _kill_sooner(self, c: ContainerRecord, grace: float) -> None:
        """Already being killed, the pod is killed again with a shorter grace period (a
        deletion's, an eviction's): a preStop hook is cut short, the SIGTERM (or a sidecar's
        wait for its turn) brought forward."""
        assert c.current is not None
        waits = c.restartable and (c.pre_stop_end is not None or c.turn is not None)
        if c.pre_stop_end is not None:
            c.pre_stop_end.cancel()
        c.killing, c.pre_stop_end = True, None
        self._stop(c, c.current, grace, waits)

    def _pre_stop_done(
        self,
        c: ContainerRecord,
        status: ContainerStatus,
        failed: bool,
        grace: float,
        in_turn: bool,
    ) -> None:
        c.killing, c.pre_stop_end = True, None
        if failed:
            self._event(c, "Warning", "FailedPreStopHook", "PreStopHook failed")
        self._stop(c, status, grace, in_turn)

    def _stop(
        self, c: ContainerRecord, status: ContainerStatus, grace: float, in_turn: bool
    ) -> None:
        """SIGTERM with `grace` seconds (at least 2) to SIGKILL: now, or when it is the turn of
        the sidecar `c` while some grace is left."""
        if in_turn and grace > 0:
            self._await_turn(c, grace)
        else:
            self.host.runtime.stop_container(status.id, max(grace, MINIMUM_GRACE_PERIOD))

    def _await_turn(self, c: ContainerRecord, grace: float) -> None:
        """kuberuntime's terminationOrdering (waitForTurn): the sidecar `c` waits for the app
        containers and the sidecars after it to stop, for `grace` seconds at most; a kill
        already waiting keeps its wait unless this one ends sooner."""
        now = self.host.clock.now()
        if c.turn is not None:
            since, before, timer = c.turn
            if since + before <= now + grace:
                return
            timer.cancel()
        timer = self.host.clock.call_later(grace, self._guarded, self._take_turn, c)
        c.turn = (now, grace, timer)
        self._take_turns()

    def _take_turns(self) -> None:
        """Stop the waiting sidecars whose turn it is: last first, once no app container runs
        and the sidecars after each have stopped."""
        blocked = any(c.running for c in self.apps)
        for c in reversed(self.inits):
            if not c.restartable:
                continue
            if not blocked and c.turn is not None:
                self._take_turn(c)
            blocked = blocked or c.running

    def _take_turn(self, c: ContainerRecord) -> None:
        """The sidecar's turn came (or its wait ran out): SIGTERM with the grace period left,
        less the whole seconds it waited."""
        turn = c.turn
        if turn is None or c.current is None:
            return
        since, grace, timer = turn
        timer.cancel()
        c.turn = None
        left = grace - int(self.host.clock.now() - since)
        self.host.runtime.stop_container(c.current.id, max(left, MINIMUM_GRACE_PERIOD))

    def _deadline_exceeded(self) -> None:
        """spec.activeDeadlineSeconds ran out: the pod fails and its containers are killed."""
        if self.terminating or self.finished:
            return
        message = "Pod was active on the node longer than the specified deadline"
        self.host.recorder.event(self.reference(), "Normal", "DeadlineExceeded", message)
        self._fail("DeadlineExceeded", message, self._pod_grace())

    def evict(self, grace: float, message: str, disruption: bool) -> None:
        """The eviction manager chose this pod: it fails with reason Evicted and its
        containers are killed within `grace` seconds; with `disruption`, a DisruptionTarget
        condition says why. A pod already stopping (deleted, or done but for its sidecars and
        ephemeral containers) is killed again if `grace` is shorter than the one it is being
        stopped with (`_evict_stopping`)."""
        if self.stopped:
            return
        condition = None
        if disruption:
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self.host.clock.now_rfc3339(),
                "reason": "TerminationByKubelet",
                "message": message,
            }
        if self.terminating or self.finished:
            self._evict_stopping(grace, message, condition)
        else:
            self._fail("Evicted", message, grace, condition)

    def _evict_stopping(
        self, grace: float, message: str, disruption: dict[str, Any] | None
    ) -> None:
        """v1.32's pod worker takes the eviction of a terminating pod as one more kill: the
        grace period only ever shortens (calculateEffectiveGracePeriod), and the eviction's
        status (Failed, Evicted, the DisruptionTarget condition) is what the status manager
        holds until the containers have stopped. The phase is then worked out again from the
        containers (getPhase of a terminal pod): the reason and message stay only if it is
        still Failed; the condition stays in any case."""
        self._failure = ("Evicted", message, disruption)
        if not self.finished:
            self.phase = FAILED
        if grace < self._grace:
            self._grace = int(grace)
            for c in self.containers:
                if c.running and c.current is not None:
                    self._kill_sooner(c, grace)
        self.host.status_changed(self)

    def _fail(
        self, reason: str, message: str, grace: float, disruption: dict[str, Any] | None = None
    ) -> None:
        """The kubelet ends the pod: Failed with `reason`, its containers killed."""
        self._cancel_timer()
        self.phase = FAILED
        self._grace = int(grace)
        self._failure = (reason, message, disruption)
        self._stop_probers(*ProbeType)
        for c in self.containers:
            c.waiting = ("", "") if c.current is not None else c.waiting
            if c.running and c.current is not None and not c.killing:
                self._kill(c, f"Stopping container {c.name}", grace, ordered=True)
        self.host.status_changed(self)

    def _stop_sidecars(self) -> None:
        """The app containers are done for good: the sidecars and ephemeral containers go
        too."""
        grace = None
        for c in (*self.inits, *self.ephemerals):
            if c.init and not c.restartable:
                continue
            if c.running and c.current is not None and not c.killing:
                grace = self._pod_grace() if grace is None else grace
                self._grace = grace
                self._kill(c, f"Stopping container {c.name}", grace, ordered=True)

    def exited(self, status: ContainerStatus) -> None:
        """The runtime's word that the run `status` of one of its containers ended (through
        its agent: the runtime keeps the callback of every container a node runs, so it is
        one callable for all, not a method bound to each pod's worker)."""
        c = next((c for c in self.containers if c.current is status), None)
        if c is None:
            return  # an earlier run
        c.hook_running = False
        self._end_hooks(c)
        for prober in (c.probers or _NO_PROBERS).values():
            prober.wake()
        if self.terminating:
            self._take_turns()
            self._check_stopped()
        elif self.finished:
            self._take_turns()
            self.host.status_changed(self)  # a sidecar stopped after the app containers
        else:
            self.sync()

    def _end_hooks(self, c: ContainerRecord) -> None:
        """Its current run is over: a postStart or preStop hook still running ends with it,
        and so does a wait for its turn to stop."""
        turn = c.turn
        for hook in (c.post_start, c.pre_stop_end, turn[2] if turn is not None else None):
            if hook is not None:
                hook.cancel()
        c.post_start = c.pre_stop_end = c.turn = None
        c.killing = False

    def _check_stopped(self) -> None:
        if any(c.running for c in self.containers):
            return
        self.phase = pod_phase(self.inits, self.apps, self.restart_policy, terminal=True)
        self.terminated = True
        self._stop_probers(*ProbeType)
        self.host.status_changed(self)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _event(self, c: ContainerRecord, event_type: str, reason: str, message: str) -> None:
        kind = "containers"
        if c.init or c.ephemeral:
            kind = "initContainers" if c.init else "ephemeralContainers"
        self.host.recorder.event(
            self.reference(), event_type, reason, message, field_path=f"spec.{kind}{{{c.name}}}"
        )

    # --- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The pod's status as the kubelet reports it."""
        now = self.host.clock.now_rfc3339()
        # A pod shows its terminal phase only once its containers (sidecars, ephemeral ones,
        # those the kubelet kills failing it) have stopped, as the status manager holds the
        # phase back until then (mergePodStatus).
        stopping = self.finished and any(c.running for c in self.containers)
        phase = self._recorded_phase if stopping else self.phase
        previous = _conditions(self._transitions)
        conditions = pod_conditions(
            self.inits,
            self.apps,
            phase,
            previous,
            now,
            self._gates,
            self._foreign,
            sandbox=self._ip != "" and not self.stopped,
        )
        self._transitions = _own_transitions(conditions)
        self._reported = True
        ips = [{"ip": self.host.host_ip}]
        pod_ip = self.pod_ip
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": merged_conditions(self._foreign, conditions, None),
            "hostIP": self.host.host_ip,
            "hostIPs": ips,
            # Before its sandbox, none: a null, which takes a stored one out, as the status
            # patch is a merge patch whose result is stored as decoding leaves it (omitempty).
            "podIP": pod_ip or None,
            "podIPs": [{"ip": pod_ip}] if pod_ip else None,
            "startTime": format_time(self.start_time),
            "containerStatuses": [container_status_entry(c) for c in self.apps],
        }
        if self.inits:
            status["initContainerStatuses"] = [container_status_entry(c) for c in self.inits]
        if self.ephemerals:
            # By name, as convertToAPIContainerStatuses sorts them (SortedContainerStatuses).
            ephemerals = sorted(self.ephemerals, key=lambda c: c.name)
            status["ephemeralContainerStatuses"] = [container_status_entry(c) for c in ephemerals]
        if self.qos_class:
            status["qosClass"] = self.qos_class
        if self.allocation is not None:
            self.allocation.report(status, self.apps, not self.finished)
        if stopping:
            return status
        if self._failure is not None:
            reason, message, disruption = self._failure
            if phase == FAILED:
                status["reason"], status["message"] = reason, message
            if disruption is not None:
                status["conditions"] = merged_conditions(self._foreign, conditions, disruption)
        return status

    def container_log(self, name: str, previous: bool) -> ContainerStatus | None:
        for c in self.containers:
            if c.name == name:
                return c.previous if previous else c.current
        return None

    def waiting_reason(self, name: str) -> str:
        """Why a container is not running yet, as its status says (PodInitializing,
        ErrImagePull ...; "" when it gives none)."""
        return next((c.waiting[0] for c in self.containers if c.name == name), "")
