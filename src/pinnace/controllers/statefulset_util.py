"""A StatefulSet's pods, as kube-controller-manager v1.32's statefulset/stateful_set_utils.go
has them: stable names `<set>-<ordinal>`, the identity labels, hostname and subdomain, the
claim volumes of volumeClaimTemplates, the revision label, and the pod states the controller
waits on."""

from __future__ import annotations

import re

from pinnace.api import catalog
from pinnace.api.apps.statefulset import DELETE, PARALLEL, RETAIN, ROLLING_UPDATE
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone
from pinnace.controllers.controller_utils import (
    is_pod_available,
    is_pod_ready,
    owner_reference,
    pod_from_template,
)
from pinnace.controllers.history import CONTROLLER_REVISION_HASH

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
STATEFUL_SETS = catalog.kind("apps", "statefulsets")
_PARENT_AND_ORDINAL = re.compile(r"(.*)-([0-9]+)$")


# --- ordinals ---------------------------------------------------------------------------------


def parent_and_ordinal(pod: Object) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("", -1) for a name that is not `<parent>-<number>`."""
    match = _PARENT_AND_ORDINAL.match(pod["metadata"]["name"])
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def ordinal(pod: Object) -> int:
    return parent_and_ordinal(pod)[1]


def replicas(sts: Object) -> int:
    return sts["spec"].get("replicas") or 0


def start_ordinal(sts: Object) -> int:
    """getStartOrdinal: spec.ordinals.start, 0 by default."""
    return (sts["spec"].get("ordinals") or {}).get("start") or 0


def end_ordinal(sts: Object) -> int:
    return start_ordinal(sts) + replicas(sts) - 1


def in_ordinal_range(sts: Object, pod: Object) -> bool:
    return start_ordinal(sts) <= ordinal(pod) <= end_ordinal(sts)


def pod_name(sts: Object, ordinal_: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal_}"


def is_member_of(sts: Object, pod: Object) -> bool:
    return parent_and_ordinal(pod)[0] == sts["metadata"]["name"]


def allows_burst(sts: Object) -> bool:
    return sts["spec"].get("podManagementPolicy") == PARALLEL


# --- identity and storage ---------------------------------------------------------------------


def claim_templates(sts: Object) -> list[Object]:
    return [c for c in sts["spec"].get("volumeClaimTemplates") or () if isinstance(c, dict)]


def claim_name(sts: Object, claim: Object, ordinal_: int) -> str:
    """getPersistentVolumeClaimName: `<claim template>-<set>-<ordinal>`."""
    return f"{claim['metadata']['name']}-{sts['metadata']['name']}-{ordinal_}"


def new_claims(sts: Object, ordinal_: int) -> list[Object]:
    """getPersistentVolumeClaims: each template's claim for the ordinal, in the set's
    namespace, labelled with the set's selector's matchLabels too."""
    selected = (sts["spec"].get("selector") or {}).get("matchLabels") or {}
    claims = []
    for template in claim_templates(sts):
        claim = clone(template)
        claim.pop("status", None)
        meta = claim.setdefault("metadata", {})
        meta["name"] = claim_name(sts, template, ordinal_)
        meta["namespace"] = sts["metadata"]["namespace"]
        meta["labels"] = {**(meta.get("labels") or {}), **selected}
        claims.append(claim)
    return claims


_PODS = catalog.kind("", "pods")


def _matches_ref(ref: Object, obj: Object, kind: Kind) -> bool:
    """matchesRef: the same group/version, kind and name (not necessarily the same uid)."""
    return (
        ref.get("apiVersion") == kind.api_version
        and ref.get("kind") == kind.kind
        and ref.get("name") == obj["metadata"].get("name")
    )


def _is_ours(ref: Object, sts: Object, pod: Object) -> bool:
    return _matches_ref(ref, sts, STATEFUL_SETS) or _matches_ref(ref, pod, _PODS)


def _has_owner(claim: Object, owner: Object) -> bool:
    uid = owner["metadata"].get("uid")
    return any(r.get("uid") == uid for r in claim["metadata"].get("ownerReferences") or ())


def _has_stale_owner(claim: Object, obj: Object, kind: Kind) -> bool:
    """hasStaleOwnerRef: the first reference to `obj` by name names another uid."""
    for ref in claim["metadata"].get("ownerReferences") or ():
        if _matches_ref(ref, obj, kind):
            return bool(ref.get("uid") != obj["metadata"].get("uid"))
    return False


def _retains_all(sts: Object) -> bool:
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    return (policy.get("whenDeleted") or RETAIN) == (policy.get("whenScaled") or RETAIN) == RETAIN


def _has_unexpected_controller(claim: Object, sts: Object, pod: Object) -> bool:
    """hasUnexpectedController: under a Delete policy, another object controls the claim, or a
    reference names the set or pod with another uid (an earlier set, orphaned)."""
    if _retains_all(sts):
        return False
    for ref in claim["metadata"].get("ownerReferences") or ():
        for obj, kind in ((sts, STATEFUL_SETS), (pod, _PODS)):
            if _matches_ref(ref, obj, kind):
                if ref.get("uid") != obj["metadata"].get("uid"):
                    return True
                break
        else:
            if ref.get("controller"):
                return True
    return False


def _wanted_owners(sts: Object, pod: Object) -> tuple[bool, bool]:
    """Whether the set, and the pod, should own the claim under the retention policy."""
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    scaled_down = not in_ordinal_range(sts, pod)
    delete_scaled = (policy.get("whenScaled") or RETAIN) == DELETE
    want_set = (policy.get("whenDeleted") or RETAIN) == DELETE and not (
        delete_scaled and scaled_down
    )
    return want_set, delete_scaled and scaled_down


def claim_owner_up_to_date(sts: Object, claim: Object, pod: Object) -> bool:
    """isClaimOwnerUpToDate: the claim's owners are as the retention policy wants them, or it
    is in a state the controller leaves alone (a stale reference, another controller)."""
    if _has_stale_owner(claim, sts, STATEFUL_SETS) or _has_stale_owner(claim, pod, _PODS):
        return True
    if _has_unexpected_controller(claim, sts, pod):
        return not (_has_owner(claim, sts) or _has_owner(claim, pod))
    uids = {sts["metadata"].get("uid"), pod["metadata"].get("uid")}
    refs = claim["metadata"].get("ownerReferences") or ()
    if any(r.get("uid") in uids and not r.get("controller") for r in refs):
        return False
    want_set, want_pod = _wanted_owners(sts, pod)
    return _has_owner(claim, sts) == want_set and _has_owner(claim, pod) == want_pod


def retention_owner_references(sts: Object, claim: Object, pod: Object) -> list[Object]:
    """updateClaimOwnerRefForSetAndPod: the claim's references to the set and the pod dropped,
    then, unless another object controls it, the set's or the pod's controller reference added
    as the persistentVolumeClaimRetentionPolicy wants (the set while whenDeleted is Delete and,
    with whenScaled Delete, the pod is in range; the pod when whenScaled is Delete and it is
    scaled down). Other owners stay."""
    unexpected = _has_unexpected_controller(claim, sts, pod)
    refs = [r for r in claim["metadata"].get("ownerReferences") or () if not _is_ours(r, sts, pod)]
    if unexpected:
        return refs
    want_set, want_pod = _wanted_owners(sts, pod)
    for obj, kind, wanted in ((sts, STATEFUL_SETS, want_set), (pod, _PODS, want_pod)):
        if wanted:
            refs.append(owner_reference(obj, kind))
    return refs


def identity_matches(sts: Object, pod: Object) -> bool:
    parent, ordinal_ = parent_and_ordinal(pod)
    labels = pod["metadata"].get("labels") or {}
    return (
        ordinal_ >= 0
        and parent == sts["metadata"]["name"]
        and pod["metadata"]["name"] == pod_name(sts, ordinal_)
        and pod["metadata"].get("namespace") == sts["metadata"]["namespace"]
        and labels.get(POD_NAME_LABEL) == pod["metadata"]["name"]
        and labels.get(POD_INDEX_LABEL) == str(ordinal_)
    )


def storage_matches(sts: Object, pod: Object) -> bool:
    """Every claim template has its volume on the pod, naming the pod's own claim."""
    ordinal_ = ordinal(pod)
    if ordinal_ < 0:
        return False
    volumes = {v.get("name"): v for v in pod["spec"].get("volumes") or ()}
    for claim in claim_templates(sts):
        volume = volumes.get(claim["metadata"]["name"]) or {}
        source = volume.get("persistentVolumeClaim") or {}
        if source.get("claimName") != claim_name(sts, claim, ordinal_):
            return False
    return True


