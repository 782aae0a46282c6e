"""`pinnace bench nodes` at a tiny size: it runs the nodes and their pods, and prints the
figures as one JSON object."""

from __future__ import annotations

import json

import pytest
from tests.support import run_pinnace

from pinnace.bench import nodes
from pinnace.cli.main import main


def test_bench_nodes_prints_its_figures_as_json() -> None:
    # In a process of its own, as a user runs it: the memory figures are differences of the
    # process's resident size, which in a test worker also move with other tests' garbage.
    args = ["bench", "nodes", "--nodes", "3", "--pods-per-node", "2", "--seconds", "1", "--json"]
    done = run_pinnace(*args, timeout=120)
    done.check_returncode()
    figures = json.loads(done.stdout)
    assert (figures["nodes"], figures["pods"]) == (3, 6)
    for key in (
        "rss_mib",
        "rss_peak_mib",
        "cpu_percent",
        "mib_per_node",
        "kib_per_pod",
        "lease_renewals",
    ):
        assert figures[key] >= 0
    assert figures["oldest_lease_seconds"] < 40


def test_bench_nodes_compacts_on_the_interval_asked(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "nodes", "--nodes", "2", "--pods-per-node", "1", "--seconds", "1"]
    assert main([*args, "--compaction-interval", "0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"] == 2
    with pytest.raises(SystemExit):
        main([*args, "--compaction-interval", "0"])
    assert "--compaction-interval: must be a positive number of seconds" in capsys.readouterr().err


def test_bench_nodes_refuses_a_size_below_one_node(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "nodes", "--nodes", "0"])
    assert "must be at least 1, not 0" in capsys.readouterr().err


def test_bench_nodes_stops_by_itself_when_pods_cannot_all_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nodes, "CREATE_BATCH", 10)
    monkeypatch.setattr(nodes, "STARTING_AT_MOST", 5)
    monkeypatch.setattr(nodes, "SETTLE_TIMEOUT", 2.0)
    # One node runs 110 pods at most: the rest are rejected and never run.
    args = ["bench", "nodes", "--nodes", "1", "--pods-per-node", "130", "--seconds", "1"]
    assert main(args) != 0
    assert "pods ran in 2 s" in capsys.readouterr().err
