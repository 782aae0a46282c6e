"""ImageLocality (pkg/scheduler/framework/plugins/imagelocality): favours nodes that already
hold the pod's images, each image's size scaled by the share of nodes holding it, the sum
clamped between 23MB and 1000MB per container and mapped onto 0-100."""

from __future__ import annotations

import numpy as np

from pinnace.scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageLocality:
    name = "ImageLocality"

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        total_nodes = len(table)
        sums = None
        for image in pod.images:
            holders = table.image_states.get(image)
            if not holders:
                continue
            spread = len(holders) / total_nodes
            if sums is None:
                sums = np.zeros(total_nodes, np.int64)
            for node_name, size in holders.items():
                sums[table.index[node_name]] += int(size * spread)
        if sums is None:
            return np.zeros(len(nodes), np.int64)
        max_threshold = MAX_CONTAINER_THRESHOLD * len(pod.images)
        clamped = np.clip(sums[nodes], MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)

    def uniform_score(self, state: CycleState, pod: PodInfo, table: NodeTable) -> int | None:
        """No node holding any of the pod's images: 0 everywhere."""
        states = table.image_states
        return None if any(states.get(image) for image in pod.images) else MIN_NODE_SCORE
