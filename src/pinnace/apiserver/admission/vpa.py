"""The Vertical Pod Autoscaler's admission controller (kubernetes/autoscaler's
vertical-pod-autoscaler/pkg/admission-controller, a mutating webhook), run as the last mutating
admission of a pod's create as webhooks run after the built-in plugins: a pod whose top-most
controller is a VPA's target, under any update mode but Off, gets the recommended requests and
(controlledValues RequestsAndLimits) limits in proportion, with the `vpaUpdates` and
`vpaObservedContainers` annotations.
"""

from __future__ import annotations

from pinnace.api.autoscaling.vpa_policy import (
    OwnerGetter,
    apply_to_pod,
    targets,
    top_controller,
    update_mode,
)
from pinnace.api.objects import Object


async def admit_pod(pod: Object, vpas: list[Object], get: OwnerGetter) -> None:
    """GetMatchingVPA then the patch calculators; the oldest matching VPA wins, as upstream
    picks one of several by creation time."""
    active = [vpa for vpa in vpas if update_mode(vpa) != "Off"]
    if not active:
        return
    controller = await top_controller(pod, get)
    matching = [vpa for vpa in active if targets(vpa, controller)]
    if not matching:
        return
    oldest = min(
        matching, key=lambda v: (v["metadata"].get("creationTimestamp", ""), v["metadata"]["name"])
    )
    apply_to_pod(oldest, pod)
