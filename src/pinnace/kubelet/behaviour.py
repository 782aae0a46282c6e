"""The behaviour model of simulated containers, read from pod annotations.

Every key has the prefix `sim.pinnace.dev/`. A key applies to all of the pod's containers; the
same key followed by `.<container name>` applies to that container only and wins:

    sim.pinnace.dev/run-seconds       how long the container runs before it exits: a number of
                                      seconds, or "forever" (the default)
    sim.pinnace.dev/exit-code         the code it exits with when its run time is over (0)
    sim.pinnace.dev/stop-seconds      how long it takes to stop once sent SIGTERM (0); past the
                                      grace period it is killed
    sim.pinnace.dev/log               the text it prints when it starts (empty)

    metadata:
      annotations:
        sim.pinnace.dev/run-seconds: "5"
        sim.pinnace.dev/exit-code.worker: "1"    # only the container named worker fails

Without annotations, a container whose command is a well-known one (`sleep 30`,
`sh -c "exit 1"`, see `pinnace.kubelet.commands`) behaves as that command would; annotations
win over the command.

A value that does not parse keeps the container from being created: it waits with the reason
CreateContainerConfigError and a message naming the annotation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.kubelet.commands import CommandRun, command_run

ANNOTATION_PREFIX = "sim.pinnace.dev/"
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
STOP_SECONDS = ANNOTATION_PREFIX + "stop-seconds"
LOG = ANNOTATION_PREFIX + "log"
FOREVER = "forever"


class BehaviourError(ValueError):
    """An annotation of the model has a value that does not parse."""


@dataclass(frozen=True)
class ContainerBehaviour:
    run_seconds: float = math.inf
    exit_code: int = 0
    stop_seconds: float = 0.0
    log: str = ""


def container_behaviour(pod: Mapping[str, Any], container: str) -> ContainerBehaviour:
    """The model of `container` in `pod`. Raises BehaviourError for a value that does not
    parse."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}

    def value(key: str) -> tuple[str, str] | None:
        for name in (f"{key}.{container}", key):
            if name in annotations:
                return name, str(annotations[name])
        return None

    run = value(RUN_SECONDS)
    exit_code = value(EXIT_CODE)
    stop = value(STOP_SECONDS)
    log = value(LOG)
    command = command_run(_argv(pod, container)) or CommandRun(seconds=math.inf)
    return ContainerBehaviour(
        run_seconds=command.seconds if run is None else _run_seconds(*run),
        exit_code=command.exit_code if exit_code is None else _exit_code(*exit_code),
        stop_seconds=0.0 if stop is None else _seconds(*stop),
        log="\n".join(command.output) if log is None else log[1],
    )


def _argv(pod: Mapping[str, Any], container: str) -> list[str]:
    """The container's command then its args (the image's entrypoint is unknown here)."""
    spec = pod.get("spec") or {}
    for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        if c.get("name") == container:
            return [str(word) for word in (c.get("command") or []) + (c.get("args") or [])]
    return []


def _run_seconds(key: str, text: str) -> float:
    return math.inf if text == FOREVER else _seconds(key, text)


def _seconds(key: str, text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < math.inf:
        raise BehaviourError(
            f'annotation {key}: invalid value "{text}": must be a non-negative number of seconds'
            + (f' or "{FOREVER}"' if key.startswith(RUN_SECONDS) else "")
        )
    return seconds


def _exit_code(key: str, text: str) -> int:
    try:
        code = int(text)
    except ValueError:
        code = -1
    if not 0 <= code <= 255:
        raise BehaviourError(f'annotation {key}: invalid value "{text}": must be 0 to 255')
    return code
