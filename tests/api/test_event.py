"""Event (core/v1) validation: the legacy rules kube-apiserver v1.32 applies to v1 requests."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.event import EVENT


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def event(namespace: str, involved_ns: str | None, **parts: Any) -> dict[str, Any]:
    involved = {"kind": "Pod", "name": "p"}
    if involved_ns is not None:
        involved["namespace"] = involved_ns
    return {
        "metadata": {"name": "p.1", "namespace": namespace},
        "involvedObject": involved,
        "reason": "Scheduled",
        "type": "Normal",
        **parts,
    }


def test_old_style_event_namespace_must_match_the_object() -> None:
    assert EVENT.validate(event("team", "team")) == []
    assert messages(EVENT.validate(event("team", "other"))) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace'
    ]


def test_events_about_cluster_objects_live_in_default() -> None:
    assert EVENT.validate(event("default", None)) == []
    assert messages(EVENT.validate(event("team", None))) == [
        'involvedObject.namespace: Invalid value: "": does not match event.namespace'
    ]


def test_event_namespace_must_be_a_subdomain() -> None:
    errs = messages(EVENT.validate(event("", None)))
    assert len(errs) == 1
    assert errs[0].startswith('namespace: Invalid value: "": a lowercase RFC 1123 subdomain')


def test_type_is_free_form_for_v1_events() -> None:
    assert EVENT.validate(event("team", "team", type="Custom")) == []


def test_new_style_events_need_reporting_fields() -> None:
    new_style = event("team", "team", eventTime="2024-01-01T00:00:00.000000Z", reason="")
    assert messages(EVENT.validate(new_style)) == [
        "reportingController: Required value",
        'reportingController: Invalid value: "": name part must be non-empty',
        'reportingController: Invalid value: "": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
    ]
    complete = event(
        "kube-system",
        None,
        eventTime="2024-01-01T00:00:00.000000Z",
        reportingComponent="example.com/scheduler",
        reportingInstance="s-1",
        action="Binding",
        message="x" * 1025,
    )
    assert messages(EVENT.validate(complete)) == [
        'message: Invalid value: "": can have at most 1024 characters'
    ]


def test_new_style_limits_count_bytes_and_texts_must_be_strings() -> None:
    """The limits are on UTF-8 bytes, as Go's len() counts: 64 two-byte letters fit in 128,
    65 do not; a text of another type is a type error at its own field."""
    fields = {
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingComponent": "example.com/scheduler",
        "reportingInstance": "s-1",
        "action": "Binding",
    }
    assert EVENT.validate(event("team", "team", **fields, reason="é" * 64)) == []
    assert messages(EVENT.validate(event("team", "team", **fields, reason="é" * 65))) == [
        'reason: Invalid value: "": can have at most 128 characters'
    ]
    assert messages(EVENT.validate(event("team", "team", **fields, message="é" * 513))) == [
        'message: Invalid value: "": can have at most 1024 characters'
    ]
    errs = messages(EVENT.validate(event("team", "team", **{**fields, "action": 7})))
    assert errs == ["action: Invalid value: 7: must be of type string", "action: Required value"]
