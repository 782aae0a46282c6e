"""A comparison's runs as Ray tasks (`pinnace simulate --compare … --ray`, pinnace.sim.compare_ray):
a grid of 2 variants × 2 seeds of test_compare.py's tiny scenario on a local Ray of 2 CPUs
gives the comparison the runs give one after another in this process, event log for event log.

The sweep runs as a user runs it, `pinnace` in a process of its own. Ray forks its servers
running Python in the child; in a test worker that earlier ran the etcd tests, gRPC's threads
(aetcd's) can hold a lock across that fork, and the GCS server then never starts (both tries
timed out in a fresh-clone CI run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.sim.test_compare import files, without_wall_times  # noqa: F401
from tests.support import run_pinnace

from pinnace.cli.main import main
from pinnace.sim import compare_ray
from pinnace.sim.compare import compare

VARIANTS = """\
- name: most-allocated
  override:
    cluster.schedulerConfig: most-allocated.yaml
- name: more-pods
  override:
    workloads[0].count: 9
"""


def test_a_sweep_on_a_local_ray_is_the_local_comparison(
    files: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(files)
    (files / "grid.yaml").write_text(VARIANTS)
    command = ["simulate", "tiny.yaml", "--compare", "grid.yaml", "--seed-list", "1,2"]
    # A local Ray of 2 CPUs, without its dashboard, started for the comparison and stopped.
    done = run_pinnace(*command, "--ray", "--jobs", "2", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    local = compare(files / "tiny.yaml", files / "grid.yaml", [1, 2], jobs=1).summary
    assert without_wall_times(found) == without_wall_times(local)
    logs = [run["eventLogSha256"] for run in found["runs"]]
    assert len(logs) == 4 and len(set(logs)) == 4  # every run its own, each as made locally


def test_ray_is_for_comparisons_and_a_ray_cluster_sizes_itself(
    files: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(files)
    assert main(["simulate", "tiny.yaml", "--ray"]) == 1
    assert capsys.readouterr().err == (
        "pinnace simulate: --seeds, --seed-list, --jobs and --ray need --compare\n"
    )
    command = ["simulate", "tiny.yaml", "--compare", "variants.yaml", "--ray", "10.0.0.1:6379"]
    assert main([*command, "--jobs", "2"]) == 1
    assert capsys.readouterr().err == (
        "pinnace simulate: --jobs sizes a local Ray: a Ray cluster's own CPUs run the runs\n"
    )


class _LateRaylet:
    """A Ray whose local start fails as Ray's does when its raylet registers after 30 s."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.starts = 0
        self.stops = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, *args: object, **kwargs: object) -> None:
        self.starts += 1
        if self.starts <= self.failures:
            raise Exception("The current node timed out during startup.")

    def shutdown(self) -> None:
        self.stops += 1


def test_a_local_ray_that_starts_late_is_started_again_then_reported(
    files: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(files)
    late = _LateRaylet(failures=2)
    monkeypatch.setitem(sys.modules, "ray", late)
    command = [
        "simulate",
        "tiny.yaml",
        "--compare",
        "variants.yaml",
        "--ray",
        "--jobs",
        "2",
        "--json",
    ]
    assert main(command) == 1
    assert capsys.readouterr().err == (
        "pinnace simulate: a local Ray did not start: The current node timed out during startup.\n"
    )
    assert (late.starts, late.stops) == (2, 2)

    once = _LateRaylet(failures=1)
    monkeypatch.setitem(sys.modules, "ray", once)
    monkeypatch.setattr(compare_ray, "_gathered", lambda ray, tasks, done: [])
    assert compare_ray.run_on_ray([], cpus=2) == []
    assert (once.starts, once.stops) == (2, 2)  # the second start ran the runs, then stopped
