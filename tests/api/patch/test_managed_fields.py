"""metadata.managedFields for ordinary writes (create, update, patch, status), and the
FieldsV1 format, as kube-apiserver v1.32 keeps them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinnace.api.patch import server_side_apply, track_update
from pinnace.api.patch.fieldpath import FieldSet, path_string

T0, T1, T2, T3 = (f"2026-01-01T00:00:0{n}Z" for n in range(4))


def pod() -> dict[str, Any]:
    """A pod as stored after `kubectl run nginx --image=nginx` and defaulting."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "nginx",
            "namespace": "default",
            "uid": "6b2f0c1e",
            "resourceVersion": "7",
            "creationTimestamp": T0,
            "generation": 1,
            "labels": {"run": "nginx"},
        },
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx",
                    "imagePullPolicy": "Always",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def edited(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    change(new)
    return new


def created() -> dict[str, Any]:
    return track_update(None, pod(), manager="kubectl-run", now=T0)


def test_create_records_what_the_creator_set_in_kube_apiserver_shape() -> None:
    assert created()["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-run",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
        }
    ]


def test_server_set_metadata_and_status_are_never_tracked() -> None:
    stored = pod()
    stored["metadata"]["annotations"] = {"note": "x"}
    (entry,) = track_update(None, stored, manager="kubectl-create", now=T1)["metadata"][
        "managedFields"
    ]
    assert entry["fieldsV1"]["f:metadata"] == {
        "f:annotations": {".": {}, "f:note": {}},
        "f:labels": {".": {}, "f:run": {}},
    }
    assert "f:status" not in entry["fieldsV1"]
    assert "f:apiVersion" not in entry["fieldsV1"]


def test_an_update_moves_ownership_of_what_it_changes() -> None:
    live = created()

    def change(new: dict[str, Any]) -> None:
        new["spec"]["containers"][0]["image"] = "nginx:1.27"
        new["metadata"]["labels"]["tier"] = "web"

    after = track_update(live, edited(live, change), manager="kubectl-edit", now=T1)
    owners = entries(after)
    assert owners["kubectl-edit"]["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:tier": {}}},
        "f:spec": {"f:containers": {'k:{"name":"nginx"}': {"f:image": {}}}},
    }
    assert owners["kubectl-edit"]["time"] == T1
    creator = owners["kubectl-run"]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    assert "f:image" not in creator
    assert owners["kubectl-run"]["time"] == T0  # losing fields does not touch the time
    assert [e["manager"] for e in after["metadata"]["managedFields"]] == [
        "kubectl-run",
        "kubectl-edit",
    ]


def test_removing_a_field_takes_it_from_its_owner() -> None:
    live = created()
    after = track_update(
        live,
        edited(live, lambda new: new["metadata"].pop("labels")),
        manager="kubectl-label",
        now=T1,
    )
    assert "f:metadata" not in entries(after)["kubectl-run"]["fieldsV1"]
    assert "kubectl-label" not in entries(after)  # it set nothing


def test_an_update_that_changes_nothing_leaves_the_entries_alone() -> None:
    live = created()
    assert track_update(live, copy.deepcopy(live), manager="other", now=T1) == live


def test_a_manager_that_updates_again_keeps_what_it_owned_and_gets_a_new_time() -> None:
    live = created()
    live = track_update(
        live,
        edited(live, lambda new: new["spec"].update(activeDeadlineSeconds=60)),
        manager="kubectl-edit",
        now=T1,
    )
    live = track_update(
        live,
        edited(live, lambda new: new["spec"].update(priority=5)),
        manager="kubectl-edit",
        now=T2,
    )
    owned = entries(live)["kubectl-edit"]
    assert owned["fieldsV1"] == {"f:spec": {"f:activeDeadlineSeconds": {}, "f:priority": {}}}
    assert owned["time"] == T2


def test_status_writes_are_recorded_under_the_status_subresource() -> None:
    live = created()

    def report(new: dict[str, Any]) -> None:
        new["status"]["phase"] = "Running"
        new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]

    after = track_update(
        live, edited(live, report), manager="kubelet", subresource="status", now=T1
    )
    kubelet = entries(after)["kubelet"]
    assert kubelet["subresource"] == "status"
    assert list(kubelet) == [
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
        "subresource",
    ]
    assert kubelet["fieldsV1"] == {
        "f:status": {
            "f:conditions": {
                ".": {},
                'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}},
            },
            "f:phase": {},
        }
    }


def test_the_same_manager_through_two_endpoints_is_two_entries() -> None:
    live = created()
    live = track_update(
        live,
        edited(live, lambda new: new["status"].update(phase="Running")),
        manager="kubectl-run",
        subresource="status",
        now=T1,
    )
    assert [(e["manager"], e.get("subresource")) for e in live["metadata"]["managedFields"]] == [
        ("kubectl-run", None),
        ("kubectl-run", "status"),
    ]


def test_managed_fields_sent_with_an_update_replace_the_stored_ones() -> None:
    live = created()
    sent = copy.deepcopy(live)
    sent["metadata"]["managedFields"][0]["manager"] = "renamed"
    after = track_update(live, sent, manager="kubectl-edit", now=T1)
    assert [e["manager"] for e in after["metadata"]["managedFields"]] == ["renamed"]


@pytest.mark.parametrize("reset", [[], [{}]])
def test_an_empty_list_or_one_empty_entry_resets_them(reset: list[Any]) -> None:
    live = created()
    sent = edited(live, lambda new: new["metadata"].update(managedFields=reset))
    assert "managedFields" not in track_update(live, sent, manager="x", now=T1)["metadata"]


