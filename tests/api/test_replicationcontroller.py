"""ReplicationController defaulting and validation (v1.32: SetDefaults_ReplicationController,
TestValidateReplicationController), its table, and its Scale's selector."""

from __future__ import annotations

from typing import Any

from tests.api.tables.test_kinds import TEMPLATE, columns, row

from pinnace.api.apps import scale_of
from pinnace.api.core.replicationcontroller import REPLICATION_CONTROLLER as RC
from pinnace.api.core.replicationcontroller import selector_of


def rc(**spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]},
    }
    obj = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"template": template}}
    obj["spec"].update(spec)
    RC.default(obj)
    return obj


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in RC.validate(obj)]


def test_selector_labels_and_replicas_default_from_the_template() -> None:
    obj = rc()
    assert obj["spec"]["selector"] == {"app": "web"}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert messages(obj) == []
    assert rc(selector={"app": "web"}, replicas=0)["spec"]["replicas"] == 0


def test_the_selector_must_match_the_template_and_pods_always_restart() -> None:
    obj = rc(selector={"app": "db"}, replicas=-1)
    obj["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert messages(obj) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
        "`selector` does not match template `labels`",
        'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": '
        'supported values: "Always"',
    ]


def test_a_selector_is_required() -> None:
    obj = rc()
    obj["spec"]["selector"] = {}
    assert messages(obj) == ["spec.selector: Required value"]


def test_scale_shows_the_selector_as_a_string() -> None:
    obj = rc(selector={"app": "web", "tier": "fe"})
    obj["spec"]["template"]["metadata"]["labels"]["tier"] = "fe"
    assert scale_of(obj, selector_of(obj))["status"]["selector"] == "app=web,tier=fe"


def test_table() -> None:
    assert columns(RC)[:5] == [
        ("Name", "string", 0),
        ("Desired", "integer", 0),
        ("Current", "integer", 0),
        ("Ready", "integer", 0),
        ("Age", "string", 0),
    ]
    obj = {
        "spec": {"replicas": 3, "selector": {"app": "web"}, "template": TEMPLATE},
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    assert row(RC, obj) == ["x", 3, 2, 1, "120m", "web,log", "nginx:1,fluent", "app=web"]
