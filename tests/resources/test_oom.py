"""oom_score_adj, with vectors from TestGetContainerOOMScoreAdjust (pkg/kubelet/qos, v1.32) and
the clamp edges computed by hand from 1000 - 1000 * request / capacity."""

import copy
from typing import Any

import pytest

from pinnace.resources.oom import oom_score_adj

STANDARD_MEMORY = 8_000_000_000


def c(
    name: str,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "resources": {}}
    if requests:
        container["resources"]["requests"] = requests
    if limits:
        container["resources"]["limits"] = limits
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> Any:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": list(containers), "initContainers": list(init), **spec},
    }


def memory(n: int | str) -> dict[str, Any]:
    return {"memory": n}


@pytest.mark.parametrize(
    ("p", "capacity", "expected"),
    [
        pytest.param(pod(c("x", limits={"cpu": "10"})), 4_000_000_000, 999, id="cpu-limit"),
        pytest.param(pod(c("x", limits=memory("0"))), 7_230_457_451, 1000, id="zero-memory-limit"),
        pytest.param(pod(c("x")), 4_000_000_000, 1000, id="no-request-limit"),
        pytest.param(
            pod(c("x", {"cpu": "5m", "memory": "10G"}, {"cpu": "5m", "memory": "10G"})),
            123_456_789,
            -997,
            id="equal-request-limit-cpu-memory",
        ),
        pytest.param(
            pod(c("x", {"cpu": "5m", "memory": STANDARD_MEMORY // 2}, memory("10G"))),
            STANDARD_MEMORY,
            500,
            id="cpu-unlimited-memory-limited-with-requests",
        ),
        pytest.param(
            # 1000 - 999 = 1, raised to the floor of 3.
            pod(c("x", {"cpu": "5m", "memory": STANDARD_MEMORY - 1})),
            STANDARD_MEMORY,
            3,
            id="request-no-limit",
        ),
        pytest.param(
            # Kubernetes' own vector leaves requests undefaulted and gets 999. Defaulting copies
            # the 10G limit into requests, so a real kubelet (and Pinnace) computes
            # 1000 - 1250 = -250 and clamps it to 3.
            pod(c("x", {"cpu": "0"}, memory("10G"))),
            STANDARD_MEMORY,
            3,
            id="memory-limit-cpu-request (defaulted)",
        ),
    ],
)
def test_kubelet_vectors(p: Any, capacity: int, expected: int) -> None:
    assert oom_score_adj(p, "x", capacity) == expected


def test_critical_pods() -> None:
    critical = 2_000_000_000
    cluster = pod(c("x"), priorityClassName="system-cluster-critical", priority=critical)
    node = pod(c("x"), priorityClassName="system-node-critical", priority=critical + 1000)
    assert oom_score_adj(cluster, "x", 4_000_000_000) == 1000  # only node-critical is spared
    assert oom_score_adj(node, "x", 4_000_000_000) == -997
    # A static pod is critical by its source, whatever its priority; so is a mirror pod.
    static = pod(c("x"), priorityClassName="system-node-critical")
    static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    assert oom_score_adj(static, "x", 4_000_000_000) == -997
    mirror = pod(c("x"), priorityClassName="system-node-critical")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    assert oom_score_adj(mirror, "x", 4_000_000_000) == -997
    # A pod from the API server with the class name but a low priority is not critical.
    from_api = pod(c("x"), priorityClassName="system-node-critical", priority=0)
    from_api["metadata"]["annotations"] = {"kubernetes.io/config.source": "api"}
    assert oom_score_adj(from_api, "x", 4_000_000_000) == 1000


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        (0, 999),  # 1000 belongs to BestEffort, so Burstable gets 999
        (999, 999),  # 999_000 // 1_000_000 = 0: still 1000, so 999
        (1000, 999),
        (1999, 999),  # Go's integer division truncates 1.999 to 1
        (2000, 998),
        (996_000, 4),
        (997_000, 3),
        (998_000, 3),  # 2, raised to the floor of 1000 - 997
        (1_000_000, 3),  # the whole node: 0, raised to the floor
        (5_000_000, 3),  # more than the node: negative, raised to the floor
    ],
)
def test_burstable_clamp_edges(request_bytes: int, expected: int) -> None:
    p = pod(c("x", {"cpu": "1", "memory": request_bytes}), c("other", {"cpu": "1"}))
    assert oom_score_adj(p, "x", 1_000_000) == expected


DEFAULT_REQUEST = STANDARD_MEMORY // 8  # 875 on its own
DEFAULT_LIMIT = 1000 + DEFAULT_REQUEST


def _sidecar_pod(sidecar_request: int) -> Any:
    return pod(
        c("main-1", memory(DEFAULT_REQUEST), memory(DEFAULT_LIMIT)),
        init=(
            c("init-container", memory(DEFAULT_REQUEST), memory(DEFAULT_LIMIT)),
            c("sidecar", memory(sidecar_request), memory(DEFAULT_LIMIT), sidecar=True),
        ),
    )


@pytest.mark.parametrize(
    ("sidecar_request", "expected"),
    [
        (DEFAULT_REQUEST, 875),  # same request as the app: same score
        (STANDARD_MEMORY // 20, 875),  # alone 950, lowered to the app container's 875
        (STANDARD_MEMORY // 2, 500),  # already below the app container: kept
    ],
)
def test_sidecars_score_no_higher_than_the_smallest_app_container(
    sidecar_request: int, expected: int
) -> None:
    p = _sidecar_pod(sidecar_request)
    assert oom_score_adj(p, "sidecar", STANDARD_MEMORY) == expected
    assert oom_score_adj(p, "main-1", STANDARD_MEMORY) == 875
    assert oom_score_adj(p, "init-container", STANDARD_MEMORY) == 875


def test_guaranteed_and_best_effort_pods_ignore_requests() -> None:
    guaranteed = pod(c("x", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))
    assert oom_score_adj(guaranteed, "x", 2**34) == -997
    assert oom_score_adj(pod(c("x"), c("y")), "y", 2**34) == 1000
    # The kubelet reads the class recorded in the status when there is one.
    recorded = pod(c("x", {"cpu": "1", "memory": 2**33}))
    recorded["status"] = {"qosClass": "Guaranteed"}
    assert oom_score_adj(recorded, "x", 2**34) == -997


def test_input_is_not_mutated() -> None:
    p = _sidecar_pod(DEFAULT_REQUEST)
    before = copy.deepcopy(p)
    oom_score_adj(p, "sidecar", STANDARD_MEMORY)
    assert p == before


def test_bad_arguments_raise_value_error() -> None:
    p = pod(c("x", memory("1Gi")))
    with pytest.raises(ValueError, match="no container named 'missing'"):
        oom_score_adj(p, "missing", STANDARD_MEMORY)
    with pytest.raises(ValueError, match="memory capacity must be positive"):
        oom_score_adj(p, "x", 0)
    with pytest.raises(ValueError, match=r"spec.containers\[0\].resources.requests.memory"):
        oom_score_adj(pod(c("x", memory("much"))), "x", STANDARD_MEMORY)
    with pytest.raises(ValueError):
        oom_score_adj(["not", "a", "pod"], "x", STANDARD_MEMORY)
