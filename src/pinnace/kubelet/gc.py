"""What the kubelet frees on disk without evicting a pod, under disk pressure: its container and
image garbage collectors' DeleteAllUnusedContainers and DeleteUnusedImages (v1.32), for the
eviction manager's node-level reclaim.

- Containers: every exited container of a pod that has finished (its writable layer and log go
  with it). A pod still running keeps the last exited run of each container, as the kubelet's
  MaxPerPodContainer of 1 keeps it (the run `kubectl logs --previous` shows); the pod worker
  already removes older runs when it restarts a container.
- Images: every image the node pulled that no container it holds (running or exited) was
  started from and that has been on the node for imageMinimumGCAge; status.images then no
  longer lists it, and a container that needs it again pulls it again
  (`pinnace.kubelet.image_service`). The images the node is configured with stay.

The image garbage collector's own periodic pass (`garbage_collect_images`, by the thresholds
of `pinnace.kubelet.image_gc`) goes through the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from pinnace.kubelet.image_gc import ImageGCManager
from pinnace.kubelet.runtime import ContainerRuntime, ContainerState, image_reference
from pinnace.kubelet.worker import PodWorker


class ImageHolder(Protocol):
    """The node agent, as far as images go."""

    def pulled_images(self) -> Mapping[str, tuple[int, float]]:
        """The images the node pulled for containers, as the pods name them, with their sizes
        and when they were pulled."""

    def forget_images(self, images: Iterable[str]) -> None:
        """Those images were deleted."""


class NodeGC:
    """The node's container and image garbage collection, on demand."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        workers: Mapping[str, PodWorker],
        images: ImageHolder,
        image_gc: ImageGCManager,
        now: Callable[[], float],
    ) -> None:
        self.runtime = runtime
        self.workers = workers
        self.images = images
        self.image_gc = image_gc
        self.now = now

    def delete_unused_containers(self) -> None:
        for worker in self.workers.values():
            if not worker.finished:
                continue
            for c in worker.containers:
                for run in (c.previous, c.current):
                    if run is not None and run.state is ContainerState.EXITED:
                        self.runtime.remove_container(run.id)

    def detect_images(self) -> list[str]:
        """Bring the image records up to date (detectImages); the images in use."""
        held = {run.image for run in self.runtime.list_containers()}
        present = self.images.pulled_images()
        in_use = [image for image in present if image_reference(image) in held]
        self.image_gc.detect(self.now(), present, in_use)
        return in_use

    def delete_unused_images(self) -> None:
        in_use = self.detect_images()
        self.image_gc.delete_unused(self.now(), in_use, self.images.forget_images)

    def garbage_collect_images(self, filesystem: Callable[[], tuple[int, int]]) -> None:
        """The image garbage collector's pass (`ImageGCManager.garbage_collect`); raises
        ImageGCError."""
        in_use = self.detect_images()
        self.image_gc.garbage_collect(self.now(), in_use, filesystem, self.images.forget_images)

    def images_to_collect(self) -> bool:
        """Whether the node holds a pulled image no container uses: only then may a pass of
        the image garbage collector do anything."""
        held = {run.image for run in self.runtime.list_containers()}
        return any(image_reference(i) not in held for i in self.images.pulled_images())
