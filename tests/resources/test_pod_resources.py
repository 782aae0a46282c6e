"""Effective pod requests and limits. Vectors from TestPodResourceRequests / TestPodResourceLimits
in k8s.io/component-helpers/resource (v1.32) and the KEP-753 sidecar formula:

    InitContainerUse(i) = sum(sidecars before i) + init container i
    pod = max(max_i InitContainerUse(i), sum(sidecars) + sum(app containers)) + overhead
"""

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.resources.pod import (
    NON_ZERO_DEFAULTS,
    pod_limits,
    pod_non_zero_requests,
    pod_requests,
)
from pinnace.resources.quantity import Quantity

Q = Quantity


def container(
    name: str = "c",
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "resources": {}}
    if requests is not None:
        c["resources"]["requests"] = requests
    if limits is not None:
        c["resources"]["limits"] = limits
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def cpu(n: str) -> dict[str, str]:
    return {"cpu": n}


# (init containers, app containers, expected cpu); each init entry is (cpu, is_sidecar).
SIDECAR_VECTORS = [
    pytest.param([("4", False)], ["1"], "4", id="larger init container"),
    pytest.param([("2", False)], ["2", "3"], "5", id="larger containers"),
    pytest.param([("1", True)], ["1"], "2", id="restartable init container"),
    pytest.param(
        [("5", False), ("1", True), ("2", True), ("3", True)],
        ["1"],
        "7",  # max(5, (1+2+3) + 1)
        id="multiple restartable init containers",
    ),
    pytest.param(
        [("5", False), ("1", True), ("2", True), ("5", False), ("3", True)],
        ["1"],
        "8",  # init-2 runs beside the two sidecars before it: 5 + 1 + 2
        id="multiple restartable and regular init containers",
    ),
    pytest.param(
        [("10", True), ("200", False)],
        ["100"],
        "210",  # the init container runs beside the sidecar started before it
        id="restartable-init, init and regular",
    ),
    pytest.param(
        [("200", False), ("10", True)],
        ["100"],
        "200",  # order matters: a sidecar started later is not running yet
        id="init before sidecar",
    ),
]


def _sidecar_pod(init: list[tuple[str, bool]], app: list[str], key: str) -> dict[str, Any]:
    return pod(
        [container(f"app-{i}", **{key: cpu(n)}) for i, n in enumerate(app)],
        init=[container(f"init-{i}", sidecar=s, **{key: cpu(n)}) for i, (n, s) in enumerate(init)],
    )


@pytest.mark.parametrize(("init", "app", "expected"), SIDECAR_VECTORS)
def test_requests_follow_the_sidecar_formula(
    init: list[tuple[str, bool]], app: list[str], expected: str
) -> None:
    assert pod_requests(_sidecar_pod(init, app, "requests")) == {"cpu": Q(expected)}


@pytest.mark.parametrize(("init", "app", "expected"), SIDECAR_VECTORS)
def test_limits_follow_the_sidecar_formula(
    init: list[tuple[str, bool]], app: list[str], expected: str
) -> None:
    assert pod_limits(_sidecar_pod(init, app, "limits")) == {"cpu": Q(expected)}


def test_overhead_is_added_to_requests_unless_excluded() -> None:
    p = pod(
        [container("a", cpu("2")), container("b", cpu("3"))],
        init=[container("i", cpu("2"))],
        overhead={"cpu": "1", "memory": "1Gi"},
    )
    assert pod_requests(p) == {"cpu": Q("6"), "memory": Q("1Gi")}
    assert pod_requests(p, exclude_overhead=True) == {"cpu": Q("5")}


def test_overhead_is_added_only_to_limits_that_are_set() -> None:
    # "pod overhead included": memory has no limit, so the pod's memory stays unlimited.
    p = pod(
        [container("a", limits=cpu("2")), container("b", limits=cpu("3"))],
        init=[container("i", limits=cpu("2"))],
        overhead={"cpu": "1", "memory": "1Gi"},
    )
    assert pod_limits(p) == {"cpu": Q("6")}
    assert pod_limits(p, exclude_overhead=True) == {"cpu": Q("5")}


