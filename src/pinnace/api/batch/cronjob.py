"""CronJob (batch/v1): defaulting, the registry strategy and validation as Kubernetes v1.32
(pkg/apis/batch/v1/defaults.go, pkg/registry/batch/cronjob/strategy.go,
pkg/apis/batch/validation).

The schedule is checked by the same parser the controller uses (`pinnace.api.batch.cron`), so a
bad one is refused in robfig/cron's words, as kube-apiserver does. The job template gets the
pod template's defaults only: the Job defaults (completions, backoffLimit …) come when the
controller creates each Job.
"""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    SPEC,
    Object,
    bump_generation,
    default_template,
    ensure_spec,
    go_label_selector,
    reset_for_create,
    set_default,
    spec_changed,
    validate_nonnegative_fields,
)
from pinnace.api.batch.cron import CronError, load_location, parse_standard
from pinnace.api.batch.job import job_spec_warnings, validate_job_spec
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_subdomain
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import object_field

ALLOW = "Allow"
FORBID = "Forbid"
REPLACE = "Replace"
CONCURRENCY_POLICIES = (ALLOW, FORBID, REPLACE)
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT = 1
MAX_NAME_LENGTH = 52
"""63 (a Job name's limit as a DNS label) less the 11 characters of `-<minutes>`."""
# CronJobStatus{} as batch/v1 serializes it: every field is omitempty.
EMPTY_STATUS: Object = {}
_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def default_cron_job(cron_job: Any) -> None:
    spec = ensure_spec(cron_job)
    if spec is None:
        return
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = ALLOW
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT)
    set_default(spec, "failedJobsHistoryLimit", DEFAULT_FAILED_JOBS_HISTORY_LIMIT)
    set_default(spec, "jobTemplate", {})
    job_template = child_dict(spec, "jobTemplate")
    if job_template is None:
        return
    set_default(job_template, "spec", {})
    job_spec = child_dict(job_template, "spec")
    if job_spec is not None:
        default_template(job_spec)


def prepare_cron_job_for_create(cron_job: Object) -> None:
    reset_for_create(cron_job, EMPTY_STATUS)


def prepare_cron_job_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


# --- validation -------------------------------------------------------------------------------


def _validate_schedule(spec: Object, old_spec: Object | None) -> list[FieldError]:
    """validateScheduleFormat: a schedule robfig/cron parses, with its time zone in
    spec.timeZone rather than a TZ= prefix (unless the stored object already had one)."""
    path = SPEC.child("schedule")
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule:
        return [field.required(path)]
    errs: list[FieldError] = []
    try:
        parse_standard(schedule)
    except CronError as e:
        errs.append(field.invalid(path, schedule, str(e)))
    allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
    if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
        detail = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
        errs.append(field.invalid(path, schedule, detail))
    elif not allow_tz and "TZ" in schedule:
        detail = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        errs.append(field.invalid(path, schedule, detail))
    return errs


def _validate_time_zone(value: Any) -> list[FieldError]:
    """validateTimeZone: absent, or an IANA name Go's time package can load."""
    path = SPEC.child("timeZone")
    if value is None:
        return []
    zone = str(value)
    if not zone:
        return [field.invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            return [field.invalid(path, zone, f"unknown time zone {zone}")]
    errs: list[FieldError] = []
    if zone.lower() == "local":
        detail = (
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        )
        errs.append(field.invalid(path, zone, detail))
    try:
        load_location(zone)
    except CronError as e:
        errs.append(field.invalid(path, zone, str(e)))
    return errs


def _validate_concurrency_policy(spec: Object) -> list[FieldError]:
    path = SPEC.child("concurrencyPolicy")
    policy = spec.get("concurrencyPolicy") or ""
    if policy in CONCURRENCY_POLICIES:
        return []
    if policy == "":
        return [field.required(path)]
    return [field.not_supported(path, policy, CONCURRENCY_POLICIES)]


def _validate_job_template(spec: Object) -> list[FieldError]:
    """ValidateJobTemplateSpec: a valid Job spec whose selector the server will generate."""
    path = SPEC.child("jobTemplate")
    template, errs = object_field(spec.get("jobTemplate"), path)
    job_spec, e = object_field(template.get("spec"), path.child("spec"))
    errs += e + validate_job_spec(job_spec, path.child("spec"))
    if job_spec.get("selector") is not None:
        shown = go_label_selector(job_spec["selector"])
        selector_path = path.child("spec", "selector")
        errs.append(field.invalid(selector_path, shown, "`selector` will be auto-generated"))
    if job_spec.get("manualSelector") is True:
        errs.append(
            field.not_supported(path.child("spec", "manualSelector"), True, ["nil", "false"])
        )
    return errs


def _validate_spec(cron_job: Object, old: Object | None) -> list[FieldError]:
    """validateCronJobSpec."""
    spec, errs = object_field(cron_job.get("spec"), SPEC)
    old_spec = as_dict(old.get("spec")) if old is not None else None
    errs += _validate_schedule(spec, old_spec)
    errs += validate_nonnegative_fields(spec, SPEC, ("startingDeadlineSeconds",))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _validate_time_zone(spec.get("timeZone"))
    errs += _validate_concurrency_policy(spec)
    errs += _validate_job_template(spec)
    return errs + validate_nonnegative_fields(
        spec, SPEC, ("successfulJobsHistoryLimit", "failedJobsHistoryLimit")
    )


def validate_cron_job(cron_job: Any) -> list[FieldError]:
    """ValidateCronJobCreate: names as a ReplicationController's, at most 52 characters."""
    errs = validate_object_meta(cron_job, namespaced=True, name_rule=is_dns1123_subdomain)
    if not isinstance(cron_job, dict):
        return errs
    errs += _validate_spec(cron_job, None)
    name = as_dict(cron_job.get("metadata")).get("name")
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        detail = f"must be no more than {MAX_NAME_LENGTH} characters"
        errs.append(field.invalid(Path("metadata", "name"), name, detail))
    return errs


def validate_cron_job_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateCronJobUpdate: the name's length is not checked again."""
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + _validate_spec(new, old)


CRON_JOB = Kind(
    group="batch",
    version="v1",
    kind="CronJob",
    plural="cronjobs",
    namespaced=True,
    model="V1CronJob",
    short_names=("cj",),
    categories=("all",),
    subresources=("status",),
    default=default_cron_job,
    prepare_for_create=prepare_cron_job_for_create,
    prepare_for_update=prepare_cron_job_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_cron_job,
    validate_update=validate_cron_job_update,
    drop_disabled=template_dropper("spec", "jobTemplate", "spec", "template"),
    **template_warnings(
        "spec",
        "jobTemplate",
        "spec",
        "template",
        name=True,
        spec=lambda cron_job: job_spec_warnings(cron_job, "spec", "jobTemplate", "spec"),
    ),
)
