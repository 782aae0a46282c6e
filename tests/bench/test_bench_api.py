"""`pinnace bench api` as a user runs it: tiny sizes, the figures it names (never timings)."""

import json

from tests.support import run_pinnace

FIGURE_KEYS = {
    "creates_per_second",
    "create_p50_ms",
    "create_p99_ms",
    "create_server_cpu_ms",
    "list_10k_seconds",
    "list_bytes",
    "list_10k_selector_seconds",
    "watch_p50_ms",
    "watch_p99_ms",
    "watch_events_per_second",
    "watch_server_cpu_us",
}
CPU_KEYS = {"create_server_cpu_ms", "watch_server_cpu_us"}
"""The server's CPU time, counted in clock ticks: a tiny run may take less than one."""
SIZE_KEYS = {"benchmark", "backend", "pods", "clients", "watchers", "watch_writes", "watch_rate"}
TINY = ("--pods", "50", "--clients", "2", "--watchers", "2", "--watch-writes", "10")


def test_json_gives_every_figure_against_a_real_server() -> None:
    result = run_pinnace("bench", "api", *TINY, "--watch-rate", "100", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) == FIGURE_KEYS | SIZE_KEYS
    assert document["benchmark"] == "api"
    assert (document["backend"], document["pods"], document["clients"]) == ("sqlite", 50, 2)
    assert (document["watchers"], document["watch_writes"], document["watch_rate"]) == (2, 10, 100)
    assert all(document[key] > 0 for key in FIGURE_KEYS - CPU_KEYS)
    assert all(document[key] >= 0 for key in CPU_KEYS)


def test_the_table_names_each_figure_for_the_memory_backend() -> None:
    result = run_pinnace(
        "bench", "api", "--backend", "memory", *TINY, "--watch-rate", "50", timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "Pinnace API benchmark over HTTP: 50 pods from 2 clients, 2 watchers of 10 creates at 50/s"
    )
    assert lines[2].split() == ["memory"]
    labels = [
        "pod creates/s",
        "create latency p50 (ms)",
        "create latency p99 (ms)",
        "server CPU per create (ms)",
        "list of 50 pods (s)",
        "list response size (bytes)",
        "list by label selector, 1 in 10 of 50 pods (s)",
        "watch delivery p50 to 2 watchers (ms)",
        "watch delivery p99 to 2 watchers (ms)",
        "watch events/s delivered",
        "server CPU per watch event delivered (µs)",
    ]
    assert [line[: len(label)] for line, label in zip(lines[3:], labels, strict=True)] == labels


def test_bad_arguments_are_clear_errors_without_traceback() -> None:
    for args, message in [
        (("bench", "api", "--pods", "0"), "--pods: must be at least 1, not 0"),
        (("bench", "api", "--watchers", "many"), "--watchers: 'many' is not a whole number"),
        (("bench", "api", "--backend", "postgres"), "invalid choice: 'postgres'"),
    ]:
        result = run_pinnace(*args, timeout=120)
        assert result.returncode == 2
        assert message in result.stderr
        assert "Traceback" not in result.stderr
