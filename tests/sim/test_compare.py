"""Comparing variants of a scenario (`pinnace simulate --compare`, pinnace.sim.compare).

The scenario: four nodes of 4 CPUs and 4 GiB, and six bare pods of 1 CPU and 1 GiB arriving
at random (three fit on a node, the eviction threshold taking some memory). kube-scheduler's
default scoring, LeastAllocated, spreads them over all four nodes; MostAllocated packs them
onto two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait
from tests.sim.browser import RENDER_TIMEOUT, svgs_per_plot

import pinnace
from pinnace.cli.main import main
from pinnace.sim import Simulation
from pinnace.sim.compare import compare
from pinnace.sim.spread import t_quantile
from pinnace.sim.variants import (
    VariantError,
    load_variants,
    parse_variants,
    read_scenario,
    split,
    variant_scenarios,
)

SCENARIO = """\
apiVersion: sim.pinnace.dev/v1alpha1
kind: Scenario
metadata: {name: tiny}
spec:
  until: 2m
  cluster:
    nodePools:
    - name: general
      count: 4
      capacity: {cpu: "4", memory: 4Gi}
  timeline:
  - at: 1m
    uncordon: {node: general-4}
  workloads:
  - name: app
    template:
      apiVersion: v1
      kind: Pod
      spec:
        containers:
        - name: app
          image: app:1
          resources: {requests: {cpu: "1", memory: 1Gi}}
    arrivals: {poisson: {ratePerMinute: 12}}
    count: 6
  metrics: {interval: 10s}
"""
MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""
VARIANTS = """\
- name: least-allocated
- name: most-allocated
  override:
    cluster.schedulerConfig: most-allocated.yaml
"""
SEEDS = [1, 2, 3]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The scenario, MostAllocated's configuration and the variants, in one directory."""
    (tmp_path / "tiny.yaml").write_text(SCENARIO)
    (tmp_path / "most-allocated.yaml").write_text(MOST_ALLOCATED)
    (tmp_path / "variants.yaml").write_text(VARIANTS)
    return tmp_path


def variants_of(files: Path, text: str) -> list[Any]:
    """The scenarios `text` makes of tiny.yaml (paths relative to it)."""
    (files / "v.yaml").write_text(text)
    return variant_scenarios(read_scenario(files / "tiny.yaml"), load_variants(files / "v.yaml"))


# --- the variants file -------------------------------------------------------------------------


def test_an_override_merges_into_the_spec_at_its_path(files: Path) -> None:
    base, changed = variants_of(
        files,
        """\
- name: base
- name: changed
  override:
    cluster.nodePools[0].count: 6
    cluster: {controllerManager: {nodeMonitorGracePeriod: 20s}}
    cluster.nodePools[0].labels[topology.kubernetes.io/zone]: zone-b
    timeline: null
""",
    )
    assert base.scenario.cluster.pools["general"].count == 4
    assert len(base.scenario.timeline) == 1
    pool = changed.scenario.cluster.pools["general"]
    assert pool.count == 6  # the rest of the pool as it was
    assert pool.node.capacity == base.scenario.cluster.pools["general"].node.capacity
    assert pool.node.labels["topology.kubernetes.io/zone"] == "zone-b"
    assert changed.scenario.cluster.node_lifecycle.node_monitor_grace_period == 20.0
    assert changed.scenario.timeline == []  # null removes
    assert changed.scenario.workloads == base.scenario.workloads


def test_the_documentations_variants_are_variants_of_its_scenario() -> None:
    docs = Path(__file__).parents[2] / "docs" / "simulation.md"
    section = docs.read_text().partition("## Comparing variants")[2].partition("\n## ")[0]
    scenario, variants = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    made = variant_scenarios(read_scenario(yaml.safe_load(scenario)), parse_variants(variants))
    assert [v.variant.name for v in made] == ["least-allocated", "most-allocated", "bigger-nodes"]
    assert made[2].scenario.cluster.pools["general"].count == 2


def test_paths_split_as_field_paths_are_spelt() -> None:
    assert split("cluster.nodePools[0].labels[a.b/c]") == (
        "cluster", "nodePools", "0", "labels", "a.b/c",
    )  # fmt: skip
    for bad in ("", ".a", "a.", "a..b", "a[0", "a]b", "a[]"):
        assert split(bad) is None, bad


