"""KubeSchedulerConfiguration files: profiles by schedulerName, plugins enabled and disabled
per extension point and at multiPoint, plugin arguments, percentageOfNodesToScore, plugins of
one's own by import path, and errors that name the field."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import Scheduler
from pinnace.scheduler.config import ConfigError, build_profiles, load_file, parse
from pinnace.scheduler.plugins import default_profile

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def config(body: str = "") -> Any:
    return parse(HEADER + textwrap.dedent(body))


def profiles(body: str = "") -> list[Any]:
    return build_profiles(config(body), lambda binding: None)


def names(plugins: Any) -> list[str]:
    return [p.name for p in plugins]


def test_no_profiles_means_kube_schedulers_default_profile() -> None:
    (built,) = profiles()
    reference = default_profile(lambda binding: None)
    assert built.scheduler_name == "default-scheduler"
    for point in ("pre_enqueue", "pre_filter", "filter", "post_filter", "pre_score", "bind"):
        assert names(getattr(built, point)) == names(getattr(reference, point)), point
    assert [(p.name, w) for p, w in built.score] == [(p.name, w) for p, w in reference.score]
    assert config().percentage_of_nodes_to_score == 0  # adaptive


def test_profiles_by_scheduler_name_with_their_own_plugins() -> None:
    default, packer = profiles(
        """
        profiles:
        - schedulerName: default-scheduler
        - schedulerName: packer
          percentageOfNodesToScore: 100
          plugins:
            score:
              disabled:
              - name: NodeResourcesBalancedAllocation
              enabled:
              - name: NodeResourcesFit
                weight: 5
          pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: MostAllocated
                resources:
                - {name: cpu, weight: 1}
        """
    )
    assert (default.scheduler_name, packer.scheduler_name) == ("default-scheduler", "packer")
    assert packer.percentage_of_nodes_to_score == 100
    weights = {p.name: w for p, w in packer.score}
    assert "NodeResourcesBalancedAllocation" not in weights
    assert weights["NodeResourcesFit"] == 5
    fit = next(p for p in packer.filter if p.name == "NodeResourcesFit")
    assert fit.strategy == "MostAllocated"
    # Disabled for scoring only: its other extension points stay.
    assert "NodeResourcesFit" in names(packer.pre_filter)


def test_disabling_every_default_at_an_extension_point() -> None:
    (built,) = profiles(
        """
        profiles:
        - plugins:
            score:
              disabled: [{name: "*"}]
              enabled: [{name: ImageLocality}]
            multiPoint:
              disabled: [{name: NodePorts}]
        """
    )
    assert [(p.name, w) for p, w in built.score] == [("ImageLocality", 1)]
    assert "NodePorts" not in names(built.filter) + names(built.pre_filter)
    assert "TaintToleration" in names(built.filter)


def test_percentage_of_nodes_to_score_reaches_the_core() -> None:
    parsed = config("percentageOfNodesToScore: 50\n")
    with VirtualClock() as clock:
        core = Scheduler(
            build_profiles(parsed, lambda binding: None),
            clock,
            percentage_of_nodes_to_score=parsed.percentage_of_nodes_to_score,
        )
    assert core.percentage_of_nodes_to_score == 50


PER_NODE_PLUGIN = '''
from pinnace.scheduler import NodePlugin, Status
from pinnace.scheduler.framework import unschedulable


class PreferLabelled(NodePlugin):
    """Scores nodes by a label's value; refuses nodes labelled quarantine."""

    name = "PreferLabelled"

    def __init__(self, args=None):
        self.label = (args or {}).get("label", "rank")

    def filter_node(self, state, pod, node):
        if "quarantine" in node.labels:
            return unschedulable("node(s) are in quarantine")
        return Status()

    def score_node(self, state, pod, node):
        return int(node.labels.get(self.label, "0"))
'''


@pytest.fixture
def custom_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "lab_plugins.py").write_text(PER_NODE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lab_plugins:PreferLabelled"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def test_a_plugin_of_ones_own_by_import_path(custom_module: str) -> None:
    (built,) = profiles(
        f"""
        profiles:
        - plugins:
            multiPoint:
              enabled:
              - name: {custom_module}
                weight: 10
          pluginConfig:
          - name: {custom_module}
            args: {{label: tier}}
        """
    )
    assert "PreferLabelled" in names(built.filter)
    assert ("PreferLabelled", 10) in [(p.name, w) for p, w in built.score]
    with VirtualClock() as clock:
        core = Scheduler([built], clock)
        core.add_node(node("plain"))
        core.add_node(node("gold", tier="9"))
        core.add_node(node("sick", tier="10", quarantine="yes"))
        core.add_pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}})
        (result,) = core.schedule_pending()
    assert result.node_name == "gold"


def test_plugins_next_to_the_configuration_file_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "beside.py").write_text(PER_NODE_PLUGIN)
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        HEADER + "profiles:\n- plugins:\n    score:\n      enabled:\n"
        "      - name: beside:PreferLabelled\n"
    )
    (built,) = build_profiles(load_file(str(path)), lambda binding: None)
    assert ("PreferLabelled", 1) in [(p.name, w) for p, w in built.score]
    assert "PreferLabelled" not in names(built.filter)  # enabled at score only


MISDECLARED_PLUGIN = '''
class Misdeclared:
    """Says it filters but has no Filter methods."""

    name = "Misdeclared"

    def extension_points(self):
        return {"filter"}
