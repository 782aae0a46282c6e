"""What the node agent remembers by pod shape (`pinnace.kubelet.shapes`): the pods of one template
share their answers, and a pod that differs in anything those answers read gets its own."""

from __future__ import annotations

import copy
import math
from typing import Any

from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import Node, pod

from pinnace.kubelet.admission import PodDemand
from pinnace.kubelet.behaviour import CPU, RUN_SECONDS, is_model_annotation
from pinnace.kubelet.eviction import UsageCeiling
from pinnace.kubelet.shapes import ShapeMemo, shape_key


def templated(name: str, suffix: str) -> dict[str, Any]:
    """A pod as the ServiceAccount admission leaves it: a kube-api-access volume of its own."""
    volume = f"kube-api-access-{suffix}"
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {"app": "web", "pod": name},
            "annotations": {"sim.pinnace.dev/memory": "100Mi"},
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                    "volumeMounts": [{"name": volume, "mountPath": "/var/run/secrets"}],
                }
            ],
            "volumes": [{"name": volume, "projected": {"sources": []}}],
        },
        "status": {"qosClass": "Burstable"},
    }


def test_pods_of_a_template_have_one_shape_whatever_their_names_and_volume() -> None:
    a, b = templated("a", "x7k2q"), templated("b", "m4z9p")
    b["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = "1"
    assert shape_key(a, is_model_annotation) == shape_key(b, is_model_annotation)


def test_a_pod_that_differs_in_what_is_read_has_a_shape_of_its_own() -> None:
    base = templated("a", "x7k2q")
    changes = [
        lambda p: p["metadata"]["annotations"].update({"sim.pinnace.dev/memory": "200Mi"}),
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(memory="1Gi"),
        lambda p: p["spec"]["containers"][0].update(command=["sleep", "10"]),
        lambda p: p["spec"].update(priority=2_000_000_000),
        lambda p: p["status"].update(qosClass="Guaranteed"),
    ]
    for change in changes:
        other = copy.deepcopy(base)
        change(other)
        assert shape_key(other, is_model_annotation) != shape_key(base, is_model_annotation)


def test_pods_given_with_one_spec_object_are_told_apart_by_what_else_is_read() -> None:
    # The node agent's memos ask for the shape of one spec object several times (its
    # informer's, shared by the versions of the pod it reads): the spec's text is made once,
    # the annotations and the QoS class are read each time.
    a = templated("a", "x7k2q")
    annotated = {**a, "metadata": {**a["metadata"], "annotations": {"sim.pinnace.dev/memory": "1"}}}
    guaranteed = {**a, "status": {"qosClass": "Guaranteed"}}
    first = shape_key(a, is_model_annotation)
    assert shape_key(annotated, is_model_annotation) != first
    assert shape_key(guaranteed, is_model_annotation) != first
    assert shape_key(annotated) == shape_key(a) == shape_key(templated("b", "m4z9p"))
    assert shape_key(a, is_model_annotation) == first


def test_a_memo_answers_each_shape_with_its_own_answer() -> None:
    memo: ShapeMemo[int] = ShapeMemo(8, is_model_annotation)
    calls: list[str] = []

    def work(name: str) -> int:
        calls.append(name)
        return len(calls)

    a, b = templated("a", "x7k2q"), templated("b", "m4z9p")
    other = templated("c", "q2w3e")
    other["metadata"]["annotations"] = {}
    assert memo.of(a, lambda: work("a")) == memo.of(b, lambda: work("b")) == 1
    assert memo.of(other, lambda: work("c")) == 2
    assert memo.of(a, lambda: work("a"), "init") == 3  # what else it reads tells answers apart
    assert calls == ["a", "c", "a"]


def test_remembered_answers_are_those_of_each_pod() -> None:
    small, large = templated("small", "x7k2q"), templated("large", "m4z9p")
    large["metadata"]["annotations"] = {"sim.pinnace.dev/memory": "300Mi"}
    large["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
    for _ in range(2):  # the second time, from memory
        assert UsageCeiling.of(small).memory == 100 << 20
        assert UsageCeiling.of(large).memory == 300 << 20
        assert PodDemand.of(small).requests["memory"] == 256 * 2**20
        assert PodDemand.of(large).requests["memory"] == 2**30


def test_a_container_without_a_command_still_waits_for_its_environment(node: Node) -> None:
    """Its model is its shape's, but its environment is made at each start all the same: a
    missing ConfigMap keeps it from being created, before a model that does not parse."""
    body = pod("plain", node="node-1", run_seconds="never")
    container = body["spec"]["containers"][0]
    container["image"] = "registry.example/app:1"  # no command known for it
    container["env"] = [
        {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}}
    ]
    node.create_pod(body)
    node.settle()
    state = node.get_pod("plain")["status"]["containerStatuses"][0]["state"]
    assert state["waiting"] == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "settings" not found',
    }
    settings = config_map("settings", mode="fast") | {"data": {"level": "debug"}}
    node.run(node.client.create(CONFIG_MAPS, "default", settings))
    node.settle()
    state = node.get_pod("plain")["status"]["containerStatuses"][0]["state"]
    assert state["waiting"]["reason"] == "CreateContainerConfigError"
    assert state["waiting"]["message"].startswith("annotation sim.pinnace.dev/run-seconds")


def test_a_ceiling_reads_the_other_model_annotations_only_for_whether_they_parse() -> None:
    """Pods of a template that differ in their drawn run time and CPU share one ceiling; one
    whose run time, or one container's CPU, does not parse has none (it may be fixed any time),
    and a container's own value that parses wins over the pod's that does not."""
    first, second, broken, mended, bad_cpu = (templated(f"p{i}", str(i)) for i in range(5))
    first["metadata"]["annotations"] |= {RUN_SECONDS: "5", CPU: "100m"}
    second["metadata"]["annotations"] |= {RUN_SECONDS: "7", CPU: "300m"}
    broken["metadata"]["annotations"] |= {RUN_SECONDS: "soon"}
    mended["metadata"]["annotations"] |= {RUN_SECONDS: "soon", f"{RUN_SECONDS}.app": "3"}
    bad_cpu["metadata"]["annotations"] |= {f"{CPU}.app": "lots"}
    for _ in range(2):  # the second time, from memory
        assert UsageCeiling.of(first).memory == UsageCeiling.of(second).memory == 100 << 20
        assert UsageCeiling.of(broken).memory == math.inf
        assert UsageCeiling.of(mended).memory == 100 << 20
        assert UsageCeiling.of(bad_cpu).memory == math.inf
