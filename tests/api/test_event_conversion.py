"""events.k8s.io/v1 <-> core/v1 Event conversion (pkg/apis/events/v1/conversion.go): a stored
Event read at events.k8s.io/v1 has its fields renamed, in the v1 struct's order."""

from __future__ import annotations

from pinnace.api.events import from_core, to_core

STORED = {
    "kind": "Event",
    "apiVersion": "v1",
    "metadata": {"name": "web.1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
    "reason": "Preempted",
    "message": "by a pod of higher priority",
    "source": {},
    "firstTimestamp": None,
    "lastTimestamp": None,
    "type": "Normal",
    "eventTime": "2026-01-02T03:04:05.000000Z",
    "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:06.000000Z"},
    "action": "Preempting",
    "related": {"kind": "Pod", "namespace": "default", "name": "important"},
    "reportingComponent": "default-scheduler",
    "reportingInstance": "default-scheduler-pinnace",
}


def test_a_stored_event_reads_in_the_v1_struct_s_order() -> None:
    assert list(from_core(STORED).items()) == [
        ("kind", "Event"),
        ("apiVersion", "events.k8s.io/v1"),
        ("metadata", STORED["metadata"]),
        ("eventTime", STORED["eventTime"]),
        ("series", STORED["series"]),
        ("reportingController", "default-scheduler"),
        ("reportingInstance", "default-scheduler-pinnace"),
        ("action", "Preempting"),
        ("reason", "Preempted"),
        ("regarding", STORED["involvedObject"]),
        ("related", STORED["related"]),
        ("note", "by a pod of higher priority"),
        ("type", "Normal"),
        ("deprecatedSource", {}),
        ("deprecatedFirstTimestamp", None),
        ("deprecatedLastTimestamp", None),
    ]


def test_the_conversion_round_trips_an_event_s_fields() -> None:
    back = to_core(from_core(STORED))
    assert {k: v for k, v in back.items() if v not in ({}, None)} == {
        k: v for k, v in STORED.items() if v not in ({}, None)
    }