BAD = [
    ("{name: x}", "v.yaml:1: []: Invalid value: map[name:\"x\"]: must be a list of variants"),
    ("[]", "v.yaml:1: []: Required value: at least one variant"),
    ("- name: a\n- name: a\n", 'v.yaml:2: [1].name: Duplicate value: "a"'),
    ("- name: a\n  overide: {}\n", 'v.yaml:2: [0]: unknown field "overide"'),
    ("- override: {}\n", "v.yaml:1: [0].name: Required value"),
    (
        "- name: a\n  override:\n    seed: 3\n",
        "v.yaml:3: [0].override[seed]: Forbidden: the seeds are the comparison's",
    ),
    (
        "- name: a\n  override:\n    cluster..count: 3\n",
        'v.yaml:3: [0].override[cluster..count]: Invalid value: "cluster..count": must be a path',
    ),
    # a bad value: the line of the value inside the override
    (
        "- name: a\n- name: b\n  override:\n    cluster:\n      nodePools:\n"
        "      - {name: general, count: -1}\n",
        'v.yaml:6: variant "b": spec.cluster.nodePools[0].count: Invalid value: -1',
    ),
    (
        "- name: a\n- name: b\n  override:\n    metrics: {intervall: 3s}\n",
        'v.yaml:4: variant "b": spec.metrics: unknown field "intervall"',
    ),
    (
        "- name: a\n- name: b\n  override:\n    cluster.nodePools[3].count: 2\n",
        'v.yaml:4: variant "b": [1].override[cluster.nodePools[3].count]: Invalid value: 2: '
        "cluster.nodePools has 1 item: no item 3",
    ),
    (
        "- name: a\n- name: b\n  override:\n    until.x: 3\n",
        "until is a string, not an object or a list",
    ),
    (
        "- name: b\n  override:\n    cluster.schedulerConfig:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n"
        "      kind: KubeSchedulerConfiguration\n      profiles:\n      - pluginConfig:\n"
        "        - name: NodeResourcesFit\n          args: {scoringStrategy: {type: Random}}\n",
        'v.yaml:9: variant "b": spec.cluster.schedulerConfig.profiles[0].pluginConfig[0].args'
        '.scoringStrategy.type: Unsupported value: "Random"',
    ),
    # the variant makes the scenario's own step wrong: the scenario's line
    (
        "- name: a\n  override:\n    cluster.nodePools[0].count: 3\n",
        'tiny.yaml:13: with variant "a": spec.timeline[0].uncordon.node: Not found: "general-4"',
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_a_bad_variant_is_refused_naming_its_file_line_and_field(
    files: Path, text: str, message: str
) -> None:
    with pytest.raises(VariantError) as found:
        variants_of(files, text)
    assert message in str(found.value)
    assert str(found.value).startswith(str(files) + "/")


# --- the comparison ----------------------------------------------------------------------------


def test_most_allocated_packs_the_pods_on_fewer_nodes(files: Path) -> None:
    found = compare(files / "tiny.yaml", files / "variants.yaml", SEEDS, jobs=1).summary
    assert found["compareVersion"] == 1 and found["baseline"] == "least-allocated"
    least, most = (v["metrics"] for v in found["variants"])
    assert least["nodes.inUse.atEnd"]["mean"] == 4 and most["nodes.inUse.atEnd"]["mean"] == 2
    assert least["pods.scheduled"]["mean"] == most["pods.scheduled"]["mean"] == 6
    delta = found["deltas"][0]["metrics"]["nodes.inUse.atEnd"]
    assert (delta["mean"], delta["low"], delta["high"], delta["relative"]) == (-2, -2, -2, -0.5)
    # the imbalance: the packed nodes hold 3 of 3 pods' worth, the others none
    cpu = "imbalance.cpu.requested.atEnd"
    assert least[f"{cpu}.max"]["mean"] == 0.5 and least[f"{cpu}.min"]["mean"] == 0.25
    assert most[f"{cpu}.max"]["mean"] == 0.75 and most[f"{cpu}.min"]["mean"] == 0
    assert most[f"{cpu}.std"]["mean"] == pytest.approx(0.375)
    assert most["imbalance.cpu.requested.overTime.std"]["mean"] > least[f"{cpu}.std"]["mean"]
    assert [(r["variant"], r["seed"]) for r in found["runs"]] == [
        (name, seed) for name in ("least-allocated", "most-allocated") for seed in SEEDS
    ]


def test_each_figure_has_its_mean_and_t_interval_over_the_seeds(files: Path) -> None:
    found = compare(files / "tiny.yaml", files / "variants.yaml", SEEDS, jobs=1).summary
    values = [r["metrics"]["nodes.inUse.mean"] for r in found["runs"][:3]]
    assert len(set(values)) > 1  # the arrivals differ from seed to seed
    mean = sum(values) / 3
    sd = (sum((v - mean) ** 2 for v in values) / 2) ** 0.5
    stats = found["variants"][0]["metrics"]["nodes.inUse.mean"]
    half = t_quantile(2) * sd / 3**0.5
    assert stats["n"] == 3 and stats["mean"] == pytest.approx(mean)
    assert (stats["low"], stats["high"]) == pytest.approx((mean - half, mean + half))
    series = found["timeseries"]["most-allocated"]
    assert len(series["time"]) == 13  # every 10 s from 0 to 2 min
    assert series["series"]["nodes.inUse"]["max"][-1] == 2


def test_a_variant_without_override_is_the_run_pinnace_simulate_makes(files: Path) -> None:
    found = compare(files / "tiny.yaml", [{"name": "as-is"}], [5], jobs=1).summary
    with Simulation(files / "tiny.yaml", seed=5) as sim:
        report = sim.run()
    assert found["runs"][0]["eventLogSha256"] == report.summary["eventLogSha256"]
    assert found["deltas"] == []


def test_bad_seeds_are_refused(files: Path) -> None:
    for seeds in ([], [1, 1], [-1]):
        with pytest.raises(ValueError):
            compare(files / "tiny.yaml", files / "variants.yaml", seeds, jobs=1)
    with pytest.raises(VariantError, match=r"no spec\.until"):
        compare(files / "tiny.yaml", [{"name": "a", "override": {"until": None}}], [1], jobs=1)


# --- the command -------------------------------------------------------------------------------


def simulate(files: Path, *args: str) -> subprocess.CompletedProcess[str]:
    source = str(Path(pinnace.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": source}
    command = [sys.executable, "-m", "pinnace.cli.main", "simulate", "tiny.yaml", *args]
    return subprocess.run(
        command, cwd=files, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def without_wall_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_wall_times(v) for k, v in value.items() if k != "wallSeconds"}
    if isinstance(value, list):
        return [without_wall_times(v) for v in value]
    return value


def test_the_command_gives_the_same_comparison_whatever_the_jobs(files: Path) -> None:
    two = simulate(files, "--compare", "variants.yaml", "--seeds", "2", "--jobs", "2")
    assert two.returncode == 0, two.stderr
    assert "nodes.inUse.atEnd" in two.stdout and "-2 ± 0 (-50 %)" in two.stdout
    assert "Imbalance" in two.stdout and "comparison.json and comparison.html" in two.stdout
    out = files / "pinnace-compare-tiny"
    first = json.loads((out / "comparison.json").read_text())
    assert first["seeds"] == [0, 1]  # from the scenario's seed on
    assert "<script src=" not in (out / "comparison.html").read_text()

    one = simulate(files, "--compare", "variants.yaml", "--seed-list", "0,1", "--jobs", "1",
                   "--json", "--out", "again")  # fmt: skip
    assert one.returncode == 0, one.stderr
    printed = json.loads(one.stdout)
    assert printed == json.loads((files / "again" / "comparison.json").read_text())
    assert without_wall_times(printed) == without_wall_times(first)
    assert printed["wallSeconds"] > 0


def test_the_command_refuses_a_bad_variants_file_in_one_line(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(files)
    (files / "bad.yaml").write_text("- name: a\n  override:\n    cluster.nodePools[0].count: x\n")
    assert main(["simulate", "tiny.yaml", "--compare", "bad.yaml", "--seeds", "1"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        'pinnace simulate: bad.yaml:3: variant "a": spec.cluster.nodePools[0].count: '
        'Invalid value: "x": must be a whole number, at least 0'
    ]
    assert main(["simulate", "tiny.yaml", "--seeds", "3"]) == 1
    assert "need --compare" in capsys.readouterr().err
    assert not (files / "pinnace-compare-tiny").exists()


def test_the_page_draws_every_plot(files: Path, browser: webdriver.Chrome) -> None:
    compare(files / "tiny.yaml", parse_variants(VARIANTS), [1, 2], jobs=1).write(files / "out")
    page = files / "out" / "comparison.html"
    ids = [
        *(f"utilisation-{n}" for n in (1, 2, 3)),  # cpu, memory, pods
        "pending",
        "nodes-in-use",
        *(f"imbalance-{n}" for n in (1, 2, 3)),
        "distributions",
    ]
    browser.get(page.as_uri())
    WebDriverWait(browser, RENDER_TIMEOUT).until(lambda d: all(svgs_per_plot(d, ids).values()))
    assert all(count >= 2 for count in svgs_per_plot(browser, ids).values())
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    cells = [td.text for td in browser.find_elements("css selector", "table td")]
    assert "nodes.inUse.atEnd" in cells and "-2 ± 0 (-50 %)" in cells
