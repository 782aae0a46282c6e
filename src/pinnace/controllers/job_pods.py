"""What the Job controller asks of a Job's pods and of the Job itself (v1.32): the tracking
finalizer, which pods count as failed or terminating, and the restarts that count against
backoffLimit under restartPolicy OnFailure."""

from __future__ import annotations

from pinnace.api.batch.job import INDEXED
from pinnace.api.objects import Object

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"


def has_tracking_finalizer(pod: Object) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def remove_finalizer_patch() -> Object:
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}


def phase(pod: Object) -> str:
    return (pod.get("status") or {}).get("phase", "")


def is_indexed(job: Object) -> bool:
    return job["spec"].get("completionMode") == INDEXED


def is_suspended(job: Object) -> bool:
    return job["spec"].get("suspend") is True


def only_replace_failed(job: Object) -> bool:
    spec = job["spec"]
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_terminating(pod: Object) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp")) and phase(pod) not in (
        "Succeeded",
        "Failed",
    )


def is_pod_failed(pod: Object, job: Object) -> bool:
    """Failed, or (unless only failed pods are replaced) deleted before it succeeded."""
    if phase(pod) == "Failed":
        return True
    if only_replace_failed(job):
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and phase(pod) != "Succeeded"


def _restarts(pod: Object) -> int:
    status = pod.get("status") or {}
    return sum(
        s.get("restartCount", 0)
        for key in ("initContainerStatuses", "containerStatuses")
        for s in status.get(key) or []
    )


def past_backoff_limit_on_failure(job: Object, pods: list[Object]) -> bool:
    """restartPolicy OnFailure: the containers of the pods still running or pending have
    restarted backoffLimit times (once, for a limit of 0)."""
    template_spec = (job["spec"].get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(_restarts(p) for p in pods if phase(p) in ("Running", "Pending"))
    limit = job["spec"].get("backoffLimit") or 0
    return restarts > 0 if limit == 0 else restarts >= limit


def release_patch(pod: Object, job: Object) -> Object:
    """Drop the Job's reference and the tracking finalizer."""
    return {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": job["metadata"]["uid"]}],
            "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER],
            "uid": pod["metadata"]["uid"],
        }
    }
