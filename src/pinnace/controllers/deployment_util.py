"""Deployment arithmetic, as kube-controller-manager's deployment/util: the pod-template
hash, revision and replica annotations, surge and unavailability fenceposts, sums over
replica sets, and the status conditions."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from pinnace.api.apps import int_or_percent_value
from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import parse_time

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}
MAX_REVISION_HISTORY_CHARS = 2000
NO_PROGRESS_DEADLINE = 2**31 - 1

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The alphabet of rand.SafeEncodeString: no vowels (no words), no look-alikes."""


# --- the pod-template hash --------------------------------------------------------------------


def _fnv32a(data: bytes, h: int = 0x811C9DC5) -> int:
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: Object, collision_count: int | None) -> str:
    """The pod-template-hash: FNV-32a over the template, then over collisionCount (4 bytes,
    little-endian) when set, its decimal digits mapped onto the safe alphabet. Kubernetes
    hashes Go's printed form of the struct; Pinnace hashes canonical JSON, so the values
    differ from Kubernetes' for the same template (same shape, same stability)."""
    h = _fnv32a(json.dumps(template, sort_keys=True, separators=(",", ":")).encode())
    if collision_count is not None:
        h = _fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little"), h)
    return safe_encode_string(str(h))


def safe_encode_string(text: str) -> str:
    """rand.SafeEncodeString: each character mapped onto the safe alphabet."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def _without_hash(template: Object) -> Object:
    """The template without its pod-template-hash label (nor labels, when that was the only
    one): a view for comparing, sharing every other part with `template`."""
    metadata = template.get("metadata") or {}
    labels = metadata.get("labels")
    if labels is None:
        return template
    metadata = dict(metadata)
    rest = {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH}
    if rest:
        metadata["labels"] = rest
    else:
        del metadata["labels"]
    return {**template, "metadata": metadata}


def equal_ignore_hash(a: Object, b: Object) -> bool:
    """EqualIgnoreHash: whether two pod templates are the same but for the hash label."""
    return _without_hash(a) == _without_hash(b)


# --- replica sets -----------------------------------------------------------------------------


def replicas(obj: Object | None) -> int:
    return 0 if obj is None else obj["spec"].get("replicas") or 0


def status_count(obj: Object | None, name: str) -> int:
    return 0 if obj is None else (obj.get("status") or {}).get(name) or 0


def total(sets: Iterable[Object | None], name: str = "") -> int:
    """Sum of spec.replicas, or of status.<name>, over replica sets."""
    return sum(status_count(rs, name) if name else replicas(rs) for rs in sets)


def set_min_ready_seconds(rs: Object, seconds: int) -> None:
    """The replica set's minReadySeconds, left out at 0 as apps/v1 writes it (omitempty)."""
    if seconds:
        rs["spec"]["minReadySeconds"] = seconds
    else:
        rs["spec"].pop("minReadySeconds", None)


def created_key(rs: Object) -> tuple[float, str]:
    m = rs["metadata"]
    return parse_time(m["creationTimestamp"]) if m.get("creationTimestamp") else 0.0, m["name"]


def revision(obj: Object) -> int:
    try:
        return int((obj["metadata"].get("annotations") or {}).get(REVISION, ""))
    except ValueError:
        return 0


def find_new_replica_set(deployment: Object, sets: list[Object]) -> Object | None:
    """The oldest replica set whose template is the deployment's (hash label aside)."""
    template = deployment["spec"].get("template") or {}
    for rs in sorted(sets, key=created_key):
        if equal_ignore_hash(rs["spec"].get("template") or {}, template):
            return rs
    return None


def annotation_int(rs: Object, name: str) -> int | None:
    try:
        return int((rs["metadata"].get("annotations") or {})[name])
    except (KeyError, ValueError):
        return None


# --- surge and unavailability -----------------------------------------------------------------


