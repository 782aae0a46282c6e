"""The CronJob controller on the virtual clock: Jobs at each scheduled time, named for it, in
the CronJob's time zone; concurrencyPolicy Allow, Forbid and Replace over simulated hours and a
simulated day; suspension; missed start times; history limits; active, lastScheduleTime and
lastSuccessfulTime."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import Workloads

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import not_found
from pinnace.client import LocalClient
from pinnace.clock import parse_time
from pinnace.controllers.cronjob import CRON_JOBS, JOBS
from pinnace.controllers.workloads import WorkloadControllers

MIDNIGHT = parse_time("2025-01-01T00:00:00Z")
"""Where the test cluster's clock starts."""
MINUTE, HOUR = 60, 3600


def cron_job(schedule: str, run_seconds: int = 10, **spec: Any) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "hello"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"app": "hello"}},
                "spec": {
                    "template": {
                        "metadata": {
                            "annotations": {"sim.pinnace.dev/run-seconds": str(run_seconds)}
                        },
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "hello", "image": "busybox:1.28"}],
                        },
                    }
                },
            },
            **spec,
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=1, simulated=True)
    yield c
    c.close()


class JobLog:
    """Every Job created and deleted, with the virtual time, and the most Jobs active at once."""

    def __init__(self, cluster: Workloads) -> None:
        self.cluster = cluster
        self.created: list[tuple[str, float]] = []
        self.deleted: list[str] = []
        self.most_active = 0
        self._tasks = [
            cluster.loop.create_task(self._follow_cron_job()),
            cluster.loop.create_task(self._follow_jobs()),
        ]
        cluster.run(asyncio.sleep(0))

    async def _follow_cron_job(self) -> None:
        async for event in self.cluster.client.watch(CRON_JOBS, "default"):
            active = len((event["object"].get("status") or {}).get("active") or ())
            self.most_active = max(self.most_active, active)

    async def _follow_jobs(self) -> None:
        async for event in self.cluster.client.watch(JOBS, "default"):
            name = event["object"]["metadata"]["name"]
            if event["type"] == "ADDED":
                self.created.append((name, self.cluster.clock.now()))
            elif event["type"] == "DELETED":
                self.deleted.append(name)

    def names(self) -> list[str]:
        return [name for name, _ in self.created]

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()


def create(cluster: Workloads, body: Object) -> None:
    cluster.run(cluster.client.create(CRON_JOBS, "default", body))


def jobs(cluster: Workloads) -> dict[str, Object]:
    items = cluster.run(cluster.client.list(JOBS, "default"))["items"]
    return {j["metadata"]["name"]: j for j in items}


def status(cluster: Workloads) -> Object:
    return cluster.get(CRON_JOBS, "hello").get("status") or {}


def name_at(t: float) -> str:
    return f"hello-{int(t) // 60}"


def parse_time_of(job_name: str) -> float:
    return int(job_name.rpartition("-")[2]) * 60


def at(text: str) -> float:
    return parse_time(f"2025-01-01T{text}Z")


def test_a_day_of_an_hourly_cron_job_runs_in_a_moment(cluster: Workloads):
    log = JobLog(cluster)
    create(cluster, cron_job("@hourly"))
    cluster.wait(24 * HOUR - MINUTE)
    log.stop()
    assert log.names() == [name_at(MIDNIGHT + h * HOUR) for h in range(1, 24)]
    # Each at its time (a tenth of a second late: the controller's margin for clock skew).
    assert all(t - parse_time_of(name) < 1 for name, t in log.created)
    # The three most recent successful Jobs are kept, the older ones deleted.
    assert sorted(jobs(cluster)) == [name_at(at(f"{h}:00:00")) for h in (21, 22, 23)]
    assert log.deleted == log.names()[:20]
    s = status(cluster)
    assert s["lastScheduleTime"] == "2025-01-01T23:00:00Z"
    # The last Job's pod ran its 10 s once started.
    assert at("23:00:10") <= parse_time(s["lastSuccessfulTime"]) <= at("23:00:15")
    assert "active" not in s
    assert log.most_active == 1
    job = jobs(cluster)[name_at(at("23:00:00"))]
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == (
        "2025-01-01T23:00:00Z"
    )
    assert job["metadata"]["labels"]["app"] == "hello"
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "hello", True)


def test_allow_lets_runs_overlap(cluster: Workloads):
    log = JobLog(cluster)
    create(cluster, cron_job("*/1 * * * *", run_seconds=150))
    cluster.wait(at("00:10:15") - cluster.clock.now())
    log.stop()
    assert log.names() == [name_at(MIDNIGHT + m * MINUTE) for m in range(1, 11)]
    assert log.most_active == 3
    assert [a["name"] for a in status(cluster)["active"]] == [
        name_at(at("00:08:00")),
        name_at(at("00:09:00")),
        name_at(at("00:10:00")),
    ]


def test_forbid_skips_start_times_while_a_job_runs(cluster: Workloads):
    log = JobLog(cluster)
    create(cluster, cron_job("*/1 * * * *", run_seconds=150, concurrencyPolicy="Forbid"))
    cluster.wait(at("00:10:15") - cluster.clock.now())
    log.stop()
    assert log.most_active == 1
    assert cluster.events("JobAlreadyActive")
    # Each run takes 2.5 minutes: the start time that was skipped last is run once the running
    # Job finishes, as v1.32 does.
    assert log.names() == [name_at(at(f"00:0{m}:00")) for m in (1, 3, 6, 8)]
    # The 00:03 start waited for the first run (00:01 to about 00:03:31) to finish.
    assert at("00:03:30") < log.created[1][1] < at("00:04:00")


