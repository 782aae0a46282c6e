"""A simulation is a function of its scenario and seed: the same event log, byte for byte, run
after run, in this process or another (whatever PYTHONHASHSEED says), and a different one for
another seed. The cluster (tests/sim/small_cluster.py) has four nodes in two zones, the
scheduler and the controllers, and for a simulated hour: Deployments with pod
anti-affinity, topology spread and an HPA, a DaemonSet, a PDB, a Job, a crash-looping pod,
two nodes cordoned at once and drained through the eviction API, a scale-down, a
high-priority Deployment that preempts, and a deletion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.sim import small_cluster

import pinnace

SECONDS = 3600.0
HASH_SEEDS = ("1", "15")
"""Under these two, a set of the names node-1 and node-2 iterates in opposite orders, which
once made the node lifecycle controller taint cordoned nodes in a different order."""


def first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False)):
        if x != y:
            return f"line {i + 1}:\n  {x.decode()}\n  {y.decode()}"
    return f"one log is longer: {len(a.splitlines())} and {len(b.splitlines())} lines"


def in_another_process(seed: int, hash_seed: str, out: Path) -> subprocess.Popen[bytes]:
    source = str(Path(pinnace.__file__).parents[1])
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": source}
    script = Path(small_cluster.__file__)
    command = [sys.executable, str(script), str(seed), str(SECONDS), str(out)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE)


def test_the_same_seed_gives_the_same_event_log_in_any_process(tmp_path: Path) -> None:
    others = {h: in_another_process(7, h, tmp_path / f"{h}.jsonl") for h in HASH_SEEDS}
    digest, lines = small_cluster.run(7, SECONDS)
    again, lines_again = small_cluster.run(7, SECONDS)
    assert again == digest, first_difference(lines, lines_again)
    for hash_seed, process in others.items():
        printed, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        theirs = (tmp_path / f"{hash_seed}.jsonl").read_bytes()
        assert printed.decode().strip() == digest, first_difference(lines, theirs)
    kinds = {line.split(b'"kind":"')[1].split(b'"')[0] for line in lines.splitlines()}
    assert {b"Pod", b"Node", b"Job", b"Deployment", b"ReplicaSet", b"Event"} <= kinds


def test_another_seed_gives_another_event_log() -> None:
    assert small_cluster.run(7, 600)[0] != small_cluster.run(8, 600)[0]