def scaled_value(value: Any, total_: int, round_up: bool) -> int:
    """An int-or-percent as a count of `total_` (GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int_or_percent_value(value) * total_ / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int_or_percent_value(value)


def is_rolling(deployment: Object) -> bool:
    return (deployment["spec"].get("strategy") or {}).get("type") == "RollingUpdate"


def fenceposts(deployment: Object) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as replica counts; never both 0 (ResolveFenceposts)."""
    rolling = (deployment["spec"].get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(deployment)
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(deployment: Object) -> int:
    return fenceposts(deployment)[0] if is_rolling(deployment) else 0


def max_unavailable(deployment: Object) -> int:
    if not is_rolling(deployment) or replicas(deployment) == 0:
        return 0
    return min(fenceposts(deployment)[1], replicas(deployment))


def new_rs_new_replicas(deployment: Object, all_sets: Sequence[Object | None], new: Object) -> int:
    """How big the new replica set may be now (NewRSNewReplicas)."""
    desired = replicas(deployment)
    if not is_rolling(deployment):
        return desired
    current = total(all_sets)
    most = desired + max_surge(deployment)
    if current >= most:
        return replicas(new)
    return replicas(new) + min(most - current, desired - replicas(new))


# --- annotations ------------------------------------------------------------------------------


def set_replicas_annotations(rs: Object, desired: int, most: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    wanted = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(most)}
    changed = any(annotations.get(k) != v for k, v in wanted.items())
    annotations.update(wanted)
    return changed


def replicas_annotations_need_update(rs: Object, desired: int, most: int) -> bool:
    annotations = rs["metadata"].get("annotations") or {}
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(
        MAX_REPLICAS
    ) != str(most)


def set_new_replica_set_annotations(
    deployment: Object, rs: Object, new_revision: int, exists: bool
) -> bool:
    """Copy the deployment's annotations, move the revision on (keeping the revisions it had
    in revision-history, a rollback), and on a new replica set the replica annotations."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for k, v in (deployment["metadata"].get("annotations") or {}).items():
        if k not in _NOT_COPIED and annotations.get(k) != v:
            annotations[k] = v
            changed = True
    old = annotations.get(REVISION)
    try:
        old_revision = int(old) if old is not None else 0
    except ValueError:
        return False
    if old_revision < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old is not None:
            _remember_revision(annotations, old)
    if not exists:
        desired = replicas(deployment)
        changed = set_replicas_annotations(rs, desired, desired + max_surge(deployment)) or changed
    return changed


def _remember_revision(annotations: dict[str, str], old: str) -> None:
    history = annotations.get(REVISION_HISTORY, "")
    if not history:
        annotations[REVISION_HISTORY] = old
        return
    kept = history.split(",")
    length = len(history) + len(old) + 1
    while length > MAX_REVISION_HISTORY_CHARS and kept:
        length -= len(kept.pop(0)) + 1
    if length <= MAX_REVISION_HISTORY_CHARS:
        annotations[REVISION_HISTORY] = ",".join([*kept, old])


# --- conditions -------------------------------------------------------------------------------


def has_progress_deadline(deployment: Object) -> bool:
    deadline = deployment["spec"].get("progressDeadlineSeconds")
    return deadline is not None and deadline != NO_PROGRESS_DEADLINE


def condition(status: Object, kind: str) -> Object | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def new_condition(kind: str, state: str, reason: str, message: str, now: str) -> Object:
    return {
        "type": kind,
        "status": state,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def set_condition(status: Object, new: Object) -> None:
    """SetDeploymentCondition: nothing when status and reason are as they were; the
    transition time kept when only the reason changes."""
    current = condition(status, new["type"])
    if current is not None and (current["status"], current.get("reason")) == (
        new["status"],
        new["reason"],
    ):
        return
    if current is not None and current["status"] == new["status"]:
        new["lastTransitionTime"] = current["lastTransitionTime"]
    remove_condition(status, new["type"])
    status.setdefault("conditions", []).append(new)


def remove_condition(status: Object, kind: str) -> None:
    kept = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def deployment_complete(deployment: Object, status: Object) -> bool:
    desired = replicas(deployment)
    return (
        status.get("updatedReplicas", 0) == desired
        and status.get("replicas", 0) == desired
        and status.get("availableReplicas", 0) == desired
        and status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
    )


def deployment_progressing(deployment: Object, new: Object) -> bool:
    old = deployment.get("status") or {}

    def count(s: Object, name: str) -> int:
        return s.get(name) or 0

    return (
        count(new, "updatedReplicas") > count(old, "updatedReplicas")
        or count(new, "replicas") - count(new, "updatedReplicas")
        < count(old, "replicas") - count(old, "updatedReplicas")
        or count(new, "readyReplicas") > count(old, "readyReplicas")
        or count(new, "availableReplicas") > count(old, "availableReplicas")
    )


def deployment_timed_out(deployment: Object, status: Object, now: float) -> bool:
    if not has_progress_deadline(deployment):
        return False
    current = condition(status, PROGRESSING)
    if current is None or current.get("reason") == "NewReplicaSetAvailable":
        return False
    if current.get("reason") == "ProgressDeadlineExceeded":
        return True
    since = parse_time(current["lastUpdateTime"])
    return since + deployment["spec"]["progressDeadlineSeconds"] < now
