"""The images on one node: those it is configured with and those it pulled for the containers
of the pods it admitted, through its image service (`pinnace.kubelet.image_service`, the
kubelet's image manager: pkg/kubelet/images, EnsureImageExists), and the node status that
reports them (status.images, the nodestatus Images setter). Image garbage collection
(`pinnace.kubelet.gc`) forgets them.

The status they are part of changes only with them (`node_status.static_status`): a new one is
made on each change and kept until the next, so a caller can tell by identity whether it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.clock import Clock
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.image_service import ImageService, image_size
from pinnace.kubelet.node_status import static_status


class NodeImages:
    """The images the node of `config` pulled, its image service, and the static part of its
    status they are in. An `ImageHolder` for the node's garbage collection."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = ("_pulled", "_sized", "config", "service", "static_status")

    def __init__(self, config: NodeConfig, clock: Clock) -> None:
        self.config = config
        self._pulled: dict[str, float] = {}
        """The images of the containers this node has run, in order, with when each came."""
        self._sized: Mapping[str, tuple[int, float]] | None = None
        """`pulled_images` as of the last change of `_pulled` (None: not made since)."""
        self.static_status: Mapping[str, Any] = static_status(config)
        """What of the node status changes only when the node pulls an image (or forgets
        one): a new mapping on each change."""
        self.service = ImageService(
            clock,
            bandwidth=config.image_pull_bandwidth,
            serialize=config.serialize_image_pulls,
            max_parallel=config.max_parallel_image_pulls,
            missing=config.missing_images,
            sizes=config.image_sizes,
            on_pulled=self.pulled,
        )
        self.service.add(name for image in config.images for name in image["names"])

    def pulled(self, image: str) -> None:
        """`image` is on the node from now on: the next status sync reports it."""
        if image not in self._pulled:
            self._pulled[image] = self.service.clock.now()
            self._sized = None
            self.static_status = static_status(self.config, self._pulled)

    def pull(self, pod: Mapping[str, Any]) -> None:
        """A resumed pod's images: its containers run from them, so they are on the node."""
        spec = pod.get("spec") or {}
        containers = (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
        for c in containers:
            if c.get("image") and not self.service.has(c["image"]):
                self.service.add((c["image"],))
                self.pulled(c["image"])

    def pulled_images(self) -> Mapping[str, tuple[int, float]]:
        """The images the node pulled, as the pods name them: their sizes and when they came
        (made again only after the node pulls or forgets one)."""
        if self._sized is None:
            sizes = self.config.image_sizes
            self._sized = {
                image: (image_size(image, sizes), at) for image, at in self._pulled.items()
            }
        return self._sized

    def forget_images(self, images: Iterable[str]) -> None:
        """Image garbage collection deleted these: status.images no longer lists them, and a
        container that wants one pulls it again."""
        images = list(images)
        for image in images:
            self._pulled.pop(image, None)
        self._sized = None
        self.service.remove(images)
        self.static_status = static_status(self.config, self._pulled)
