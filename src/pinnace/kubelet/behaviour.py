"""The behaviour model of simulated containers, read from pod annotations.

Every key has the prefix `sim.pinnace.dev/`. A key applies to all of the pod's containers; the
same key followed by `.<container name>` applies to that container only and wins:

    sim.pinnace.dev/run-seconds       how long the container runs before it exits: a number of
                                      seconds, or "forever" (the default)
    sim.pinnace.dev/exit-code         the code it exits with when its run time is over (0)
    sim.pinnace.dev/stop-seconds      how long it takes to stop once sent SIGTERM (0); past the
                                      grace period it is killed
    sim.pinnace.dev/log               the text it prints when it starts (empty)
    sim.pinnace.dev/cpu               the CPU it demands over time (0); what it gets is capped
                                      at its limit and shared on a busy node
    sim.pinnace.dev/memory            its memory working set over time (0); above its memory
                                      limit it is OOMKilled
    sim.pinnace.dev/ephemeral-storage what it writes to its writable layer over time (0)
    sim.pinnace.dev/pids              how many processes it runs over time (1)
    sim.pinnace.dev/unknown-run-seconds  how long a program the shell model does not know
                                      runs: seconds, or "forever" (see below)
    sim.pinnace.dev/unknown-exit-code the code such a program exits with (0)

The usage keys take a constant or a shape (see `pinnace.kubelet.usage`), counted from each
start of the container, so a restarted container starts its ramp again:

    metadata:
      annotations:
        sim.pinnace.dev/run-seconds: "5"
        sim.pinnace.dev/exit-code.worker: "1"    # only the container named worker fails
        sim.pinnace.dev/memory: "ramp 100Mi 600Mi 60s"
        sim.pinnace.dev/cpu.worker: "spike 100m 2 at 30s for 10s"
        sim.pinnace.dev/cpu.batch: "periodic 100m 900m 60s"

A key without a container suffix applies to each container: `memory: 100Mi` on a pod of two
containers is 100Mi each.

Without annotations, a container whose command is a well-known one (`sleep 30`,
`sh -c "exit 1"`, `stress --vm 1 --vm-bytes 150M`, see `pinnace.kubelet.commands`) behaves and
uses what that command would; annotations win over the command. Its command and args have
their `$(VAR)` references expanded with its environment (`pinnace.kubelet.environment`), and a
shell script runs with that environment and the files of its volumes (`pinnace.kubelet.shell`),
so `sh -c "cat /etc/config/keys"` prints the mounted ConfigMap key. A container with no command of
its own runs its image's entrypoint: `vish/stress` with args `-cpus 2` is `stress -cpus 2`.

A container with neither command nor args runs its image's default command when the image is
a well-known one (`IMAGE_COMMANDS`): busybox's and alpine's `sh`, which with no terminal reads
nothing and exits 0 at once; nginx, httpd and redis serve until stopped.

A program the model does not know (`python3 worker.py`, a script it cannot parse) has an
explicit outcome rather than none: it runs as long as `unknown-run-seconds` says and exits with
`unknown-exit-code`; without them, a container that is to finish (every container of a pod
with restartPolicy Never or OnFailure, such as a Job's, and every init container but a
sidecar) runs its node's `unknownCommands.runSeconds` (UNKNOWN_COMMAND_SECONDS unless the
cluster file says) and exits with its `exitCode` (0), while one that restarts Always (a
Deployment's server) serves until stopped. The node agent says which in an event
(CommandNotModelled) when the container starts, unless `run-seconds` says how long it runs.

A value that does not parse keeps the container from being created: it waits with the reason
CreateContainerConfigError and a message naming the annotation.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.core.pod import BEHAVIOUR_ANNOTATION_PREFIX
from pinnace.api.core.pod_shape import container_named
from pinnace.api.objects import Remembered
from pinnace.kubelet.commands import (
    EXIT_CODE_SIGTERM,
    SERVERS,
    SHELLS,
    CommandRun,
    UnknownOutcome,
)
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.environment import expand_command
from pinnace.kubelet.interning import Interned
from pinnace.kubelet.runtime import image_repository
from pinnace.kubelet.shapes import ShapeMemo
from pinnace.kubelet.shell import LogStream, ScriptRun, ShellContext, script_run
from pinnace.kubelet.usage import Curve, UsageSyntaxError, parse_curve

ANNOTATION_PREFIX = BEHAVIOUR_ANNOTATION_PREFIX
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
STOP_SECONDS = ANNOTATION_PREFIX + "stop-seconds"
LOG = ANNOTATION_PREFIX + "log"
CPU = ANNOTATION_PREFIX + "cpu"
MEMORY = ANNOTATION_PREFIX + "memory"
EPHEMERAL_STORAGE = ANNOTATION_PREFIX + "ephemeral-storage"
PIDS = ANNOTATION_PREFIX + "pids"
UNKNOWN_RUN_SECONDS = ANNOTATION_PREFIX + "unknown-run-seconds"
UNKNOWN_EXIT_CODE = ANNOTATION_PREFIX + "unknown-exit-code"
FOREVER = "forever"
UNKNOWN_COMMAND_SECONDS = 10.0
"""How long a program the model does not know runs in a container that is to finish, unless
the cluster file says otherwise."""


def node_unknown_outcome(config: NodeConfig) -> UnknownOutcome:
    """What a program the model does not know does, on a node of `config`, in a container
    that is to finish: its `unknownCommands` (`UNKNOWN_COMMAND_SECONDS` and 0 unless set)."""
    seconds = config.unknown_command_seconds
    return UnknownOutcome(
        UNKNOWN_COMMAND_SECONDS if seconds is None else seconds,
        config.unknown_command_exit_code or 0,
    )


COMMAND_NOT_MODELLED = "CommandNotModelled"
"""The reason of the event that says what became of a command the model does not know."""

ENTRYPOINTS: Mapping[str, tuple[str, ...]] = {"docker.io/vish/stress": ("/stress",)}
"""The entrypoints of the images Kubernetes' documentation runs with args only."""
IMAGE_COMMANDS: Mapping[str, tuple[str, ...]] = {
    "docker.io/library/busybox": ("sh",),
    "docker.io/library/alpine": ("/bin/sh",),
    "docker.io/library/ubuntu": ("/bin/bash",),
    "docker.io/library/debian": ("bash",),
    "docker.io/library/bash": ("bash",),
    "docker.io/library/nginx": ("nginx", "-g", "daemon off;"),
    "docker.io/library/httpd": ("httpd-foreground",),
    "docker.io/library/redis": ("redis-server",),
    "registry.k8s.io/pause": ("/pause",),
}
"""The commands well-known images run when a container gives neither command nor args (their
entrypoint and CMD)."""


