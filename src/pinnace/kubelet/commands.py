"""Well-known commands behave as they would for real, so documentation examples do what the
documentation says: `sleep 30` runs 30 s and exits 0, `sh -c "exit 1"` fails at once,
`sh -c "echo hello; sleep 5"` prints hello and ends after 5 s, `sleep infinity` never ends.

The programs `sleep`, `exit`, `true`, `false`, `stress`, `perl` (the documentation's pi Job)
and the servers of well-known images give their run time, exit code, output and what they use
(the most any of them uses); `pinnace.kubelet.shell` runs them, alone or in `sh -c` scripts,
with the shell's own commands (echo, cat, loops ...). Any other program takes the outcome the
node gives unknown programs (`UnknownOutcome`).

    perl -Mbignum=bpi -wle "print bpi(N)"      prints pi to N digits; 5 s for N = 2000
                                               (growing with N squared), exit 0
    nginx, httpd(-foreground), redis-server,   serve until stopped
    pause, agnhost, ...  (SERVERS)

`stress` is the load generator of the polinux/stress and vish/stress images the Kubernetes
documentation runs:

    stress --vm N --vm-bytes B [--vm-hang S]   N workers holding B bytes each (256M unless
                                               told); B takes stress's b/k/m/g suffixes, in
                                               powers of 1024: 150M is 150 MiB
    stress --cpu N                             N workers spinning: a demand of N cores
    stress --hdd N --hdd-bytes B               N workers writing B bytes each (1G unless told)
                                               to the container's writable layer
    stress --io N                              N workers calling sync (no usage modelled)
    stress --timeout T                         ends after T (s, m, h or d), exit code 0
    stress -cpus N                             vish/stress: a demand of N cores
    stress -mem-total Q                        vish/stress: Q (a quantity, 150Mi), allocated
                                               -mem-alloc-size (4Ki) every -mem-alloc-sleep
                                               (1ms), so 150Mi takes 38.4 s, then held

Short forms (-c, -m, -d, -i, -t) work too. Each worker is a process of its own besides the
stress process itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pinnace.clock import parse_duration
from pinnace.resources.lists import parse_quantity

SHELLS = ("sh", "bash", "ash", "dash")
EXIT_CODE_SIGTERM = 143
"""The exit code of a process SIGTERM killed (128 + 15): what a program the model does not
know is taken to exit with."""
EXIT_CODE_GO_RUNTIME = 2
"""What a Go program without a SIGTERM handler of its own exits with as a container's PID 1:
the Go runtime's handler re-raises the signal, which the kernel does not deliver to a PID 1
without a handler, and then exits 2 (runtime.dieFromSignal)."""
SERVERS: Mapping[str, int] = {
    "nginx": 0,
    "httpd": 0,
    "httpd-foreground": 0,
    "apache2-foreground": 0,
    "redis-server": 0,
    "pause": 0,
    "agnhost": EXIT_CODE_GO_RUNTIME,
    "serve_hostname": EXIT_CODE_GO_RUNTIME,
    "mysqld": 0,
    "postgres": 0,
    "docker-entrypoint.sh": 0,
}
"""The daemons of well-known images (and their entrypoints): they serve until stopped, and
handle SIGTERM, exiting with this code (nginx, httpd, redis, pause, MySQL and PostgreSQL shut
down and exit 0; agnhost's Go servers leave it to the Go runtime)."""
PI_SECONDS = 5.0
"""How long `perl -Mbignum=bpi -wle "print bpi(2000)"` takes, as the documentation's pi Job
does it in a few seconds."""
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_BPI = re.compile(r"\s*print\s+bpi\((\d{1,5})\)\s*;?\s*")


@dataclass(frozen=True)
class UnknownOutcome:
    """What a program the model does not know does: runs `seconds` (inf: until stopped), then
    exits with `exit_code`."""

    seconds: float
    exit_code: int = 0


@dataclass
class CommandRun:
    seconds: float = 0.0
    exit_code: int = 0
    output: list[str] = field(default_factory=list)
    cpu_cores: float = 0.0
    """CPU demand in cores."""
    memory_bytes: int = 0
    memory_ramp_seconds: float = 0.0
    """How long it takes to allocate memory_bytes from nothing (0: at once)."""
    storage_bytes: int = 0
    """Written to the container's writable layer."""
    pids: int = 1
    stop_exit_code: int | None = None
    """What the container exits with on SIGTERM, as its PID 1 takes it; None: PID 1 has no
    handler for it, so the kernel does not deliver it and the container runs on until it is
    killed at the end of its grace period (`pinnace.kubelet.shell.script_run` tells)."""


def simple_command(words: list[str], run: CommandRun) -> int | None:
    """Run one simple command; its exit status, or None when it is not understood."""
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name == "sleep":
        seconds = [duration(a) for a in args]
        if not seconds or any(s is None for s in seconds):
            return None
        run.seconds += sum(s for s in seconds if s is not None)
        return 0
    if name == "exit":
        code = int(args[0]) if args and args[0].isdigit() else 0
        run.exit_code = code % 256
        return run.exit_code
    if name == "true" and not args:
        return 0
    if name == "false" and not args:
        return 1
    if name == "stress":
        return _stress(args, run)
    if name in SERVERS:
        run.seconds = math.inf
        return 0
    if name.startswith("perl"):
        return _perl(args, run)
    return None


def _perl(args: list[str], run: CommandRun) -> int | None:
    """The pi one-liner of the documentation's Job; no other perl."""
    if "-Mbignum=bpi" not in args or not args[-1:] or not _BPI.fullmatch(args[-1]):
        return None
    if any(a not in ("-Mbignum=bpi", "-wle", "-lwe", "-le", "-e", "-w", "-l") for a in args[:-1]):
        return None
    found = _BPI.fullmatch(args[-1])
    assert found is not None
    digits = int(found.group(1))
    run.output.append(pi_digits(digits))
    run.seconds += max(0.1, PI_SECONDS * (digits / 2000) ** 2)
    return 0


def pi_digits(digits: int) -> str:
    """Pi to `digits` significant digits, rounded, as Math::BigFloat's bpi prints it."""
    digits = max(digits, 1)
    scale = 10 ** (digits + 10)

    def arccot(x: int) -> int:
        total = term = scale // x
        k, sign = 3, -1
        while term:
            term //= x * x
            total += sign * (term // k)
            sign, k = -sign, k + 2
        return total

    pi = 4 * (4 * arccot(5) - arccot(239))  # pi * 10**(digits + 10), to a few units
    text = str((pi // 10**10 + 5) // 10)  # `digits` digits, the last one rounded
    return text if digits == 1 else f"{text[0]}.{text[1:]}"


def duration(text: str) -> float | None:
    """sleep's argument: a number with an optional s/m/h/d unit, or infinity."""
    if text in ("infinity", "inf"):
        return math.inf
    unit = text[-1:] if text[-1:] in _DURATION_UNITS else ""
    try:
        value = float(text[:-1] if unit else text)
    except ValueError:
        return None
    return value * _DURATION_UNITS.get(unit, 1) if value >= 0 else None


_STRESS_FLAGS = {
    "-c": "cpu",
    "--cpu": "cpu",
    "-m": "vm",
    "--vm": "vm",
    "--vm-bytes": "vm-bytes",
    "--vm-hang": "vm-hang",
    "--vm-stride": "vm-stride",
    "--vm-keep": "",
    "-d": "hdd",
    "--hdd": "hdd",
    "--hdd-bytes": "hdd-bytes",
    "-i": "io",
    "--io": "io",
    "-t": "timeout",
    "--timeout": "timeout",
    "-v": "",
    "--verbose": "",
    "-q": "",
    "--quiet": "",
    "--backoff": "backoff",
    "-cpus": "cpus",
    "--cpus": "cpus",
    "-mem-total": "mem-total",
    "--mem-total": "mem-total",
    "-mem-alloc-size": "mem-alloc-size",
    "--mem-alloc-size": "mem-alloc-size",
    "-mem-alloc-sleep": "mem-alloc-sleep",
    "--mem-alloc-sleep": "mem-alloc-sleep",
    "-logtostderr": "",
    "--logtostderr": "",
}
_STRESS_SIZE_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _stress(args: list[str], run: CommandRun) -> int | None:
    """stress: what its workers use while it runs; None for an option it does not have."""
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        flag, _, inline = args[i].partition("=")
        option = _STRESS_FLAGS.get(flag)
        if option is None:
            return None
        if option and not inline:
            i += 1
            if i >= len(args):
                return None
            inline = args[i]
        if option:
            options[option] = inline
        i += 1
    try:
        cpu, vm, hdd, io = (int(options.get(k, "0")) for k in ("cpu", "vm", "hdd", "io"))
        vm_bytes = _stress_size(options.get("vm-bytes", "256M"))
        hdd_bytes = _stress_size(options.get("hdd-bytes", "1G"))
        mem_total = parse_quantity(options.get("mem-total", "0")).value()
        mem_step = parse_quantity(options.get("mem-alloc-size", "4Ki")).value()
        # a negative -mem-alloc-sleep is a time.Sleep that returns at once
        mem_sleep = max(0.0, parse_duration(options.get("mem-alloc-sleep", "1ms")) / 1e9)
        cpus = int(options.get("cpus", "0"))
    except ValueError:
        return None
    seconds = duration(options.get("timeout", "infinity"))
    if seconds is None or min(cpu, vm, hdd, io, vm_bytes, hdd_bytes, mem_total, cpus) < 0:
        return None
    if mem_step <= 0:
        return None
    if "cpus" not in options and "mem-total" not in options:
        # vish/stress logs through glog, to files unless told -logtostderr: nothing shows
        run.output.append(
            f"stress: info: [1] dispatching hogs: {cpu} cpu, {io} io, {vm} vm, {hdd} hdd"
        )
    run.seconds += seconds
    run.cpu_cores = max(run.cpu_cores, float(cpu + cpus))
    if vm * vm_bytes + mem_total > run.memory_bytes:
        run.memory_bytes = vm * vm_bytes + mem_total
        # vish/stress allocates step by step; stress's workers hold theirs at once
        run.memory_ramp_seconds = (mem_total // mem_step) * mem_sleep
    run.storage_bytes = max(run.storage_bytes, hdd * hdd_bytes)
    run.pids = max(run.pids, 1 + cpu + vm + hdd + io)
    if seconds < math.inf:
        run.output.append(f"stress: info: [1] successful run completed in {seconds:g}s")
    return 0


def _stress_size(text: str) -> int:
    """stress's sizes: a whole number with a b, k, m or g suffix in powers of 1024."""
    unit = text[-1:].lower()
    if unit in _STRESS_SIZE_UNITS:
        return int(text[:-1]) * _STRESS_SIZE_UNITS[unit]
    return int(text)
