"""What the research environment's scheduler-only engine (`pinnace.gym.scheduler_only`) can
run as the cluster engine would, and the refusal, naming the field, of the rest: what needs
components it does not run (the timeline, controllers, the autoscaler, custom metrics), and
node agent behaviour it does not model (each a status update requeueing pods that inter-pod
affinity or topology spread rejected, a kill, or a delay; `kubelet.behaviour` models them for
the node agent):

- needing other components: timeline steps, trace workloads, Job templates, the cluster
  autoscaler, objects other than Namespaces, PriorityClasses, LimitRanges and RuntimeClasses,
  and plugins reading a custom metric (the pods serve it; checked where the engine is made);
- node agent behaviour: init containers (sidecars too), containers ending at different times,
  restarts (Always with a finite run time, OnFailure failing), activeDeadlineSeconds,
  stop-seconds, probes, lifecycle hooks, a template's nodeName, commands that may read their
  context (`kubelet.behaviour.reads_context`), environments from other objects, model
  annotations that do not parse, memory usage above the container's request or drawn without
  a highest value (OOM kills, evictions), ephemeral-storage usage (evictions), soft memory
  eviction thresholds, node pools with slow or failing starts (imagePullBandwidth, missing
  images, the static CPU manager), and pods arriving at 0 s in a namespace the scenario
  creates (their admission waits a random while for its default ServiceAccount);
- where the scheduler's Score plugins choose (no agent deciding): pod images ImageLocality
  would find in the node status, which lists an image once its node agent posts it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

from pinnace.kubelet.behaviour import (
    EPHEMERAL_STORAGE,
    RUN_SECONDS,
    STOP_SECONDS,
    BehaviourError,
    UnknownOutcome,
    container_argv,
    context_free_behaviour,
    is_model_annotation,
    model_key,
    node_unknown_outcome,
    reads_context,
)
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.environment import may_fail
from pinnace.kubelet.eviction_signals import MEMORY_AVAILABLE
from pinnace.kubelet.runtime import image_id, image_reference
from pinnace.resources.names import MEMORY as MEMORY_RESOURCE
from pinnace.resources.pod import containers
from pinnace.scheduler.podinfo import normalized_image_name
from pinnace.scheduler.profile import Profile
from pinnace.sim.scenario import USAGE_ANNOTATIONS, Arrivals, FixedRate, Scenario

HELD = {
    "Namespace": "namespaces",
    "PriorityClass": "priorityclasses",
    "LimitRange": "limitranges",
    "RuntimeClass": "runtimeclasses",
}
"""The objects this engine holds (what admission and the scheduler read), by kind."""
NEEDS_CLUSTER = "needs the cluster engine (engine='cluster')"
IMAGE_LOCALITY = "ImageLocality"


def refuse_unsupported(scenario: Scenario) -> None:
    """Raise a ValueError naming the first field of `scenario` this engine cannot run."""
    if scenario.timeline:
        raise ValueError(f"spec.timeline: timeline steps {NEEDS_CLUSTER}")
    if scenario.traces:
        raise ValueError(f"spec.traces: trace workloads {NEEDS_CLUSTER}")
    if scenario.cluster.autoscaler is not None:
        raise ValueError(f"spec.cluster.autoscaler: the cluster autoscaler {NEEDS_CLUSTER}")
    for index, obj in enumerate(scenario.objects):
        if obj.get("kind") not in HELD:
            raise ValueError(
                f"{scenario.object_field(index)}: a {obj.get('kind')} {NEEDS_CLUSTER}; "
                f"this engine holds only {', '.join(HELD)}"
            )
    for node in scenario.cluster.nodes:
        _refuse_node(node)
    unknowns = {node_unknown_outcome(node) for node in scenario.cluster.nodes} or {
        node_unknown_outcome(NodeConfig("none"))
    }
    created = {
        (obj.get("metadata") or {}).get("name")
        for obj in scenario.objects
        if obj.get("kind") == "Namespace"
    }
    for i, arrivals in enumerate(scenario.workloads):
        if arrivals.template.get("kind") != "Pod":
            raise ValueError(
                f"spec.workloads[{i}].template: a {arrivals.template.get('kind')} template "
                f"{NEEDS_CLUSTER}; this engine makes Pods"
            )
        _refuse_template(f"spec.workloads[{i}]", arrivals, unknowns)
        if (
            arrivals.namespace in created
            and isinstance(arrivals.process, FixedRate)
            and arrivals.start == 0
        ):
            # The namespace's default ServiceAccount is made a few turns into the start; a
            # pod created before then waits for it in the API server's admission, a random
            # 100-200 ms a try.
            raise ValueError(
                f"spec.workloads[{i}].start: pods arriving at 0s in namespace "
                f"{arrivals.namespace}, which the scenario creates (their admission waits for "
                f"its default ServiceAccount), {NEEDS_CLUSTER}"
            )


def refuse_image_scores(scenario: Scenario, profiles: Iterable[Profile]) -> None:
    """Where the scheduler's own Score plugins choose the nodes: refuse a pod image that
    ImageLocality would find on the nodes that pulled it. The node agents post a pulled image
    in their node status at their next status update, which this engine does not model (its
    nodes list only the images their pools give them), so the scores would differ. Only an
    image named in the pod as the nodes name it can match: by its full reference
    (`docker.io/library/nginx:1.27`) or its digest, not by a short name (`nginx:1.27`), as
    ImageLocality compares names as they are."""
    scorers = (plugin for profile in profiles for plugin, weight in profile.score if weight)
    if not any(plugin.name == IMAGE_LOCALITY for plugin in scorers):
        return
    for i, arrivals in enumerate(scenario.workloads):
        spec = arrivals.template.get("spec") or {}
        for j, container in enumerate(spec.get("containers") or ()):
            image = container.get("image") or ""
            if normalized_image_name(image) in (image_reference(image), image_id(image)):
                raise ValueError(
                    f"spec.workloads[{i}].template.spec.containers[{j}].image: {image}, named "
                    "as the nodes list it once pulled: ImageLocality's scores of the nodes "
                    f"holding it {NEEDS_CLUSTER} (an agent's decisions do not read them)"
                )


def _refuse_node(node: NodeConfig) -> None:
    """Refuse a node whose agent would delay or fail a pod's start (it starts them at once),
    or evict a pod whose memory use stays within its request (by a soft threshold, which the
    node's allocatable leaves no room for)."""
    if MEMORY_AVAILABLE in node.eviction_soft:
        raise ValueError(
            f"spec.cluster: node {node.name}'s kubelet.evictionSoft {MEMORY_AVAILABLE} (soft "
            f"evictions) {NEEDS_CLUSTER}"
        )
    if math.isfinite(node.image_pull_bandwidth):
        raise ValueError(
            f"spec.cluster: node {node.name}'s imagePullBandwidth (image pulls taking time) "
            f"{NEEDS_CLUSTER}"
        )
    if node.missing_images:
        raise ValueError(
            f"spec.cluster: registry.missing (image pulls failing, on node {node.name}) "
            f"{NEEDS_CLUSTER}"
        )
    if node.cpu_manager_policy != "none":
        raise ValueError(
            f"spec.cluster: node {node.name}'s kubelet.cpuManagerPolicy "
            f"{node.cpu_manager_policy} (its admission may reject pods) {NEEDS_CLUSTER}"
        )


CONTAINER_FIELDS = {
    "livenessProbe": "probes",
    "readinessProbe": "probes",
    "startupProbe": "probes",
    "lifecycle": "lifecycle hooks",
}
"""Container fields making the node agent write status updates, or delay or stop a container,
where this engine writes none: refused."""


def _refuse_template(at: str, arrivals: Arrivals, unknowns: set[UnknownOutcome]) -> None:
    """Refuse a generator whose pods the node agent would not simply start at the bind and
    finish, all containers at once, with one status update each time: the status updates it
    writes (an init container's exit, a container's end before the others', a restart) each
    requeue pods that inter-pod affinity or topology spread rejected; what it does besides
    (OOM kills, evictions, deadlines, slow stops) changes when pods leave."""
    template = arrivals.template
    spec = template.get("spec") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    where = f"{at}.template"
    if spec.get("nodeName"):
        raise ValueError(f"{where}.spec.nodeName: a pod bound by its template {NEEDS_CLUSTER}")
    if spec.get("activeDeadlineSeconds") is not None:
        raise ValueError(
            f"{where}.spec.activeDeadlineSeconds: the node agent's deadline {NEEDS_CLUSTER}"
        )
    if spec.get("initContainers"):
        raise ValueError(
            f"{where}.spec.initContainers: init containers (their exits are status updates) "
            f"{NEEDS_CLUSTER}"
        )
    for name in annotations:
        if is_model_annotation(name) and model_key(name) in REFUSED_KEYS:
            raise ValueError(
                f"{where}.metadata.annotations[{name}]: {REFUSED_KEYS[model_key(name)]} "
                f"{NEEDS_CLUSTER}"
            )
    for resource, distribution in arrivals.usage.items():
        if resource == "memory" and math.isinf(distribution.highest):
            raise ValueError(
                f"{at}.usage.memory: memory usage without a highest value (it may pass the "
                f"request: OOM kills, evictions) {NEEDS_CLUSTER}"
            )
        if resource not in ("cpu", "memory"):
            raise ValueError(f"{at}.usage.{resource}: {resource} usage (evictions) {NEEDS_CLUSTER}")
    for j, container in enumerate(spec.get("containers") or ()):
        for field, what in CONTAINER_FIELDS.items():
            if container.get(field):
                raise ValueError(f"{where}.spec.containers[{j}].{field}: {what} {NEEDS_CLUSTER}")
        if may_fail(container):
            raise ValueError(
                f"{where}.spec.containers[{j}].env: an environment from other objects "
                f"{NEEDS_CLUSTER}"
            )
        if reads_context(container_argv(template, container.get("name") or "")):
            raise ValueError(
                f"{where}.spec.containers[{j}].command: a command that may read its "
                f"environment or files {NEEDS_CLUSTER}"
            )
    policy = spec.get("restartPolicy") or "Always"
    # The run time the generator draws is an annotation for all containers: two draws tell
    # whether a container's own annotation overrides it. Memory usage is drawn at most its
    # distribution's highest value.
    draws = [{RUN_SECONDS: "1"}, {RUN_SECONDS: "2"}] if arrivals.run_time is not None else [{}]
    if "memory" in arrivals.usage:
        highest = {USAGE_ANNOTATIONS["memory"]: str(round(arrivals.usage["memory"].highest))}
        draws = [{**draw, **highest} for draw in draws]
    # Defaulted from the limits, as the API server defaults them; a LimitRange's default
    # could only raise them.
    requests = [c.requests for c in containers(template, "containers")]
    for draw, unknown in itertools.product(draws, unknowns):
        pod = {**template, "metadata": {"annotations": {**annotations, **draw}}}
        try:
            behaviours = [
                context_free_behaviour(pod, c["name"], unknown) for c in spec["containers"]
            ]
        except (BehaviourError, KeyError):
            raise ValueError(
                f"{where}.metadata.annotations: a model annotation that does not parse "
                f"{NEEDS_CLUSTER}"
            ) from None
        for j, b in enumerate(behaviours):
            if b.usage.ephemeral_storage.constant_amount != 0:
                raise ValueError(
                    f"{where}.spec.containers[{j}]: ephemeral-storage usage (evictions) "
                    f"{NEEDS_CLUSTER}"
                )
            request = requests[j].get(MEMORY_RESOURCE)
            if b.usage.memory.peak > (request.value() if request is not None else 0):
                raise ValueError(
                    f"{where}.spec.containers[{j}]: memory usage above the container's memory "
                    f"request (OOM kills, evictions) {NEEDS_CLUSTER}"
                )
        finite = [b for b in behaviours if math.isfinite(b.run_seconds)]
        if finite and (
            policy == "Always" or (policy == "OnFailure" and any(b.exit_code for b in finite))
        ):
            raise ValueError(
                f"{where}.spec.restartPolicy: containers restarting ({policy}) {NEEDS_CLUSTER}"
            )
        if len({b.run_seconds for b in behaviours}) > 1:
            raise ValueError(
                f"{where}.spec.containers: containers ending at different times (each end a "
                f"status update) {NEEDS_CLUSTER}"
            )


REFUSED_KEYS = {
    STOP_SECONDS: "containers slow to stop (victims, sidecars)",
    EPHEMERAL_STORAGE: "ephemeral-storage usage (evictions)",
}
"""The model's annotations whose effects this engine does not run, by key."""
