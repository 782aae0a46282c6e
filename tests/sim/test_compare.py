"""Comparing variants of a scenario (`pinnace simulate --compare`, pinnace.sim.compare).

The scenario: four nodes of 4 CPUs and 4 GiB, and six bare pods of 1 CPU and 1 GiB arriving
at random (three fit on a node, the eviction threshold taking some memory). kube-scheduler's
default scoring, LeastAllocated, spreads them over all four nodes; MostAllocated packs them
onto two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinnace.sim.variants import (
    VariantError,
    load_variants,
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
