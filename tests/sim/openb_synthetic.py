"""A synthetic trace in the alibaba-gpu-2023 ("openb") format, the size of the real one (1,523
nodes, 8,152 pods over about 149 days), to measure trace replay without downloading it.

The shapes follow the real files' mix: GPU nodes of the P100, T4, V100, G2 and G3 kinds and
CPU-only nodes; a few long-running pods created over the first 115 days, then the bulk over
the last 35 days with run times from seconds to days, GPU-sharing pods (num_gpu 1, gpu_milli
below 1000), multi-GPU pods, CPU-only pods, some that failed and some never scheduled.

    python tests/sim/openb_synthetic.py DIR [--nodes N] [--pods N]

writes DIR/openb_node_list_all_node.csv, DIR/openb_pod_list_default.csv and DIR/scenario.yaml
(the whole trace replayed on its own nodes, `until` its length), for
`pinnace bench simulate --scenario DIR/scenario.yaml`.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path
from typing import Any

NODES = 1523
PODS = 8152
END = 12_902_960
"""The last deletion_time of the real trace, in seconds: about 149 days."""
BULK_FROM = 9_900_000
NODE_SHAPES = (
    # (weight, cpu_milli, memory_mib, gpus, model)
    (22, 64000, 262144, 2, "P100"),
    (30, 104000, 524288, 2, "T4"),
    (6, 96000, 393216, 4, "T4"),
    (8, 32000, 131072, 4, "V100M16"),
    (6, 96000, 786432, 8, "V100M32"),
    (60, 96000, 393216, 8, "G2"),
    (12, 128000, 786432, 8, "G3"),
    (20, 96000, 524288, 0, "nan"),
)
POD_SHAPES = (
    # (weight, cpu_milli, memory_mib, num_gpu, gpu_milli)
    (30, 4000, 15258, 1, 0),  # GPU-sharing: gpu_milli drawn below 1000
    (25, 12000, 24576, 1, 1000),
    (10, 8000, 30517, 0, 0),
    (8, 3152, 5600, 1, 1000),
    (6, 16000, 65536, 2, 1000),
    (4, 32000, 131072, 4, 1000),
    (3, 88000, 327680, 8, 1000),
)
HEADER = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)


def write(directory: Path, nodes: int = NODES, pods: int = PODS, seed: int = 0) -> None:
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "openb_node_list_all_node.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        for i in range(nodes):
            _, cpu, memory, gpus, model = _pick(rng, NODE_SHAPES)
            out.writerow([f"openb-node-{i:04d}", cpu, memory, gpus, model])
    rows = sorted((_pod(rng) for _ in range(pods)), key=lambda row: row[7])
    with open(directory / "openb_pod_list_default.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(HEADER)
        for i, row in enumerate(rows):
            out.writerow([f"openb-pod-{i:04d}", *row])
    (directory / "scenario.yaml").write_text(
        "apiVersion: sim.pinnace.dev/v1alpha1\n"
        "kind: Scenario\n"
        "metadata: {name: openb-synthetic}\n"
        "spec:\n"
        f"  until: {END}s\n"
        "  cluster: {nodePools: []}\n"
        "  workloads:\n"
        "  - name: openb\n"
        "    trace: {format: alibaba-gpu-2023, path: .}\n"
        "  metrics: {interval: 1h}\n"
    )


def _pick(rng: random.Random, shapes: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    """One of `shapes`, each as likely as its first item says."""
    return rng.choices(shapes, weights=[s[0] for s in shapes])[0]


def _pod(rng: random.Random) -> list[object]:
    _, cpu, memory, gpus, share = _pick(rng, POD_SHAPES)
    if gpus == 1 and share == 0:
        share = rng.choice((50, 110, 220, 320, 460, 470, 650, 810))
    long_running = rng.random() < 0.01
    created = rng.randrange(0, BULK_FROM) if long_running else rng.randrange(BULK_FROM, END)
    run = END - created if long_running else min(END - created, rng.lognormvariate(6.5, 2.0))
    waited = rng.choice((0, 0, 0, 1, 2, 35))
    pending = not long_running and rng.random() < 0.04
    failed = not pending and rng.random() < 0.15
    qos = rng.choice(("LS", "LS", "BE", "BE", "Burstable", "Guaranteed"))
    phase = "Pending" if pending else "Failed" if failed else rng.choice(("Running", "Succeeded"))
    deleted = min(END, created + waited + int(run))
    scheduled = "" if pending else min(deleted, created + waited)
    return [cpu, memory, gpus, share, "", qos, phase, created, deleted, scheduled]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--pods", type=int, default=PODS)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    write(arguments.directory, arguments.nodes, arguments.pods, arguments.seed)
