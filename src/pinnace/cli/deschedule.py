"""`pinnace deschedule --policy FILE`: run the descheduler against a running `pinnace up` (or
any API server) over HTTP, once or every --interval as the descheduler's Deployment does.
Evictions go through the eviction API; --dry-run lists the pods it would evict and why.

A cycle's report lists the evictions, counts them, and counts the pods the evictor's checks
held back, by reason (minPodAge, no owner ...). With --interval a report is printed, under
its cycle's number, only when it differs from the previous cycle's: a quiet cluster does not
repeat the same lines every cycle.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field

from pinnace.api.status import StatusError
from pinnace.cli.scheduler import server_url
from pinnace.client.http import HTTPClient
from pinnace.client.transport import HTTPError
from pinnace.clock import Clock, parse_duration
from pinnace.descheduler.args import PolicyError
from pinnace.descheduler.policy import DeschedulerPolicy, load_file
from pinnace.descheduler.runner import CycleResult, Descheduler
from pinnace.sim.wording import counted

COMMAND = "pinnace deschedule"


def configure(deschedule: argparse.ArgumentParser) -> None:
    deschedule.description = (
        "Run the strategies of a DeschedulerPolicy (descheduler/v1alpha2) over the "
        "cluster and evict the pods they pick through the eviction API, so "
        "PodDisruptionBudgets hold. Once, or every --interval."
    )
    deschedule.add_argument("--policy", metavar="FILE", required=True, help="the policy file")
    deschedule.add_argument(
        "--kubeconfig",
        help="kubeconfig naming the API server ($KUBECONFIG, else ~/.pinnace/kubeconfig)",
    )
    deschedule.add_argument("--server", help="the API server's URL, instead of the kubeconfig's")
    deschedule.add_argument(
        "--dry-run", action="store_true", help="list the pods that would be evicted, evict none"
    )
    deschedule.add_argument(
        "--interval",
        metavar="DURATION",
        help='run a cycle every DURATION ("5m", "1h30m") until interrupted, printing a '
        "cycle's report when it differs from the previous one; default: once",
    )
    deschedule.set_defaults(run=run_deschedule)


def run_deschedule(args: argparse.Namespace) -> int:
    try:
        policy = load_file(args.policy)
        interval = _interval(args.interval)
        url = args.server or server_url(args.kubeconfig)
        asyncio.run(_deschedule(url, policy, args.dry_run, interval))
    except (PolicyError, ValueError) as e:
        print(f"{COMMAND}: {e}", file=sys.stderr)
        return 1
    except StatusError as e:
        print(f"Error from server ({e.reason}): {e.message}", file=sys.stderr)
        return 1
    except (HTTPError, OSError) as e:
        print(f"{COMMAND}: cannot reach the API server: {e}", file=sys.stderr)
        return 1
    return 0


def _interval(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text) / 1e9
    except ValueError as e:
        raise ValueError(f"--interval: {e}") from None
    if seconds <= 0:
        raise ValueError(f'--interval: must be greater than 0, not "{text}"')
    return seconds


async def _deschedule(
    url: str, policy: DeschedulerPolicy, dry_run: bool, interval: float | None
) -> None:
    client = HTTPClient(url, Clock(asyncio.get_running_loop()), field_manager="descheduler")
    descheduler = Descheduler(client, policy, dry_run)
    reporter = Reporter(dry_run, periodic=interval is not None)
    try:
        if interval is None:
            reporter(await descheduler.run_once())
        else:
            await descheduler.run(interval, reporter)
    finally:
        client.close()


Line = tuple[str, bool]
"""A line of a report, and whether it goes to stderr."""


@dataclass
class Reporter:
    """Prints each cycle's report; a periodic one only when it changed, under its cycle."""

    dry_run: bool
    periodic: bool = False
    cycle: int = 0
    _last: list[Line] = field(default_factory=list)

    def __call__(self, result: CycleResult) -> None:
        self.cycle += 1
        lines = report(result, self.dry_run)
        if self.periodic:
            if lines == self._last:
                return
            self._last = lines
            lines = [(f"Cycle {self.cycle}:", False), *lines]
        for text, error in lines:
            print(text, file=sys.stderr if error else sys.stdout)
        sys.stdout.flush()


def report(result: CycleResult, dry_run: bool) -> list[Line]:
    """The cycle's report: why it was skipped, the evictions, their count, the pods held back
    by reason (most first), why plugins had nothing to do, and the evictions the API
    refused."""
    lines: list[Line] = [(result.skipped, True)] if result.skipped else []
    if result.evictions:
        rows = [["NAMESPACE", "POD", "NODE", "STRATEGY", "REASON"]] + [
            [e.namespace, e.name, e.node, e.strategy, e.reason] for e in result.evictions
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append(("   ".join([*cells, row[-1]]), False))
    count = len(result.evictions)
    done = "would be evicted (dry run)" if dry_run else "evicted"
    lines.append((f"{counted(count, 'pod')} {done}.", False))
    held_back = sorted(result.held_back.items(), key=lambda item: (-item[1], item[0]))
    lines += [(f"{counted(n, 'pod')} held back: {reason}", False) for reason, n in held_back]
    lines += [(note, False) for note in result.notes]
    lines += [(f"not evicted: {failure}", True) for failure in result.failures]
    return lines
