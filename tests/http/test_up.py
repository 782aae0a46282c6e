"""`pinnace up` itself: its kubeconfig, a store that outlives a restart and a kill -9, its
default data directory, a busy port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from tests.http.conftest import launch, stop


def test_sqlite_store_keeps_objects_across_restarts(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    first = launch(tmp_path, *data)
    config = yaml.safe_load(first.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == first.url
    assert config["current-context"] == "pinnace"
    first.ok("create", "configmap", "kept", "--from-literal=a=b")
    stop(first)
    assert (tmp_path / "data" / "pinnace.db").exists()
    second = launch(tmp_path, *data)
    try:
        assert second.ok("get", "configmap", "kept", "-o", "jsonpath={.data.a}") == "b"
        names = second.ok("get", "ns", "-o", "name").split()
        assert names.count("namespace/default") == 1
    finally:
        stop(second)


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    first = launch(tmp_path, *data)
    for i in range(20):
        first.ok("create", "configmap", f"c{i}", f"--from-literal=n={i}")
    first.ok("label", "configmap", "c19", "last=yes")
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=20)
    second = launch(tmp_path, *data)
    try:
        names = second.ok("get", "configmaps", "-o", "name").split()
        assert {f"configmap/c{i}" for i in range(20)} <= set(names)
        assert second.ok("get", "cm", "c19", "-o", "jsonpath={.metadata.labels.last}") == "yes"
    finally:
        stop(second)


def test_state_and_kubeconfig_live_in_home_dot_pinnace_by_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", "from pinnace.cli import up; print(up.UpOptions().kubeconfig)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.stdout.strip() == str(home / ".pinnace" / "kubeconfig")
    help_text = subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", "up", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    ).stdout
    assert "(default ~/.pinnace)" in " ".join(help_text.split())


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pinnace.cli.main",
                "up",
                "--in-memory",
                "--port",
                str(port),
                "--kubeconfig",
                str(tmp_path / "kc"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1
    assert done.stderr.startswith("pinnace up: ")
    assert "Address already in use" in done.stderr
    assert "Traceback" not in done.stderr
