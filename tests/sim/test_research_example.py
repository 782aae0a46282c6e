"""examples/research: the usage scenario and its variants are valid, and, as docs/research.md
reads, every variant schedules the same pods while the packing policy keeps fewer nodes in
use than kube-scheduler's default scoring (a shorter run, one seed)."""

from __future__ import annotations

from pathlib import Path

from pinnace.sim.compare import design
from pinnace.sim.compare_run import run

RESEARCH = Path(__file__).parents[2] / "examples" / "research"


def test_the_research_example_compares_as_the_guide_says() -> None:
    planned = design(RESEARCH / "usage.yaml", RESEARCH / "variants.yaml", [1], until=1200)
    names = [v.variant.name for v in planned.variants]
    assert names == ["default", "target-load-packing", "risk-balancing", "policy-pack-by-usage"]
    default = run(planned.tasks[0]).metrics
    policy = run(planned.tasks[3]).metrics
    assert default["pods.scheduled"] == policy["pods.scheduled"]
    assert policy["nodes.inUse.mean"] < default["nodes.inUse.mean"] - 1
