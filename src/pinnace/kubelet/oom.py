"""The node's OOM killer: which container goes when the node runs out of memory.

The kernel scores every process by its badness: the share of memory it holds, in thousandths
of the machine's, plus its oom_score_adj (-1000 to 1000, set by the kubelet by QoS class, see
`pinnace.resources.oom`), and kills the highest. A process at -1000 is never chosen. A
simulated container is one process holding its whole working set.

v1.32's kubelet records no event for a container killed this way, nor for one killed by its
own cgroup's limit (its OOM watcher only reports a victim outside every container, as a
SystemOOM event on the node): the container's status shows OOMKilled, and that is all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

OOM_SCORE_ADJ_MIN = -1000
"""Never killed."""


@dataclass(frozen=True)
class OOMCandidate:
    container_id: str
    memory_bytes: float
    oom_score_adj: int


def oom_score(candidate: OOMCandidate, memory_capacity: float) -> int:
    """The badness: usage in per-mille of capacity plus oom_score_adj."""
    return int(candidate.memory_bytes * 1000 // memory_capacity) + candidate.oom_score_adj


def oom_victim(candidates: Sequence[OOMCandidate], memory_capacity: float) -> str | None:
    """The container the OOM killer kills: the highest score, then the most memory; None when
    every candidate is unkillable."""
    killable = [c for c in candidates if c.oom_score_adj > OOM_SCORE_ADJ_MIN]
    if not killable:
        return None
    chosen = max(killable, key=lambda c: (oom_score(c, memory_capacity), c.memory_bytes))
    return chosen.container_id
