"""Failed scheduling cycles remembered while nothing they read has changed.

A cluster short of room sends every pending pod back to the queue each time a pod ends (as
v1.32's queueing hints do: NodeResourcesFit queues on any deletion of a scheduled pod), and
each of them fails again the same way: Filter rejects every node with the same reasons, and
PostFilter finds no victim. kube-scheduler runs each of those cycles in full; a failed cycle
here costs about a quarter of a millisecond at 10 nodes, so an undersized cluster's day costs
pending pods × pod endings of them.

A cycle reads the cluster (the scheduler cache's nodes and pods, the nominated pods, what the
plugins' listers hold) and the pod. When a pod of the same shape failed since the last change
to any of those, without preempting anyone or being nominated anywhere, this pod fails exactly
as it did: the memo gives that outcome, and the cycle's other effects are replayed (the
extension points' metrics, PostFilter's random draws, the preemption attempt counted), so the
scheduler's decisions, events, conditions, metrics and random streams are those of running the
cycle. A cycle that samples plugin durations is served only by a failure whose cycle sampled
them too (the same plugins' runs are observed again); else it runs in full and leaves one that
did. A scheduler with a user's PreFilter, Filter or PostFilter plugin (which may read
anything) or with plugins reading sampled usage (which changes with no event) remembers
nothing.

What it changes from kube-scheduler is only durations: a remembered cycle takes next to no
time, and its extension points and sampled plugin runs are observed as taking what it took. On
the virtual clock every duration is zero either way; live, the duration histograms' sums are
smaller than running every cycle would make them, their counts the same.

The pod's shape is what the plugins read of it: its namespace, labels, owners, its spec with
its volumes named by index (each pod of a template has a kube-api-access volume of its own
name), its status's nominated node and its requests as the scheduler counts them (with what
its status shows its containers run with, when it is resized in place). Pods whose names
reach what a plugin reads (an ephemeral volume's claim is named after its pod) have no shape,
and always run in full.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pinnace.api.core.pod_validation import volumes_renamed
from pinnace.api.objects import plain_json
from pinnace.scheduler.framework import Status
from pinnace.scheduler.plugin_metrics import PluginRun
from pinnace.scheduler.podinfo import PodInfo

Replay = Callable[[], object]
"""Redoes what a PostFilter plugin's last run did besides deciding (its random draws)."""


@runtime_checkable
class ReplaysPostFilter(Protocol):
    """A PostFilter plugin whose failed runs the memo may stand in for."""

    def replay_last(self) -> Replay | None:
        """What its last run did besides deciding; None when that run did more (preempted)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failed cycle gave and did besides."""

    status: Status
    message: str
    rejected_by: frozenset[str]
    nominated: str | None
    """"" when PostFilter cleared the pod's nomination (it found no victims)."""
    observed: tuple[tuple[str, Status], ...]
    """The extension points' statuses, in the order the cycle observed them."""
    preemption_attempted: bool
    replays: tuple[Replay, ...]
    plugin_runs: tuple[PluginRun, ...] | None
    """The plugins' runs, when the cycle sampled their durations (None when it did not)."""


SHAPES_KEPT = 65536
"""Pods whose shape is kept, at most: a pending pod is tried again and again as it was."""


class FailureMemo:
    """The failures of the cycles run since the cluster last changed, by profile and shape."""

    def __init__(self) -> None:
        self._failures: dict[tuple[str, bytes], Failure] = {}
        self._as_of: tuple[int, ...] = ()
        # By pod key, the pod object a shape was made of, and the shape.
        self._shapes: dict[str, tuple[Mapping[str, Any], bytes | None]] = {}

    def shape(self, pod: PodInfo) -> bytes | None:
        """`pod_shape(pod)`, made once for each version of the pod."""
        known = self._shapes.get(pod.key)
        if known is not None and known[0] is pod.pod:
            return known[1]
        shape = pod_shape(pod)
        if len(self._shapes) >= SHAPES_KEPT:
            self._shapes.clear()
        self._shapes[pod.key] = (pod.pod, shape)
        return shape

    def get(self, as_of: tuple[int, ...], profile: str, shape: bytes) -> Failure | None:
        return self._failures.get((profile, shape)) if as_of == self._as_of else None

    def put(self, as_of: tuple[int, ...], profile: str, shape: bytes, failure: Failure) -> None:
        if as_of != self._as_of:
            self._failures.clear()
            self._as_of = as_of
        self._failures[(profile, shape)] = failure

    def empty_as_of(self, as_of: tuple[int, ...]) -> bool:
        """Whether no failure is remembered for the cluster as it is now."""
        return as_of != self._as_of or not self._failures


IN_TREE = "pinnace.scheduler.plugins."


def in_tree(plugin: object) -> bool:
    """Whether the plugin is one of Pinnace's own, which read only the cache, the nominations,
    their listers and the pod (a user's plugin, `module:Class`, may read anything)."""
    return type(plugin).__module__.startswith(IN_TREE)


def pod_shape(pod: PodInfo) -> bytes | None:
    """The JSON text of what the plugins read of the pod (see the module's docstring), None
    when the pod has none."""
    obj = pod.pod
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if spec.get("volumes"):
        renamed = volumes_renamed(spec)
        if renamed is None:
            return None
        spec = renamed
    status = obj.get("status") or {}
    return plain_json(
        (
            pod.namespace,
            meta.get("labels"),
            meta.get("ownerReferences"),
            spec,
            status.get("nominatedNodeName"),
            # What its containers run with counts too, while it is resized in place.
            sorted(pod.requests.items()),
        )
    )
