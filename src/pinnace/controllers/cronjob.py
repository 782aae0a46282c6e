"""The CronJob controller, as kube-controller-manager's (v1.32) pkg/controller/cronjob
(cronjob_controllerv2.go, utils.go).

A sync looks at a CronJob's Jobs (those whose controller reference names it): finished ones
leave status.active (a successful one's completionTime becomes lastSuccessfulTime), Jobs gone
from the API leave it too, and finished Jobs beyond successfulJobsHistoryLimit and
failedJobsHistoryLimit are deleted, oldest first. Then, unless the CronJob is suspended or being
deleted, the schedule (robfig/cron's, in spec.timeZone or UTC) gives the most recent start time
that has passed since the last one (or since the CronJob was created); it is skipped if it is
older than startingDeadlineSeconds or already done, and under concurrencyPolicy Forbid while a
Job runs; under Replace the running Jobs are deleted first. The Job is named
`<cronjob>-<scheduled time in minutes since the epoch>`, so one start time never makes two.
Only the latest missed start is run: more than 100 missed ones also earn an event.

The sync asks to be woken again just after the next start time (100 ms later, as v1.32 does),
so on the virtual clock a day of a CronJob passes in a moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from pinnace.api import catalog
from pinnace.api.batch.cron import CronError, Schedule, load_location, parse_standard
from pinnace.api.batch.cronjob import FORBID, REPLACE
from pinnace.api.batch.job_status import condition_true, is_finished
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object, clone
from pinnace.api.options import BACKGROUND
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.clock.rfc3339 import format_time, parse_time
from pinnace.controllers.controller_utils import (
    WorkQueue,
    controller_ref,
    namespace_terminating,
    owner_reference,
    split_key,
)

CONTROLLER_NAME = "cronjob-controller"
CRON_JOBS = catalog.kind("batch", "cronjobs")
JOBS = catalog.kind("batch", "jobs")
SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1
"""Woken this long after a start time, against clock skew."""
MANY_MISSED = 100


# --- schedule arithmetic (utils.go) -----------------------------------------------------------


@dataclass(frozen=True)
class _MostRecent:
    earliest: float
    most_recent: float | None
    missed: bool
    """Some start time has come since `earliest`."""
    many_missed: bool


class ScheduleError(Exception):
    """A schedule that parses but cannot be followed (`0 0 31 2 *`)."""


class ReplaceError(Exception):
    """A running Job that concurrencyPolicy Replace must delete is still there."""


def format_schedule(cron_job: Object) -> str:
    """formatSchedule: the schedule with its time zone as a TZ= prefix."""
    spec = cron_job["spec"]
    schedule = spec.get("schedule") or ""
    zone = spec.get("timeZone")
    if "TZ" in schedule or zone is None:
        return schedule
    try:
        load_location(zone)
    except CronError:
        return schedule
    return f"TZ={zone} {schedule}"


def most_recent_schedule_time(
    cron_job: Object, now: float, schedule: Schedule, with_deadline: bool
) -> _MostRecent:
    """mostRecentScheduleTime: the last start time at or before `now` not yet run (None when
    there is none), counted from lastScheduleTime (or creation, or the starting deadline)."""
    status, spec = cron_job.get("status") or {}, cron_job["spec"]
    earliest = parse_time(cron_job["metadata"]["creationTimestamp"])
    if status.get("lastScheduleTime"):
        earliest = parse_time(status["lastScheduleTime"])
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - deadline)
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1) if t1 is not None else None
    if t1 is None or t2 is None:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    if now < t1:
        return _MostRecent(earliest, None, False, False)
    if now < t2:
        return _MostRecent(earliest, t1, True, False)
    between = round(t2 - t1)
    if between < 1:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    missed = int(now - t1) // between + 1
    most_recent: float | None = None
    t: float | None = schedule.next(t1 + (missed - 2) * between)
    while t is not None and t <= now:
        most_recent = t
        t = schedule.next(t)
    return _MostRecent(earliest, most_recent, True, missed > MANY_MISSED)


def next_schedule_delay(cron_job: Object, now: float, schedule: Schedule) -> float | None:
    """nextScheduleTimeDuration: seconds until just after the next start time."""
    try:
        found = most_recent_schedule_time(cron_job, now, schedule, False)
    except ScheduleError:
        base = now
    else:
        if found.most_recent is not None:
            base = found.most_recent
        else:
            base = now if found.missed else found.earliest
    following = schedule.next(base)
    return None if following is None else following + NEXT_SCHEDULE_DELTA - now


def job_name(cron_job: Object, scheduled: float) -> str:
    """getJobName: `<cronjob>-<scheduled time in minutes since the epoch>`."""
    return f"{cron_job['metadata']['name']}-{int(scheduled) // 60}"


def job_from_template(cron_job: Object, scheduled: float) -> Object:
    """getJobFromTemplate2: the Job for one start time, owned by the CronJob, with the
    template's labels and annotations and the scheduled time in the CronJob's time zone."""
    template = cron_job["spec"].get("jobTemplate") or {}
    meta = template.get("metadata") or {}
    zone = load_location(cron_job["spec"].get("timeZone") or "")
    annotations = dict(meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _rfc3339_in(scheduled, zone)
    metadata: Object = {
        "name": job_name(cron_job, scheduled),
        "namespace": cron_job["metadata"]["namespace"],
        "annotations": annotations,
        "ownerReferences": [owner_reference(cron_job, CRON_JOBS)],
    }
    if meta.get("labels"):
        metadata["labels"] = dict(meta["labels"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": clone(template.get("spec") or {}),
    }


def _rfc3339_in(t: float, zone: tzinfo) -> str:
    """Go's time.RFC3339 in `zone`: `Z` for a zero offset, `+01:00` otherwise."""
    moment = datetime.fromtimestamp(int(t), zone)
    text = moment.isoformat()
    return text[:-6] + "Z" if not moment.utcoffset() else text


