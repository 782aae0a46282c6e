"""Readiness, liveness and startup probes of simulated containers: what a probe finds (the
outcome model) and when the kubelet probes (a `Prober` per probe, as pkg/kubelet/prober's
worker).

What a probe finds comes from pod annotations (prefix `sim.pinnace.dev/`; a key followed by
`.<container name>` applies to that container only and wins):

    sim.pinnace.dev/startup-seconds        how long the container takes to start serving: every
                                           probe fails before then (0)
    sim.pinnace.dev/readiness-fails-after  readiness probes fail from this long after the
                                           container started on ("never")
    sim.pinnace.dev/liveness-fails-after   liveness probes fail from this long after the
                                           container started on ("never")

Durations are seconds (`30`) or Go durations (`30s`, `1m30s`). Without annotations a probe
succeeds, except an exec probe the model understands:

- a file check (`cat F`, `ls F`, `test -e F`, `[ -f F ]`) of a file the container's own
  command creates (`touch F`, `echo ... > F`) and removes (`rm -f F`) between `sleep`s, which
  succeeds while the file exists: the liveness example of the Kubernetes documentation,
  `touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600` probed by
  `cat /tmp/healthy`, starts failing after 30 s;
- a well-known command (`pinnace.kubelet.commands`): `sh -c "exit 1"` fails, one that sleeps
  past timeoutSeconds times out.

Probe timing is the kubelet's: a probe runs every periodSeconds (ticks counted from when the
pod was admitted), not before initialDelaySeconds have passed since the container started;
successThreshold successes or failureThreshold failures in a row change its result; liveness
and readiness wait for the startup probe to succeed; readiness is also probed at once when the
container starts. A probe whose outcome cannot change before some future time sets no timer
until then, so steady healthy pods cost nothing.
"""

from __future__ import annotations

import itertools
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from pinnace.clock import Clock, Timer, parse_duration
from pinnace.kubelet.behaviour import ANNOTATION_PREFIX, BehaviourError
from pinnace.kubelet.commands import SHELLS
from pinnace.kubelet.shell import Now, command_run

STARTUP_SECONDS = ANNOTATION_PREFIX + "startup-seconds"
READINESS_FAILS_AFTER = ANNOTATION_PREFIX + "readiness-fails-after"
LIVENESS_FAILS_AFTER = ANNOTATION_PREFIX + "liveness-fails-after"
NEVER = "never"
_EPSILON = 1e-3


class ProbeType(StrEnum):
    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"

    @property
    def field(self) -> str:
        return self.lower() + "Probe"


@dataclass(frozen=True)
class Probe:
    """A container's probe as its spec (defaulted by the API) gives it."""

    type: ProbeType
    handler: Mapping[str, Any]
    initial_delay: int = 0
    period: int = 10
    timeout: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace: int | None = None

    @classmethod
    def of(cls, type: ProbeType, spec: Mapping[str, Any]) -> Probe:
        return cls(
            type,
            spec,
            initial_delay=spec.get("initialDelaySeconds") or 0,
            period=spec.get("periodSeconds") or 10,
            timeout=spec.get("timeoutSeconds") or 1,
            success_threshold=spec.get("successThreshold") or 1,
            failure_threshold=spec.get("failureThreshold") or 3,
            termination_grace=spec.get("terminationGracePeriodSeconds"),
        )


_PROBE_FIELDS = tuple((t, t.field) for t in ProbeType)
"""Each probe type and its container field, spelt out once (every container started asks)."""


def container_probes(container: Mapping[str, Any]) -> dict[ProbeType, Probe]:
    return {t: Probe.of(t, container[f]) for t, f in _PROBE_FIELDS if container.get(f)}


# --- annotations ------------------------------------------------------------------------------


