"""A real etcd for tests: Debian's etcd-server, started on free loopback ports with its data in
a temporary directory, stopped (and the directory removed) afterwards.

A missing etcd fails the test rather than skipping it: CI installs it
(scripts/install-system-packages.sh), so the store's tests always run against it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

START_SECONDS = 30.0

T = TypeVar("T")


class EtcdServer:
    """One single-member etcd; `url` is its client URL."""

    def __init__(self, data_dir: Path | None = None, *, wait: bool = True) -> None:
        """Start etcd; with `wait` False, `wait_ready` waits for it later."""
        binary = shutil.which("etcd")
        assert binary is not None, "etcd is missing: sh scripts/install-system-packages.sh"
        self._owned = None
        if data_dir is None:
            self._owned = tempfile.TemporaryDirectory(prefix="pinnace-etcd-")
            data_dir = Path(self._owned.name)
        self.data_dir = data_dir
        self._binary = binary
        self._process: subprocess.Popen[bytes] | None = None
        self._ports: tuple[int, int] | None = None
        self.url = ""
        self.start(wait=wait)

    def start(self, *, wait: bool = True) -> None:
        """Start, or start again on the same ports with the same data."""
        if self._ports is None:
            self._ports = _free_port(), _free_port()
        client, peer = self._ports
        self.url = f"http://127.0.0.1:{client}"
        self._log = open(self.data_dir / "etcd.log", "ab")  # noqa: SIM115
        self._process = subprocess.Popen(
            [
                self._binary,
                "--data-dir",
                str(self.data_dir / "data"),
                "--listen-client-urls",
                self.url,
                "--advertise-client-urls",
                self.url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer}",
                # A single member elects itself at once with short timeouts.
                "--heartbeat-interval",
                "10",
                "--election-timeout",
                "50",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Until etcd's /health says it has a leader."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            assert self._process is not None and self._process.poll() is None, self.log()
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as response:
                    if json.loads(response.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        raise AssertionError(f"etcd did not start: {self.log()}")

    def log(self) -> str:
        return (self.data_dir / "etcd.log").read_text(errors="replace")[-3000:]

    def stop(self, *, kill: bool = False) -> None:
        if self._process is not None:
            if kill:
                self._process.kill()
            else:
                self._process.terminate()
            self._process.wait(timeout=20)
            self._process = None
            self._log.close()

    def close(self) -> None:
        """Stop etcd and remove its data: killed, as nothing of it is kept."""
        self.stop(kill=self._owned is not None)
        if self._owned is not None:
            self._owned.cleanup()

    def __enter__(self) -> EtcdServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EtcdServers:
    """Fresh etcds, one after another: each is started while the test before it runs. Tests
    run their clients on `run`'s one event loop: gRPC's asyncio support binds to every loop
    it meets, and complains about each closed one at every later call."""

    def __init__(self) -> None:
        self._spare: EtcdServer | None = None
        self._runner = asyncio.Runner()

    def run(self, main: Awaitable[T]) -> T:
        """`main` on the event loop the etcd tests share, for 30 s at most."""
        return self._runner.run(asyncio.wait_for(main, timeout=30))

    def take(self) -> EtcdServer:
        """A new etcd, ready; the caller closes it."""
        server = self._spare or EtcdServer(wait=False)
        self._spare = None
        server.wait_ready()
        self._spare = EtcdServer(wait=False)
        return server

    def close(self) -> None:
        self._runner.close()
        if self._spare is not None:
            self._spare.close()
            self._spare = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
