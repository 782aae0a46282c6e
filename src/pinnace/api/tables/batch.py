"""batch/v1: jobs, with STATUS from their conditions, COMPLETIONS and DURATION; cron jobs,
with their schedule, time zone, suspension, active jobs and last schedule."""

from __future__ import annotations

from pinnace.api.tables.age import human_duration, since, timestamp
from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    containers_columns,
    doc,
    integer,
    items,
    meta,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import container_cells, format_label_selector


def _condition(job: Object, kind: str) -> bool:
    """The first condition of that type is True (hasJobCondition)."""
    for condition in items(job, "status", "conditions"):
        if condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def job_status(job: Object) -> str:
    if _condition(job, "Complete"):
        return "Complete"
    if _condition(job, "Failed"):
        return "Failed"
    if meta(job).get("deletionTimestamp"):
        return "Terminating"
    if _condition(job, "Suspended"):
        return "Suspended"
    if _condition(job, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def completions(job: Object) -> str:
    spec, succeeded = section(job, "spec"), integer(section(job, "status").get("succeeded"))
    if spec.get("completions") is not None:
        return f"{succeeded}/{integer(spec['completions'])}"
    parallelism = integer(spec.get("parallelism"))
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def duration(job: Object, now: float) -> str:
    status = section(job, "status")
    started = timestamp(status.get("startTime"))
    if started is None:
        return ""
    finished = timestamp(status.get("completionTime"))
    return human_duration((now if finished is None else finished) - started)


def _row(job: Object, now: float) -> Row:
    names, images = container_cells(section(job, "spec", "template", "spec"))
    return Row(
        [
            name_of(job),
            job_status(job),
            completions(job),
            duration(job, now),
            age_of(job, now),
            names,
            images,
            format_label_selector(section(job, "spec").get("selector")),
        ]
    )


JOBS = Printer(
    (
        name_column(),
        Column("Status", "string", "Status of the job."),
        Column("Completions", "string", doc("V1JobStatus", "succeeded")),
        Column("Duration", "string", "Time required to complete the job."),
        age_column(),
        *containers_columns(doc("V1JobSpec", "selector")),
    ),
    _row,
)


def _bool_pointer(value: object) -> str:
    """printBoolPtr: True, False, or <unset>."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _cron_job_row(cron_job: Object, now: float) -> Row:
    spec, status = section(cron_job, "spec"), section(cron_job, "status")
    job_spec = section(cron_job, "spec", "jobTemplate", "spec")
    names, images = container_cells(section(job_spec, "template", "spec"))
    last = status.get("lastScheduleTime")
    time_zone = spec.get("timeZone")
    return Row(
        [
            name_of(cron_job),
            str(spec.get("schedule") or ""),
            "<none>" if time_zone is None else str(time_zone),
            _bool_pointer(spec.get("suspend")),
            len(items(cron_job, "status", "active")),
            "<none>" if last is None else since(last, now),
            age_of(cron_job, now),
            names,
            images,
            format_label_selector(job_spec.get("selector")),
        ]
    )


CRON_JOBS = Printer(
    (
        name_column(),
        Column("Schedule", "string", doc("V1CronJobSpec", "schedule")),
        Column("Timezone", "string", doc("V1CronJobSpec", "timeZone")),
        Column("Suspend", "boolean", doc("V1CronJobSpec", "suspend")),
        Column("Active", "integer", doc("V1CronJobStatus", "active")),
        Column("Last Schedule", "string", doc("V1CronJobStatus", "lastScheduleTime")),
        age_column(),
        *containers_columns(doc("V1JobSpec", "selector")),
    ),
    _cron_job_row,
)
