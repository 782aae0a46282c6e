"""`pinnace bench store` as a user runs it: tiny sizes, the figures it names (never timings)."""

import json

import pytest
from tests.support import run_pinnace

from pinnace.cli.main import main

FIGURE_KEYS = {
    "creates_per_s",
    "updates_per_s",
    "gets_per_s",
    "list_ms",
    "paged_list_ms",
    "watch_events_per_s",
    "write_latency_p50_ms",
    "write_latency_p99_ms",
    "reopen_ms",
}


def test_json_gives_every_figure_for_both_backends() -> None:
    result = run_pinnace("bench", "store", "--objects", "30", "--watchers", "2", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["benchmark"], document["objects"], document["watchers"]) == ("store", 30, 2)
    assert set(document["backends"]) == {"memory", "sqlite"}
    for figures in document["backends"].values():
        assert set(figures) == FIGURE_KEYS
    memory, sqlite = document["backends"]["memory"], document["backends"]["sqlite"]
    assert memory.pop("reopen_ms") is None, "a memory store has no file to reopen"
    assert all(value > 0 for value in [*memory.values(), *sqlite.values()])


def test_the_table_names_each_figure_for_the_backend_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["bench", "store", "--backend", "sqlite", "--objects", "20", "--watchers", "3"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Pinnace store benchmark: 20 objects, 16 concurrent writers, 3 watchers"
    assert lines[2].split() == ["sqlite"]
    labels = [
        "creates/s",
        "updates/s (with resourceVersion precondition)",
        "gets/s",
        "list of 20 objects (ms)",
        "list of 20 objects in pages of 500 (ms)",
        "watch events/s delivered to 3 watchers",
        "write latency p50 (ms)",
        "write latency p99 (ms)",
        "reopen the file (ms)",
    ]
    assert [line[: len(label)] for line, label in zip(lines[3:], labels, strict=True)] == labels


def test_bad_arguments_are_usage_errors_naming_the_problem(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for args, message in [
        (("bench",), "the following arguments are required: BENCHMARK"),
        (("bench", "store", "--objects", "0"), "--objects: must be at least 1, not 0"),
        (("bench", "store", "--watchers", "many"), "--watchers: 'many' is not a whole number"),
        (("bench", "store", "--backend", "etcd"), "invalid choice: 'etcd'"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
