"""The cluster as one autoscaler loop sees it (cluster-autoscaler's ClusterSnapshot and its
SchedulerBasedPredicateChecker): kube-scheduler's own profiles, built from the cluster's
scheduler configuration, over the nodes and the pods bound to them, asked only "which nodes
would the PreFilter and Filter plugins accept this pod on". Nothing is scored; a pod placed in
a simulation is added to its node, so the next pod sees it there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from pinnace.api.objects import Object
from pinnace.clock import Clock
from pinnace.scheduler.adapter import connect_offline
from pinnace.scheduler.config import SchedulerConfiguration, build_profiles
from pinnace.scheduler.framework import CycleState
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.schedule_one import Scheduler


class Snapshot:
    def __init__(self, config: SchedulerConfiguration | None, clock: Clock) -> None:
        profiles = build_profiles(config or SchedulerConfiguration(), lambda binding: None)
        self.core = Scheduler(profiles, clock)
        connect_offline(self.core)
        self._default = profiles[0]

    def add_node(self, node: Mapping[str, Any]) -> None:
        self.core.add_node(node)

    def has_node(self, name: str) -> bool:
        return name in self.core.table.index

    def add_pod(self, pod: Mapping[str, Any], node: str) -> Object:
        """`pod` as bound to `node`, taking room there; the bound copy is returned."""
        bound = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        self.core.add_pod(bound)
        return bound

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        self.core.delete_pod(pod)

    def feasible(self, pod: Mapping[str, Any]) -> np.ndarray:
        """Which nodes (rows of the table) the plugins accept `pod` on, as things stand."""
        info = PodInfo.from_pod(pod)
        profile = self._profile(info)
        table = self.core.table
        state = CycleState()
        if not profile.run_pre_filter(state, info, table).is_success():
            return np.zeros(len(table), bool)
        mask, _ = profile.run_filter(state, info, table)
        return mask

    def find_place(self, pod: Mapping[str, Any], among: Collection[str]) -> str | None:
        """The first node of `among` (in its order) that accepts `pod`."""
        mask = self.feasible(pod)
        index = self.core.table.index
        return next((n for n in among if n in index and mask[index[n]]), None)

    def fits(self, pod: Mapping[str, Any], node: str) -> bool:
        i = self.core.table.index.get(node)
        return i is not None and bool(self.feasible(pod)[i])

    def reasons(self, pod: Mapping[str, Any], node: str) -> list[str]:
        """Why `node` does not take `pod`: the rejecting plugin's reasons ([] if it does)."""
        info = PodInfo.from_pod(pod)
        profile = self._profile(info)
        table = self.core.table
        i = table.index[node]
        state = CycleState()
        status = profile.run_pre_filter(state, info, table)
        if not status.is_success():
            return list(status.reasons)
        rows = np.array([i], np.intp)
        mask, trace = profile.run_filter(state, info, table, rows)
        if mask[i]:
            return []
        return list(profile.node_status(state, info, table, trace, i).reasons)

    def _profile(self, pod: PodInfo) -> Profile:
        return self.core.profiles.get(pod.scheduler_name, self._default)
