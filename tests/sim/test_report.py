"""The report of a small run (tests/sim/scenario.py): report.json's figures worked out by hand,
the CSV tables, and the same report from a second run with the same seed."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.sim.scenario import GI, MI, Run, run

from pinnace.dashboard import charts
from pinnace.sim.html import dashboard_charts
from pinnace.sim.report import FILES, Report

SHA = "ab" * 32


def report_of(done: Run) -> Report:
    return Report.from_run(
        done.observer,
        scenario="small",
        seed=1,
        simulated_seconds=120.0,
        wall_seconds=0.5,
        event_log_sha256=SHA,
    )


@pytest.fixture(scope="module")
def done() -> Iterator[Run]:
    finished = run()
    yield finished
    finished.cluster.close()


@pytest.fixture(scope="module")
def report(done: Run) -> Report:
    return report_of(done)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_run_and_its_pods(report: Report) -> None:
    s = json.loads(report.to_json())
    assert list(s)[:7] == [
        "reportVersion",
        "scenario",
        "seed",
        "simulatedSeconds",
        "wallSeconds",
        "speedup",
        "eventLogSha256",
    ]
    assert (s["reportVersion"], s["scenario"], s["seed"], s["speedup"]) == (1, "small", 1, 240.0)
    assert s["eventLogSha256"] == SHA
    assert s["samples"] == 13  # at 0, 10, ..., 120 s
    assert s["nodes"] == {
        "atEnd": 3,
        "ready": 3,
        "notReady": 0,
        "pools": {"big": 1, "general": 2},
    }
    # three web pods and the replacement of the one evicted, too-big and the hog
    assert s["pods"] == {
        "created": 6,
        "scheduled": 5,
        "unschedulable": 1,
        "pendingAtEnd": 1,
        "running": 5,
        "succeeded": 0,
        "failed": 1,  # the evicted web pod ends Failed as its containers are killed
        "deleted": 1,
    }
    assert s["failedScheduling"] == {
        "events": 2,
        "reasons": {
            "Insufficient cpu": 2,
            "node(s) had untolerated taint {dedicated: maintenance}": 1,
        },
    }
    assert s["preemptions"] == 0
    assert s["evictions"] == {"total": 1, "byReason": {"DeletionByTaintManager": 1}}
    assert (s["oomKills"], s["restarts"]) == (5, 4)
    # simulated pods are bound and started at the instant they are created
    assert s["schedulingLatencySeconds"] == {"count": 5, "p50": 0, "p90": 0, "p99": 0, "max": 0}
    assert s["timeToRunningSeconds"]["count"] == 5


def test_utilisation_over_the_samples(report: Report) -> None:
    u = report.summary["utilisation"]
    # 13 samples: nothing at 0 s, then 5 of 12 CPUs requested and 3 used
    cpu = u["cluster"]["cpu"]
    assert cpu["requested"] == pytest.approx({"mean": 5 / 13, "p95": 5 / 12, "max": 5 / 12})
    assert cpu["used"] == pytest.approx({"mean": 3 / 13, "p95": 3 / 12, "max": 3 / 12})
    assert u["cluster"]["pods"]["used"] is None  # the metrics API measures cpu and memory only
    # the big node: 2 of 4 CPUs (a web pod and the hog) from 10 to 60 s, the hog's 500m after
    big = u["pools"]["big"]["cpu"]["requested"]
    assert big == pytest.approx({"mean": (6 * 0.5 + 6 * 0.125) / 13, "p95": 0.5, "max": 0.5})
    assert list(u["pools"]) == ["big", "general"]


def test_fragmentation_at_the_end_per_node(report: Report) -> None:
    f = report.summary["fragmentation"]
    assert [s["name"] for s in f["shapes"]] == [
        "Pod default/too-big",
        "Pod default/hog",
        "Deployment default/web",
    ]
    assert f["shapes"][2]["requests"] == {"cpu": 1.5, "memory": GI, "pods": 1}
    end = f["atEnd"]
    assert end["strandedShare"]["Deployment default/web"]["cpu"] == pytest.approx(2500 / 7000)
    assert end["largestFree"]["cpu"] == 3.5
    assert end["largestMultiple"] == {
        "Pod default/too-big": 0,
        "Pod default/hog": 7,
        "Deployment default/web": 2,
    }
    big = end["nodes"][0]
    assert (big["name"], big["pool"], big["usable"]) == ("big-3", "big", True)
    assert big["free"] == {"cpu": 3.5, "memory": 16 * GI - 100 * MI - 64 * MI, "pods": 109}
    assert big["fits"]["Pod default/hog"] == 7
    too_big = f["overTime"]["strandedShare"]["Pod default/too-big"]["cpu"]
    assert too_big == {"mean": 1.0, "p95": 1.0, "max": 1.0}


def test_the_files(report: Report, tmp_path: Path) -> None:
    paths = report.write(tmp_path / "out")
    assert [p.name for p in paths] == list(FILES)
    assert json.loads(paths[0].read_text()) == json.loads(report.to_json())
    series = rows(tmp_path / "out" / "timeseries.csv")
    assert [float(r["time"]) for r in series] == [10.0 * i for i in range(13)]
    end = series[-1]
    assert (end["cluster.cpu.requested"], end["pool:general.cpu.used"]) == ("5", "3")
    assert end["pods.Pending"] == "1"
    assert [r["failedScheduling.Insufficient cpu"] for r in series].count("1") == 2
    assert end["stranded.Deployment default/web.cpu"] == str(2500 / 7000)
    pods = {r["name"]: r for r in rows(tmp_path / "out" / "pods.csv")}
    assert pods["hog"]["oomKills"] == "5"
    assert pods["hog"]["requests.cpu"] == "0.5"
    assert pods["too-big"]["scheduled"] == ""
    nodes = rows(tmp_path / "out" / "nodes.csv")
    assert [n["name"] for n in nodes] == ["big-3", "general-1", "general-2"]
    assert "pods.used" not in nodes[0]
    assert nodes[0]["fits.Pod default/hog"] == "7"
    kinds: dict[str, Any] = {}
    for r in rows(tmp_path / "out" / "incidents.csv"):
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    assert kinds == {"OOMKilled": 5, "DeletionByTaintManager": 1}


def test_the_same_seed_gives_the_same_report(report: Report, tmp_path: Path) -> None:
    again = run()
    try:
        second = report_of(again)
    finally:
        again.cluster.close()
    assert second.to_json() == report.to_json()
    first_files, second_files = report.write(tmp_path / "1"), second.write(tmp_path / "2")
    for a, b in zip(first_files, second_files, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_the_dashboards_charts_over_time_drawn_from_the_samples(report: Report) -> None:
    drawn = dict(dashboard_charts(report))
    live = charts.over_time({}, {}, 10, {})  # what the dashboard's page draws
    assert list(drawn) == list(live)
    for chart_id, figure in drawn.items():
        assert figure.layout.title.text == live[chart_id]["layout"]["title"]["text"], chart_id
    churn = {t.name: sum(t.y) for t in drawn["history-churn"].data}
    # the 5 pods bound, the web pod the taint manager evicted, the hog's 5 OOM kills
    assert churn == {"pods scheduled per 10 s": 5, "evictions per 10 s": 1,
                     "OOM kills per 10 s": 5}  # fmt: skip
    utilisation = {t.name: t.y[-1] for t in drawn["history-utilisation"].data}
    assert utilisation["cpu requested"] == pytest.approx(100 * 5 / 12)
    assert utilisation["cpu used"] == pytest.approx(100 * 3 / 12)
    pods = {t.name: list(t.y) for t in drawn["history-pods"].data}
    assert pods == {"running": list(report.timeseries.column("pods.Running")),
                    "pending": list(report.timeseries.column("pods.Pending"))}  # fmt: skip
    assert drawn["history-fragmentation"].data  # a trace per shape and resource stranded