'''


def test_a_plugin_declaring_a_point_without_its_methods_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "misdeclared.py").write_text(MISDECLARED_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as raised:
        profiles(
            """
            profiles:
            - plugins:
                filter:
                  enabled:
                  - name: misdeclared:Misdeclared
            """
        )
    assert str(raised.value) == (
        "profiles[0].plugins: Invalid value: \"misdeclared:Misdeclared\": plugin 'Misdeclared' "
        "declares filter without the methods"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Nope\n",
            'profiles[0].plugins.score.enabled[0].name: Invalid value: "Nope": no such plugin',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            'profiles[1].schedulerName: Duplicate value: "a"',
        ),
        (
            "percentageOfNodesToScore: 101\n",
            "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        ),
        (
            "profiles:\n- percentageOfNodesToScore: -1\n",
            "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
            "      scoringStrategy: {type: Random}\n",
            'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Random"',
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: Nope\n",
            'profiles[0].pluginConfig: Invalid value: "Nope": no enabled plugin has that name',
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
            'profiles[0].plugins: Invalid value: plugin "ImageLocality" does not extend filter',
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: no_such_mod:X\n",
            'profiles[0].plugins.score.enabled[0].name: Invalid value: "no_such_mod:X": '
            "cannot import no_such_mod",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - {name: ImageLocality, "
            "weight: -2}\n",
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: -2: must be >= 0",
        ),
        (
            "profiles:\n- plugins:\n    permit:\n      enabled: [{name: X}]\n",
            "profiles[0].plugins.permit: Unsupported value: Pinnace has no permit plugins",
        ),
        (
            "percentageOfNodeToScore: 50\nprofiles:\n- plugins:\n    scroe:\n"
            "      enabled: [{name: ImageLocality, wieght: 2}]\n  pluginConfigs: []\n",
            'strict decoding error: unknown field "percentageOfNodeToScore", '
            'unknown field "profiles[0].plugins.scroe", unknown field "profiles[0].pluginConfigs"',
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, wieght: 2}]\n"
            "      disabled: [{nmae: '*'}]\n",
            'strict decoding error: unknown field "profiles[0].plugins.score.enabled[0].wieght", '
            'unknown field "profiles[0].plugins.score.disabled[0].nmae"',
        ),
        (  # kube-scheduler's scheme_test: an in-tree plugin's args are decoded strictly
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
            "      scoringStrategy:\n        resources:\n        - Name: cpu\n"
            "          Weight: 1\n",
            "strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: "
            "decoding args for plugin NodeResourcesFit: strict decoding error: "
            'unknown field "scoringStrategy.resources[0].Name", '
            'unknown field "scoringStrategy.resources[0].Weight"',
        ),
        (  # the document's own first, then each plugin's
            "parallelizm: 4\nprofiles:\n- pluginConfig:\n  - name: InterPodAffinity\n"
            "    args: {hardPodAffinityWeight: 2}\n  - name: PodTopologySpread\n"
            "    args:\n      defaultingType: List\n      defaultConstraints:\n"
            "      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, skew: 2}\n",
            'strict decoding error: unknown field "parallelizm", '
            "decoding .profiles[0].pluginConfig[1]: strict decoding error: decoding args for "
            "plugin PodTopologySpread: strict decoding error: "
            'unknown field "defaultConstraints[0].skew"',
        ),
        (  # a key given twice, in the args or anywhere
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
            "      hardPodAffinityWeight: 2\n      hardPodAffinityWeight: 3\n",
            'strict decoding error: yaml: unmarshal errors: line 8: key "hardPodAffinityWeight" '
            "already set in map",
        ),
    ],
)
def test_errors_name_the_field(body: str, error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_profiles(parse(HEADER + body), lambda binding: None)
    assert str(raised.value).startswith(error)


def test_the_header_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'^apiVersion: Unsupported value: "v1"'):
        parse("apiVersion: v1\nkind: KubeSchedulerConfiguration\n")
    with pytest.raises(ConfigError, match=r'^kind: Unsupported value: "Config"'):
        parse("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Config\n")
    with pytest.raises(ConfigError, match=r"^not valid YAML"):
        parse("{")
    missing = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match=r"absent\.yaml: No such file or directory"):
        load_file(str(missing))
    bad_args = tmp_path / "bad.yaml"
    bad_args.write_text(
        HEADER + "profiles:\n- pluginConfig:\n  - name: ImageLocality\n    args: {x: 1}\n"
    )
    with pytest.raises(ConfigError, match="the plugin takes no arguments"):
        load_file(str(bad_args))
