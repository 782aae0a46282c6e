"""What the streaming subresources (pods/exec, pods/attach, pods/portforward) carry between
the API server and the node running the pod: the options of core/v1 PodExecOptions and
PodAttachOptions, and the byte streams of a session, as kube-apiserver hands them to the
kubelet's streaming server (pkg/kubelet/cri/streaming).

The channels are remotecommand's (k8s.io/apimachinery/pkg/util/remotecommand): 0 stdin,
1 stdout, 2 stderr, 3 the error channel, 4 terminal resizes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class StreamOptions:
    """PodExecOptions (with its command) or PodAttachOptions."""

    container: str = ""
    command: tuple[str, ...] = ()
    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False


class StreamIO(Protocol):
    """One session's streams, as the process in the container sees them."""

    async def read(self) -> bytes:
        """The next bytes of stdin; b"" once it has ended (at once when there is none)."""
        ...

    async def write(self, stream: int, data: bytes) -> None:
        """Print `data` to STDOUT or STDERR (with a tty, both are the terminal)."""
        ...


Session = Callable[[StreamIO], Awaitable[int]]
"""Runs a started exec or attach session over its streams; the exit status."""
Forward = Callable[[StreamIO], Awaitable[None]]
"""Carries one connection to a pod's port: what the client sends (read) to the listener,
what it answers (written to STDOUT) back; StreamError when nothing listens there."""


class StreamError(Exception):
    """The node cannot start the session: the message its kubelet answers with (`container
    not found ("app")`)."""


class ExecFailed(Exception):
    """The runtime could not start an exec'd command: CRI's error (`failed to exec in
    container: ...`), which the kubelet reports as an internal error, not an exit code."""


class Unreachable(StreamError):
    """The API server cannot reach the node's kubelet at `address` (host:port): the dial
    error (`dial tcp 10.0.0.2:10250: connect: connection refused`)."""

    def __init__(self, address: str, why: str) -> None:
        super().__init__(f"dial tcp {address}: {why}")
        self.address = address