class BehaviourError(ValueError):
    """An annotation of the model has a value that does not parse."""


NONE = Curve.constant(0.0)
ONE = Curve.constant(1.0)


# Slotted, as ContainerBehaviour: a node keeps one of each for every container it runs.
@dataclass(frozen=True, slots=True)
class ContainerUsage:
    """What a container uses, against the seconds since it started: CPU in nanocores, memory
    and ephemeral storage in bytes, PIDs as a count."""

    cpu: Curve = NONE
    memory: Curve = NONE
    ephemeral_storage: Curve = NONE
    pids: Curve = ONE


@dataclass(frozen=True, slots=True)
class ContainerBehaviour:
    run_seconds: float = math.inf
    exit_code: int = 0
    stop_seconds: float = 0.0
    stop_exit_code: int | None = EXIT_CODE_SIGTERM
    """What it exits with when it stops on SIGTERM (within its grace period); None: it does
    not stop on it, and is killed when its grace period ends (`CommandRun.stop_exit_code`)."""
    log: str = ""
    usage: ContainerUsage = ContainerUsage()
    later: LogStream | None = field(default=None, compare=False)
    """What its command prints after it starts (after a sleep, in an endless loop)."""
    not_modelled: str = ""
    """What of its command the model does not know and what became of it, for an event."""