def test_an_unlimited_container_adds_nothing_to_pod_limits() -> None:
    limited = {"cpu": "2", "memory": "2Gi"}
    assert pod_limits(pod([container("a")])) == {}
    assert pod_limits(pod([container("a", limits=limited), container("b")])) == {
        "cpu": Q("2"),
        "memory": Q("2Gi"),
    }
    # Kubernetes' quirk, kept: an unlimited init container does not make the pod unlimited.
    p = pod(
        [container("a", limits={"cpu": "1", "memory": "1Gi"})],
        init=[container("i1", limits=limited), container("i2")],
    )
    assert pod_limits(p) == {"cpu": Q("2"), "memory": Q("2Gi")}


def test_limits_without_requests_count_as_requests() -> None:
    # API defaulting copies each missing request from its limit; an undefaulted pod is read
    # as if it had been defaulted.
    p = pod([container("a", requests={"cpu": "250m"}, limits={"cpu": "1", "memory": "1Gi"})])
    assert pod_requests(p) == {"cpu": Q("250m"), "memory": Q("1Gi")}


def test_non_missing_fills_only_absent_requests_per_container() -> None:
    p = pod(
        [
            container("none"),
            container("explicit-zero", {"cpu": "0", "memory": "0"}),
            container("cpu-only", {"cpu": "1"}),
        ],
        init=[container("init", {"memory": "300Mi"})],
    )
    assert pod_requests(p) == {"cpu": Q("1"), "memory": Q("300Mi")}
    # Scoring: each container without a request counts 100m cpu / 200Mi memory.
    non_zero = pod_non_zero_requests(p)
    assert non_zero == {"cpu": Q("1100m"), "memory": Q(2 * 200 * 1024 * 1024)}
    assert non_zero == pod_requests(p, non_missing=NON_ZERO_DEFAULTS)


def test_non_zero_defaults_are_the_schedulers() -> None:
    defaults = {"cpu": Q("100m"), "memory": Q("200Mi")}
    assert defaults == NON_ZERO_DEFAULTS
    assert pod_non_zero_requests(pod([container("a")])) == defaults


def test_ephemeral_containers_and_extended_resources() -> None:
    p = pod(
        [container("a", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})],
        init=[container("i", {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"})],
    )
    p["spec"]["ephemeralContainers"] = [container("debug", {"cpu": "5"})]
    assert pod_requests(p) == {"nvidia.com/gpu": Q("2")}


def test_inputs_are_not_mutated() -> None:
    p = pod(
        [container("a", {"cpu": "1"}, {"cpu": "2", "memory": "1Gi"})],
        init=[container("s", {"cpu": "1"}, sidecar=True)],
        overhead={"cpu": "100m"},
    )
    before = copy.deepcopy(p)
    pod_requests(p, non_missing=NON_ZERO_DEFAULTS)
    pod_limits(p)
    assert p == before


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ("not a pod", "a pod must be an object"),
        ({"spec": []}, "spec: must be an object"),
        ({"spec": {"containers": {}}}, "spec.containers: must be a list"),
        ({"spec": {"containers": ["c"]}}, r"spec.containers\[0\]: must be an object"),
        ({"spec": {"containers": [{"resources": 1}]}}, r"spec.containers\[0\].resources"),
        (
            {"spec": {"initContainers": [{"resources": {"limits": {"cpu": "x"}}}]}},
            r"spec.initContainers\[0\].resources.limits.cpu",
        ),
        ({"spec": {"overhead": {"memory": "1.5.5"}}}, "spec.overhead.memory"),
    ],
)
def test_malformed_pods_raise_value_error_naming_the_field(bad: Any, where: str) -> None:
    with pytest.raises(ValueError, match=where):
        pod_requests(bad)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
_RESOURCES = st.dictionaries(st.sampled_from(["cpu", "memory"]), _JSON | st.just("1"))
_CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "resources": st.fixed_dictionaries(
                {}, optional={"requests": _RESOURCES | _JSON, "limits": _RESOURCES | _JSON}
            )
            | _JSON,
            "restartPolicy": st.just("Always") | _JSON,
            "name": _JSON,
        },
    )
    | _JSON,
    max_size=3,
)
_PODS = st.fixed_dictionaries(
    {},
    optional={
        "spec": st.fixed_dictionaries(
            {},
            optional={"containers": _CONTAINERS, "initContainers": _CONTAINERS, "overhead": _JSON},
        )
        | _JSON
    },
)


@given(_PODS | _JSON)
def test_garbage_only_ever_raises_value_error(garbage: Any) -> None:
    for compute in (pod_requests, pod_limits, pod_non_zero_requests):
        with contextlib.suppress(ValueError):
            compute(garbage)
