"""DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption): the PostFilter that
evicts lower-priority pods when a pod fits nowhere. The policy is in
`pinnace.scheduler.preemption`; this plugin holds its arguments and hands each decision to a
callback, `preempt`, as DefaultBinder hands over Bindings: the API adapter marks and deletes the
victims and writes the nominations (see `Preemption`).

Arguments (DefaultPreemptionArgs): minCandidateNodesPercentage (default 10) and
minCandidateNodesAbsolute (default 100) bound how many candidate nodes are compared.
PodDisruptionBudgets come from `pod_disruption_budgets()`, a lister the adapter supplies.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from pinnace.scheduler.failure_memo import Replay
from pinnace.scheduler.framework import CycleState, Status, error
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.nominator import Nominator
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.preemption import Evaluator, Preemption, num_candidates
from pinnace.scheduler.profile import Profile

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


class DefaultPreemption:
    name = "DefaultPreemption"

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        *,
        preempt: Callable[[Preemption], object] | None = None,
        pod_disruption_budgets: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        seed: int = 0,
    ) -> None:
        args = args or {}
        self.min_candidate_nodes_percentage = int(
            args.get("minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE)
        )
        self.min_candidate_nodes_absolute = int(
            args.get("minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)
        )
        _validate(self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute)
        # The API side, which the adapter may also set once the profile is built.
        self.preempt: Callable[[Preemption], object] = preempt or (lambda decision: None)
        self.pod_disruption_budgets = pod_disruption_budgets or (lambda: ())
        self.random = random.Random(seed)
        """Where the candidate search starts; the adapter gives it a stream of the run's seed."""
        self._acting = True
        self._profile: Profile | None = None
        self._nominator: Nominator | None = None
        self._replay: Replay | None = None

    def bind_framework(self, profile: Profile, nominator: Nominator) -> None:
        """The framework handle: the profile whose filters to re-run, the nominated pods."""
        self._profile, self._nominator = profile, nominator

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Any
    ) -> tuple[str | None, Status]:
        self._replay = None
        if self._profile is None or self._nominator is None:
            return None, error("DefaultPreemption was not given its framework handle")
        evaluator = Evaluator(
            self._profile,
            self._nominator,
            table,
            self.pod_disruption_budgets(),
            self.num_candidates,
            self.random,
        )
        outcome = evaluator.preempt(
            state, pod, diagnosis.node_statuses, diagnosis.absent_nodes_status
        )
        if outcome.preemption is None:
            draws = evaluator.drawn_from
            self._replay = partial(self.random.randrange, draws) if draws else _nothing
        if outcome.preemption is not None:
            if self._acting:
                for nominated in outcome.preemption.nominations_to_clear:
                    self._nominator.delete(nominated.key)
            self.preempt(outcome.preemption)
        status = outcome.status
        if status.message:
            status = Status(status.code, (f"preemption: {status.message}",))
        return outcome.nominated_node_name, status

    def replay_last(self) -> Replay | None:
        """The last run's random draw, to make again when its pod fails as it did; None after
        a run that preempted."""
        return self._replay

    @contextlib.contextmanager
    def dry_run(self) -> Iterator[list[Preemption]]:
        """Preemption decided but not carried out, for explanations: the decisions go to the
        list yielded, no nomination is cleared, and the random choice of where the candidate
        search starts is the same afterwards as if nothing had been asked."""
        decisions: list[Preemption] = []
        preempt, randomness = self.preempt, self.random.getstate()
        self.preempt, self._acting = decisions.append, False
        try:
            yield decisions
        finally:
            self.preempt, self._acting = preempt, True
            self.random.setstate(randomness)

    def num_candidates(self, num_nodes: int) -> int:
        return num_candidates(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )


def _nothing() -> None:
    """A run that drew nothing has nothing to replay."""


def _validate(percentage: int, absolute: int) -> None:
    """ValidateDefaultPreemptionArgs."""
    if not 0 <= percentage <= 100:
        raise ValueError(
            f"minCandidateNodesPercentage: Invalid value: {percentage}: not in valid range [0, 100]"
        )
    if absolute < 0:
        raise ValueError(
            f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
        )
    if percentage == 0 and absolute == 0:
        raise ValueError(
            "minCandidateNodesPercentage: Invalid value: 0: "
            "cannot be zero at the same time as minCandidateNodesAbsolute"
        )


def with_preemption(plugins: Sequence[Any], preemption: DefaultPreemption) -> list[Any]:
    """`plugins` with `preemption` as their DefaultPreemption, replacing any already there."""
    return [p for p in plugins if p.name != DefaultPreemption.name] + [preemption]
