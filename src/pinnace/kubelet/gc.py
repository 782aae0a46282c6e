"""What the kubelet frees on disk without evicting a pod, under disk pressure: its container and
image garbage collectors' DeleteAllUnusedContainers and DeleteUnusedImages (v1.32), for the
eviction manager's node-level reclaim.

- Containers: every exited container of a pod that has finished (its writable layer and log go
  with it). A pod still running keeps the last exited run of each container, as the kubelet's
  MaxPerPodContainer of 1 keeps it (the run `kubectl logs --previous` shows); the pod worker
  already removes older runs when it restarts a container.
- Images: every image the node pulled that no container it holds (running or exited) was
  started from; status.images then no longer lists it, and a container that needs it again
  pulls it again (`pinnace.kubelet.image_service`). The images the node is configured with stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from pinnace.kubelet.runtime import ContainerRuntime, ContainerState, image_reference
from pinnace.kubelet.worker import PodWorker


class ImageHolder(Protocol):
    """The node agent, as far as images go."""

    def pulled_images(self) -> Iterable[str]:
        """The images the node pulled for containers, as the pods name them."""

    def forget_images(self, images: Iterable[str]) -> None:
        """Those images were deleted."""


class NodeGC:
    """The node's container and image garbage collection, on demand."""

    def __init__(
        self, runtime: ContainerRuntime, workers: Mapping[str, PodWorker], images: ImageHolder
    ) -> None:
        self.runtime = runtime
        self.workers = workers
        self.images = images

    def delete_unused_containers(self) -> None:
        for worker in self.workers.values():
            if not worker.finished:
                continue
            for c in (*worker.inits, *worker.apps):
                for run in (c.previous, c.current):
                    if run is not None and run.state is ContainerState.EXITED:
                        self.runtime.remove_container(run.id)

    def delete_unused_images(self) -> None:
        held = {run.image for run in self.runtime.list_containers()}
        unused = [i for i in self.images.pulled_images() if image_reference(i) not in held]
        if unused:
            self.images.forget_images(unused)
