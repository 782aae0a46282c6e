"""Completion indexes of Indexed Jobs, as the Job controller of kube-controller-manager (v1.32)
keeps them: each pod carries its index in an annotation (and a label of the same name), and
status.completedIndexes lists the succeeded ones as compressed intervals such as "0-2,4,6,7"
(two neighbours are written with a comma, three or more as a range)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pinnace.api.objects import Object
from pinnace.apiserver.server import GENERATE_NAME_MAX_BASE
from pinnace.controllers.controller_utils import active_pods_to_delete

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""The annotation and label holding a pod's completion index."""
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
UNKNOWN_INDEX = -1


@dataclass(frozen=True)
class Interval:
    first: int
    last: int


class Intervals(tuple[Interval, ...]):
    """Sorted, disjoint, non-adjacent intervals of indexes."""

    @classmethod
    def parse(cls, text: str, completions: int) -> Intervals:
        """status.completedIndexes as written, ignoring corrupt parts and indexes past
        `completions`."""
        result: list[Interval] = []
        for part in text.split(",") if text else ():
            bounds = part.split("-")
            try:
                first = int(bounds[0])
                last = int(bounds[1]) if len(bounds) > 1 else first
            except ValueError:
                continue
            if first >= completions:
                break
            last = min(last, completions - 1)
            if result and result[-1].last == first - 1:
                result[-1] = Interval(result[-1].first, last)
            else:
                result.append(Interval(first, last))
        return cls(result)

    def with_indexes(self, indexes: Iterable[int]) -> Intervals:
        """These intervals and `indexes` merged."""
        return self.merge(Interval(i, i) for i in set(indexes))

    def merge(self, other: Iterable[Interval]) -> Intervals:
        """These intervals and `other` merged."""
        merged: list[Interval] = []
        for v in sorted([*self, *other], key=lambda v: v.first):
            if merged and v.first <= merged[-1].last + 1:
                if v.last > merged[-1].last:
                    merged[-1] = Interval(merged[-1].first, v.last)
            else:
                merged.append(v)
        return Intervals(merged)

    def total(self) -> int:
        return sum(v.last - v.first + 1 for v in self)

    def has(self, index: int) -> bool:
        return any(v.first <= index <= v.last for v in self)

    def __str__(self) -> str:
        parts = []
        for v in self:
            if v.last == v.first:
                parts.append(str(v.first))
            else:
                parts.append(f"{v.first}{',' if v.last == v.first + 1 else '-'}{v.last}")
        return ",".join(parts)


def completion_index(pod: Object) -> int:
    """The pod's completion index, or UNKNOWN_INDEX when it has none or a bad one."""
    text = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX)
    if text is None or not text.isdigit():
        return UNKNOWN_INDEX
    return int(text)


def indexes_of(pods: Iterable[Object]) -> set[int]:
    return {i for i in (completion_index(p) for p in pods) if i != UNKNOWN_INDEX}


def first_pending_indexes(taken: Intervals, count: int, completions: int) -> list[int]:
    """The `count` lowest indexes below `completions` not `taken` (succeeded, failed for
    good, or with a pod)."""
    result: list[int] = []
    candidate = 0
    for v in (*taken, Interval(completions, completions)):
        while candidate < min(v.first, completions) and len(result) < count:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, v.last + 1)
    return result


def surplus_index_pods(pods: list[Object], completions: int) -> tuple[list[Object], list[Object]]:
    """(to remove, to keep): pods without an index or with one out of range go, and of
    several pods with one index all but the one that would be deleted last."""
    by_index: dict[int, list[Object]] = {}
    remove: list[Object] = []
    for p in pods:
        ix = completion_index(p)
        if ix == UNKNOWN_INDEX or ix >= completions:
            remove.append(p)
        else:
            by_index.setdefault(ix, []).append(p)
    keep: list[Object] = []
    for ix in sorted(by_index):
        group = by_index[ix]
        if len(group) > 1:
            victims = active_pods_to_delete(group, len(group) - 1)
            remove += victims
            keep += [p for p in group if all(p is not v for v in victims)]
        else:
            keep += group
    return remove, keep


def indexed_generate_name(job_name: str, index: int) -> str:
    """`<job>-<index>-`, the job name cut so the server can still add its random suffix."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > GENERATE_NAME_MAX_BASE:
        prefix = prefix[: GENERATE_NAME_MAX_BASE - len(suffix)] + suffix
    return prefix


def with_completion_index(template: Object, job_name: str, index: int) -> Object:
    """A copy of the pod template (already carrying the index env var) for `index`: the
    annotation, the label and the hostname `<job>-<index>`."""
    meta = dict(template.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COMPLETION_INDEX: str(index)}
    meta["labels"] = {**(meta.get("labels") or {}), COMPLETION_INDEX: str(index)}
    spec = {**(template.get("spec") or {}), "hostname": f"{job_name}-{index}"}
    return {**template, "metadata": meta, "spec": spec}


def add_completion_index_env(template: Object) -> None:
    """Every container (init ones too) gets JOB_COMPLETION_INDEX from the index label,
    unless it sets it itself. Changes `template`'s spec in place."""
    spec = template.get("spec") or {}
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            env = c.get("env") or []
            if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                continue
            ref = {"apiVersion": "v1", "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}
            c["env"] = [*env, {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": ref}}]