def container_behaviour(
    pod: Mapping[str, Any],
    container: str,
    context: ShellContext | None = None,
    unknown: UnknownOutcome | None = None,
) -> ContainerBehaviour:
    """The model of `container` in `pod`, its command run in `context` (its environment,
    which `$(VAR)` in its command and args also refer to, and its files), a program it does
    not know taking `unknown` (the node's default for a container that is to finish) unless
    the pod's annotations say otherwise. Raises BehaviourError for a value that does not
    parse."""
    value = _model_annotations(pod, container).get

    run = value(RUN_SECONDS)
    exit_code = value(EXIT_CODE)
    stop = value(STOP_SECONDS)
    log = value(LOG)
    argv = container_argv(pod, container)
    outcome = _unknown_outcome(pod, container, value, unknown)
    if context is not None:
        argv = expand_command(argv, context.environment)
        context = dataclasses.replace(context, unknown=outcome)
    script = script_run(argv, context) if context is not None else _context_free_script(argv)
    not_modelled = ""
    if script is None:
        command = CommandRun(
            seconds=outcome.seconds, exit_code=outcome.exit_code, stop_exit_code=EXIT_CODE_SIGTERM
        )
        not_known = shlex.join(argv) or "its image's command"
    else:
        command = script.run
        not_known = "; ".join(script.unknown)
    if not_known and run is None:  # with its annotation's run time, nothing is guessed
        not_modelled = _not_modelled(not_known, outcome)

    def usage(key: str, resource: str, given: float | Curve) -> Curve:
        found = value(key)
        if found is not None:
            return _curve(*found, resource)
        return given if isinstance(given, Curve) else Curve.constant(given)

    memory = Curve.constant(command.memory_bytes)
    if command.memory_ramp_seconds:
        memory = Curve(((0.0, 0.0), (command.memory_ramp_seconds, command.memory_bytes)))

    behaviour = ContainerBehaviour(
        run_seconds=command.seconds if run is None else _run_seconds(*run),
        exit_code=command.exit_code if exit_code is None else _exit_code(*exit_code),
        stop_seconds=0.0 if stop is None else _seconds(*stop),
        stop_exit_code=_stop_exit_code(command.stop_exit_code, stop is not None),
        log=log[1] if log is not None else "\n".join(script.first_lines() if script else ()),
        later=script.stream() if script is not None and log is None else None,
        usage=ContainerUsage(
            cpu=usage(CPU, "cpu", command.cpu_cores * 1e9),
            memory=usage(MEMORY, "memory", memory),
            ephemeral_storage=usage(EPHEMERAL_STORAGE, "ephemeral-storage", command.storage_bytes),
            pids=usage(PIDS, "pids", command.pids),
        ),
        not_modelled=not_modelled,
    )
    # The runtime keeps one for every container a node runs: equal ones are one object, but
    # for those whose command prints later (a stream of its own).
    return behaviour if behaviour.later is not None else _SHARED(behaviour)


_SHARED: Interned[ContainerBehaviour] = Interned()


def _context_free_script(argv: Sequence[str]) -> ScriptRun | None:
    """`script_run(argv)` with no context, remembered by `argv` when it ends and only prints
    lines: its model then depends on nothing else, and its callers only read it (an endless
    loop's state and a write into a file are each run's own, so such a script is made anew)."""
    key = tuple(argv)
    script = _SCRIPTS.get(key)
    if script is None:
        script = script_run(argv)
        if script is not None and _shareable(script):
            _SCRIPTS.put(key, script)
    return script


def _shareable(script: ScriptRun) -> bool:
    return script.endless is None and all(isinstance(line, str) for _, line in script.lines)


_SCRIPTS: Remembered[ScriptRun] = Remembered(1024)


def _stop_exit_code(modelled: int | None, stop_annotated: bool) -> int | None:
    """A container said to stop some seconds after its SIGTERM (`STOP_SECONDS`) does, dying of
    the signal if its command's PID 1 would not have stopped on it."""
    if modelled is None and stop_annotated:
        return EXIT_CODE_SIGTERM
    return modelled


def context_free_behaviour(
    pod: Mapping[str, Any], container: str, unknown: UnknownOutcome | None = None
) -> ContainerBehaviour:
    """The model of `container` when what it runs does not read its context (`reads_context`
    is False for its `container_argv`: no command, or a server's), so that
    `container_behaviour` gives the same in any context: worked out once for all the pods of
    a shape (`pinnace.kubelet.shapes`) and their annotations but those of `DRAWN_KEYS`, whose
    values are then applied as `container_behaviour` applies them."""
    try:
        base = _CONTEXT_FREE.of(
            pod,
            lambda: container_behaviour(_undrawn(pod), container, None, unknown),
            container,
            unknown,
        )
        drawn = {
            key: found
            for key, found in _model_annotations(pod, container).items()
            if key in DRAWN_KEYS
        }
        return _with_drawn(base, drawn) if drawn else base
    except BehaviourError:
        # Of several values that do not parse, the error is the one the pod's model meets first.
        return container_behaviour(pod, container, None, unknown)


