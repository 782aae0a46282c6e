"""Eviction for local ephemeral storage limits (the eviction manager's localStorageEviction in
v1.32, on as LocalStorageCapacityIsolation is GA): whatever the node's thresholds, a pod whose
disk use goes above its ephemeral-storage limit is evicted at the next pass.

- The pod: its writable layers, logs and local volumes above the sum of its containers'
  ephemeral-storage limits;
- a container: its log (and its writable layer, unless images have a filesystem of their own)
  above its own limit.

- an emptyDir volume: what the pod's containers wrote into it (the shell model's files,
  `pinnace.kubelet.volumes`) above its `sizeLimit`, checked first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api.stats import PodStats
from pinnace.resources.lists import parse_quantity
from pinnace.resources.names import EPHEMERAL_STORAGE
from pinnace.resources.pod import containers, pod_limits
from pinnace.resources.quantity import Quantity


def storage_limit_exceeded(
    pod: Mapping[str, Any], pod_stats: PodStats, dedicated_image_fs: bool
) -> str | None:
    """Why the pod must be evicted for its disk use, in the kubelet's words, or None."""
    limit = pod_limits(pod).get(EPHEMERAL_STORAGE)
    if limit is not None and pod_stats.ephemeral_storage_bytes > limit.value():
        return f"Pod ephemeral local storage usage exceeds the total limit of containers {limit}. "
    limits = {
        c.name: c.limits[EPHEMERAL_STORAGE]
        for c in containers(pod, "containers")
        if EPHEMERAL_STORAGE in c.limits and not c.limits[EPHEMERAL_STORAGE].is_zero()
    }
    for stats in pod_stats.containers:
        limit = limits.get(stats.name)
        used = stats.logs_used_bytes + (0 if dedicated_image_fs else stats.rootfs_used_bytes)
        if limit is not None and used > limit.value():
            return f'Container {stats.name} exceeded its local ephemeral storage limit "{limit}". '
    return None


def empty_dir_limit_exceeded(pod: Mapping[str, Any], used_bytes: Mapping[str, int]) -> str | None:
    """emptyDirLimitEviction: why the pod must be evicted for an emptyDir volume holding more
    than its sizeLimit (`used_bytes`, by volume name), in the kubelet's words, or None."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        limit = _size_limit(volume)
        used = used_bytes.get(volume.get("name", ""))
        if limit is not None and used is not None and used > limit.value():
            return f'Usage of EmptyDir volume "{volume["name"]}" exceeds the limit "{limit}". '
    return None


def _size_limit(volume: Mapping[str, Any]) -> Quantity | None:
    empty_dir = volume.get("emptyDir")
    value = empty_dir.get("sizeLimit") if isinstance(empty_dir, Mapping) else None
    if value is None:
        return None
    limit = parse_quantity(value)
    return limit if limit.sign() > 0 else None


def has_storage_limit(pod: Mapping[str, Any]) -> bool:
    """Whether a container of the pod has an ephemeral-storage limit, or an emptyDir volume a
    sizeLimit: without one, neither `storage_limit_exceeded` nor `empty_dir_limit_exceeded`
    could find a limit exceeded."""
    spec = pod.get("spec") or {}
    return any(
        EPHEMERAL_STORAGE in ((c.get("resources") or {}).get("limits") or {})
        for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
    ) or any(_size_limit(v) is not None for v in spec.get("volumes") or ())


def storage_limit_reachable(pod: Mapping[str, Any], disk_peaks: Mapping[str, float]) -> bool:
    """Whether containers using up to `disk_peaks` (writable layer and log, by container
    name) could take the pod over one of its ephemeral-storage limits."""
    if not has_storage_limit(pod):
        return False
    if any(_size_limit(v) is not None for v in (pod.get("spec") or {}).get("volumes") or ()):
        return True  # what scripts write into an emptyDir has no peak to bound it
    limit = pod_limits(pod).get(EPHEMERAL_STORAGE)
    if limit is not None and sum(disk_peaks.values()) > limit.value():
        return True
    for c in containers(pod, "containers"):
        own = c.limits.get(EPHEMERAL_STORAGE)
        if own is not None and not own.is_zero() and disk_peaks.get(c.name, 0) > own.value():
            return True
    return False
