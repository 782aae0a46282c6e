"""The node's image service as the kubelet sees it (pkg/kubelet/images: image_manager.go's
EnsureImageExists, puller.go's serial and parallel pullers, types.go's errors), over a
simulated registry.

- An image is present once pulled (or listed in the node's `images`); a pull takes the image's
  size over the node's pull bandwidth (by default unlimited: no time), and a pull of an image
  already present (imagePullPolicy Always) only checks its manifest.
- Pulls run one at a time (serializeImagePulls, the default), or up to maxParallelImagePulls
  at once (none: unlimited); a pull queued behind others counts that wait in its "including
  waiting" time, as the kubelet's Pulled event shows it.
- The registry: every image exists except those the cluster file lists as missing, and, in
  the official nginx repository, tags that start with a digit but are no nginx version
  (`1`, `1.<minor>` or `1.<minor>.<patch>` with a minor below 100, optionally followed by a
  `-variant`; tags that start with a letter, such as `latest` or `alpine`, all exist): so the
  Kubernetes documentation's rollout of `nginx:1.161` (a typo of 1.16.1) fails to pull, as
  on a real cluster.
- A failed pull puts the pod's image in back-off (flowcontrol.Backoff keyed by pod UID and
  image): 10 s, doubling to 5 minutes, forgotten after twice that without a failure.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pinnace.clock import Clock
from pinnace.kubelet.runtime import image_reference, image_repository

PULL_POLICY_ALWAYS = "Always"
PULL_POLICY_NEVER = "Never"
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
INVALID_IMAGE_NAME = "InvalidImageName"
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
DEFAULT_PULL_BANDWIDTH = math.inf
"""Unless its pool gives an imagePullBandwidth, a node pulls in no time (as from a registry on
the node itself): a pull goes through the events, policies, registry and back-off, but the
clock does not move, so workloads start when they did before pulls were modelled."""
MANIFEST_CHECK_SECONDS = 0.1
"""At a finite bandwidth, what a pull costs besides the layers: the registry is asked for the
manifest (all a pull of an image already present does)."""
KNOWN_SIZES = {
    "docker.io/library/nginx": 72_000_000,
    "docker.io/library/busybox": 4_300_000,
    "docker.io/library/alpine": 3_600_000,
    "docker.io/library/ubuntu": 29_000_000,
    "docker.io/library/perl": 340_000_000,
    "docker.io/library/redis": 45_000_000,
    "docker.io/library/httpd": 58_000_000,
    "registry.k8s.io/pause": 320_000,
}
"""Sizes of common images (compressed, as pulled), by repository."""
_NGINX_VERSION = re.compile(r"1(?:\.\d{1,2}(?:\.\d+)?)?(?:-[A-Za-z0-9._-]+)?")


def image_size(image: str, sizes: Mapping[str, int] = MappingProxyType({})) -> int:
    """Its size in `sizes` (by reference, then repository: see `size_key`), else in
    KNOWN_SIZES, else 10 MiB plus up to 240 MiB, fixed by its name."""
    for table in (sizes, KNOWN_SIZES):
        for key in (image_reference(image), image_repository(image)):
            if key in table:
                return table[key]
    digest = hashlib.sha256(image_reference(image).encode()).digest()
    return 10 * 2**20 + int.from_bytes(digest[:8]) % (240 * 2**20)


def size_key(name: str) -> str:
    """How a cluster file's image size is looked up: `nginx:1.27` sizes that image, `nginx`
    every image of the repository."""
    bare = name.rfind(":") <= name.rfind("/") and "@" not in name
    return image_repository(name) if bare else image_reference(name)


def _tag(image: str) -> str:
    reference = image_reference(image)
    return "" if "@" in reference else reference.rsplit(":", 1)[1]


def registry_has(image: str, missing: Iterable[str] = ()) -> bool:
    """Whether the simulated registry serves `image` (see the module docstring)."""
    reference = image_reference(image)
    if any(image_reference(m) == reference for m in missing):
        return False
    if image_repository(image) != "docker.io/library/nginx" or "@" in reference:
        return True
    tag = _tag(image)
    return not tag[:1].isdigit() or _NGINX_VERSION.fullmatch(tag) is not None


def not_found(image: str) -> str:
    """containerd's answer for a tag the registry does not have."""
    ref = image_reference(image)
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )


def should_pull(policy: str, present: bool) -> bool:
    return policy == PULL_POLICY_ALWAYS or (policy != PULL_POLICY_NEVER and not present)


