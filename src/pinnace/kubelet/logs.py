"""A container's log as the kubelet serves /containerLogs: the lines of its current log file
(`pinnace.kubelet.runtime`: CRI log files rotated by containerLogMaxSize and
containerLogMaxFiles, of which the kubelet reads only the current one) since sinceSeconds or
sinceTime, the last tailLines of them, with timestamps if asked, cut at limitBytes; with
follow, new lines as the container prints them until it exits, reading on in the new file
after a rotation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from pinnace.api.options import LogOptions
from pinnace.clock import Clock, format_micro_time
from pinnace.kubelet.image_service import ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF
from pinnace.kubelet.runtime import ContainerState, ContainerStatus

_WAITING_WORDS = {
    ERR_IMAGE_PULL: "image can't be pulled",
    IMAGE_PULL_BACK_OFF: "trying and failing to pull image",
}
"""The kubelet's words for the commonest reasons a container has not started."""
FOLLOW_POLL_SECONDS = 1.0
"""How often a followed log is checked for new lines (the kubelet watches the log file)."""


async def container_log(
    run: ContainerStatus, options: LogOptions, clock: Clock
) -> AsyncIterator[str]:
    """The log text of one run of a container, in chunks."""
    since = _since(options, clock.now())
    lines: Sequence[tuple[float, str]] = [
        (t, line) for t, line in run.log if since is None or t >= since
    ]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines > 0 else []
    budget = options.limit_bytes
    log = run.log
    sent = len(log)
    while True:
        text = "".join(_format(t, line, options.timestamps) for t, line in lines)
        if budget is not None:
            text = text.encode()[:budget].decode(errors="ignore")
            budget -= len(text.encode())
        if text:
            yield text
        if not options.follow or budget == 0 or run.state is not ContainerState.RUNNING:
            return
        await clock.sleep(FOLLOW_POLL_SECONDS)
        # A rotation starts a new file: the rest of the old one, then the new one.
        lines = [*log[sent:], *run.log] if run.log is not log else log[sent:]
        log = run.log
        sent = len(log)


def waiting_to_start(pod: str, container: str, reason: str) -> str:
    """Why a container that has not started has no log, in the kubelet's words
    (validateContainerLogStatus): its waiting reason."""
    why = _WAITING_WORDS.get(reason, reason)
    if not why:
        return f'container "{container}" in pod "{pod}" is waiting to start - no logs yet'
    return f'container "{container}" in pod "{pod}" is waiting to start: {why}'


def _since(options: LogOptions, now: float) -> float | None:
    if options.since_seconds is not None:
        return now - options.since_seconds
    return options.since_time


def _format(t: float, line: str, timestamps: bool) -> str:
    if not timestamps:
        return line + "\n"
    # RFC 3339 with nanoseconds, as `kubectl logs --timestamps` shows.
    return f"{format_micro_time(t)[:-1]}000Z {line}\n"
