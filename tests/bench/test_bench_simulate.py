"""`pinnace bench simulate --json`: the figures issue 16 asks for, and the CPU time beside the
wall time (on a shared machine the CPU time is what compares)."""

from __future__ import annotations

import json

from pinnace.bench import simulate


def test_a_small_churn_prints_its_figures_with_the_cpu_time() -> None:
    results = simulate.run(simulate.churn(nodes=3, pods=6, hours=0.05))
    assert results["scenario"] == "churn"
    assert results["nodes"] == 3
    assert 0 < results["pods"] <= 6  # Poisson arrivals: not all may come in time
    assert results["simulated_seconds"] == 180.0
    for key in ("wall_seconds", "speedup", "pods_per_second", "cpu_seconds", "rss_mib"):
        assert results[key] > 0
    assert results["pods_per_cpu_second"] > 0
    assert json.loads(simulate.render(results, as_json=True)) == results
    assert "pods created per CPU second" in simulate.render(results, as_json=False)
