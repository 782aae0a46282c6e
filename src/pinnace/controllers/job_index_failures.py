"""spec.backoffLimitPerIndex of Indexed Jobs, as the Job controller of kube-controller-manager
(v1.32) applies it: each pod carries how often its index failed before
(`batch.kubernetes.io/job-index-failure-count`, and the failures the pod failure policy
ignored in `...-ignored-failure-count`); an index whose pod fails with the count at the
limit is failed for good and listed in status.failedIndexes. A failed pod keeps its
finalizer until its replacement exists, so the replacement can take over its counts, and the
replacement waits out a back-off counted per index."""

from __future__ import annotations

from collections.abc import Iterable

from pinnace.api.objects import Object
from pinnace.controllers.job_backoff import finished_time, remaining_delay
from pinnace.controllers.job_failure_policy import judge
from pinnace.controllers.job_indexes import UNKNOWN_INDEX, Intervals, completion_index
from pinnace.controllers.job_pods import has_tracking_finalizer, is_pod_failed

INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
_MAX_INT32 = 2**31 - 1


def has_backoff_limit_per_index(job: Object) -> bool:
    return job["spec"].get("backoffLimitPerIndex") is not None


def _annotation_count(pod: Object, key: str) -> int:
    text = (pod["metadata"].get("annotations") or {}).get(key, "")
    try:
        value = int(text)
    except ValueError:
        return 0
    return value if 0 <= value <= _MAX_INT32 else 0


def failure_count(pod: Object) -> int:
    return _annotation_count(pod, INDEX_FAILURE_COUNT)


def absolute_failure_count(pod: Object) -> int:
    """Failures of the index before this pod, ignored ones included."""
    return failure_count(pod) + _annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT)


def _in_range(job: Object, index: int) -> bool:
    return index != UNKNOWN_INDEX and index < job["spec"]["completions"]


def is_index_failed(job: Object, pod: Object) -> bool:
    """The pod's failure fails its index: a FailIndex rule matched, or the failure counts
    and the index had already failed backoffLimitPerIndex times."""
    if not is_pod_failed(pod, job):
        return False
    verdict = judge(job["spec"].get("podFailurePolicy"), pod)
    if verdict.fails_index:
        return True
    return verdict.counts and failure_count(pod) >= job["spec"]["backoffLimitPerIndex"]


def failed_indexes(job: Object, pods: Iterable[Object]) -> Intervals:
    """status.failedIndexes and the indexes that failed since."""
    completions = job["spec"]["completions"]
    previous = Intervals.parse((job.get("status") or {}).get("failedIndexes") or "", completions)
    return previous.with_indexes(
        completion_index(p)
        for p in pods
        if _in_range(job, completion_index(p))
        and has_tracking_finalizer(p)
        and is_index_failed(job, p)
    )


def pods_with_delayed_deletion(
    job: Object,
    uncounted: Iterable[Object],
    active_pods: Iterable[Object],
    succeeded: Intervals,
    failed: Intervals,
) -> dict[int, Object]:
    """Per index still to retry, its latest failed pod not yet counted: its finalizer stays
    until the replacement is created."""
    active = {completion_index(p) for p in active_pods}
    result: dict[int, Object] = {}
    for pod in uncounted:
        ix = completion_index(pod)
        if not is_pod_failed(pod, job) or not _in_range(job, ix):
            continue
        if succeeded.has(ix) or failed.has(ix) or ix in active:
            continue
        last = result.get(ix)
        if last is None or (
            absolute_failure_count(last) <= absolute_failure_count(pod)
            and finished_time(pod) >= finished_time(last)
        ):
            result[ix] = pod
    return result


def replacement_annotations(job: Object, replaced: Object | None) -> dict[str, str]:
    """The failure counts a new pod of the index carries."""
    if replaced is None:
        return {INDEX_FAILURE_COUNT: "0"}
    counted = failure_count(replaced)
    ignored = _annotation_count(replaced, INDEX_IGNORED_FAILURE_COUNT)
    if judge(job["spec"].get("podFailurePolicy"), replaced).counts:
        counted += 1
    else:
        ignored += 1
    annotations = {INDEX_FAILURE_COUNT: str(counted)}
    if ignored:
        annotations[INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
    return annotations


def index_backoff(replaced: Object | None, now: float) -> float:
    """Seconds before the index of the failed pod `replaced` may get a new pod."""
    if replaced is None:
        return 0.0
    return remaining_delay(absolute_failure_count(replaced) + 1, finished_time(replaced), now)