@pytest.mark.parametrize(
    "garbage",
    [
        [{"manager": "m", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
        [{"manager": "m", "operation": "Update", "apiVersion": "v1"}],
        [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"}],
    ],
)
def test_undecodable_entries_in_a_request_fall_back_to_the_stored_ones(garbage: Any) -> None:
    live = created()
    sent = edited(live, lambda new: new["metadata"].update(managedFields=garbage))
    after = track_update(live, sent, manager="x", now=T1)
    assert after["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_status_writes_cannot_rewrite_managed_fields() -> None:
    live = created()
    sent = edited(live, lambda new: new["metadata"]["managedFields"][0].update(manager="forged"))
    after = track_update(live, sent, manager="kubelet", subresource="status", now=T1)
    assert after["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_more_than_ten_update_managers_fold_the_oldest_into_ancient_changes() -> None:
    live = created()
    for n in range(11):
        live = track_update(
            live,
            edited(live, lambda new, n=n: new["metadata"]["labels"].update({f"l{n}": "x"})),
            manager=f"writer-{n}",
            now=f"2026-01-01T00:01:{n:02d}Z",
        )
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert managers[0] == "ancient-changes"
    ancient = live["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:labels"]
    assert {"f:run", "f:l0", "f:l1"} <= set(ancient)


def test_apply_and_update_entries_sort_apply_first_then_by_time() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1"},
    }
    live = server_side_apply(None, config, manager="zeta", force=False, now=T2)
    live = track_update(
        live,
        edited(live, lambda new: new["data"].update(b="2")),
        manager="alpha",
        now=T3,
    )
    live = server_side_apply(
        live,
        {**config, "data": {"c": "3"}},
        manager="beta",
        force=False,
        now=T1,
    )
    assert [(e["operation"], e["manager"]) for e in live["metadata"]["managedFields"]] == [
        ("Apply", "beta"),
        ("Apply", "zeta"),
        ("Update", "alpha"),
    ]


def test_set_items_are_value_elements() -> None:
    live = created()
    after = track_update(
        live,
        edited(live, lambda new: new["metadata"].update(finalizers=["example.com/keep"])),
        manager="controller",
        now=T1,
    )
    assert entries(after)["controller"]["fieldsV1"] == {
        "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/keep"': {}}}
    }


FIELDS_V1 = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:metadata2": {"f:finalizers": {'v:"a/b"': {}, "i:0": {}}},
    "f:spec": {
        "f:containers": {
            'k:{"name":"web"}': {
                ".": {},
                "f:ports": {
                    'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                },
            }
        },
        "f:tolerations": {},
    },
}


def test_fields_v1_round_trips() -> None:
    fields = FieldSet.from_fields_v1(FIELDS_V1)
    assert fields.to_fields_v1() == FIELDS_V1
    assert json.dumps(fields.to_fields_v1()) == json.dumps(FIELDS_V1)  # same order


def test_paths_print_as_conflict_messages_print_them() -> None:
    fields = FieldSet.from_fields_v1(FIELDS_V1)
    assert [path_string(p) for p in fields.paths()] == [
        ".metadata.labels",
        ".metadata.labels.app",
        '.metadata2.finalizers[="a/b"]',
        ".metadata2.finalizers[0]",
        ".spec.tolerations",
        '.spec.containers[name="web"]',
        '.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"]',
        '.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"].containerPort',
    ]


def test_key_fields_are_canonicalised_in_sorted_order() -> None:
    fields = FieldSet.from_fields_v1({'k:{"protocol":"TCP","containerPort":80}': {}})
    assert fields.to_fields_v1() == {'k:{"containerPort":80,"protocol":"TCP"}': {}}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
POD_FIELDS = st.sampled_from(["metadata", "spec", "status", "labels", "containers", "name"])


@settings(max_examples=150, deadline=None)
@given(changes=st.lists(st.tuples(POD_FIELDS, JSON_VALUES), max_size=4))
def test_bookkeeping_never_fails_a_write_whatever_the_objects_hold(changes: list[Any]) -> None:
    live = created()
    new = copy.deepcopy(live)
    for where, value in changes:
        if where in ("metadata", "spec", "status"):
            new[where] = value
        elif where == "labels" and isinstance(new.get("metadata"), dict):
            new["metadata"]["labels"] = value
        elif where == "containers" and isinstance(new.get("spec"), dict):
            new["spec"]["containers"] = value
        elif where == "name" and isinstance(new.get("spec"), dict):
            new["spec"]["containers"] = [{"name": value}, {"name": value}]
    for manager, subresource in (("editor", ""), ("kubelet", "status")):
        after = track_update(live, new, manager=manager, subresource=subresource, now=T1)
        assert isinstance(after, dict)
        track_update(new, live, manager=manager, subresource=subresource, now=T2)


def test_each_object_gets_entries_of_its_own() -> None:
    """Objects of one template, and the writes of one object, record the same entries; each
    object's entries are its own, so changing one object's changes no other's."""
    first = track_update(None, pod(), manager="m", now=T0)
    second = track_update(None, pod(), manager="m", now=T0)
    status = copy.deepcopy(first)
    status["status"] = {"phase": "Running"}
    updated = track_update(first, status, manager="kubelet", subresource="status", now=T1)
    again = track_update(first, status, manager="kubelet", subresource="status", now=T1)
    before = json.dumps([second, again])
    for obj in (updated, first):
        for entry in obj["metadata"]["managedFields"]:
            entry["fieldsV1"].setdefault("f:spec", {})["f:x"] = {}
    assert json.dumps([second, again]) == before
    later = track_update(second, status, manager="kubelet", subresource="status", now=T1)
    assert later == again
