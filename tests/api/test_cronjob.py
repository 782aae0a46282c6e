"""CronJob (batch/v1) defaulting and validation vectors, worded as kube-apiserver v1.32's
pkg/apis/batch/validation (the schedule's errors are robfig/cron v3's)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.batch.cronjob import CRON_JOB


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def cron_job(schedule: str = "*/1 * * * *", **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "hello", "image": "busybox:1.28"}],
                            "restartPolicy": "OnFailure",
                        }
                    }
                }
            },
            **spec,
        },
    }
    CRON_JOB.default(obj)
    return obj


def test_served_as_cj_in_all() -> None:
    assert catalog.resolve("cj") is CRON_JOB
    assert catalog.by_kind("batch/v1", "CronJob") is CRON_JOB


def test_defaults() -> None:
    spec = cron_job()["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    job_spec = spec["jobTemplate"]["spec"]
    assert "completions" not in job_spec and "backoffLimit" not in job_spec
    assert job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


@pytest.mark.parametrize(
    "schedule", ["*/1 * * * *", "@hourly", "@every 1h30m", "0 9 * * MON-FRI", "0 0 1 jan ?"]
)
def test_valid_schedules(schedule: str) -> None:
    assert CRON_JOB.validate(cron_job(schedule)) == []


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("bad", "expected exactly 5 fields, found 1: [bad]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        (
            "x * * * *",
            'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax',
        ),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
    ],
)
def test_bad_schedules_get_robfig_crons_words(schedule: str, error: str) -> None:
    assert messages(CRON_JOB.validate(cron_job(schedule))) == [
        f'spec.schedule: Invalid value: "{schedule}": {error}'
    ]


def test_time_zone_belongs_in_its_field() -> None:
    assert messages(CRON_JOB.validate(cron_job("CRON_TZ=UTC 0 * * * *"))) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"
    ]
    assert CRON_JOB.validate(cron_job(timeZone="Europe/Paris")) == []
    assert messages(CRON_JOB.validate(cron_job(timeZone="Europe/Pariss"))) == [
        'spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss'
    ]
    assert messages(CRON_JOB.validate(cron_job(timeZone="Local"))) == [
        'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as '
        "defined in https://www.iana.org/time-zones"
    ]
    assert messages(CRON_JOB.validate(cron_job(timeZone=""))) == [
        'spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string'
    ]


def test_spec_errors() -> None:
    obj = cron_job(
        concurrencyPolicy="Sometimes", startingDeadlineSeconds=-1, successfulJobsHistoryLimit=-1
    )
    obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    obj["spec"]["jobTemplate"]["spec"]["selector"] = {"matchLabels": {"a": "b"}}
    assert messages(CRON_JOB.validate(obj)) == [
        "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"',
        "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "
        '"OnFailure", "Never"',
        "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:"
        'map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "`selector` will be auto-generated",
        "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_name_at_most_52_characters_on_create_only() -> None:
    obj = cron_job()
    obj["metadata"]["name"] = "x" * 53
    assert messages(CRON_JOB.validate(obj)) == [
        f'metadata.name: Invalid value: "{"x" * 53}": must be no more than 52 characters'
    ]
    obj["metadata"]["resourceVersion"] = "1"
    assert CRON_JOB.validate_update(copy.deepcopy(obj), obj) == []


def test_update_bumps_generation_only_on_spec_changes() -> None:
    old = cron_job()
    CRON_JOB.prepare_for_create(old)
    new = copy.deepcopy(old)
    new["status"] = {"active": [{"name": "x"}]}
    CRON_JOB.prepare_for_update(new, old)
    assert new["metadata"]["generation"] == 1 and new["status"] == {}
    new["spec"]["suspend"] = True
    CRON_JOB.prepare_for_update(new, old)
    assert new["metadata"]["generation"] == 2
