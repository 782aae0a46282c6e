"""The channel protocols of Kubernetes' WebSocket streams (k8s.io/apimachinery's
httpstream/wsstream, and remotecommand's status on the error channel): every message is one
channel's, its first byte the channel number (binary protocols) or that number as an ASCII
digit before base64 data (text protocols).

| subprotocol                | spoken by                                 | error channel         |
| -------------------------- | ----------------------------------------- | --------------------- |
| `v5.channel.k8s.io`        | kube-apiserver itself (stream translator) | Status JSON           |
| `v4.channel.k8s.io`        | the kubelet, through the apiserver proxy  | Status JSON           |
| `v4.base64.channel.k8s.io` | the kubelet                               | Status JSON           |
| `channel.k8s.io`, none     | the kubelet                               | the error's text only |
| `base64.channel.k8s.io`    | the kubelet                               | the error's text only |

v5 adds the close signal: a message `255, N` from the client ends its channel N (stdin's
end, which earlier versions cannot tell but by closing the connection).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api.status import StatusError
from pinnace.apiserver.http.responses import go_json

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V3 = "v3.channel.k8s.io"
V2 = "v2.channel.k8s.io"
V1 = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
REMOTE_COMMAND = (V4, V4_BASE64, V1, V1_BASE64, "")
"""What the kubelet's remotecommand WebSocket server speaks ("": no subprotocol asked)."""
PORT_FORWARD = (V4, V4_BASE64, "")
"""What the kubelet's port-forward WebSocket server speaks."""
STREAM_CLOSE = 255
"""v5's close signal, in place of a channel number."""
Message = bytes | str


def negotiate(offered: Sequence[str], supported: Sequence[str], translated: bool) -> str | None:
    """The subprotocol of a session: v5 whenever the client offers it and kube-apiserver
    translates the streams itself (`translated`, exec and attach), else the first the client
    offers that the kubelet speaks ("" when it offers none); None when there is none."""
    if translated and V5 in offered:
        return V5
    for protocol in offered or [""]:
        if protocol in supported:
            return protocol
    return None


def unsupported(offered: Sequence[str]) -> StatusError:
    """wsstream's refusal of a handshake offering no subprotocol it speaks."""
    return StatusError(
        403, "Forbidden", f"requested protocol(s) are not supported: [{' '.join(offered)}]"
    )


@dataclass(frozen=True)
class Framing:
    protocol: str

    @property
    def text(self) -> bool:
        return "base64" in self.protocol

    @property
    def status_json(self) -> bool:
        """The error channel carries a Status as JSON (v4, v5); else the error's text."""
        return self.protocol.startswith(("v4.", "v5."))

    @property
    def closes(self) -> bool:
        """The client can end a channel (v5's close signal)."""
        return self.protocol == V5

    def encode(self, channel: int, data: bytes) -> Message:
        if self.text:
            return chr(ord("0") + channel) + base64.b64encode(data).decode()
        return bytes([channel]) + data

    def decode(self, message: Message) -> tuple[int, bytes] | None:
        """(channel, data) of a client's message; None for one that has neither. A binary
        protocol takes a text message's bytes as a binary one's (wsstream reads either
        frame into bytes; the Python client sends stdin written as str so)."""
        if not self.text:
            data = message.encode() if isinstance(message, str) else message
            return (data[0], data[1:]) if data else None
        text = message if isinstance(message, str) else message.decode(errors="replace")
        if not text:
            return None
        try:
            return ord(text[0]) - ord("0"), base64.b64decode(text[1:])
        except (binascii.Error, ValueError):
            return None

    def status(self, status: dict[str, Any]) -> bytes:
        """What the error channel carries for a remotecommand Status (nothing for success
        before v4)."""
        if self.status_json:
            return go_json(status)
        return b"" if status.get("status") == "Success" else str(status["message"]).encode()


SUCCESS: dict[str, Any] = {"metadata": {}, "status": "Success"}


def exit_status(command: Sequence[str], code: int, translated: bool) -> dict[str, Any]:
    """The Status of a command that exited with `code` (not 0): the CRI runtime's error
    (`error executing command [false], exit code 1`) as the kubelet words it; or, when
    kube-apiserver translated the streams (v5), the translator's, made from the exit code its
    SPDY client read (client-go's v4 error decoder: `command terminated with exit code 1`)."""
    message = "command terminated with non-zero exit code: "
    if translated:
        message += f"command terminated with exit code {code}"
    else:
        message += f"error executing command [{' '.join(command)}], exit code {code}"
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_error(message: str) -> dict[str, Any]:
    """apierrors.NewInternalError, as a Status."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def exec_failed(error: str, translated: bool) -> dict[str, Any]:
    """The Status of a command the runtime could not start (CRI's `error`): the kubelet's
    internal error (remotecommand's ServeExec), which kube-apiserver's translator (v5), whose
    SPDY client reads it as a plain error, wraps in an internal error of its own."""
    outcome = internal_error(f"error executing command in container: {error}")
    return internal_error(outcome["message"]) if translated else outcome


class Inbox:
    """What a client sends one stream, in order: a session's stdin, a forwarded port's
    connection; b"" once it has ended (at once when `ended` from the start)."""

    def __init__(self, ended: bool = False) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._ended = ended

    def put(self, data: bytes) -> None:
        self._queue.put_nowait(data)

    async def read(self) -> bytes:
        if self._ended and self._queue.empty():
            return b""
        data = await self._queue.get()
        self._ended = self._ended or not data
        return data
