"""pinnace.forecast on synthetic series: the exponentially weighted mean against its recursion,
Holt-Winters on a seasonal series (statsmodels, the `forecast` extra, which the test extra
installs), the clear error without statsmodels, and the per-workload history."""

from __future__ import annotations

import doctest
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from pinnace.forecast import (
    HOLT_WINTERS,
    ForecastUnavailable,
    UsageHistory,
    ewma,
    holt_winters,
    workload_of,
)


def owned_pod(kind: str, name: str, **labels: str) -> dict[str, object]:
    return {
        "metadata": {
            "name": "p",
            "namespace": "shop",
            "labels": labels,
            "ownerReferences": [{"kind": kind, "name": name, "controller": True}],
        }
    }


def test_the_workload_is_the_controller_and_a_deployment_for_its_replica_sets() -> None:
    assert workload_of(owned_pod("ReplicaSet", "web-5d4f8", **{"pod-template-hash": "5d4f8"})) == (
        "shop/Deployment/web"
    )
    assert workload_of(owned_pod("ReplicaSet", "standalone")) == "shop/ReplicaSet/standalone"
    assert workload_of(owned_pod("Job", "backup")) == "shop/Job/backup"
    assert workload_of({"metadata": {"name": "lonely"}}) == "default/Pod/lonely"


def test_ewma_is_the_recursion() -> None:
    values = np.random.default_rng(7).uniform(0, 1000, 50)
    level = values[0]
    for x in values[1:]:
        level = 0.2 * x + 0.8 * level
    assert ewma(values, 0.2) == pytest.approx(level)
    assert ewma(np.full(10, 250.0)) == pytest.approx(250.0)
    with pytest.raises(ValueError, match="alpha"):
        ewma(values, 0)


def seasonal(n: int, period: int = 24) -> np.ndarray:
    """A daily cycle of 300m +- 200m on a slow upward trend, with a little noise."""
    t = np.arange(n)
    noise = np.random.default_rng(3).normal(0, 5, n)
    return 500 + 2 * t + 200 * np.sin(2 * np.pi * t / period) + noise


def test_holt_winters_follows_the_season() -> None:
    history, future = seasonal(24 * 6)[: 24 * 5], seasonal(24 * 6)[24 * 5 :]
    predicted = holt_winters(history, season_length=24, horizon=24)
    assert np.abs(predicted - future).max() < 30  # the swing is 400: the season is followed
    # The exponentially weighted mean cannot: it lags the swing.
    assert abs(ewma(history) - future[6]) > 100


def test_holt_winters_needs_two_seasons() -> None:
    with pytest.raises(ValueError, match="two seasons"):
        holt_winters(seasonal(30), season_length=24)


def test_without_statsmodels_the_seasonal_method_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "statsmodels.tsa.holtwinters", None)
    with pytest.raises(ForecastUnavailable) as raised:
        holt_winters(seasonal(96), season_length=24)
    assert "pip install 'pinnace[forecast]'" in str(raised.value)
    assert ewma(seasonal(96)) > 0  # the other method needs nothing


def test_history_keeps_the_mean_pod_of_each_workload() -> None:
    history = UsageHistory(limit=3)
    assert history.forecast("shop/Deployment/web") is None
    for t in range(5):
        history.record(
            30.0 * t,
            [("shop/Deployment/web", 100.0 * t, 1e6), ("shop/Deployment/web", 300.0 * t, 3e6)],
        )
    series = history.series("shop/Deployment/web")
    assert series.tolist() == [[60, 400, 2e6], [90, 600, 2e6], [120, 800, 2e6]]
    cpu, memory = history.forecast("shop/Deployment/web", alpha=1.0)
    assert (cpu, memory) == (800, 2e6)
    assert history.workloads() == ["shop/Deployment/web"]


def test_history_forgets_workloads_gone_from_the_samples() -> None:
    """A pod of its own as soon as a sample lacks it (its name never comes back); another
    workload once `limit` samples have gone without it: churn keeps it bounded."""
    history = UsageHistory(limit=3)
    for t in range(6):
        pods = [("shop/Pod/once", 10.0, 1.0)] if t == 0 else []
        if t < 2:
            pods.append(("shop/Job/batch", 20.0, 2.0))
        pods.append(("shop/Deployment/web", 30.0, 3.0))
        history.record(30.0 * t, pods)
        kept = history.workloads()
        assert ("shop/Pod/once" in kept) == (t == 0)
        assert ("shop/Job/batch" in kept) == (t < 4)  # last in sample 2 of 6
    assert history.forecast("shop/Job/batch") is None
    assert history.workloads() == ["shop/Deployment/web"]


def test_history_forecasts_with_holt_winters() -> None:
    history = UsageHistory()
    values = seasonal(24 * 5)
    for t, cpu in enumerate(values):
        history.record(30.0 * t, [("shop/Job/batch", float(cpu), 1e6)])
    forecast = history.forecast("shop/Job/batch", HOLT_WINTERS, season_length=24)
    assert forecast is not None
    assert forecast[0] == pytest.approx(seasonal(24 * 5 + 1)[-1], abs=30)
    assert forecast[1] == pytest.approx(1e6)


def test_holt_winters_forecasts_nothing_before_two_seasons() -> None:
    history = UsageHistory()
    for t, cpu in enumerate(seasonal(47)):
        history.record(30.0 * t, [("shop/Job/batch", float(cpu), 1e6)])
    assert history.forecast("shop/Job/batch", HOLT_WINTERS, season_length=24) is None
    history.record(30.0 * 47, [("shop/Job/batch", 500.0, 1e6)])
    assert history.forecast("shop/Job/batch", HOLT_WINTERS, season_length=24) is not None


def test_holt_winters_on_flat_usage_warns_of_nothing() -> None:
    """Usage that does not vary is fitted exactly; a scheduler forecasting at every cycle
    must not print statsmodels' warnings about its zero error each time."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predicted = holt_winters(np.full(8, 50.0), season_length=4)
    assert predicted == pytest.approx([50.0])


def test_the_guide_examples_run_as_shown() -> None:
    guide = Path(__file__).parents[2] / "docs" / "research.md"
    examples = "\n".join(re.findall(r"```pycon\n(.+?)```", guide.read_text(), flags=re.S))
    assert examples
    test = doctest.DocTestParser().get_doctest(examples, {}, guide.name, str(guide), 0)
    assert doctest.DocTestRunner().run(test).failed == 0
