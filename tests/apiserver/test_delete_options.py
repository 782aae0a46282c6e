"""DeleteOptions that apimachinery's ValidateDeleteOptions refuses: a 422 whose details name
DeleteOptions.meta.k8s.io and carry one cause per error, as kube-apiserver v1.32 answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.options import DeleteOptions, ListOptions
from pinnace.api.status import StatusError
from pinnace.clock.rfc3339 import format_time

CONFIGMAPS = catalog.kind("", "configmaps")


def refusal(api: Any, options: DeleteOptions) -> StatusError:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    api.call(api.server.create, CONFIGMAPS, "default", body)
    with pytest.raises(StatusError) as e:
        api.call(api.server.delete, CONFIGMAPS, "default", "c", options)
    assert api.call(api.server.get, CONFIGMAPS, "default", "c")["metadata"]["name"] == "c"
    return e.value


def test_an_unknown_propagation_policy_is_invalid_with_its_cause(api: Any) -> None:
    e = refusal(api, DeleteOptions(propagation_policy="Bogus"))
    assert (e.code, e.reason) == (422, "Invalid")
    assert e.message == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Bogus": supported values: "Foreground", "Background", "Orphan", "nil"'
    )
    assert e.details == {
        "group": "meta.k8s.io",
        "kind": "DeleteOptions",
        "causes": [
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Bogus": supported values: "Foreground", '
                '"Background", "Orphan", "nil"',
                "field": "propagationPolicy",
            }
        ],
    }


def test_orphan_dependents_with_an_unknown_policy_gives_both_errors(api: Any) -> None:
    e = refusal(api, DeleteOptions(propagation_policy="Bogus", orphan_dependents=True))
    assert e.message == (
        'DeleteOptions.meta.k8s.io "" is invalid: [propagationPolicy: Invalid value: "Bogus": '
        "orphanDependents and deletionPropagation cannot be both set, propagationPolicy: "
        'Unsupported value: "Bogus": supported values: "Foreground", "Background", "Orphan", '
        '"nil"]'
    )
    assert [c["reason"] for c in e.details["causes"]] == [
        "FieldValueInvalid",
        "FieldValueNotSupported",
    ]


PODS = catalog.kind("", "pods")


def test_a_shorter_grace_period_moves_the_deadline_from_the_first_delete(api: Any) -> None:
    """rest.BeforeDelete: the new deadline is the first delete's time plus the new period,
    not now plus it; a period no shorter than the current one changes nothing."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["example.com/hold"]},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    api.call(api.server.create, PODS, "default", pod)
    first = api.server.clock.now()
    marked = api.call(api.server.delete, PODS, "default", "p", DeleteOptions()).obj
    assert marked["metadata"]["deletionTimestamp"] == format_time(first + 30)
    api.run(asyncio.sleep(10))
    same = api.call(api.server.delete, PODS, "default", "p", DeleteOptions(grace_period_seconds=30))
    assert same.obj["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    shorter = api.call(
        api.server.delete, PODS, "default", "p", DeleteOptions(grace_period_seconds=5)
    ).obj["metadata"]
    assert shorter["deletionTimestamp"] == format_time(first + 5)
    assert shorter["deletionGracePeriodSeconds"] == 5
    assert shorter["finalizers"] == ["example.com/hold"]


def test_the_node_agents_final_delete_marks_the_pod_at_its_first_deletes_time(api: Any) -> None:
    """The grace-0 delete that removes a gracefully deleted pod first stores it with the
    deadline moved back to the first delete (what a watcher sees last before DELETED)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    api.call(api.server.create, PODS, "default", pod)
    first = api.server.clock.now()
    api.call(api.server.delete, PODS, "default", "p", DeleteOptions())
    api.run(asyncio.sleep(10))

    async def final_delete() -> list[tuple[str, str]]:
        stream = api.server.watch(PODS, "default", ListOptions())
        await anext(stream)  # the pod as it is
        await api.server.delete(PODS, "default", "p", DeleteOptions(grace_period_seconds=0))
        seen = [await anext(stream), await anext(stream)]
        await stream.aclose()
        return [(e["type"], e["object"]["metadata"]["deletionTimestamp"]) for e in seen]

    assert api.run(final_delete()) == [
        ("MODIFIED", format_time(first)),
        ("DELETED", format_time(first)),
    ]