DRAWN_KEYS = frozenset((RUN_SECONDS, CPU, MEMORY, EPHEMERAL_STORAGE, PIDS))
"""The model's keys a workload generator draws a value of for each pod (`sim.arrivals`): the
pods of one template differ in them."""
_USAGE_FIELDS = (
    (CPU, "cpu", "cpu"),
    (MEMORY, "memory", "memory"),
    (EPHEMERAL_STORAGE, "ephemeral_storage", "ephemeral-storage"),
    (PIDS, "pids", "pids"),
)
"""Each usage key: the `ContainerUsage` field it sets, and the resource its amounts are of."""


def _undrawn(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """`pod` without the annotations of `DRAWN_KEYS`."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    kept = {
        name: text
        for name, text in annotations.items()
        if not (name.startswith(ANNOTATION_PREFIX) and model_key(name) in DRAWN_KEYS)
    }
    return {**pod, "metadata": {**meta, "annotations": kept}}


def _with_drawn(
    base: ContainerBehaviour, drawn: Mapping[str, tuple[str, str]]
) -> ContainerBehaviour:
    """`base`, the model without the annotations of `DRAWN_KEYS`, with `drawn` (key ->
    (annotation, value)) applied as `container_behaviour` applies them: a run time given
    guesses nothing about the command."""
    changes: dict[str, Any] = {}
    run = drawn.get(RUN_SECONDS)
    if run is not None:
        changes["run_seconds"] = _run_seconds(*run)
        changes["not_modelled"] = ""
    usage = {
        field: _curve(*drawn[key], resource)
        for key, field, resource in _USAGE_FIELDS
        if key in drawn
    }
    if usage:
        changes["usage"] = dataclasses.replace(base.usage, **usage)
    behaviour = dataclasses.replace(base, **changes)
    return behaviour if behaviour.later is not None else _SHARED(behaviour)


def reads_context(argv: Sequence[str], stdin_open: bool = True) -> bool:
    """Whether running `argv` may read its container's environment or files: anything but no
    command at all, one of the well-known servers (an image's own, `/pause`, `nginx -g
    "daemon off;"`), which serve whatever their arguments, or a shell with no script (busybox's
    `sh`), which reads only its stdin: nothing, unless the container keeps it open
    (`stdin_open`, taken as open unless said), with no `$` to expand."""
    if not argv or any("$" in word for word in argv):
        return bool(argv)
    program = argv[0].rsplit("/", 1)[-1]
    if program in SHELLS and (len(argv) == 1 or (len(argv) == 2 and argv[1] in ("-i", "-l"))):
        return stdin_open  # as `shell._sh` runs it
    return program not in SERVERS


def is_model_annotation(name: str) -> bool:
    """Whether the annotation `name` is one of the model's (the only ones it reads)."""
    return name.startswith(ANNOTATION_PREFIX)


_CONTEXT_FREE: ShapeMemo[ContainerBehaviour] = ShapeMemo(
    1024, lambda name: is_model_annotation(name) and model_key(name) not in DRAWN_KEYS
)

PEAK_KEYS = frozenset((MEMORY, EPHEMERAL_STORAGE, PIDS, LOG))
"""The model's keys its peaks (memory, disk with the log, PIDs) read; the other keys change
them only by failing to parse (no model at all)."""


def model_key(name: str) -> str:
    """The model's key an annotation sets, without its container's suffix."""
    return ANNOTATION_PREFIX + name[len(ANNOTATION_PREFIX) :].split(".", 1)[0]


def is_peak_annotation(name: str) -> bool:
    """Whether the annotation `name` sets one of `PEAK_KEYS`, for any container."""
    return name.startswith(ANNOTATION_PREFIX) and model_key(name) in PEAK_KEYS


def others_parse(pod: Mapping[str, Any]) -> bool:
    """Whether the value of each of the pod's model annotations but those of `PEAK_KEYS`
    parses, whichever container it is for: then none of them keeps any container's model
    from being made, and its peaks are those of the pods of its shape and peak annotations."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        for name, text in annotations.items():
            if name.startswith(ANNOTATION_PREFIX):
                check = _CHECKS.get(model_key(name))
                if check is not None:
                    check(name, str(text))
    except BehaviourError:
        return False
    return True


_CHECKS: Mapping[str, Callable[[str, str], object]] = {
    RUN_SECONDS: lambda key, text: _run_seconds(key, text),
    EXIT_CODE: lambda key, text: _exit_code(key, text),
    STOP_SECONDS: lambda key, text: _seconds(key, text),
    CPU: lambda key, text: _curve(key, text, "cpu"),
    UNKNOWN_RUN_SECONDS: lambda key, text: _run_seconds(key, text),
    UNKNOWN_EXIT_CODE: lambda key, text: _exit_code(key, text),
}
"""How `container_behaviour` parses each key other than those of `PEAK_KEYS`."""


def _model_annotations(pod: Mapping[str, Any], container: str) -> dict[str, tuple[str, str]]:
    """The model's annotations that apply to `container`, by key without the container's
    suffix: (the annotation's name, its value), `<key>.<container>` winning over `<key>`.
    (A container's name has no dot, so only its own suffix ends the name with it.)"""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    found: dict[str, tuple[str, str]] = {}
    suffix = f".{container}"
    for name, text in annotations.items():
        if not name.startswith(ANNOTATION_PREFIX):
            continue
        if name.endswith(suffix):
            found[name[: -len(suffix)]] = (name, str(text))
        elif name not in found:
            found[name] = (name, str(text))
    return found


def _unknown_outcome(
    pod: Mapping[str, Any],
    container: str,
    value: Callable[[str], tuple[str, str] | None],
    default: UnknownOutcome | None,
) -> UnknownOutcome:
    """What a program the model does not know does in `container`: as its annotations say,
    else the node's default for a container that is to finish, else (restarted Always) it
    serves until stopped."""
    seconds, code = value(UNKNOWN_RUN_SECONDS), value(UNKNOWN_EXIT_CODE)
    default = default or UnknownOutcome(UNKNOWN_COMMAND_SECONDS)
    if seconds is None and _restarts_always(pod, container):
        fallback = UnknownOutcome(math.inf, default.exit_code)
    else:
        fallback = default
    return UnknownOutcome(
        fallback.seconds if seconds is None else _run_seconds(*seconds),
        fallback.exit_code if code is None else _exit_code(*code),
    )


def _restarts_always(pod: Mapping[str, Any], container: str) -> bool:
    """Whether the container is restarted whenever it exits: an app container of a pod with
    restartPolicy Always, or a sidecar (an ephemeral container never is)."""
    spec = pod.get("spec") or {}
    for c in spec.get("initContainers") or ():
        if c.get("name") == container:
            return bool(c.get("restartPolicy") == "Always")
    if any(c.get("name") == container for c in spec.get("ephemeralContainers") or ()):
        return False
    return (spec.get("restartPolicy") or "Always") == "Always"


def _not_modelled(command: str, outcome: UnknownOutcome) -> str:
    ran = (
        "it runs until stopped"
        if math.isinf(outcome.seconds)
        else f"it runs {seconds_value(outcome.seconds)}s, then exits {outcome.exit_code}"
    )
    return f'Pinnace does not model "{command}": {ran}'


def seconds_value(seconds: float) -> str:
    """The value of a seconds annotation (run-seconds, stop-seconds) for `seconds`: to the
    millisecond, without trailing zeros."""
    return f"{max(0.0, seconds):.3f}".rstrip("0").rstrip(".")


def container_argv(pod: Mapping[str, Any], container: str) -> list[str]:
    """The container's command then its args; without a command, the image's entrypoint when
    it is one of ENTRYPOINTS (others are unknown here)."""
    c = container_named(pod.get("spec") or {}, container)
    if c is None:
        return []
    image = image_repository(str(c.get("image") or ""))
    if not c.get("command") and not c.get("args") and image in IMAGE_COMMANDS:
        return list(IMAGE_COMMANDS[image])
    command = c.get("command") or list(ENTRYPOINTS.get(image, ()))
    return [str(word) for word in command + (c.get("args") or [])]


def _curve(key: str, text: str, resource: str) -> Curve:
    try:
        return parse_curve(text, resource)
    except UsageSyntaxError as e:
        raise BehaviourError(f'annotation {key}: invalid value "{text}": {e}') from None


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
            + (f' or "{FOREVER}"' if key.startswith((RUN_SECONDS, UNKNOWN_RUN_SECONDS)) else "")
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
