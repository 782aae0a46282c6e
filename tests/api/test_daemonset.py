"""DaemonSets (apps/v1) through the request pipeline, as kube-apiserver v1.32 answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError

DAEMON_SETS = catalog.kind("apps", "daemonsets")
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def daemon_set(name: str = "agent", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "agent", "image": "agent:1"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name}, "spec": body}


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return api.call(api.server.create, DAEMON_SETS, "default", body).obj


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    return api.call(api.server.update, DAEMON_SETS, "default", name, body, None, subresource).obj


def refused(api: Any, fn: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as e:
        api.call(fn, *args)
    assert e.value.code == 422
    return e.value


def causes(error: StatusError) -> list[str]:
    assert error.details is not None
    return [f"{c['field']}: {c['message']}" for c in error.details["causes"]]


def test_create_defaults_the_rollout_and_starts_the_template_generation(api: Any) -> None:
    created = create(api, daemon_set())
    spec = created["spec"]
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["annotations"] == {GENERATION_ANNOTATION: "1"}
    assert created["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


def test_on_delete_strategy_gets_no_rolling_update() -> None:
    ds = daemon_set(updateStrategy={"type": "OnDelete"})
    DAEMON_SETS.default(ds)
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_a_client_cannot_set_status_on_create(api: Any) -> None:
    body = daemon_set()
    body["status"] = {"numberReady": 3}
    assert create(api, body)["status"]["numberReady"] == 0


def test_selector_must_match_the_template(api: Any) -> None:
    body = daemon_set()
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    e = refused(api, api.server.create, DAEMON_SETS, "default", body)
    assert e.message == (
        'DaemonSet.apps "agent" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"other"}: `selector` does not match template `labels`'
    )


def test_missing_selector_selects_nothing_and_empty_selector_is_refused(api: Any) -> None:
    body = daemon_set()
    del body["spec"]["selector"]
    e = refused(api, api.server.create, DAEMON_SETS, "default", body)
    assert causes(e) == [
        "spec.template.metadata.labels: Invalid value: "
        'map[string]string{"app":"agent"}: `selector` does not match template `labels`'
    ]
    e = refused(api, api.server.create, DAEMON_SETS, "default", daemon_set(selector={}))
    assert causes(e) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
        "empty selector is invalid for daemonset"
    ]


def test_pods_must_always_restart_and_have_no_deadline(api: Any) -> None:
    body = daemon_set()
    body["spec"]["template"]["spec"].update(restartPolicy="Never", activeDeadlineSeconds=5)
    e = refused(api, api.server.create, DAEMON_SETS, "default", body)
    assert causes(e) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Forbidden: "
        "activeDeadlineSeconds in DaemonSet is not Supported",
    ]


@pytest.mark.parametrize(
    ("rolling", "expected"),
    [
        (
            {"maxUnavailable": 1, "maxSurge": 1},
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "
            'intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: '
            "may not be set when maxUnavailable is non-zero",
        ),
        (
            {"maxUnavailable": 0, "maxSurge": "0%"},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: "
            "cannot be 0 when maxSurge is 0",
        ),
        (
            {"maxUnavailable": "150%", "maxSurge": 0},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "
            'intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%',
        ),
        (
            {"maxUnavailable": -1, "maxSurge": 0},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: "
            "must be greater than or equal to 0",
        ),
    ],
)
def test_rolling_update_bounds(api: Any, rolling: dict[str, Any], expected: str) -> None:
    body = daemon_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    assert expected in causes(refused(api, api.server.create, DAEMON_SETS, "default", body))


def test_unknown_update_strategy(api: Any) -> None:
    body = daemon_set(updateStrategy={"type": "BlueGreen"})
    assert causes(refused(api, api.server.create, DAEMON_SETS, "default", body)) == [
        "spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:"
        '"BlueGreen", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: '
        'supported values: "RollingUpdate", "OnDelete"'
    ]


def test_negative_counts(api: Any) -> None:
    body = daemon_set(minReadySeconds=-1, revisionHistoryLimit=-2)
    assert causes(refused(api, api.server.create, DAEMON_SETS, "default", body)) == [
        "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
    ]


def test_template_change_bumps_both_generations(api: Any) -> None:
    created = create(api, daemon_set())
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
    after = update(api, changed)
    assert after["metadata"]["generation"] == 2
    assert after["metadata"]["annotations"][GENERATION_ANNOTATION] == "2"
    changed = copy.deepcopy(after)
    changed["spec"]["minReadySeconds"] = 5
    after = update(api, changed)
    assert after["metadata"]["generation"] == 3
    assert after["metadata"]["annotations"][GENERATION_ANNOTATION] == "2"


def test_the_template_generation_is_the_servers(api: Any) -> None:
    created = create(api, daemon_set())
    changed = copy.deepcopy(created)
    changed["metadata"]["annotations"][GENERATION_ANNOTATION] = "9"
    changed["metadata"]["labels"] = {"tier": "node"}
    after = update(api, changed)
    assert after["metadata"]["annotations"][GENERATION_ANNOTATION] == "1"
    assert after["metadata"]["generation"] == 1


def test_selector_is_immutable(api: Any) -> None:
    created = create(api, daemon_set())
    changed = copy.deepcopy(created)
    changed["spec"]["selector"] = {"matchLabels": {"app": "agent", "tier": "node"}}
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "node"
    e = refused(api, api.server.update, DAEMON_SETS, "default", "agent", changed)
    assert causes(e) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":'
        '"agent", "tier":"node"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "field is immutable"
    ]


def test_status_endpoint_writes_only_status(api: Any) -> None:
    created = create(api, daemon_set())
    written = copy.deepcopy(created)
    written["status"].update(desiredNumberScheduled=3, numberReady=2, observedGeneration=1)
    written["spec"]["minReadySeconds"] = 30
    after = update(api, written, "status")
    assert after["status"]["numberReady"] == 2
    assert after["spec"] == created["spec"]
    assert after["metadata"]["generation"] == 1
    spec_write = copy.deepcopy(after)
    spec_write["status"]["numberReady"] = 0
    assert update(api, spec_write)["status"]["numberReady"] == 2


def test_status_counters_are_checked(api: Any) -> None:
    created = create(api, daemon_set())
    written = copy.deepcopy(created)
    written["status"].update(numberReady=-1, collisionCount=2)
    e = refused(api, api.server.update, DAEMON_SETS, "default", "agent", written, None, "status")
    assert causes(e) == [
        "status.numberReady: Invalid value: -1: must be greater than or equal to 0"
    ]
    written["status"]["numberReady"] = 0
    after = copy.deepcopy(update(api, written, "status"))
    after["status"]["collisionCount"] = 1
    e = refused(api, api.server.update, DAEMON_SETS, "default", "agent", after, None, "status")
    assert causes(e) == ["status.collisionCount: Invalid value: 1: cannot be decremented"]
