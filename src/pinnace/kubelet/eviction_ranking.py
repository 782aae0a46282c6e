"""The order the kubelet evicts pods in, per starved resource (the rank functions of
pkg/kubelet/eviction/helpers.go in v1.32).

- memory: pods using more than they request first, then lower priority, then the larger use
  above request;
- disk (bytes or inodes): the same, with the pod's disk use;
- PIDs: lower priority first, then the larger number of processes.

A pod without stats goes first. Which disk use counts depends on the filesystems: on one
filesystem, all of it (writable layers, logs, local volumes); with a dedicated image
filesystem, nodefs counts logs and local volumes and imagefs the writable layers.

Ranking compares pods many times over, so it reads only what a node keeps of each pod at hand
(`RankedPod`: its priority and requests), never the whole pod.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from pinnace.api.stats import PodStats
from pinnace.kubelet.eviction_signals import (
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    INODES,
    MEMORY_AVAILABLE,
    PID_AVAILABLE,
)
from pinnace.resources.names import EPHEMERAL_STORAGE, MEMORY


class RankedPod(Protocol):
    """What ranking reads of a pod."""

    @property
    def uid(self) -> str: ...

    @property
    def priority(self) -> int:
        """spec.priority (0 when unset)."""

    def requested(self, resource: str) -> int:
        """Its effective request of `resource` (0 when none): cpu in millicores, the rest in
        units."""


P = TypeVar("P", bound=RankedPod)
StatsOf = Callable[[RankedPod], PodStats | None]
Compare = Callable[[RankedPod, RankedPod], int]
"""Negative when the first pod is to be evicted before the second."""


def rank_for_eviction(
    signal: str, pods: Sequence[P], stats: StatsOf, *, dedicated_image_fs: bool = False
) -> list[P]:
    """`pods` in the order the kubelet would evict them to relieve `signal`."""
    if signal == MEMORY_AVAILABLE:
        compares = _usage_above_request(MEMORY, _memory, stats)
    elif signal == PID_AVAILABLE:
        compares = [_priority, _larger(_processes, stats)]
    else:
        image_fs = signal in (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE)
        resource = INODES if signal.endswith("inodesFree") else EPHEMERAL_STORAGE
        usage = _disk_usage(resource, dedicated_image_fs, image_fs)
        compares = _usage_above_request(resource, usage, stats)
    return sorted(pods, key=functools.cmp_to_key(_ordered_by(compares)))


def disk_usage(pod_stats: PodStats) -> int:
    """What a pod's containers and local volumes hold on disk."""
    return pod_stats.ephemeral_storage_bytes


def _memory(pod_stats: PodStats) -> int:
    return pod_stats.memory_working_set_bytes


def _processes(pod: RankedPod, pod_stats: PodStats) -> int:
    return pod_stats.pids


def _disk_usage(
    resource: str, dedicated_image_fs: bool, image_fs: bool
) -> Callable[[PodStats], int]:
    if resource == INODES:
        return lambda _: 0  # the summary carries no per-pod inode counts
    if not dedicated_image_fs:
        return disk_usage
    if image_fs:
        return lambda s: sum(c.rootfs_used_bytes for c in s.containers)
    return lambda s: s.volumes_used_bytes + sum(c.logs_used_bytes for c in s.containers)


def _usage_above_request(
    resource: str, usage: Callable[[PodStats], int], stats: StatsOf
) -> list[Compare]:
    def above(pod: RankedPod, pod_stats: PodStats) -> int:
        return usage(pod_stats) - pod.requested(resource)

    def exceeds(p1: RankedPod, p2: RankedPod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return _true_first(s1 is None, s2 is None)
        return _true_first(above(p1, s1) > 0, above(p2, s2) > 0)

    return [exceeds, _priority, _larger(above, stats)]


def _larger(amount: Callable[[RankedPod, PodStats], int], stats: StatsOf) -> Compare:
    """The pod with the larger amount first."""

    def compare(p1: RankedPod, p2: RankedPod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return _true_first(s1 is None, s2 is None)
        a1, a2 = amount(p1, s1), amount(p2, s2)
        return (a2 > a1) - (a2 < a1)

    return compare


def _priority(p1: RankedPod, p2: RankedPod) -> int:
    a, b = p1.priority, p2.priority
    return (a > b) - (a < b)


def _true_first(a: bool, b: bool) -> int:
    return 0 if a == b else (-1 if a else 1)


def _ordered_by(compares: Sequence[Compare]) -> Compare:
    def compare(p1: RankedPod, p2: RankedPod) -> int:
        for c in compares:
            result = c(p1, p2)
            if result:
                return result
        return 0

    return compare