def annotation(pod: Mapping[str, Any], key: str, container: str) -> tuple[str, str] | None:
    """(key as found, value) of a model annotation for `container`: `key.<container>` wins
    over `key`."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for name in (f"{key}.{container}", key):
        if name in annotations:
            return name, str(annotations[name])
    return None


def duration_annotation(found: tuple[str, str], *, never: bool = False) -> float:
    """Seconds of a duration annotation: a number of seconds (`30`) or a Go duration (`30s`,
    `1m30s`), or "never" where allowed, as infinity. Raises BehaviourError, naming the
    annotation, for anything else."""
    key, text = found
    if never and text == NEVER:
        return math.inf
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text) / 1e9
        except ValueError:
            seconds = -1
    if not 0 <= seconds < math.inf:
        raise BehaviourError(
            f'annotation {key}: invalid value "{text}": must be a non-negative duration '
            '("30", "30s", "1m30s")' + (f' or "{NEVER}"' if never else "")
        )
    return seconds


# --- outcome model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Failing:
    """The probe fails from `start` to `end` seconds after the container started."""

    start: float
    end: float
    message: str


class ProbeOutcomes:
    """What a probe finds at each age of the container: failing windows, success elsewhere."""

    def __init__(self, windows: Sequence[Failing] = ()) -> None:
        self.windows = tuple(windows)

    def at(self, age: float) -> str | None:
        """The failure message at `age` (seconds since the container started), None when the
        probe succeeds."""
        for w in self.windows:
            if w.start <= age + _EPSILON and age + _EPSILON < w.end:
                return w.message
        return None

    def next_change(self, age: float) -> float:
        """The first age after `age` at which the outcome may change (infinity if never)."""
        edges = [e for w in self.windows for e in (w.start, w.end) if e > age + _EPSILON]
        return min(edges, default=math.inf)


def probe_outcomes(
    pod: Mapping[str, Any], container: Mapping[str, Any], probe: Probe, pod_ip: str, now: Now
) -> ProbeOutcomes:
    """The model of `probe` of `container`, its command run at the time `now` tells. Raises
    BehaviourError for an annotation that does not parse."""
    name = container.get("name", "")
    down, unhealthy = _failure_messages(probe, container, pod_ip)
    windows: list[Failing] = []
    startup = annotation(pod, STARTUP_SECONDS, name)
    if startup is not None:
        windows.append(Failing(0.0, duration_annotation(startup), down))
    fails_after = {
        ProbeType.READINESS: READINESS_FAILS_AFTER,
        ProbeType.LIVENESS: LIVENESS_FAILS_AFTER,
    }
    key = fails_after.get(probe.type)
    after = annotation(pod, key, name) if key else None
    if after is not None:
        windows.append(Failing(duration_annotation(after, never=True), math.inf, unhealthy))
    command = (probe.handler.get("exec") or {}).get("command")
    if command:
        argv = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        windows += _exec_windows([str(w) for w in command], argv, probe.timeout, now)
    return ProbeOutcomes(windows)


def _failure_messages(probe: Probe, container: Mapping[str, Any], pod_ip: str) -> tuple[str, str]:
    """What the probe reports (as the kubelet's probers word it) when the container is not
    serving yet, and when it serves but is unhealthy."""
    handler = probe.handler
    if handler.get("exec"):
        return "", ""  # the command printed nothing
    for kind in ("httpGet", "tcpSocket", "grpc"):
        if handler.get(kind):
            action = handler[kind]
            break
    else:
        return "", ""
    host = action.get("host") or pod_ip
    address = f"{host}:{_port(action.get('port'), container)}"
    refused = f"dial tcp {address}: connect: connection refused"
    if kind == "httpGet":
        scheme = (action.get("scheme") or "HTTP").lower()
        path = action.get("path") or "/"
        url = f"{scheme}://{address}{path if path.startswith('/') else '/' + path}"
        return f'Get "{url}": {refused}', "HTTP probe failed with statuscode: 500"
    if kind == "grpc":
        down = f'timeout: failed to connect service "{address}" within {probe.timeout}s'
        return down, 'service unhealthy (responded with "NOT_SERVING")'
    return refused, refused


def _port(port: Any, container: Mapping[str, Any]) -> Any:
    """A named port resolved against the container's ports."""
    if isinstance(port, str) and not port.isdigit():
        for p in container.get("ports") or ():
            if p.get("name") == port:
                return p.get("containerPort")
    return port


_FILE_CHECKS = {
    "cat": "cat: can't open '{0}': No such file or directory",
    "ls": "ls: {0}: No such file or directory",
    "test": "",
    "[": "",
}


def _exec_windows(
    probe: list[str], container_argv: list[str], timeout: int, now: Now
) -> list[Failing]:
    """Failing windows of an exec probe: a file check against the file's life in the
    container's script, or a well-known command."""
    words = _script_words(probe)
    if words and len(words) == 1:
        checked = _checked_file(words[0])
        if checked is not None:
            program, path = checked
            present = _file_presence(container_argv, path)
            if present is not None:
                return _absent_windows(present, _FILE_CHECKS[program].format(path))
    run = command_run(probe, now=now)
    if run is None:
        return []
    if run.seconds > timeout:
        return [Failing(0.0, math.inf, f'command "{" ".join(probe)}" timed out')]
    if run.exit_code:
        return [Failing(0.0, math.inf, "\n".join(run.output))]
    return []


def _script_words(argv: list[str]) -> list[list[str]] | None:
    """The simple commands of `argv` (run directly or as an `sh -c` script), or None when the
    script is more than `;`/`&&` lists of words."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    text = argv[2] if program in SHELLS and len(argv) >= 3 and argv[1] == "-c" else None
    if text is None:
        return [argv] if argv else None
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in (";", "&&", "\n"):
            commands.append([])
        elif token in ("||", "|", "&"):
            return None
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _checked_file(words: list[str]) -> tuple[str, str] | None:
    """(program, path) when `words` checks that a file exists."""
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    if program == "[" and args[-1:] == ["]"]:
        args = args[:-1]
    if program in ("test", "[") and len(args) == 2 and args[0] in ("-e", "-f", "-s"):
        return program, args[1]
    if program in ("cat", "ls") and len(args) == 1:
        return program, args[0]
    return None


def _file_presence(argv: list[str], path: str) -> list[tuple[float, bool]] | None:
    """When (seconds after the start) the container's script creates and removes `path`, as
    (time, present) steps; None when the script does not create it."""
    commands = _script_words(argv)
    if not commands:
        return None
    now, steps = 0.0, []
    for words in commands:
        program, args = words[0].rsplit("/", 1)[-1], words[1:]
        if program == "sleep":
            run = command_run(words)
            if run is None:
                break
            now += run.seconds
        elif (program == "touch" and path in args) or _redirects_to(args, path):
            steps.append((now, True))
        elif program == "rm" and path in args:
            steps.append((now, False))
        elif program in ("while", "until", "for", "if"):
            break  # control flow: what follows is not a straight line in time
    return steps if any(present for _, present in steps) else None


def _redirects_to(args: list[str], path: str) -> bool:
    """`echo ok > F` or `echo ok >F` writes F."""
    return f">{path}" in args or (">", path) in itertools.pairwise(args)


def _absent_windows(steps: list[tuple[float, bool]], message: str) -> list[Failing]:
    windows, absent_since, present = [], 0.0, False
    for when, now_present in steps:
        if now_present and not present:
            if when > absent_since:
                windows.append(Failing(absent_since, when, message))
        elif present and not now_present:
            absent_since = when
        present = now_present
    if not present:
        windows.append(Failing(absent_since, math.inf, message))
    return windows


# --- the prober ------------------------------------------------------------------------------


class ProbeTarget(Protocol):
    """The container a prober probes, as its pod worker knows it."""

    @property
    def container_id(self) -> str:
        """The current run's ID ("" before the first start)."""

    @property
    def started_at(self) -> float: ...

    @property
    def probing(self) -> bool:
        """Running and past its postStart hook."""

    @property
    def started(self) -> bool:
        """Its startup probe succeeded (or it has none)."""


ResultHandler = Callable[["Prober", bool], None]
FailureHandler = Callable[["Prober", str], None]


class Prober:
    """One probe of one container on a timer: the kubelet's probe worker (doProbe). Results
    are kept per container run; `on_result` hears when the result changes, `on_failure` of
    every failed probe (for the Unhealthy event)."""

    def __init__(
        self,
        clock: Clock,
        probe: Probe,
        target: ProbeTarget,
        on_result: ResultHandler,
        on_failure: FailureHandler,
    ) -> None:
        self.clock = clock
        self.probe = probe
        self.target = target
        self.outcomes = ProbeOutcomes()
        self._on_result = on_result
        self._on_failure = on_failure
        self._origin = clock.now()
        """Ticks fall on origin + k * periodSeconds, as the kubelet's ticker."""
        self._initial = {
            ProbeType.READINESS: False,
            ProbeType.LIVENESS: True,
            ProbeType.STARTUP: None,
        }[probe.type]
        self.result: bool | None = self._initial
        self._container_id = ""
        self._last: bool | None = None
        self._run = 0
        self._on_hold = False
        self._stopped = False
        self._timer: Timer | None = None

    @property
    def _eligible(self) -> bool:
        t = self.target
        if self._stopped or self._on_hold or not t.probing:
            return False
        return not t.started if self.probe.type is ProbeType.STARTUP else t.started

    def wake(self) -> None:
        """The container changed (started, exited, got past its hook or startup probe): plan
        the next probe."""
        self._cancel()
        self._adopt_container()
        if self._eligible:
            self._schedule()

    def trigger(self) -> None:
        """Probe now if the probe may run now (the kubelet's manual run of a readiness probe
        for a container that is not ready yet), then carry on with the ticks."""
        self._adopt_container()
        if self._eligible and self._age() + _EPSILON >= self.probe.initial_delay:
            self._probe()
        self.wake()

    def resume(self, result: bool | None) -> None:
        """Carry on with a container run an earlier agent probed (it restarted): the result
        is the one its status showed, the successes and failures in a row count anew."""
        self._container_id = self.target.container_id
        self.result = result

    def stop(self) -> None:
        self._stopped = True
        self._cancel()

    def _age(self) -> float:
        return self.clock.now() - self.target.started_at

    def _adopt_container(self) -> None:
        """A new run of the container: its result starts over."""
        cid = self.target.container_id
        if cid and cid != self._container_id:
            self._container_id = cid
            self.result = self._initial
            self._on_hold = False

    def _schedule(self) -> None:
        now, started = self.clock.now(), self.target.started_at
        when = self._tick_after(max(now, started + self.probe.initial_delay))
        if when <= now + _EPSILON:
            when += self.probe.period  # this tick has been
        if self.result is True and (
            self._last is None or (self._last and self._run >= self.probe.success_threshold)
        ):
            # Successes change nothing: skip the ticks until the outcome can change.
            while self.outcomes.at(when - started) is None:
                change = self.outcomes.next_change(when - started)
                if change == math.inf:
                    return
                # The tick found may fall a hair before the change; the one after it then.
                later = self._tick_after(started + change)
                when = later if later > when else when + self.probe.period
        self._timer = self.clock.call_at(when, self._tick)

    def _tick_after(self, earliest: float) -> float:
        """The first tick at or after `earliest`."""
        period = self.probe.period
        return self._origin + math.ceil((earliest - self._origin) / period - _EPSILON) * period

    def _tick(self) -> None:
        self._timer = None
        self._adopt_container()
        if not self._eligible:
            return
        self._probe()
        if self._eligible and self._timer is None:
            self._schedule()

    def _probe(self) -> None:
        message = self.outcomes.at(self._age())
        success = message is None
        if message is not None:
            self._on_failure(self, message)
        if self._last == success:
            self._run += 1
        else:
            self._last, self._run = success, 1
        threshold = self.probe.success_threshold if success else self.probe.failure_threshold
        if self._run < threshold:
            return
        changed = self.result != success
        self.result = success
        if not success and self.probe.type is not ProbeType.READINESS:
            # The container will be restarted: no more probes until its next run.
            self._on_hold = True
            self._run = 0
        if changed:
            self._on_result(self, success)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
