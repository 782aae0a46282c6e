"""The kubelet's image garbage collection (pkg/kubelet/images/image_gc_manager.go, v1.32).

Every IMAGE_GC_PERIOD (5 minutes) the kubelet looks at the images on its node: an image is
first detected then, and last used whenever a container the runtime holds (running or exited)
was started from it. Then:

1. with imageMaximumGCAge set (0, the default, is off), and once that long has passed since
   image GC began, every image not in use that has not been used for longer than it goes;
2. if the image filesystem's usage is at or above imageGCHighThresholdPercent (85), images
   not in use are deleted, least recently used first (then first detected first), skipping
   those detected less than imageMinimumGCAge (2 minutes) ago, until usage is down to
   imageGCLowThresholdPercent (80); if it cannot get there, a FreeDiskSpaceFailed event on the
   node says so ("Failed to garbage collect required amount of images. Attempted to free N
   bytes, but only found M bytes eligible to free."), and when a pass fails twice in a row an
   ImageGCFailed event repeats it.

A node without ephemeral-storage capacity has no image filesystem to measure: its passes do
nothing beyond imageMaximumGCAge (the kubelet would report InvalidDiskCapacity).

The eviction manager's reclaim (`delete_unused`) deletes every image not in use that is old
enough, whatever the thresholds. The images a node pool lists in its `images` are treated as
pinned: only images the node pulled are collected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

IMAGE_GC_PERIOD = 300.0
"""How often the kubelet collects images (ImageGCPeriod)."""
FREE_DISK_SPACE_FAILED = "FreeDiskSpaceFailed"
IMAGE_GC_FAILED = "ImageGCFailed"


@dataclass(frozen=True)
class ImageGCPolicy:
    high_threshold_percent: int = 85
    low_threshold_percent: int = 80
    min_age: float = 120.0
    max_age: float = 0.0
    """0: images are not collected for their age."""


@dataclass
class _Record:
    first_detected: float
    last_used: float = -math.inf
    size: int = 0


class ImageGCError(Exception):
    """A pass that could not free what it had to (its message is the kubelet's)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ImageGCManager:
    """One node's image records and its collection passes."""

    def __init__(self, policy: ImageGCPolicy, began: float) -> None:
        self.policy = policy
        self.began = began
        self.records: dict[str, _Record] = {}

    def detect(
        self, now: float, present: Mapping[str, tuple[int, float]], in_use: Iterable[str]
    ) -> None:
        """detectImages: `present` the collectable images on the node with their sizes and
        when they came (taken as when they were first detected), `in_use` those a container
        the runtime holds runs from."""
        used = set(in_use)
        for image, (size, came) in present.items():
            record = self.records.setdefault(image, _Record(came))
            record.size = size
            if image in used:
                record.last_used = now
        for image in [i for i in self.records if i not in present]:
            del self.records[image]

    def unused(self, in_use: Iterable[str]) -> bool:
        """Whether an image the node holds is in use by no container."""
        used = set(in_use)
        return any(image not in used for image in self.records)

    def _eviction_order(self, in_use: set[str]) -> list[tuple[str, _Record]]:
        candidates = [(i, r) for i, r in self.records.items() if i not in in_use]
        return sorted(candidates, key=lambda item: (item[1].last_used, item[1].first_detected))

    def garbage_collect(
        self,
        now: float,
        in_use: Iterable[str],
        filesystem: Callable[[], tuple[int, int]],
        remove: Callable[[list[str]], None],
    ) -> None:
        """GarbageCollect, after `detect`: `filesystem` gives the image filesystem's capacity
        and available bytes (asked after the old images are gone), `remove` deletes images.
        Raises ImageGCError when it cannot free enough."""
        used = set(in_use)
        images = self._eviction_order(used)
        images = self._free_old(now, images, remove)
        capacity, available = filesystem()
        available = min(available, capacity)
        if capacity == 0:
            return  # no filesystem modelled (the node has no ephemeral-storage capacity)
        usage_percent = 100 - available * 100 // capacity
        if usage_percent < self.policy.high_threshold_percent:
            return
        to_free = capacity * (100 - self.policy.low_threshold_percent) // 100 - available
        freed = self._free_space(now, to_free, images, remove)
        if freed < to_free:
            raise ImageGCError(
                "Failed to garbage collect required amount of images. Attempted to free "
                f"{to_free} bytes, but only found {freed} bytes eligible to free.",
                FREE_DISK_SPACE_FAILED,
            )

    def delete_unused(
        self, now: float, in_use: Iterable[str], remove: Callable[[list[str]], None]
    ) -> None:
        """DeleteUnusedImages: every image not in use that is old enough."""
        self._free_space(now, math.inf, self._eviction_order(set(in_use)), remove)

    def _free_old(
        self,
        now: float,
        images: list[tuple[str, _Record]],
        remove: Callable[[list[str]], None],
    ) -> list[tuple[str, _Record]]:
        max_age = self.policy.max_age
        if max_age == 0 or now - self.began <= max_age:
            return images
        old = [image for image, record in images if now - record.last_used > max_age]
        self._remove(old, remove)
        return [(i, r) for i, r in images if i not in set(old)]

    def _free_space(
        self,
        now: float,
        to_free: float,
        images: list[tuple[str, _Record]],
        remove: Callable[[list[str]], None],
    ) -> int:
        freed, chosen = 0, []
        for image, record in images:
            if record.last_used >= now or now - record.first_detected < self.policy.min_age:
                continue
            chosen.append(image)
            freed += record.size
            if freed >= to_free:
                break
        self._remove(chosen, remove)
        return freed

    def _remove(self, images: list[str], remove: Callable[[list[str]], None]) -> None:
        if images:
            remove(images)
            for image in images:
                self.records.pop(image, None)