def test_replace_deletes_the_running_job(cluster: Workloads):
    log = JobLog(cluster)
    create(cluster, cron_job("*/1 * * * *", run_seconds=150, concurrencyPolicy="Replace"))
    cluster.wait(5 * MINUTE + 30)
    log.stop()
    assert log.most_active == 1
    assert log.deleted == [name_at(at(f"00:0{m}:00")) for m in range(1, 5)]
    assert sorted(jobs(cluster)) == [name_at(at("00:05:00"))]
    assert [a["name"] for a in status(cluster)["active"]] == [name_at(at("00:05:00"))]


def test_a_suspended_cron_job_starts_nothing_and_too_many_missed_times_are_reported(
    cluster: Workloads,
):
    create(cluster, cron_job("*/1 * * * *", suspend=True))
    cluster.wait(2 * HOUR)
    assert jobs(cluster) == {}
    patch = {"spec": {"suspend": False}}
    cluster.run(cluster.client.patch(CRON_JOBS, "default", "hello", patch))
    cluster.wait(1)
    assert cluster.events("TooManyMissedTimes") == [
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check "
        "clock skew"
    ]
    # Only the latest missed start time is run.
    assert sorted(jobs(cluster)) == [name_at(at("02:00:00"))]


def test_failed_jobs_beyond_their_limit_go(cluster: Workloads):
    body = cron_job("*/1 * * * *")
    template = body["spec"]["jobTemplate"]["spec"]
    template["backoffLimit"] = 0
    template["template"]["spec"]["restartPolicy"] = "Never"
    template["template"]["metadata"]["annotations"]["sim.pinnace.dev/exit-code"] = "1"
    create(cluster, body)
    cluster.wait(5 * MINUTE + 30)
    assert sorted(jobs(cluster)) == [name_at(at("00:05:00"))]
    assert "lastSuccessfulTime" not in status(cluster)


def test_the_schedule_runs_in_the_time_zone(cluster: Workloads):
    create(cluster, cron_job("5 1 * * *", timeZone="Europe/Paris"))
    cluster.wait(10 * MINUTE)
    [job] = jobs(cluster).values()
    assert job["metadata"]["name"] == name_at(at("00:05:00"))  # 01:05 in Paris
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == (
        "2025-01-01T01:05:00+01:00"
    )


def test_a_start_time_older_than_the_deadline_is_not_caught_up(cluster: Workloads):
    log = JobLog(cluster)
    body = cron_job(
        "*/1 * * * *", run_seconds=150, concurrencyPolicy="Forbid", startingDeadlineSeconds=10
    )
    create(cluster, body)
    cluster.wait(at("00:10:15") - cluster.clock.now())
    log.stop()
    # The 00:03 start, held back while the first run went on until about 00:03:31, is past its
    # 10 s deadline by then: the next Job is 00:04's, on time.
    assert log.names() == [name_at(at(f"00:{m:02}:00")) for m in (1, 4, 7, 10)]
    assert all(t - parse_time_of(name) < 1 for name, t in log.created)


def test_a_new_schedule_is_looked_at_when_it_comes_due(cluster: Workloads):
    log = JobLog(cluster)
    create(cluster, cron_job("0 * * * *"))
    cluster.wait(at("00:10:00") - cluster.clock.now())
    patch = {"spec": {"schedule": "5 * * * *"}}
    cluster.run(cluster.client.patch(CRON_JOBS, "default", "hello", patch))
    cluster.wait(at("01:06:00") - cluster.clock.now())
    log.stop()
    # Nothing at 00:10, when the schedule changed: the sync the old schedule had asked for at
    # 01:00 finds 00:05 missed and runs it late, as v1.32 does; then 01:05's comes on time.
    assert [(name, round(t)) for name, t in log.created] == [
        (name_at(at("00:05:00")), at("01:00:00")),
        (name_at(at("01:05:00")), at("01:05:00")),
    ]


class JobsGone(LocalClient):
    """A client whose every GET of a Job finds none, as a controller's does for a Job deleted
    just after its informer listed it."""

    async def get(self, kind: Kind, namespace: str, name: str) -> Object:
        if kind == JOBS:
            raise not_found(kind.plural, name, kind.group)
        return await super().get(kind, namespace, name)


def test_replace_reports_an_active_job_it_cannot_get(cluster: Workloads):
    create(cluster, cron_job("*/1 * * * *", run_seconds=600, concurrencyPolicy="Replace"))
    cluster.wait(at("00:01:30") - cluster.clock.now())
    [first] = jobs(cluster)
    cluster.run(cluster.controllers.stop())
    cluster.controllers = WorkloadControllers(JobsGone(cluster.server))
    cluster.run(cluster.controllers.start())
    cluster.wait(at("00:02:30") - cluster.clock.now())
    assert cluster.events("FailedGet") == [f'Get job: jobs.batch "{first}" not found']
    assert list(jobs(cluster)) == [first]  # neither replaced nor dropped from the status
    assert [a["name"] for a in status(cluster)["active"]] == [first]
