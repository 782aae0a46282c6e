"""LimitRanger vectors, checked against kube-apiserver v1.32
(plugin/pkg/admission/limitranger/admission.go). LimitRanges are defaulted as the API server
stores them (a Container item's min fills defaultRequest, its max fills default)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api.core.limitrange import default_limit_range
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.limit_ranger import (
    LIMIT_RANGER_ANNOTATION,
    admit,
    mutate,
    validate,
)


def limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    lr = {"metadata": {"name": "limits", "namespace": "team"}, "spec": {"limits": list(items)}}
    default_limit_range(lr)
    return lr


def container(name: str, requests: dict[str, str] | None = None, **limits: str) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests is not None or limits:
        resources["requests"] = {**limits, **(requests or {})}  # as API defaulting stores it
    return {"name": name, "image": "nginx", "resources": resources}


def pod(
    *containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": list(containers), **spec}
    if init:
        body["initContainers"] = list(init)
    return {"metadata": {"name": "web", "namespace": "team"}, "spec": body}


def refusal(p: dict[str, Any], *lrs: dict[str, Any]) -> str:
    with pytest.raises(StatusError) as info:
        admit("pods", p, list(lrs))
    assert (info.value.code, info.value.reason) == (403, "Forbidden")
    return info.value.message


DEFAULTS = limit_range(
    {
        "type": "Container",
        "default": {"cpu": "500m", "memory": "512Mi"},
        "defaultRequest": {"cpu": "250m", "memory": "256Mi"},
    }
)


def test_defaults_fill_only_missing_requests_and_limits() -> None:
    p = pod(
        container("app", {"cpu": "100m"}),
        container("sidecar", memory="1Gi"),
        container("full", {"cpu": "1", "memory": "1Gi"}, cpu="2", memory="2Gi"),
        init=(container("init"),),
    )
    admit("pods", p, [DEFAULTS])
    app, sidecar, full = p["spec"]["containers"]
    assert app["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    assert sidecar["resources"] == {
        "requests": {"memory": "1Gi", "cpu": "250m"},
        "limits": {"memory": "1Gi", "cpu": "500m"},
    }
    assert full["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }
    assert p["spec"]["initContainers"][0]["resources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    assert p["metadata"]["annotations"] == {
        LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: memory request for container app; "
        "cpu, memory limit for container app; cpu request for container sidecar; "
        "cpu limit for container sidecar; cpu, memory request for init container init; "
        "cpu, memory limit for init container init"
    }


def test_a_pod_that_lacks_nothing_is_not_annotated() -> None:
    p = pod(container("app", {"cpu": "1", "memory": "1Gi"}, cpu="1", memory="1Gi"))
    before = copy.deepcopy(p)
    admit("pods", p, [DEFAULTS])
    assert p == before


def test_a_limit_range_without_defaults_changes_nothing() -> None:
    p = pod({"name": "app", "image": "nginx"})
    mutate("pods", p, [limit_range({"type": "Pod", "max": {"cpu": "4"}})])
    assert p == pod({"name": "app", "image": "nginx"})


def test_each_limit_range_that_sets_something_replaces_the_note() -> None:
    p = pod(container("app"))
    p["metadata"]["annotations"] = {"team": "a"}
    cpu = limit_range({"type": "Container", "default": {"cpu": "1"}})
    memory = limit_range({"type": "Container", "default": {"memory": "1Gi"}})
    mutate("Pod", p, [cpu, memory])
    assert p["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert p["metadata"]["annotations"] == {
        "team": "a",
        LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: memory request for container app; "
        "memory limit for container app",
    }


def test_ephemeral_containers_are_not_defaulted() -> None:
    p = pod(container("app", cpu="1", memory="1Gi"), ephemeralContainers=[{"name": "debug"}])
    mutate("pods", p, [DEFAULTS])
    assert p["spec"]["ephemeralContainers"] == [{"name": "debug"}]


def test_other_kinds_are_left_alone() -> None:
    cm = {"metadata": {"name": "cm"}, "spec": {"containers": [{"name": "app"}]}}
    admit("configmaps", cm, [DEFAULTS])
    assert cm == {"metadata": {"name": "cm"}, "spec": {"containers": [{"name": "app"}]}}


def test_container_violations_are_listed_together() -> None:
    lr = limit_range({"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}})
    p = pod(container("app", {"cpu": "50m", "memory": "1Gi"}, cpu="1", memory="2Gi"))
    assert refusal(p, lr) == (
        'pods "web" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, '
        "maximum memory usage per Container is 1Gi, but limit is 2Gi]"
    )


def test_one_violation_is_not_bracketed_and_repeats_are_dropped() -> None:
    lr = limit_range({"type": "Container", "min": {"cpu": "100m"}})
    p = pod(container("a", {"cpu": "50m"}), init=(container("b", {"cpu": "50m"}),))
    assert refusal(p, lr) == (
        'pods "web" is forbidden: minimum cpu usage per Container is 100m, but request is 50m'
    )


def test_min_max_then_ratio_per_container_in_name_order() -> None:
    lr = limit_range(
        {
            "type": "Container",
            "min": {"memory": "64Mi", "cpu": "100m"},
            "max": {"cpu": "1"},
            "maxLimitRequestRatio": {"cpu": "2"},
        }
    )
    p = pod(container("app", {"cpu": "50m", "memory": "32Mi"}, cpu="2", memory="32Mi"))
    assert refusal(p, lr) == (
        'pods "web" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, '
        "minimum memory usage per Container is 64Mi, but request is 32Mi, "
        "maximum cpu usage per Container is 1, but limit is 2, "
        "cpu max limit to request ratio per Container is 2, but provided ratio is 40.000000]"
    )


def test_defaults_apply_before_the_checks() -> None:
    # A stored LimitRange's default request comes from its default limit (here its max)
    # before its min.
    lr = limit_range({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"}})
    p = pod(container("app"))
    admit("pods", p, [lr])
    assert p["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"},
        "limits": {"cpu": "1"},
    }


@pytest.mark.parametrize(
    ("ratio", "requests", "limits", "message"),
    [
        (
            "2",
            {"cpu": "100m"},
            {"cpu": "500m"},
            "cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000",
        ),
        (
            "3",
            {"memory": "300Mi"},
            {"memory": "1Gi"},
            "memory max limit to request ratio per Container is 3, but provided ratio is 3.413333",
        ),
        (
            "2",
            {"cpu": "0"},
            {"cpu": "1"},
            "cpu max limit to request ratio per Container is 2, but no request is specified or "
            "request is 0",
        ),
        (
            "1500m",
            {"cpu": "1"},
            {},
            "cpu max limit to request ratio per Container is 1500m, but no limit is specified "
            "or limit is 0",
        ),
    ],
)
def test_limit_to_request_ratio(
    ratio: str, requests: dict[str, str], limits: dict[str, str], message: str
) -> None:
    name = next(iter(requests))
    lr = limit_range({"type": "Container", "maxLimitRequestRatio": {name: ratio}})
    p = pod({"name": "app", "resources": {"requests": requests, "limits": limits}})
    assert refusal(p, lr) == f'pods "web" is forbidden: {message}'


def test_a_ratio_at_the_maximum_is_allowed() -> None:
    lr = limit_range({"type": "Container", "maxLimitRequestRatio": {"cpu": "1500m"}})
    validate("pods", pod(container("app", {"cpu": "200m"}, cpu="300m")), [lr])


def test_a_limit_below_the_minimum_is_reported_after_the_request() -> None:
    lr = limit_range({"type": "Container", "min": {"cpu": "200m"}})
    p = pod({"name": "app", "resources": {"requests": {"cpu": "300m"}, "limits": {"cpu": "100m"}}})
    assert refusal(p, lr).endswith("minimum cpu usage per Container is 200m, but limit is 100m")


def test_pod_items_check_effective_requests_and_limits() -> None:
    lr = limit_range({"type": "Pod", "max": {"cpu": "2"}, "min": {"memory": "1Gi"}})
    p = pod(
        container("a", cpu="1"),
        container("b", cpu="1"),
        init=(container("init", cpu="3"),),
    )
    assert refusal(p, lr) == (
        'pods "web" is forbidden: [minimum memory usage per Pod is 1Gi.  No request is '
        "specified, maximum cpu usage per Pod is 2, but limit is 3]"
    )


def test_pod_items_count_sidecars_and_not_overhead() -> None:
    lr = limit_range({"type": "Pod", "max": {"cpu": "2"}})
    sidecar = {**container("proxy", cpu="500m"), "restartPolicy": "Always"}
    validate("pods", pod(container("a", cpu="1500m"), overhead={"cpu": "1"}), [lr])
    assert refusal(pod(container("a", cpu="1600m"), init=(sidecar,)), lr) == (
        'pods "web" is forbidden: maximum cpu usage per Pod is 2, but limit is 2100m'
    )


def test_a_pod_without_limits_has_no_limit_to_check() -> None:
    lr = limit_range({"type": "Pod", "max": {"memory": "1Gi"}})
    assert refusal(pod(container("a", {"memory": "10Mi"})), lr) == (
        'pods "web" is forbidden: maximum memory usage per Pod is 1Gi.  No limit is specified'
    )


def test_the_first_limit_range_violated_is_reported() -> None:
    ok = limit_range({"type": "Container", "max": {"cpu": "4"}})
    low = limit_range({"type": "Container", "max": {"cpu": "1"}})
    lower = limit_range({"type": "Container", "max": {"cpu": "500m"}})
    p = pod(container("app", cpu="2"))
    assert refusal(p, ok, low, lower) == (
        'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )


def test_errors_name_a_generated_pod_by_its_prefix() -> None:
    p = pod(container("app", cpu="2"))
    p["metadata"] = {"generateName": "web-"}
    assert refusal(p, limit_range({"type": "Container", "max": {"cpu": "1"}})).startswith(
        'pods "web-" is forbidden: '
    )


def test_a_container_without_a_request_fails_a_minimum() -> None:
    lr = {
        "metadata": {"name": "limits", "namespace": "team"},
        "spec": {"limits": [{"type": "Container", "min": {"memory": "64Mi"}}]},
    }  # as stored without defaulting: no defaultRequest fills the gap
    p = pod({"name": "app", "image": "nginx"})
    assert refusal(p, lr) == (
        'pods "web" is forbidden: minimum memory usage per Container is 64Mi.  '
        "No request is specified"
    )


def test_a_container_without_a_limit_fails_a_maximum() -> None:
    lr = limit_range({"type": "Container", "max": {"ephemeral-storage": "1Gi"}})
    del lr["spec"]["limits"][0]["default"]
    del lr["spec"]["limits"][0]["defaultRequest"]
    p = pod(container("app", {"ephemeral-storage": "100Mi"}))
    assert refusal(p, lr) == (
        'pods "web" is forbidden: maximum ephemeral-storage usage per Container is 1Gi.  '
        "No limit is specified"
    )


def test_defaults_from_max_and_min_satisfy_the_range() -> None:
    lr = limit_range(
        {"type": "Container", "min": {"memory": "64Mi"}, "max": {"memory": "1Gi"}},
    )
    assert lr["spec"]["limits"][0]["default"] == {"memory": "1Gi"}
    assert lr["spec"]["limits"][0]["defaultRequest"] == {"memory": "1Gi"}
    p = pod(container("app"))
    admit("pods", p, [lr])
    assert p["spec"]["containers"][0]["resources"] == {
        "requests": {"memory": "1Gi"},
        "limits": {"memory": "1Gi"},
    }


def test_a_default_request_is_taken_from_min_when_there_is_no_default() -> None:
    lr = limit_range({"type": "Container", "min": {"cpu": "100m"}})
    assert lr["spec"]["limits"][0]["defaultRequest"] == {"cpu": "100m"}
    p = pod(container("app"))
    admit("pods", p, [lr])
    assert p["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}
    assert p["metadata"]["annotations"] == {
        LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: cpu request for container app"
    }


def test_quantities_are_compared_by_value_not_by_spelling() -> None:
    lr = limit_range({"type": "Container", "max": {"cpu": "1000m", "memory": "1Gi"}})
    validate("pods", pod(container("app", cpu="1", memory="1024Mi")), [lr])
    assert refusal(pod(container("app", cpu="1001m", memory="1Gi")), lr) == (
        'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 1001m'
    )


def claim(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"metadata": {"name": "data"}, "spec": {"resources": resources}}


CLAIM_BOUNDS = limit_range(
    {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}}
)


def claim_refusal(c: dict[str, Any], *lrs: dict[str, Any]) -> str:
    with pytest.raises(StatusError) as e:
        validate("persistentvolumeclaims", c, list(lrs))
    assert e.value.code == 403
    return str(e.value)


def test_a_claims_storage_request_is_held_to_min_and_max() -> None:
    validate("persistentvolumeclaims", claim({"storage": "5Gi"}), [CLAIM_BOUNDS])
    assert claim_refusal(
        claim({"storage": "5Gi", "cpu": "1"}),
        limit_range({"type": "PersistentVolumeClaim", "max": {"storage": "5Gi", "cpu": "500m"}}),
    ) == (
        'persistentvolumeclaims "data" is forbidden: maximum cpu usage per '
        "PersistentVolumeClaim is 500m, but request is 1"
    )
    assert claim_refusal(claim({"storage": "512Mi"}), CLAIM_BOUNDS) == (
        'persistentvolumeclaims "data" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 512Mi"
    )


def test_a_claims_limits_are_not_looked_at() -> None:
    """Only the requests are the user's: a limit above the max passes, and a claim with no
    request is refused for both bounds."""
    validate(
        "persistentvolumeclaims", claim({"storage": "2Gi"}, {"storage": "9Gi"}), [CLAIM_BOUNDS]
    )
    assert claim_refusal(claim(limits={"storage": "2Gi"}), CLAIM_BOUNDS) == (
        'persistentvolumeclaims "data" is forbidden: [minimum storage usage per '
        "PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per "
        "PersistentVolumeClaim is 5Gi.  No request is specified]"
    )


def test_pod_items_do_not_bound_claims() -> None:
    lr = limit_range({"type": "Container", "max": {"storage": "1Gi"}})
    validate("persistentvolumeclaims", claim({"storage": "2Gi"}), [lr])
