"""The images on one node: those it is configured with and those it pulled for the containers
of the pods it admitted, as the kubelet's image manager pulls them (pkg/kubelet/images:
image_manager.go, EnsureImageExists) and its node status reports them (status.images, the
nodestatus Images setter). Image garbage collection (`pinnace.kubelet.gc`) forgets them.

The status they are part of changes only with them (`node_status.static_status`): a new one is
made on each change and kept until the next, so a caller can tell by identity whether it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.node_status import static_status


class NodeImages:
    """The images the node of `config` pulled, and the static part of its status they are in.
    An `ImageHolder` for the node's garbage collection."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = ("_pulled", "config", "static_status")

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self._pulled: dict[str, None] = {}
        """The images of the containers this node has run, in order."""
        self.static_status: Mapping[str, Any] = static_status(config)
        """What of the node status changes only when the node pulls an image (or forgets
        one): a new mapping on each change."""

    def pull(self, pod: Mapping[str, Any]) -> None:
        """The pod's images are on the node from now on: the next status sync reports them."""
        spec = pod.get("spec") or {}
        containers = (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
        new = [c["image"] for c in containers if c.get("image") and c["image"] not in self._pulled]
        if new:
            self._pulled.update(dict.fromkeys(new))
            self.static_status = static_status(self.config, self._pulled)

    def pulled_images(self) -> list[str]:
        return list(self._pulled)

    def forget_images(self, images: Iterable[str]) -> None:
        """Image garbage collection deleted these: status.images no longer lists them."""
        for image in images:
            self._pulled.pop(image, None)
        self.static_status = static_status(self.config, self._pulled)
