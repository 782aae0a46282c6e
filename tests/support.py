"""What tests share: waiting for a cluster in another process, a whole cluster in this one,
and a connection's transport in memory.

`eventually` polls `pinnace up` (a subprocess on the real clock) until something holds.
`SimulatedCluster` is the real `ControlPlane` on the memory store and the virtual clock, as
`pinnace up` assembles it: a test steps its time with `wait(seconds)`, so nothing there needs
polling, and waiting ten virtual minutes costs what the work in them costs.
`MemoryTransport` drives `pinnace up`'s HTTP protocol without a socket (the tests of
`apiserver.http.connections`, and scripts/measure_http_floor.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pinnace.apiserver.auth.user import REQUESTER, Requester, UserInfo
from pinnace.client import LocalClient
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.store import MemoryStore

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.2) -> T:
    """`check()` once it returns something true, calling it every `interval` seconds of real
    time. An AssertionError from `check` means "not yet". After `timeout` seconds the last
    AssertionError is raised again, or one that shows the last value."""
    deadline = time.monotonic() + timeout
    while True:
        failure: AssertionError | None = None
        try:
            value = check()
        except AssertionError as e:
            failure = e
        else:
            if value:
                return value
        if time.monotonic() >= deadline:
            if failure is not None:
                raise failure
            raise AssertionError(f"still {value!r} after {timeout:g} s")
        time.sleep(interval)


def run_pinnace(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """`pinnace *args` in a process of its own, as a user runs it; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


_SET_UP_AND_EXEC = """
import json, os, resource, signal, sys
limits, sigint, argv = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
for name, (soft, hard) in limits.items():
    resource.setrlimit(getattr(resource, name), (soft, hard))
if sigint == "default":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(argv[0], argv)
"""


def set_up_then(
    argv: Sequence[str],
    *,
    limits: Mapping[str, tuple[int, int]] | None = None,
    default_sigint: bool = False,
) -> list[str]:
    """`argv` as a command that first sets these resource limits (by `resource`'s names,
    RLIMIT_FSIZE: (soft, hard)), and SIGINT back to its default action if asked, then execs it.

    Instead of subprocess's `preexec_fn`: that runs Python in the forked child of this
    threaded process, where a library's fork handlers (gRPC's, once the etcd tests loaded it
    in this worker) can abort the child before it starts."""
    setup = json.dumps(dict(limits or {}))
    sigint = "default" if default_sigint else "inherited"
    return [sys.executable, "-c", _SET_UP_AND_EXEC, setup, sigint, *argv]


def run_example(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """An example script run as a user runs it (`python examples/...`), with this test run's
    import path; its output as text."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )


@contextlib.contextmanager
def acting_as(user: UserInfo | None) -> Iterator[None]:
    """The API server's calls inside come from `user`, as if the HTTP front end had
    authenticated it (None: from an in-process component, trusted)."""
    token = REQUESTER.set(None if user is None else Requester(user))
    try:
        yield
    finally:
        REQUESTER.reset(token)


class SimulatedCluster:
    """A `ControlPlane` with `options` on the virtual clock, started; `client` is the test's
    own client of its API server.

        cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(2), seed=3))
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(5)
        cluster.close()
    """

    def __init__(self, options: ClusterOptions | None = None) -> None:
        self.loop = VirtualEventLoop()
        self.clock = Clock(self.loop)
        self.store = MemoryStore()
        self.plane = ControlPlane(self.store, self.clock, options or ClusterOptions(seed=0))
        self.server = self.plane.server
        self.client: LocalClient = self.plane.client()
        self.run(self.plane.start())

    def run(self, coro: Awaitable[T]) -> T:
        """Run the loop, and the cluster with it, until `coro` is done."""
        return self.loop.run_until_complete(coro)

    def wait(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass."""
        self.run(asyncio.sleep(seconds))

    def close(self) -> None:
        """Stop the control plane, cancel what is left (tasks a test started, or a failed test
        left behind) and close the loop."""
        try:
            self.run(self.plane.stop())
        finally:
            self.run(cancel_the_rest())
            self.loop.close()
            asyncio.set_event_loop(None)


async def cancel_the_rest() -> None:
    """Cancel every other task on the running loop, and wait for them to end."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def score_only_config(plugin: str, args: str = "") -> str:
    """A KubeSchedulerConfiguration whose only Score plugin is `plugin`, with `args` (a YAML
    flow mapping such as `{usageWindow: 1m}`) as its pluginConfig when given."""
    config = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      disabled: [{{name: "*"}}]
      enabled: [{{name: {plugin}}}]
"""
    if args:
        config += f"  pluginConfig:\n  - name: {plugin}\n    args: {args}\n"
    return config


class MemoryTransport(asyncio.Transport):
    """A connection's server side in memory: each write the server makes is kept, and the
    client certificate (if any) is the TLS handshake's."""

    def __init__(self, certificate: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self._extra = {"sockname": ("127.0.0.1", 6443), "peername": ("127.0.0.1", 50000)}
        if certificate is not None:
            self._extra["peercert"] = certificate

    def written(self) -> bytes:
        """Everything written so far, as one."""
        return b"".join(self.writes)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._extra.get(name, default)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        pass
