"""One `pinnace up --in-memory --port 0` per test module, driven by kubectl, the `kubernetes`
Python client and plain HTTP."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


@dataclass
class Cluster:
    url: str
    kubeconfig: Path
    workdir: Path
    process: subprocess.Popen[str]

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


def launch(workdir: Path, *storage: str) -> Cluster:
    """`pinnace up --port 0` in `workdir` (memory store unless `storage` says otherwise),
    returned once it reports readiness."""
    kubeconfig = workdir / "kubeconfig"
    log = open(workdir / "server.log", "a")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pinnace.cli.main",
            "up",
            "--port",
            "0",
            *(storage or ("--in-memory",)),
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=workdir,
    )
    log.close()
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        found = re.search(r"at (http://\S+) ", line)
        if found:
            url = found.group(1)
        if line.strip() == "Ready.":
            break
    assert url, "pinnace up did not report readiness: " + (workdir / "server.log").read_text()
    return Cluster(url, kubeconfig, workdir, process)


def stop(cluster: Cluster) -> None:
    """SIGTERM, as a service manager stops it: a clean exit that says so."""
    cluster.process.send_signal(signal.SIGTERM)
    rest, _ = cluster.process.communicate(timeout=20)
    assert cluster.process.returncode == 0
    assert "Pinnace stopped." in rest
    assert "Traceback" not in (cluster.workdir / "server.log").read_text()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up"))
    yield running
    stop(running)
