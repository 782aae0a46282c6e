"""QoS classes. Vectors from TestComputePodQOS (pkg/apis/core/v1/helper/qos, v1.32) and the
"Configure Quality of Service for Pods" task page."""

from typing import Any

import pytest

from pinnace.resources.qos import qos_class, recorded_qos_class


def res(cpu: str = "", memory: str = "", **extra: str) -> dict[str, str]:
    out = {name: value for name, value in (("cpu", cpu), ("memory", memory)) if value}
    out.update({name.replace("_", "-"): value for name, value in extra.items()})
    return out


def c(requests: dict[str, str], limits: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests, "limits": limits}, **extra}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"metadata": {"name": "p"}, "spec": spec}


GUARANTEED = c(res("100m", "100Mi"), res("100m", "100Mi"))
BEST_EFFORT = c(res(), res())


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(GUARANTEED), "Guaranteed", id="guaranteed"),
        pytest.param(pod(GUARANTEED, GUARANTEED), "Guaranteed", id="guaranteed-guaranteed"),
        pytest.param(pod(BEST_EFFORT, BEST_EFFORT), "BestEffort", id="best-effort-best-effort"),
        pytest.param(pod(BEST_EFFORT), "BestEffort", id="best-effort"),
        pytest.param(
            pod(BEST_EFFORT, c(res("1"), res("2"))), "Burstable", id="best-effort-burstable"
        ),
        pytest.param(
            pod(BEST_EFFORT, c(res("10m", "100Mi"), res("10m", "100Mi"))),
            "Burstable",
            id="best-effort-guaranteed",
        ),
        pytest.param(
            pod(c(res(memory="100Mi"), res(memory="100Mi"))),
            "Burstable",
            id="burstable-cpu-guaranteed-memory",
        ),
        pytest.param(pod(c(res("100m", "100Mi"), res())), "Burstable", id="burstable-no-limits"),
        pytest.param(
            pod(c(res("1", "100Mi"), res("2", "100Mi")), GUARANTEED),
            "Burstable",
            id="burstable-guaranteed",
        ),
        pytest.param(
            # Summed requests equal summed limits, but one container has no limits at all.
            pod(c(res("100m", "100Mi"), res("200m", "200Mi")), c(res("100m", "100Mi"), res())),
            "Burstable",
            id="burstable-unbounded-but-requests-match-limits",
        ),
        pytest.param(
            pod(c(res("10m", "100Mi"), res("100m", "200Mi"))), "Burstable", id="burstable-1"
        ),
        pytest.param(pod(c(res("0", "0"), res("100m", "200Mi"))), "Burstable", id="burstable-2"),
        pytest.param(
            pod(c(res("0", "0", hugepages_2Mi="1Gi"), res("0", "0", hugepages_2Mi="1Gi"))),
            "BestEffort",
            id="best-effort-hugepages",
        ),
        pytest.param(
            pod(BEST_EFFORT, init=(c(res("10m", "100Mi"), res("100m", "200Mi")),)),
            "Burstable",
            id="init-container",
        ),
        pytest.param(
            # Init containers count for QoS too: an unlimited one spoils Guaranteed.
            pod(GUARANTEED, init=(BEST_EFFORT,)),
            "Burstable",
            id="guaranteed app, best-effort init",
        ),
        pytest.param(
            pod(GUARANTEED, init=(c(res("1", "1Gi"), res("1", "1Gi"), restartPolicy="Always"),)),
            "Guaranteed",
            id="guaranteed app and sidecar",
        ),
        pytest.param(
            pod(c(res(), res(), ephemeral_storage="1Gi", **{"nvidia.com/gpu": "1"})),
            "BestEffort",
            id="only cpu and memory count",
        ),
    ],
)
def test_qos_class(p: dict[str, Any], expected: str) -> None:
    assert qos_class(p) == expected


def test_limits_alone_make_a_guaranteed_pod() -> None:
    # The docs: a container that sets only limits gets requests equal to them, so the pod is
    # Guaranteed (API defaulting; an undefaulted pod is read the same way).
    p = {"spec": {"containers": [{"name": "c", "resources": {"limits": res("700m", "200Mi")}}]}}
    assert qos_class(p) == "Guaranteed"


def test_docs_examples() -> None:
    # qos-pod-2: memory limit 200Mi, memory request 100Mi.
    assert qos_class(pod(c(res(memory="100Mi"), res(memory="200Mi")))) == "Burstable"
    # qos-pod-4: one container requests 200Mi of memory, the other sets nothing.
    assert qos_class(pod(c(res(memory="200Mi"), res()), BEST_EFFORT)) == "Burstable"
    # qos-pod-3: no requests or limits anywhere.
    assert qos_class(pod({"name": "c"})) == "BestEffort"


def test_a_recorded_class_is_kept() -> None:
    p = pod(GUARANTEED)
    assert recorded_qos_class(p) == "Guaranteed"
    p["status"] = {"qosClass": "Burstable"}
    assert recorded_qos_class(p) == "Burstable"
    assert qos_class(p) == "Guaranteed"


def test_malformed_pods_raise_value_error() -> None:
    with pytest.raises(ValueError, match=r"spec.containers\[0\].resources.limits.cpu"):
        qos_class(pod(c(res(), {"cpu": "lots"})))
    with pytest.raises(ValueError):
        qos_class({"spec": {"containers": "nope"}})