@dataclass(frozen=True)
class PullResult:
    image: str
    error: str
    """containerd's error ("" on success)."""
    size: int
    pull_seconds: float
    total_seconds: float
    """From the request, waiting in the queue included."""


@dataclass
class _Pull:
    image: str
    requested: float
    done: Callable[[PullResult], None]


class ImageService:
    """One node's images, pulls and pull back-offs."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = (
        "_backoff",
        "_queue",
        "_running",
        "bandwidth",
        "clock",
        "limit",
        "missing",
        "on_pulled",
        "present",
        "sizes",
    )

    def __init__(
        self,
        clock: Clock,
        *,
        bandwidth: float = DEFAULT_PULL_BANDWIDTH,
        serialize: bool = True,
        max_parallel: int | None = None,
        missing: Iterable[str] = (),
        sizes: Mapping[str, int] = MappingProxyType({}),
        on_pulled: Callable[[str], None] = lambda image: None,
    ) -> None:
        self.clock = clock
        self.bandwidth = bandwidth
        self.limit = 1 if serialize else max_parallel
        self.missing = tuple(missing)
        self.sizes = sizes
        self.on_pulled = on_pulled
        self.present: set[str] = set()
        """The references (image_reference) of the images on the node."""
        self._queue: deque[_Pull] = deque()
        self._running = 0
        self._backoff: dict[str, tuple[float, float]] = {}
        """Key -> (back-off, when it last grew)."""

    def has(self, image: str) -> bool:
        return image_reference(image) in self.present

    def add(self, images: Iterable[str]) -> None:
        self.present.update(image_reference(i) for i in images)

    def remove(self, images: Iterable[str]) -> None:
        self.present.difference_update(image_reference(i) for i in images)

    def pull(self, image: str, done: Callable[[PullResult], None]) -> PullResult | None:
        """Pull `image`: its result at once if the pull takes no time and waits for none (and
        `done` is not called), else None, and `done` is called with the result later."""
        if not self._queue and self._duration(image) == 0 and not self._running:
            return self._result(image, 0.0, 0.0)
        self._queue.append(_Pull(image, self.clock.now(), done))
        self._next()
        return None

    def _next(self) -> None:
        while self._queue and (self.limit is None or self._running < self.limit):
            pull = self._queue.popleft()
            self._running += 1
            seconds = self._duration(pull.image)
            self.clock.call_later(seconds, self._finish, pull, seconds)

    def _duration(self, image: str) -> float:
        if math.isinf(self.bandwidth):
            return 0.0
        if self.has(image) or not registry_has(image, self.missing):
            return MANIFEST_CHECK_SECONDS
        return MANIFEST_CHECK_SECONDS + image_size(image, self.sizes) / self.bandwidth

    def _finish(self, pull: _Pull, seconds: float) -> None:
        self._running -= 1
        pull.done(self._result(pull.image, seconds, self.clock.now() - pull.requested))
        self._next()

    def _result(self, image: str, seconds: float, total: float) -> PullResult:
        if not registry_has(image, self.missing):
            return PullResult(image, not_found(image), 0, seconds, total)
        if not self.has(image):
            self.present.add(image_reference(image))
            self.on_pulled(image)
        return PullResult(image, "", image_size(image, self.sizes), seconds, total)

    # --- back-off (flowcontrol.Backoff) ---------------------------------------------------

    def in_backoff(self, key: str) -> tuple[float, float] | None:
        """(back-off, last failure) while `key` is in back-off since its last failure."""
        entry = self._backoff.get(key)
        if entry is None or self.clock.now() - entry[1] >= entry[0]:
            return None
        return entry

    def failed(self, key: str) -> None:
        now = self.clock.now()
        entry = self._backoff.get(key)
        if entry is None or now - entry[1] > 2 * BACKOFF_MAX:
            self._backoff[key] = (BACKOFF_INITIAL, now)
        else:
            self._backoff[key] = (min(2 * entry[0], BACKOFF_MAX), now)

    def forget(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._backoff.pop(key, None)


def pull_duration(seconds: float) -> str:
    """A duration as Go prints one truncated to milliseconds (`1.234s`, `312ms`, `2m3.5s`)."""
    ms = int(seconds * 1000 + 1e-3)  # the clock's times are ~1e9 s: their differences are off
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest = divmod(ms, 60_000)
    hours, minutes = divmod(minutes, 60)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    return f"{minutes}m{secs}" if minutes else secs
