"""What the fault tests share: the short/long switch, the server's figures, and a report line.

Each fault test runs a short version by default (a few seconds, for CI) and a long one when
PINNACE_FAULTS_LONG=1 is set (see README.md here). Each prints one `FAULTS …` line of figures;
`pytest -s` shows them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import requests
from tests.http.conftest import Cluster

LONG = os.environ.get("PINNACE_FAULTS_LONG", "") not in ("", "0")


def scale(short: int, long: int) -> int:
    """`long` in the long run, `short` otherwise."""
    return long if LONG else short


def rss_mib(pid: int) -> float:
    """The resident set size of process `pid`, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def readyz_seconds(cluster: Cluster) -> float:
    """How long `/readyz` takes to answer 200 on a new connection."""
    started = time.monotonic()
    answer = requests.get(f"{cluster.url}/readyz", timeout=30)
    assert answer.status_code == 200, answer.text
    return time.monotonic() - started


def report(test: str, **figures: object) -> None:
    shown = " ".join(f"{name}={_show(value)}" for name, value in figures.items())
    print(f"\nFAULTS {test} ({'long' if LONG else 'short'}): {shown}", flush=True)


def _show(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