def _rfc1123z(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _job_reference(job: Object) -> Object:
    meta = job["metadata"]
    return {
        "kind": "Job",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def finished_condition(job: Object) -> str:
    status = job.get("status") or {}
    return "Complete" if condition_true(status, "Complete") else "Failed"


# --- the controller ---------------------------------------------------------------------------


class CronJobController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock)
        self._cron_jobs: Informer = informers.informer(CRON_JOBS)
        self._jobs: Informer = informers.informer(JOBS)
        self._cron_jobs.add_event_handler(
            on_add=self._enqueue, on_update=self._cron_job_updated, on_delete=self._enqueue
        )
        self._jobs.add_event_handler(
            on_add=self._job_changed,
            on_update=self._job_updated,
            on_delete=self._job_changed,
        )

    async def run(self) -> None:
        """Sync cron jobs forever; cancel the task to stop."""
        await self._cron_jobs.wait_for_sync()
        await self._jobs.wait_for_sync()
        await self._queue.run(self.sync)

    # --- event handlers ----------------------------------------------------------------------

    def _enqueue(self, cron_job: Object) -> None:
        self._queue.add(object_key(cron_job))

    def _cron_job_updated(self, old: Object, new: Object) -> None:
        """updateCronJob: a new schedule or time zone is looked at when it next comes due;
        any other change at once."""
        old_spec, spec = old["spec"], new["spec"]
        if (old_spec.get("schedule"), old_spec.get("timeZone")) == (
            spec.get("schedule"),
            spec.get("timeZone"),
        ):
            self._enqueue(new)
            return
        try:
            schedule = parse_standard(format_schedule(new))
        except CronError:
            message = f"unparseable schedule for cronjob: {spec.get('schedule')}"
            self.event(new, EVENT_TYPE_WARNING, "UnParseableCronJobSchedule", message)
            return
        delay = next_schedule_delay(new, self.now(), schedule)
        if delay is not None:
            self._queue.add_after(object_key(new), delay)

    def _owner(self, job: Object, ref: Object | None) -> Object | None:
        if ref is None or ref.get("kind") != "CronJob":
            return None
        owner = self._cron_jobs.get(job["metadata"]["namespace"], ref.get("name", ""))
        if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
            return None
        return owner

    def _job_changed(self, job: Object) -> None:
        owner = self._owner(job, controller_ref(job))
        if owner is not None:
            self._enqueue(owner)

    def _job_updated(self, old: Object, new: Object) -> None:
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref:
            previous = self._owner(old, old_ref)
            if previous is not None:
                self._enqueue(previous)
        self._job_changed(new)

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cron_job = self._cron_jobs.get(*split_key(key))
        if cron_job is None:
            return
        name = cron_job["metadata"]["name"]
        jobs = [
            j
            for j in self._jobs.list(cron_job["metadata"]["namespace"])
            if (controller_ref(j) or {}).get("name") == name
        ]
        cron_job = clone(cron_job)
        cron_job.setdefault("status", {})
        cleaned = await self._cleanup_finished_jobs(cron_job, jobs)
        sync = _Sync(self, cron_job, jobs)
        delay: float | None = None
        error: Exception | None = None
        try:
            delay = await sync.run()
        except (StatusError, ReplaceError) as e:
            error = e
        if cleaned or sync.update_status:
            try:
                await self._client.update_status(CRON_JOBS, _without_empty(cron_job))
            except StatusError as e:
                if e.code != 404:
                    raise
        if delay is not None:
            self._queue.add_after(key, delay)
        elif error is not None:
            raise error

    async def _cleanup_finished_jobs(self, cron_job: Object, jobs: list[Object]) -> bool:
        """cleanupFinishedJobs: the oldest finished Jobs beyond the history limits go."""
        spec = cron_job["spec"]
        succeeded = [j for j in jobs if is_finished(j.get("status") or {})]
        failed = [j for j in succeeded if finished_condition(j) == "Failed"]
        succeeded = [j for j in succeeded if finished_condition(j) == "Complete"]
        changed = False
        for finished, limit in (
            (succeeded, spec.get("successfulJobsHistoryLimit")),
            (failed, spec.get("failedJobsHistoryLimit")),
        ):
            if limit is None or len(finished) <= limit:
                continue
            for job in sorted(finished, key=_start_order)[: len(finished) - limit]:
                changed |= await self.delete_job(cron_job, job)
        return changed

    async def delete_job(self, cron_job: Object, job: Object) -> bool:
        """deleteJob: delete it (its pods in the background) and drop it from the active
        list."""
        name = job["metadata"]["name"]
        try:
            await self._client.delete(JOBS, job["metadata"]["namespace"], name, BACKGROUND)
        except StatusError as e:
            self.event(cron_job, EVENT_TYPE_WARNING, "FailedDelete", f"Deleted job: {e}")
            return False
        _drop_active(cron_job, job["metadata"]["uid"])
        self.event(cron_job, EVENT_TYPE_NORMAL, "SuccessfulDelete", f"Deleted job {name}")
        return True

    def event(self, cron_job: Object, event_type: str, reason: str, message: str) -> None:
        self._recorder.event(cron_job, event_type, reason, message)

    def now(self) -> float:
        return self._clock.now()

    async def get_job(self, namespace: str, name: str) -> Object:
        return await self._client.get(JOBS, namespace, name)

    async def get_cron_job(self, namespace: str, name: str) -> Object:
        return await self._client.get(CRON_JOBS, namespace, name)

    async def create_job(self, namespace: str, job: Object) -> Object:
        return await self._client.create(JOBS, namespace, job)


class _Sync:
    """syncCronJob over one copy of a CronJob, whose status it edits in place."""

    def __init__(self, control: CronJobController, cron_job: Object, jobs: list[Object]) -> None:
        self.c = control
        self.cron_job = cron_job
        self.jobs = jobs
        self.status: Object = cron_job["status"]
        self.update_status = False

    def _event(self, event_type: str, reason: str, message: str) -> None:
        self.c.event(self.cron_job, event_type, reason, message)

    async def run(self) -> float | None:
        """Seconds until the next look, or None when there is no need to look again."""
        await self._reconcile_active()
        spec = self.cron_job["spec"]
        if self.cron_job["metadata"].get("deletionTimestamp"):
            return None
        zone = spec.get("timeZone")
        if zone is not None:
            try:
                load_location(zone)
            except CronError as e:
                self._event(
                    EVENT_TYPE_WARNING, "UnknownTimeZone", f'invalid timeZone: "{zone}": {e}'
                )
                return None
        if spec.get("suspend"):
            return None
        try:
            schedule = parse_standard(format_schedule(self.cron_job))
        except CronError as e:
            message = f'unparseable schedule: "{spec.get("schedule")}" : {e}'
            self._event(EVENT_TYPE_WARNING, "UnparseableSchedule", message)
            return None
        now = self.c.now()
        try:
            found = most_recent_schedule_time(self.cron_job, now, schedule, True)
        except ScheduleError as e:
            message = f"invalid schedule: {spec.get('schedule')} : {e}"
            self._event(EVENT_TYPE_WARNING, "InvalidSchedule", message)
            return None
        scheduled = found.most_recent
        if scheduled is None:
            return next_schedule_delay(self.cron_job, now, schedule)
        if found.many_missed:
            self._event(
                EVENT_TYPE_WARNING,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
        return await self._start(schedule, now, scheduled)

    async def _start(self, schedule: Schedule, now: float, scheduled: float) -> float | None:
        spec = self.cron_job["spec"]
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + deadline < now:
            message = f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}"
            self._event(EVENT_TYPE_WARNING, "MissSchedule", message)
            return next_schedule_delay(self.cron_job, now, schedule)
        name = job_name(self.cron_job, scheduled)
        last = self.status.get("lastScheduleTime")
        if any(a.get("name") == name for a in self.status.get("active") or ()) or (
            last is not None and parse_time(last) == scheduled
        ):
            return next_schedule_delay(self.cron_job, now, schedule)
        policy = spec.get("concurrencyPolicy")
        if policy == FORBID and self.status.get("active"):
            self._event(
                EVENT_TYPE_NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is "
                "Forbid",
            )
            return next_schedule_delay(self.cron_job, now, schedule)
        if policy == REPLACE:
            for ref in list(self.status.get("active") or ()):
                try:
                    job = await self.c.get_job(ref["namespace"], ref["name"])
                except StatusError as e:  # gone since the informer listed it, or not readable
                    self._event(EVENT_TYPE_WARNING, "FailedGet", f"Get job: {e}")
                    raise
                if not await self.c.delete_job(self.cron_job, job):
                    raise ReplaceError(f"could not replace job {ref['namespace']}/{ref['name']}")
                self.update_status = True
        namespace = self.cron_job["metadata"]["namespace"]
        try:
            created = await self.c.create_job(
                namespace, job_from_template(self.cron_job, scheduled)
            )
        except StatusError as e:
            if e.reason != "AlreadyExists" and not namespace_terminating(e):
                self._event(EVENT_TYPE_WARNING, "FailedCreate", f"Error creating job: {e}")
            raise
        self._event(
            EVENT_TYPE_NORMAL, "SuccessfulCreate", f"Created job {created['metadata']['name']}"
        )
        self.status["active"] = [*(self.status.get("active") or ()), _job_reference(created)]
        self.status["lastScheduleTime"] = format_time(scheduled)
        self.update_status = True
        return next_schedule_delay(self.cron_job, now, schedule)

    async def _reconcile_active(self) -> None:
        """The active list against the Jobs: finished ones leave it, unknown running ones are
        reported, a successful one's completion time is the last success, vanished ones go."""
        seen = set()
        for job in self.jobs:
            uid, name = job["metadata"]["uid"], job["metadata"]["name"]
            seen.add(uid)
            active = any(a.get("uid") == uid for a in self.status.get("active") or ())
            status = job.get("status") or {}
            if not active and not is_finished(status):
                if await self._listed_by_fresh_copy(uid):
                    continue
                message = f"Saw a job that the controller did not create or forgot: {name}"
                self._event(EVENT_TYPE_WARNING, "UnexpectedJob", message)
            elif active and is_finished(status):
                _drop_active(self.cron_job, uid)
                message = f"Saw completed job: {name}, condition: {finished_condition(job)}"
                self._event(EVENT_TYPE_NORMAL, "SawCompletedJob", message)
                self.update_status = True
            elif is_finished(status):
                completed = status.get("completionTime")
                last = self.status.get("lastSuccessfulTime")
                if completed and (last is None or parse_time(completed) > parse_time(last)):
                    self.status["lastSuccessfulTime"] = completed
                    self.update_status = True
        for ref in list(self.status.get("active") or ()):
            if ref.get("uid") in seen:
                continue
            try:
                await self.c.get_job(ref.get("namespace", ""), ref.get("name", ""))
            except StatusError as e:
                if e.code != 404:
                    raise
                self._event(
                    EVENT_TYPE_NORMAL, "MissingJob", f"Active job went missing: {ref.get('name')}"
                )
                _drop_active(self.cron_job, ref.get("uid", ""))
                self.update_status = True

    async def _listed_by_fresh_copy(self, uid: str) -> bool:
        """Whether the CronJob as the API has it now lists the Job as active (the informer's
        copy may not show this controller's last status write yet); if so, the sync goes on
        with that copy."""
        meta = self.cron_job["metadata"]
        fresh = await self.c.get_cron_job(meta["namespace"], meta["name"])
        active = (fresh.get("status") or {}).get("active") or ()
        if not any(a.get("uid") == uid for a in active):
            return False
        self.cron_job.clear()
        self.cron_job.update(clone(fresh))
        self.status = self.cron_job.setdefault("status", {})
        return True


def _drop_active(cron_job: Object, uid: str) -> None:
    status = cron_job.setdefault("status", {})
    status["active"] = [a for a in status.get("active") or () if a.get("uid") != uid]


def _without_empty(cron_job: Object) -> Object:
    """An empty active list is omitted, as batch/v1 serializes it."""
    status = cron_job.get("status") or {}
    if not status.get("active"):
        status.pop("active", None)
    return cron_job


def _start_order(job: Object) -> tuple[int, float, str]:
    """byJobStartTime: started Jobs first, by start time, then by name."""
    started = (job.get("status") or {}).get("startTime")
    return (0 if started else 1, parse_time(started) if started else 0.0, job["metadata"]["name"])
