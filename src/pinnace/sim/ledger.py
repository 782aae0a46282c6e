"""The nodes' allocatable and what the pods bound to them request, as matrices.

One row per node ever seen (a deleted node keeps its row, marked gone, and a node of the same
name coming back takes it again), one column per resource: cpu, memory, pods, then the
extended resources seen, in order of name. Amounts are integers in the scheduler's units
(millicores for cpu, bytes, counts). A pod counts against its node from when it is bound until
it finishes or is deleted, as kube-scheduler's cache counts it, and counts as one pod.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from pinnace.api.objects import Object
from pinnace.resources.lists import parse_resource_list, scheduler_value
from pinnace.resources.names import CPU, MEMORY, PODS, is_extended_resource_name

BASE_RESOURCES = (CPU, MEMORY, PODS)
Amounts = npt.NDArray[np.int64]


def tracked(name: str) -> bool:
    """Whether a resource gets a column: cpu, memory, pods and extended resources."""
    return name in BASE_RESOURCES or is_extended_resource_name(name)


def amounts(raw: Mapping[str, object] | None, what: str) -> dict[str, int]:
    """The tracked resources of a resource list, in the scheduler's units."""
    parsed = parse_resource_list(raw or {}, what)
    return {name: scheduler_value(name, q) for name, q in parsed.items() if tracked(name)}


class Ledger:
    """Allocatable and requested per node (see the module's docstring). The arrays are read
    through the properties, which cover the rows in use."""

    def __init__(self) -> None:
        self.resources: list[str] = list(BASE_RESOURCES)
        self.version = 0
        """Goes up whenever a column is added, so vectors made before can be told apart."""
        self.names: list[str] = []
        self.rows: dict[str, int] = {}
        self.pools: list[str] = []
        """Every pool seen, in order first seen; a node's pool is an index into it, -1 for
        a node without the pool label."""
        self._pool_of: dict[str, int] = {}
        self._pool_codes = np.zeros(0, dtype=np.int64)
        self._flags = np.zeros((3, 0), dtype=bool)  # present, ready, schedulable
        self._allocatable: Amounts = np.zeros((0, len(self.resources)), dtype=np.int64)
        self._requested: Amounts = np.zeros((0, len(self.resources)), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        return self._flags[0, : len(self)]

    @property
    def ready(self) -> npt.NDArray[np.bool_]:
        return self._flags[1, : len(self)]

    @property
    def schedulable(self) -> npt.NDArray[np.bool_]:
        return self._flags[2, : len(self)]

    @property
    def pool_codes(self) -> npt.NDArray[np.int64]:
        return self._pool_codes[: len(self)]

    @property
    def allocatable(self) -> Amounts:
        return self._allocatable[: len(self)]

    @property
    def requested(self) -> Amounts:
        return self._requested[: len(self)]

    def row(self, node: str) -> int:
        """The node's row, made (empty, not present) if it has none yet."""
        row = self.rows.get(node)
        if row is None:
            row = self.rows[node] = len(self.names)
            if row == self._flags.shape[1]:
                self._grow(max(16, 2 * row))
            self.names.append(node)
        return row

    def _grow(self, rows: int) -> None:
        more = rows - self._flags.shape[1]
        self._flags = np.pad(self._flags, ((0, 0), (0, more)))
        self._pool_codes = np.pad(self._pool_codes, (0, more), constant_values=-1)
        self._allocatable = np.pad(self._allocatable, ((0, more), (0, 0)))
        self._requested = np.pad(self._requested, ((0, more), (0, 0)))

    def column(self, resource: str) -> int:
        """The resource's column, added (in order of name, after the base ones) if new."""
        if resource not in self.resources:
            extended = sorted([*self.resources[len(BASE_RESOURCES) :], resource])
            at = len(BASE_RESOURCES) + extended.index(resource)
            self.resources.insert(at, resource)
            self._allocatable = np.insert(self._allocatable, at, 0, axis=1)
            self._requested = np.insert(self._requested, at, 0, axis=1)
            self.version += 1
        return self.resources.index(resource)

    def vector(self, resources: Mapping[str, int]) -> Amounts:
        """A resource map as a row of the columns (adding the columns it needs)."""
        for name in resources:
            self.column(name)  # every column first: adding one moves those after it
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in resources.items():
            out[self.resources.index(name)] = amount
        return out

    def set_node(self, node: Object, pool: str, ready: bool, schedulable: bool) -> None:
        """The Node as it is now: its allocatable, pool ("" for none) and state."""
        row = self.row(node["metadata"]["name"])
        allocatable = amounts((node.get("status") or {}).get("allocatable"), "allocatable")
        self._allocatable[row] = self.vector(allocatable)
        if pool and pool not in self._pool_of:
            self._pool_of[pool] = len(self.pools)
            self.pools.append(pool)
        self._pool_codes[row] = self._pool_of[pool] if pool else -1
        self._flags[:, row] = (True, ready, schedulable)

    def remove_node(self, name: str) -> None:
        row = self.rows.get(name)
        if row is not None:
            self._flags[:, row] = False
            self._allocatable[row] = 0

    def charge(self, node: str, requests: Amounts, sign: int) -> None:
        """Add (sign 1) or take away (-1) a pod's requests (a vector of the current columns)
        on its node."""
        row = self.row(node)  # first: a new row may grow the arrays
        # In place on a view of the row: `requested[row] += sign * requests` would make a
        # product array and write the row back, at every change of a pod's phase or node.
        requested = self._requested[row]
        if sign > 0:
            requested += requests
        else:
            requested -= requests
