"""One `pinnace up --in-memory --port 0` per test module, driven by kubectl, the `kubernetes`
Python client and plain HTTP."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from tests.support import set_up_then

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
READY_TIMEOUT = 30.0


@dataclass
class Cluster:
    url: str
    kubeconfig: Path
    workdir: Path
    process: subprocess.Popen[str]
    output: queue.Queue[str | None]
    """pinnace up's stdout lines, then None at its end."""

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run kubectl against the cluster; the result carries returncode, stdout, stderr."""
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--request-timeout=20s", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=self.workdir,
            env={**os.environ, "KUBECACHEDIR": str(self.workdir / "cache")},
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self.kubectl(*args, stdin=stdin)
        assert done.returncode == 0, f"kubectl {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout


def launch(
    workdir: Path,
    *storage: str,
    flags: tuple[str, ...] = (),
    limits: Mapping[str, tuple[int, int]] | None = None,
    command: str = "up",
) -> Cluster:
    """`pinnace up --port 0 [flags]` (or `pinnace apiserver`, the `command`) in `workdir`
    (memory store unless `storage` says otherwise), returned once it reports readiness;
    `limits`: its resource limits by name, e.g. {"RLIMIT_NOFILE": (soft, hard)}."""
    kubeconfig = workdir / "kubeconfig"
    log = open(workdir / "server.log", "a")  # noqa: SIM115
    argv = [
        sys.executable,
        "-m",
        "pinnace.cli.main",
        command,
        "--port",
        "0",
        *(storage or ("--in-memory",)),
        "--kubeconfig",
        str(kubeconfig),
        *flags,
    ]
    process = subprocess.Popen(
        set_up_then(argv, limits=limits),
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=workdir,
    )
    log.close()
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_forward, args=(process.stdout, lines), daemon=True).start()
    url, ready = "", False
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready and time.monotonic() < deadline and process.poll() is None:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            break
        found = re.search(r"at (https?://\S+) ", line)
        url = found.group(1) if found else url
        ready = line.strip() == "Ready."
    if not ready:
        process.kill()
        process.wait()
    assert ready and url, "pinnace up did not get ready:\n" + (workdir / "server.log").read_text()
    return Cluster(url, kubeconfig, workdir, process, lines)


def _forward(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def stop(cluster: Cluster) -> None:
    """SIGTERM, as a service manager stops it: a clean exit that says so."""
    cluster.process.send_signal(signal.SIGTERM)
    assert cluster.process.wait(timeout=20) == 0
    rest = list(iter(lambda: cluster.output.get(timeout=5), None))
    assert "Pinnace stopped.\n" in rest
    assert "Traceback" not in (cluster.workdir / "server.log").read_text()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # These tests bind pods themselves and read pods as Pending: no scheduler (its own tests
    # are in test_scheduler_e2e.py).
    running = launch(tmp_path_factory.mktemp("pinnace-up"), flags=("--no-scheduler",))
    yield running
    stop(running)


class Process:
    """A `pinnace` command running beside the cluster, its log in a file."""

    def __init__(self, workdir: Path, name: str, *args: str) -> None:
        self.log = workdir / f"{name}.log"
        with open(self.log, "w") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "pinnace.cli.main", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )

    def said(self, text: str) -> bool:
        return text in self.log.read_text()

    def terminate(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=20)


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.popen.poll() is None:
            process.popen.kill()
            process.popen.wait()