def update_identity(sts: Object, pod: Object) -> None:
    """The pod's name, namespace and identity labels, as its ordinal says (in place)."""
    ordinal_ = ordinal(pod)
    meta = pod["metadata"]
    meta["name"] = pod_name(sts, ordinal_)
    meta["namespace"] = sts["metadata"]["namespace"]
    labels = meta.setdefault("labels", {})
    labels[POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal_)


def update_storage(sts: Object, pod: Object) -> None:
    """The claim templates' volumes first, then the pod's other volumes (in place)."""
    ordinal_ = ordinal(pod)
    claims = {c["metadata"]["name"]: claim_name(sts, c, ordinal_) for c in claim_templates(sts)}
    volumes: list[Object] = [
        {"name": name, "persistentVolumeClaim": {"claimName": claim}}
        for name, claim in claims.items()
    ]
    volumes += [v for v in pod["spec"].get("volumes") or () if v.get("name") not in claims]
    if volumes:
        pod["spec"]["volumes"] = volumes


def pod_revision(pod: Object) -> str:
    return (pod["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH, "")


def new_pod(sts: Object, ordinal_: int) -> Object:
    """newStatefulSetPod: the template's pod named for its ordinal, its hostname the pod's
    name and its subdomain the governing service."""
    pod = pod_from_template(sts["spec"].get("template") or {}, sts, STATEFUL_SETS)
    pod["spec"] = clone(pod["spec"])
    pod["metadata"]["name"] = pod_name(sts, ordinal_)
    update_identity(sts, pod)
    pod["spec"]["hostname"] = pod["metadata"]["name"]
    if sts["spec"].get("serviceName"):
        pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
    update_storage(sts, pod)
    return pod


def new_versioned_pod(
    current_set: Object, update_set: Object, current: str, update: str, ordinal_: int
) -> Object:
    """newVersionedStatefulSetPod: below the partition a new pod gets the current revision,
    from it up the update revision."""
    strategy = current_set["spec"].get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    start = start_ordinal(current_set)
    # Go's `a && b || c`: the rolling-update type only guards the first alternative.
    if (strategy.get("type") == ROLLING_UPDATE and rolling is None and ordinal_ < start) or (
        rolling is not None and ordinal_ < start + (rolling.get("partition") or 0)
    ):
        pod = new_pod(current_set, ordinal_)
        pod["metadata"]["labels"][CONTROLLER_REVISION_HASH] = current
        return pod
    pod = new_pod(update_set, ordinal_)
    pod["metadata"]["labels"][CONTROLLER_REVISION_HASH] = update
    return pod


def apply_revision(sts: Object, revision: Object) -> Object:
    """ApplyRevision: the StatefulSet with the revision's pod template."""
    result = clone(sts)
    template = clone(revision["data"]["spec"]["template"])
    template.pop("$patch", None)
    meta = template.get("metadata") or {}
    if meta.get("creationTimestamp") is None:
        meta.pop("creationTimestamp", None)
    result["spec"]["template"] = template
    return result


# --- pod states -------------------------------------------------------------------------------


def phase(pod: Object) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def is_created(pod: Object) -> bool:
    """A pod the API has (a pod only built this sync has no phase)."""
    return phase(pod) != ""


def is_terminating(pod: Object) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_running_and_ready(pod: Object) -> bool:
    return phase(pod) == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Object, min_ready_seconds: int, now: float) -> bool:
    return phase(pod) == "Running" and is_pod_available(pod, min_ready_seconds, now)


def is_healthy(pod: Object) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)
