"""`pinnace simulate` as a user runs it, a process of its own: the report it writes, --json,
--seed and --out, the same run twice, and the one-line errors of a bad scenario."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pinnace

SCENARIO = """\
apiVersion: sim.pinnace.dev/v1alpha1
kind: Scenario
metadata: {name: small}
spec:
  seed: 3
  until: 10m
  cluster:
    nodePools:
    - name: general
      count: 2
      capacity: {cpu: "4", memory: 8Gi}
  objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
          - {name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}}}
  timeline:
  - at: 2m
    cordon: {node: general-1}
  workloads:
  - name: job
    template:
      apiVersion: v1
      kind: Pod
      spec:
        restartPolicy: Never
        containers: [{name: work, image: busybox, resources: {requests: {cpu: 100m}}}]
    arrivals: {poisson: {ratePerMinute: 2}}
    runTime: {exponential: {mean: 1m}}
  metrics: {interval: 30s}
"""
REPORT_FILES = {
    "report.json",
    "report.html",
    "events.jsonl",
    "timeseries.csv",
    "pods.csv",
    "nodes.csv",
    "incidents.csv",
}
WALL_CLOCK_KEYS = {"wallSeconds", "speedup"}
"""What the real time a run took sets: the only difference between two runs of one seed."""


def simulate(cwd: Path, *args: str) -> subprocess.Popen[str]:
    source = str(Path(pinnace.__file__).parents[1])
    return subprocess.Popen(
        [sys.executable, "-m", "pinnace.cli.main", "simulate", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": source},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    return finish(simulate(cwd, *args))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int, str, str]]:
    """The scenario run four times at once: with --json and --out, again, with another
    --seed, and with none of those flags (the progress bar, the default directory)."""
    cwd = tmp_path_factory.mktemp("simulate")
    (cwd / "small.yaml").write_text(SCENARIO)
    flags = {
        "first": ("--json", "--out", "first"),
        "again": ("--json", "--out", "again"),
        "other": ("--json", "--out", "other", "--seed", "4"),
        "plain": (),
    }
    started = {name: simulate(cwd, "small.yaml", *more) for name, more in flags.items()}
    return {name: (cwd, *finish(process)) for name, process in started.items()}


def test_it_writes_the_report_and_prints_the_summary_as_json(
    runs: dict[str, tuple[Path, int, str, str]],
) -> None:
    cwd, code, out, err = runs["first"]
    assert code == 0, err
    assert "Traceback" not in err
    assert {p.name for p in (cwd / "first").iterdir()} == REPORT_FILES
    [line] = out.splitlines()
    summary = json.loads(line)
    assert summary == json.loads((cwd / "first" / "report.json").read_text())
    assert summary["reportVersion"] == 1
    assert (summary["scenario"], summary["seed"], summary["simulatedSeconds"]) == ("small", 3, 600)
    assert summary["pods"]["created"] > 3
    assert summary["nodes"] == {"atEnd": 2, "ready": 2, "notReady": 0, "pools": {"general": 2}}
    events = (cwd / "first" / "events.jsonl").read_bytes()
    assert summary["eventLogSha256"] == hashlib.sha256(events).hexdigest()


def test_the_same_seed_gives_the_same_run_and_another_seed_another(
    runs: dict[str, tuple[Path, int, str, str]],
) -> None:
    cwd = runs["first"][0]
    assert [runs[name][1] for name in ("first", "again", "other")] == [0, 0, 0]
    first, again, other = (cwd / name for name in ("first", "again", "other"))
    assert (first / "events.jsonl").read_bytes() == (again / "events.jsonl").read_bytes()
    reports = [json.loads((d / "report.json").read_text()) for d in (first, again, other)]
    for report in reports:
        assert report.keys() >= WALL_CLOCK_KEYS
        for key in WALL_CLOCK_KEYS:
            del report[key]
    assert reports[0] == reports[1]
    for table in REPORT_FILES - {"report.json", "report.html"}:
        assert (first / table).read_bytes() == (again / table).read_bytes(), table
    assert reports[2]["seed"] == 4
    assert reports[2]["eventLogSha256"] != reports[0]["eventLogSha256"]


def test_without_flags_a_progress_bar_then_the_summary_in_words(
    runs: dict[str, tuple[Path, int, str, str]],
) -> None:
    cwd, code, out, err = runs["plain"]
    assert code == 0, err
    assert "simulated" in err and "pods" in err  # the bar, on standard error
    assert "The report is in pinnace-sim-small/" in out
    assert {p.name for p in (cwd / "pinnace-sim-small").iterdir()} == REPORT_FILES


def test_a_bad_scenario_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(SCENARIO.replace("at: 2m", "at: 2x"))
    code, out, err = run(tmp_path, "bad.yaml", "--json")
    assert code == 1
    assert out == ""
    assert err == (
        'pinnace simulate: bad.yaml:25: spec.timeline[0].at: time: unknown unit "x" in '
        'duration "2x"\n'
    )
    assert not list(tmp_path.glob("pinnace-sim-*"))


def test_a_missing_until_says_how_to_give_one(tmp_path: Path) -> None:
    (tmp_path / "forever.yaml").write_text(SCENARIO.replace("  until: 10m\n", ""))
    code, out, err = run(tmp_path, "forever.yaml")
    assert (code, out) == (1, "")
    assert err == "pinnace simulate: the scenario has no spec.until: give --until\n"
    code, out, err = run(tmp_path, "forever.yaml", "--until", "1m", "--json", "--out", "r")
    assert code == 0, err
    assert json.loads(out)["simulatedSeconds"] == 60


def test_a_step_the_api_server_refuses_stops_the_run_in_one_line(tmp_path: Path) -> None:
    step = "  - at: 3m\n    scale: {kind: Deployment, name: api, replicas: 2}\n"
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("  workloads:\n", step + "  workloads:\n"))
    code, out, err = run(tmp_path, "s.yaml", "--json")
    assert (code, out) == (1, "")
    assert (
        err
        == 'pinnace simulate: s.yaml:28: spec.timeline[1].scale: deployments.apps "api" not found\n'
    )


def test_an_object_the_api_server_refuses_stops_the_run_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("replicas: 3", "replicas: -3"))
    code, out, err = run(tmp_path, "s.yaml", "--json")
    assert (code, out) == (1, "")
    assert err == (
        'pinnace simulate: s.yaml:13: spec.objects[0]: Deployment.apps "web" is invalid: '
        "spec.replicas: Invalid value: -3: must be greater than or equal to 0\n"
    )
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bare}\nspec: {containers: []}\n"
    )
    more = SCENARIO.replace("  objects:\n", "  objects:\n  - path: more/\n")
    (tmp_path / "m.yaml").write_text(more)
    code, out, err = run(tmp_path, "m.yaml", "--json")
    assert (code, out) == (1, "")
    assert err == (
        'pinnace simulate: m.yaml:13: spec.objects[0].path: Pod "bare" is invalid: '
        "spec.containers: Required value\n"
    )


def test_an_apply_s_type_error_names_the_object_as_kubectl_sends_it(tmp_path: Path) -> None:
    """The objects are applied as `kubectl apply --server-side` applies them, the namespace
    set in the body: the field manager's error names `default/web`, as kubectl's would."""
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("replicas: 3", 'replicas: "x"'))
    code, out, err = run(tmp_path, "s.yaml", "--json")
    assert (code, out) == (1, "")
    assert err == (
        "pinnace simulate: s.yaml:13: spec.objects[0]: failed to create typed patch object "
        "(default/web; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int or "
        "float), got string\n"
    )


def test_an_out_that_cannot_be_written_is_one_line_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "small.yaml").write_text(SCENARIO)
    (tmp_path / "taken").write_text("a file, not a directory")
    code, out, err = run(tmp_path, "small.yaml", "--json", "--out", "taken/report")
    assert (code, out) == (1, "")
    assert err == (
        "pinnace simulate: cannot write the report to taken/report/: taken/report: Not a "
        "directory\n"
    )


def test_a_components_warning_is_a_line_of_its_own_at_its_simulated_time(tmp_path: Path) -> None:
    """The node lifecycle controller's warning when every node is lost, once above the
    progress bar and once with --json: never in the middle of the bar, and dated in simulated
    time (the node fails at 1m; 50 s of grace, noticed at the 5 s monitor period)."""
    lost = SCENARIO.replace("count: 2", "count: 1").replace(
        "cordon: {node: general-1}", "failNode: {node: general-1}"
    )
    (tmp_path / "lost.yaml").write_text(lost.replace("at: 2m", "at: 1m"))
    warning = "WARNING every node is not ready: entering master disruption mode"
    for flags in ((), ("--json", "--out", "json")):
        code, _, err = run(tmp_path, "lost.yaml", *flags)
        assert code == 0, err
        assert f"1m50s {warning}" in err.replace("\r", "\n").splitlines(), err
