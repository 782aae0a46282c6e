"""postStart and preStop hooks of simulated containers: how long a hook runs and whether it
fails, with the messages the kubelet's handler runner (pkg/kubelet/lifecycle) gives.

A hook's handler decides by default: an exec command the model understands
(`pinnace.kubelet.commands`: `sleep 5`, `sh -c "exit 1"`) takes its time and fails on a
non-zero exit; a `sleep` action takes its seconds; an httpGet, or a command not understood,
succeeds at once; a tcpSocket handler fails, as the kubelet does not run those. Annotations
(prefix `sim.pinnace.dev/`, optionally followed by `.<container name>`) win:

    sim.pinnace.dev/post-start-seconds   how long the postStart hook runs
    sim.pinnace.dev/post-start-fails     "true": the postStart hook fails (after its time)
    sim.pinnace.dev/pre-stop-seconds     how long the preStop hook runs
    sim.pinnace.dev/pre-stop-fails       "true": the preStop hook fails (after its time)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.kubelet.behaviour import ANNOTATION_PREFIX, BehaviourError
from pinnace.kubelet.probes import annotation, duration_annotation
from pinnace.kubelet.shell import Now, command_run

POST_START, PRE_STOP = "postStart", "preStop"
_KEYS = {POST_START: "post-start", PRE_STOP: "pre-stop"}


@dataclass(frozen=True)
class HookRun:
    seconds: float
    error: str | None = None
    """Why the hook failed, as the kubelet words it; None when it succeeds."""


def hook_run(
    pod: Mapping[str, Any], container: Mapping[str, Any], hook: str, now: Now
) -> HookRun | None:
    """What the container's `hook` (postStart or preStop) does, run at the time `now` tells,
    or None when it has none. Raises BehaviourError for an annotation that does not parse."""
    handler = (container.get("lifecycle") or {}).get(hook)
    if not handler:
        return None
    name = container.get("name", "")
    seconds, failure = _handler_run(handler, now)
    found = annotation(pod, ANNOTATION_PREFIX + _KEYS[hook] + "-seconds", name)
    if found is not None:
        seconds = duration_annotation(found)
    fails = annotation(pod, ANNOTATION_PREFIX + _KEYS[hook] + "-fails", name)
    if fails is not None:
        if fails[1] not in ("true", "false"):
            raise BehaviourError(
                f'annotation {fails[0]}: invalid value "{fails[1]}": must be "true" or "false"'
            )
        if fails[1] == "false":
            failure = None
        elif failure is None:
            failure = _forced_failure(handler)
    if failure is None:
        return HookRun(seconds)
    return HookRun(seconds, _message(handler, failure, pod, name))


def _handler_run(handler: Mapping[str, Any], now: Now) -> tuple[float, str | None]:
    """(seconds, error) the handler gives by itself."""
    if handler.get("exec"):
        command = [str(w) for w in handler["exec"].get("command") or ()]
        run = command_run(command, now=now)
        if run is None:
            return 0.0, None
        if run.exit_code:
            output = "\n".join(run.output)
            return (
                run.seconds,
                f"command '{' '.join(command)}' exited with {run.exit_code}: {output}",
            )
        return run.seconds, None
    if handler.get("sleep"):
        return float(handler["sleep"].get("seconds") or 0), None
    if handler.get("httpGet"):
        return 0.0, None
    return 0.0, "invalid handler"


def _forced_failure(handler: Mapping[str, Any]) -> str:
    if handler.get("exec"):
        command = " ".join(str(w) for w in handler["exec"].get("command") or ())
        return f"command '{command}' exited with 1: "
    if handler.get("httpGet"):
        return "HTTP server responded with status code 500"
    return "invalid handler"


def _message(handler: Mapping[str, Any], error: str, pod: Mapping[str, Any], name: str) -> str:
    """The handler runner's message for a failed hook (the container's PostStartHookError)."""
    m = pod.get("metadata") or {}
    where = f'for Container "{name}" in Pod "{m.get("name")}_{m.get("namespace")}({m.get("uid")})"'
    if handler.get("exec"):
        command = " ".join(str(w) for w in handler["exec"].get("command") or ())
        return f'Exec lifecycle hook ([{command}]) {where} failed - error: {error}, message: ""'
    if handler.get("httpGet"):
        path = handler["httpGet"].get("path") or "/"
        return f"HTTP lifecycle hook ({path}) {where} failed - error: {error}"
    return f"Cannot run handler: {error}"
