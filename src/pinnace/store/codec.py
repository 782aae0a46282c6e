"""Stored objects in compact form: JSON deflated against a dictionary of what Kubernetes objects
have in common (field names, defaults, usual values), then, once a kind has had a few objects
packed, against a dictionary made of the last ones: a running pod's ~2 KB of JSON keeps ~150
bytes and an Event's ~730 about 120.

The form lives in memory only (the SQLite log keeps plain JSON), so the dictionaries may change
from one release to the next. What a cluster has packed, and the dictionaries learned from it,
are its `Codec`'s: two clusters in one process learn apart, and each reads only what it packed.

A codec made with `deflate=False` keeps the JSON text as it is: a simulation, which holds far
fewer objects than a long-lived cluster, spends the sixth of its time deflating and
inflating on nothing (measured with `pinnace bench simulate`, 300 nodes: 34.2 s of CPU packed,
28.2 s plain, the peak RSS 7% higher).
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections import OrderedDict, deque

import orjson

from pinnace.store.interface import Object

_TIME = "2026-01-01T00:00:00Z"
_CONDITION = {"status": "True", "lastProbeTime": None, "lastTransitionTime": _TIME}
_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web-5d4f8b9c7d",
    "uid": "00000000-0000-4000-8000-000000000000",
    "controller": True,
    "blockOwnerDeletion": True,
}
_METADATA = {
    "name": "web-5d4f8b9c7d-x2x9z",
    "generateName": "web-5d4f8b9c7d-",
    "namespace": "default",
    "uid": "00000000-0000-4000-8000-000000000000",
    "resourceVersion": "100000",
    "generation": 1,
    "creationTimestamp": _TIME,
    "labels": {"app": "web", "pod-template-hash": "5d4f8b9c7d"},
    "annotations": {},
    "ownerReferences": [_OWNER],
}
_SAMPLES: tuple[Object, ...] = (
    {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "pinnace-node-1", "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": "pinnace-node-1",
            "leaseDurationSeconds": 40,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "labels": {
                "kubernetes.io/hostname": "pinnace-node-1",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "pinnace",
                "topology.kubernetes.io/zone": "zone-a",
            },
        },
        "spec": {"podCIDR": "10.128.1.0/24", "taints": []},
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "lastHeartbeatTime": _TIME, "reason": r}
                for t, r in (
                    ("MemoryPressure", "KubeletHasSufficientMemory"),
                    ("DiskPressure", "KubeletHasNoDiskPressure"),
                    ("PIDPressure", "KubeletHasSufficientPID"),
                    ("Ready", "KubeletReady"),
                )
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": "pinnace-node-1"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "kubeletVersion": "v1.32.0",
                "containerRuntimeVersion": "containerd://1.7.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": _METADATA,
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3},
    },
    {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": "web.18ebef72bc0b4d00",
            "namespace": "default",
            "uid": "00000000-0000-4000-8000-000000000000",
            "creationTimestamp": _TIME,
            "resourceVersion": "100000",
        },
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "uid": "00000000-0000-4000-8000-000000000000",
            "apiVersion": "v1",
            "resourceVersion": "100000",
            "fieldPath": "spec.containers{app}",
        },
        "reason": "Pulled",
        "message": 'Container image "registry.k8s.io/pause:3.10" already present on machine',
        "firstTimestamp": _TIME,
        "lastTimestamp": _TIME,
        "count": 1,
        "type": "Normal",
        "eventTime": None,
        "source": {"component": "kubelet", "host": "pinnace-node-1"},
        "reportingComponent": "kubelet",
        "reportingInstance": "pinnace-node-1",
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _METADATA,
        "spec": {
            "nodeName": "pinnace-node-1",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "500Mi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                    "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "enableServiceLinks": True,
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{key}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for key in ("not-ready", "unreachable")
            ],
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, **_CONDITION}
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.128.1.1",
            "podIPs": [{"ip": "10.128.1.1"}],
            "startTime": _TIME,
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {"running": {"startedAt": _TIME}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.k8s.io/pause:3.10",
                    "imageID": "registry.k8s.io/pause@sha256:",
                    "started": True,
                    "containerID": "containerd://",
                }
            ],
        },
    },
)
_PHRASES = (
    "Scheduled",
    "Successfully assigned ",
    "FailedScheduling",
    "Created container ",
    "Started container ",
    "Killing",
    "Stopping container ",
    "SuccessfulCreate",
    "Created pod: ",
    "ScalingReplicaSet",
)
_DICTIONARY = orjson.dumps(_PHRASES) + b"".join(
    # As the API server stores a built-in kind's object: kind and apiVersion first.
    orjson.dumps({"kind": sample["kind"], "apiVersion": sample["apiVersion"], **sample})
    for sample in _SAMPLES
)
# Raw deflate (no header or checksum: the bytes never leave memory), a small hash table and an
# 8 KiB window, which make copying a primed compressor (below) cheap: every pack copies its
# window and hash chains, and a 32 KiB window's 144 KB copy cost a twentieth of a pod's trip
# through the API (`pinnace bench scheduler --through-api`: 494-500 us of CPU a pod against
# 467-471) while the learned dictionaries (a few objects of a kind, see LEARN_AT) fit in 8 KiB
# and packed objects stay the size they were. On objects this small the default level costs
# little more time than the fastest and leaves a quarter fewer bytes.
_WINDOW_BITS = -13
_LEVEL = 6
_MEM_LEVEL = 5
_MAX_DICTIONARY = 8192
"""Deflate reaches no further back."""
LEARN_AT = frozenset(8**n for n in range(2, 7))
"""The counts of objects of one kind packed (64, 512, ... 262,144) at which the kind gets a new
dictionary, made of the last `SAMPLES` of them: a cluster's pods (or Events, or leases)
resemble each other far more than any sample written beforehand can, so a running pod keeps
~150 bytes instead of ~240. A kind learns again as it grows, since its first objects may be
unlike most (a cluster's first Events are about its nodes; pods are first packed new, without
a status)."""
SAMPLES = 4
_SAMPLED = frozenset(n for learn in LEARN_AT for n in range(learn - SAMPLES + 1, learn + 1))
"""The counts at which an object is kept as a sample: the last few before each learning."""
_MAX_DICTIONARIES = 255
_PLAIN = 255
"""The index that marks JSON text kept as it is (after every dictionary's)."""
"""A packed object names its dictionary in one byte."""
PACKED_LATELY = 1024
"""Objects whose packed form a codec keeps for whoever packs them next: more than are written
between an object's commit and the last informer of the process hearing of it (a start
creates pods 500 at a time), and a fraction of what the store keeps as written anyway
(`RECENT_VERSIONS`). Each is held with its object, so that its id cannot be taken by another
meanwhile: an informer's object the store no longer keeps lives until 1,024 later packings."""
_MAX_KINDS = 64
_MAX_KIND_NAME = 63
"""Kinds past the first 64 (or with longer names) share one entry: the name is only a guess
at which objects resemble each other, and a guess from text can be any string."""


class _Kind:
    """What a codec's packing has seen of one kind: how many, the last few, and its latest
    dictionary with a compressor primed with it (older dictionaries are kept for reading
    only)."""

    __slots__ = ("counter", "current", "samples")

    def __init__(self) -> None:
        self.counter = itertools.count(1)  # next() is atomic: packing threads lose no count
        self.current = (0, _COMMON)
        """Read and replaced as one, so that a packing thread never pairs an index with
        another dictionary's compressor."""
        self.samples: deque[bytes] = deque(maxlen=SAMPLES)


def _primed(zdict: bytes) -> zlib._Compress:
    return zlib.compressobj(_LEVEL, zlib.DEFLATED, _WINDOW_BITS, _MEM_LEVEL, zdict=zdict)


_PLAIN_MARK = bytes((_PLAIN,))

_COMMON = _primed(_DICTIONARY)
"""Never changed (each packing copies it), so every codec starts from this one."""


class Codec:
    """Packs objects and reads them back, learning as it packs: one per cluster, shared by its
    store and the components that keep objects packed (informers' caches, the kubelets' pods),
    so that they learn from each other's objects and share the packed bytes."""

    def __init__(self, *, deflate: bool = True) -> None:
        self.deflates = deflate
        # Only ever added to: a packed object stays readable for as long as it lives.
        self._dictionaries = [_DICTIONARY]
        self._kinds: dict[str, _Kind] = {}
        self._learning = threading.Lock()
        self._lately: OrderedDict[int, tuple[Object, bytes]] = OrderedDict()
        """The objects `pack` packed last, by identity (each held, so that its id is not
        another's meanwhile), with what it made of them."""

    def pack(self, obj: Object, text: bytes | None = None, head: bytes = b"") -> bytes:
        """`obj` in compact form; `text`: its JSON text, if at hand; `head`: bytes to put
        before it (in the same copy). Raises TypeError if it is not JSON.

        A written object reaches several keepers of packed objects at about the same time
        (the store, the node agents' and the metrics' informers, the dashboard's), each of
        which would deflate it again: the same object (the same dict: a stored object never
        changes) packed lately is packed once for all. Plain text (`deflate=False`) is not
        worth remembering."""
        if not self.deflates:
            return self._pack(obj, text, head)
        lately = self._lately
        seen = lately.get(id(obj))
        if seen is not None and seen[0] is obj:
            return head + seen[1] if head else seen[1]
        if head:
            return self._pack(obj, text, head)
        packed = self._pack(obj, text, b"")
        lately[id(obj)] = (obj, packed)
        if len(lately) > PACKED_LATELY:
            lately.popitem(last=False)
        return packed

    def _pack(self, obj: Object, text: bytes | None, head: bytes) -> bytes:
        kind = obj.get("kind")
        data = orjson.dumps(obj) if text is None else text
        return self.pack_json(data, kind if isinstance(kind, str) else "", head)

    def pack_json(self, data: bytes, kind: str | None = None, head: bytes = b"") -> bytes:
        """An object's JSON text in compact form, after `head`: the index of the dictionary
        it is deflated against, then the deflated text. Without its `kind`, the text's first
        is taken."""
        if not self.deflates:
            return b"".join((head, _PLAIN_MARK, data))
        learner = self._learner(_kind_of(data) if kind is None else kind)
        count = next(learner.counter)
        if count in _SAMPLED:
            # A copy: orjson's result holds a buffer of at least 4 KB, whatever its length.
            learner.samples.append(bytes(memoryview(data)))
            if count in LEARN_AT:
                self._learn(learner)
        return _deflate(learner, data, head)

    def pack_block(self, data: bytes, sample: bytes) -> bytes:
        """Several objects' JSON texts (and whatever frames them) in compact form, deflated
        against the latest dictionary of the kind `sample`, one of the texts, names. Counts
        towards no learning: the objects were packed one by one before."""
        if not self.deflates:
            return _PLAIN_MARK + data
        return _deflate(self._learner(_kind_of(sample)), data)

    def unpack(self, packed: bytes | memoryview) -> Object:
        """The object `pack` made `packed` from (a new dict every time)."""
        return orjson.loads(self.inflate(packed))

    def inflate(self, packed: bytes | memoryview) -> bytes:
        """The text `pack_json` or `pack_block` was given."""
        view = memoryview(packed)
        if view[0] == _PLAIN:
            return view[1:].tobytes()
        zdict = self._dictionaries[view[0]]
        return zlib.decompressobj(_WINDOW_BITS, zdict=zdict).decompress(view[1:])

    def _learner(self, name: str) -> _Kind:
        kinds = self._kinds
        learner = kinds.get(name)
        if learner is None:
            if len(kinds) >= _MAX_KINDS or len(name) > _MAX_KIND_NAME:
                name = ""
            learner = kinds.setdefault(name, _Kind())
        return learner

    def _learn(self, kind: _Kind) -> None:
        with self._learning:
            dictionaries = self._dictionaries
            if len(dictionaries) < _MAX_DICTIONARIES:
                zdict = (_DICTIONARY + b"".join(kind.samples))[-_MAX_DICTIONARY:]
                dictionaries.append(zdict)
                kind.current = (len(dictionaries) - 1, _primed(zdict))


def _deflate(learner: _Kind, data: bytes, head: bytes = b"") -> bytes:
    index, primed = learner.current
    # A copy of a compressor already primed with the dictionary costs a fraction of priming one.
    deflate = primed.copy()
    return b"".join((head, bytes((index,)), deflate.compress(data), deflate.flush()))


def _kind_of(data: bytes) -> str:
    """The kind an object's JSON text names first: its own, as the API writes kind (or a custom
    resource's apiVersion and kind) first, though not always."""
    start = data.find(b'"kind":"') + 8
    end = data.find(b'"', start, start + _MAX_KIND_NAME + 1) if start >= 8 else -1
    return data[start:end].decode(errors="replace") if end >= 0 else ""
