"""The nodes the node lifecycle controller's monitor passes leave out in the simulated mode
(`pinnace.controllers.node_lifecycle`): the healthy ones, and the unreachable ones already
tainted.

A pass over a Ready, untainted node whose kubelet renews its Lease on time only counts the node
ready in its zone and notes its latest renewal, which shows nowhere until the node goes stale.
So in the simulated mode, where the renewals are kept in the node pool's account, such a node
is parked: the passes leave it out until it is due (it could go stale by then: its kubelet
does not renew on time, so its probe timestamp plus the grace period), its Node or Lease
changes (stirred), or its kubelet stops renewing on time. Before it is looked at again the
controller catches up with its renewals: the latest, first seen by the first pass after it.
A node gone Unknown that has its unreachable NoExecute taint is parked as well (counted not
ready in its zone), until its Node or Lease changes: its kubelet is silent, so a pass would
find it as the last one did. While every node is parked, the passes themselves are skipped
until the first is due (`next_outcome`), or a node is stirred or stops renewing.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class _Parked:
    due: float
    """The first pass after this looks at the node again (inf: not until something happens)."""
    zone: str | None
    """The zone it counts in (None: excluded from disruption)."""
    ready: str
    """Its Ready status, as the zone counts it ("True", or "Unknown")."""


class ParkedNodes:
    def __init__(self) -> None:
        self._parked: dict[str, _Parked] = {}
        self._unparked: set[str] = set()
        """The nodes followed (`follow`) and not parked: every pass looks at them."""
        self._stirred: set[str] = set()
        self._zones: Counter[tuple[str, str]] = Counter()
        """The parked nodes of each (zone, Ready status)."""
        self._due: list[tuple[float, str]] = []
        """(due, node) of the nodes parked with a due time, earliest first; an entry whose
        node was parked again or unparked since is stale."""

    def __contains__(self, name: str) -> bool:
        return name in self._parked

    def follow(self, name: str) -> None:
        """A node the passes look at from now on (until it is parked)."""
        self._unparked.add(name)

    def forget(self, name: str) -> None:
        """The node is gone."""
        self.unpark(name)
        self._unparked.discard(name)

    def park(self, name: str, due: float, zone: str | None, ready: str = "True") -> None:
        self.unpark(name)
        self._unparked.discard(name)
        self._parked[name] = _Parked(due, zone, ready)
        if zone is not None:
            self._zones[zone, ready] += 1
        if due < math.inf:
            heapq.heappush(self._due, (due, name))

    def repark(self, name: str, due: float) -> None:
        """Park the node again (it is parked), due at `due`."""
        parked = self._parked[name]
        self.park(name, due, parked.zone, parked.ready)

    def unpark(self, name: str) -> None:
        """The passes look at the node again."""
        parked = self._parked.pop(name, None)
        self._stirred.discard(name)
        if parked is not None:
            self._unparked.add(name)
            if parked.zone is not None:
                self._zones[parked.zone, parked.ready] -= 1

    def stir(self, name: str) -> bool:
        """The node's Node or Lease changed: the next pass looks at it. Whether it was
        parked."""
        if name in self._parked:
            self._stirred.add(name)
            return True
        return False

    def next_outcome(self) -> float | None:
        """When the next pass could do more than count the parked nodes ready: None when it
        looks at a node (one is not parked, or stirred), else just after the earliest due
        time (`due` takes those before a pass), infinite when no parked node is due."""
        if self._unparked or self._stirred:
            return None
        while self._due:
            due, name = self._due[0]
            parked = self._parked.get(name)
            if parked is not None and parked.due == due:
                return math.nextafter(due, math.inf)
            heapq.heappop(self._due)
        return math.inf

    def due(self, now: float, stopped: Iterable[str]) -> list[str]:
        """The parked nodes to catch up with before a pass at `now`: those due before it (they
        could be stale by now), and those of `stopped` (their kubelets stopped renewing on
        time). Not the stirred ones: the pass looks at those anyway."""
        names = dict.fromkeys(n for n in stopped if n in self._parked)
        while self._due and self._due[0][0] < now:
            due, name = heapq.heappop(self._due)
            parked = self._parked.get(name)
            if parked is not None and parked.due == due:
                names[name] = None
        return [n for n in names if n not in self._stirred]

    def to_look_at(self) -> set[str]:
        """The nodes a pass looks at: those not parked, the stirred ones unparked now."""
        for name in list(self._stirred):
            self.unpark(name)
        return set(self._unparked)

    def zone_statuses(self) -> dict[str, list[str]]:
        """The Ready statuses of the parked nodes of each zone."""
        statuses: dict[str, list[str]] = {}
        for (zone, ready), count in self._zones.items():
            if count:
                statuses.setdefault(zone, []).extend([ready] * count)
        return statuses
