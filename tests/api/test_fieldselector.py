"""Field selectors and per-kind field labels, checked against apimachinery's pkg/fields and
kube-apiserver's field label conversions."""

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.api.fieldselector import (
    convert_field_selector,
    escape_value,
    field_reader,
    field_set,
    parse_field_selector,
    unescape_value,
)
from pinnace.api.labels import SelectorError
from pinnace.api.status import StatusError


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a=b"),
        ("a!=b", "a!=b"),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("z=c,x=a", "x=a,z=c"),
        ("x=,y!=", "x=,y!="),
        ("a=b,,c=d", "a=b,c=d"),
        ("a=b\\,c", "a=b\\,c"),
        ("a=b\\=c\\\\", "a=b\\=c\\\\"),
    ],
)
def test_parse_canonical(text: str, canonical: str) -> None:
    assert str(parse_field_selector(text)) == canonical


def test_parse_unescapes_values() -> None:
    sel = parse_field_selector("metadata.name=a\\,b\\=c\\\\d")
    assert sel.matches({"metadata.name": "a,b=c\\d"})
    assert not sel.matches({"metadata.name": "a"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
        ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_field_selector(text)
    assert str(err.value) == message


def test_matches_missing_field_as_empty() -> None:
    assert parse_field_selector("").empty
    assert parse_field_selector("a=").matches({})
    assert not parse_field_selector("a!=").matches({})
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Running")
    assert sel.matches({"spec.nodeName": "n1", "status.phase": "Pending"})
    assert not sel.matches({"spec.nodeName": "n1", "status.phase": "Running"})
    assert not sel.matches({"spec.nodeName": "n2", "status.phase": "Pending"})


@given(st.text(alphabet="ab,=\\x", max_size=12))
def test_escape_round_trips(value: str) -> None:
    assert unescape_value(escape_value(value)) == value
    assert parse_field_selector(f"f={escape_value(value)}").matches({"f": value})


POD = {
    "metadata": {"name": "web-1", "namespace": "shop"},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
             "serviceAccountName": "default", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.5",
               "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}]},
}  # fmt: skip


def test_pod_field_set() -> None:
    assert field_set("", "Pod", POD) == {
        "metadata.name": "web-1",
        "metadata.namespace": "shop",
        "spec.nodeName": "n1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "default",
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.5",
        "status.nominatedNodeName": "",
    }


@pytest.mark.parametrize(
    "pod",
    [
        POD,
        {"metadata": {"name": "p"}, "spec": {"nodeName": 7, "hostNetwork": False}},
        {"metadata": {"name": "p", "namespace": "d"}, "spec": "odd", "status": {"phase": True}},
    ],
)
def test_a_field_read_alone_reads_as_in_the_field_set(pod: dict) -> None:
    for label, value in {**field_set("", "Pod", pod), "status.podIPs": ""}.items():
        assert field_reader("", "Pod", label)(pod) == value, label


def test_unscheduled_pods_selector() -> None:
    sel = convert_field_selector("", "Pod", parse_field_selector("spec.nodeName="))
    assert not sel.matches(field_set("", "Pod", POD))
    assert sel.matches(field_set("", "Pod", {"metadata": {"name": "p"}, "spec": {}}))


def test_legacy_spec_host_is_spec_node_name() -> None:
    sel = convert_field_selector("", "Pod", parse_field_selector("spec.host=n1"))
    assert str(sel) == "spec.nodeName=n1"
    assert sel.matches(field_set("", "Pod", POD))


def test_node_and_namespace_fields() -> None:
    node = {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}
    assert field_set("", "Node", node) == {"metadata.name": "n1", "spec.unschedulable": "true"}
    assert field_set("", "Node", {"metadata": {"name": "n2"}})["spec.unschedulable"] == "false"
    ns = {"metadata": {"name": "shop"}, "status": {"phase": "Terminating"}}
    assert field_set("", "Namespace", ns) == {
        "metadata.name": "shop",
        "status.phase": "Terminating",
    }


def test_event_fields() -> None:
    event = {
        "metadata": {"name": "e1", "namespace": "shop"},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "shop", "uid": "u1"},
        "reason": "Scheduled",
        "type": "Normal",
        "reportingComponent": "default-scheduler",
    }
    fields = field_set("", "Event", event)
    assert fields["involvedObject.kind"] == "Pod"
    assert fields["involvedObject.fieldPath"] == ""
    assert fields["source"] == "default-scheduler"
    assert fields["reason"] == "Scheduled"
    assert fields["type"] == "Normal"
    assert field_set("", "Event", {"metadata": {"name": "e2"}})["type"] == ""


def test_job_successful() -> None:
    job = {"metadata": {"name": "j", "namespace": "d"}, "status": {"succeeded": 3}}
    sel = convert_field_selector("batch", "Job", parse_field_selector("status.successful=3"))
    assert sel.matches(field_set("batch", "Job", job))


@pytest.mark.parametrize(
    ("group", "kind", "selector", "message"),
    [
        ("", "Pod", "foo=bar", "field label not supported: foo"),
        ("", "Pod", "status.hostIP=1", "field label not supported: status.hostIP"),
        ("", "Node", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("", "Namespace", "status.phase=Active,foo=1", "field label not supported: foo"),
        ("batch", "Job", "status.failed=1",
         'field label "status.failed" not supported for batchv1.Job'),
        ("", "ConfigMap", "data=x",
         '"data" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("apps", "ReplicaSet", "status.replicas=0",
         '"status.replicas" is not a known field selector: only "metadata.name", '
         '"metadata.namespace"'),
    ],
)  # fmt: skip
def test_unsupported_field_label(group: str, kind: str, selector: str, message: str) -> None:
    with pytest.raises(StatusError) as err:
        convert_field_selector(group, kind, parse_field_selector(selector))
    assert err.value.code == 400
    assert err.value.reason == "BadRequest"
    assert err.value.message == message


def test_every_kind_accepts_metadata_fields() -> None:
    for group, kind in [("", "ConfigMap"), ("apps", "Deployment"), ("", "Pod"), ("", "Event")]:
        sel = parse_field_selector("metadata.name=a,metadata.namespace=b")
        assert convert_field_selector(group, kind, sel) == sel


@pytest.mark.parametrize(
    ("namespaced", "selector", "message"),
    [
        (True, "spec.cronSpec=x", "field label not supported: spec.cronSpec"),
        (False, "metadata.namespace=x", "field label not supported: metadata.namespace"),
    ],
)
def test_a_custom_resource_selects_by_metadata_only(
    namespaced: bool, selector: str, message: str
) -> None:
    """apiextensions-apiserver's crConverter, in its words."""
    sel = parse_field_selector("metadata.name=a")
    convert = partial(convert_field_selector, custom=True, namespaced=namespaced)
    assert convert("stable.example.com", "CronTab", sel) == sel
    with pytest.raises(StatusError) as err:
        convert("stable.example.com", "CronTab", parse_field_selector(selector))
    assert err.value.code == 400
    assert err.value.message == message
