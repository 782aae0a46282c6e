"""`pinnace deschedule` against `pinnace up --nodes 2` with objects kubectl created: --dry-run
lists what it would evict and why and evicts nothing; a real run evicts through the eviction
API and the deployment's pods come back on the other node. Bad policies exit 1 naming the
field."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.http.conftest import Cluster, launch, stop

from pinnace.cli.deschedule import Reporter
from pinnace.descheduler.evictor import Eviction
from pinnace.descheduler.runner import CycleResult

TAINTS = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: taints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
"""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-deschedule"), flags=("--nodes", "2"))
    yield running
    stop(running)


def deschedule(
    cluster: Cluster | None, workdir: Path, policy: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    (workdir / "policy.yaml").write_text(policy)
    target = ("--kubeconfig", str(cluster.kubeconfig)) if cluster else ()
    command = (sys.executable, "-m", "pinnace.cli.main", "deschedule", "--policy", "policy.yaml")
    return subprocess.run(
        [*command, *target, *flags],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=workdir,
    )


def pods_by_node(cluster: Cluster) -> list[tuple[str, str]]:
    out = cluster.ok(
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{'\\n'}{end}",
    )
    return sorted(tuple(line.split()) for line in out.splitlines())  # type: ignore[misc]


def test_dry_run_lists_then_a_run_evicts(nodes: Cluster) -> None:
    nodes.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    nodes.ok("run", "bare", "--image=nginx:1.27")
    nodes.ok("rollout", "status", "deployment/web", "--timeout=30s")
    nodes.ok("wait", "--for=condition=Ready", "pod/bare", "--timeout=30s")
    before = pods_by_node(nodes)
    tainted = next(node for name, node in before if name.startswith("web-"))
    nodes.ok("taint", "node", tainted, "dedicated=gpu:NoSchedule")
    on_tainted = sorted(n for n, node in before if node == tainted and n.startswith("web-"))
    count = len(on_tainted)
    # The bare pod has no controller: held back, if it is on the tainted node too.
    bare = ["1 pod held back: pod does not have any ownerRefs"] * (dict(before)["bare"] == tainted)

    # Pods younger than minPodAge are held back, and the dry run says so.
    young = TAINTS + "  pluginConfig:\n  - name: DefaultEvictor\n    args: {minPodAge: 1h}\n"
    held = deschedule(nodes, nodes.workdir, young, "--dry-run")
    assert held.returncode == 0, held.stderr
    assert held.stdout.splitlines() == [
        "0 pods would be evicted (dry run).",
        f"{count} pod{'s' if count > 1 else ''} held back: pod age is not older than MinPodAge: "
        "3600 seconds",
        *bare,
    ]

    dry = deschedule(nodes, nodes.workdir, TAINTS, "--dry-run")

    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "POD", "NODE", "STRATEGY", "REASON"]
    assert lines[len(lines) - len(bare) :] == bare
    lines = lines[: len(lines) - len(bare)]
    listed = [line.split(maxsplit=4) for line in lines[1:-1]]
    assert sorted(row[1] for row in listed) == on_tainted  # the bare pod has no controller
    for row in listed:
        assert row[0] == "default"
        assert row[2:] == [
            tainted,
            "RemovePodsViolatingNodeTaints",
            "untolerated taint dedicated=gpu:NoSchedule",
        ]
    assert lines[-1] == f"{count} pod{'s' if count > 1 else ''} would be evicted (dry run)."
    assert pods_by_node(nodes) == before

    done = deschedule(nodes, nodes.workdir, TAINTS)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1 - len(bare) :] == [
        f"{count} pod{'s' if count > 1 else ''} evicted.",
        *bare,
    ]
    nodes.ok("rollout", "status", "deployment/web", "--timeout=30s")
    nodes.ok("wait", "--for=delete", *(f"pod/{n}" for n in on_tainted), "--timeout=60s")
    web = [node for name, node in pods_by_node(nodes) if name.startswith("web-")]
    assert len(web) == 2 and tainted not in web
    events = nodes.ok("get", "events", "--field-selector", "reason=RemovePodsViolatingNodeTaints")
    assert f"pod eviction from {tainted} node by sigs.k8s.io/descheduler" in events


@pytest.mark.parametrize(
    ("policy", "error"),
    [
        (
            "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\n",
            'apiVersion: Unsupported value: "descheduler/v1alpha1": '
            'supported values: "descheduler/v1alpha2"',
        ),
        (
            TAINTS.replace("RemovePodsViolatingNodeTaints", "LowNodeUtilization"),
            'profiles[0].plugins.deschedule.enabled[0]: Invalid value: "LowNodeUtilization": '
            "not a deschedule plugin",
        ),
        (
            TAINTS.replace("[RemovePodsViolatingNodeTaints]", "[PodLifeTime]"),
            "profiles[0].pluginConfig[PodLifeTime].args.maxPodLifeTimeSeconds: Required value",
        ),
        (
            TAINTS.replace("RemovePodsViolatingNodeTaints", "RemoveEverything"),
            'profiles[0].plugins.deschedule.enabled[0]: Unsupported value: "RemoveEverything"',
        ),
    ],
)
def test_bad_policy_names_the_field(tmp_path: Path, policy: str, error: str) -> None:
    done = deschedule(None, tmp_path, policy, "--server", "http://127.0.0.1:9")
    assert done.returncode == 1
    assert done.stderr.startswith(f"pinnace deschedule: {error}"), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("interval", "error"),
    [
        ("soon", '--interval: time: invalid duration "soon"'),
        ("0s", '--interval: must be greater than 0, not "0s"'),
    ],
)
def test_bad_interval(tmp_path: Path, interval: str, error: str) -> None:
    done = deschedule(
        None, tmp_path, TAINTS, "--server", "http://127.0.0.1:9", "--interval", interval
    )
    assert done.returncode == 1
    assert done.stderr == f"pinnace deschedule: {error}\n"


def cycle(*evicted: str, held_back: dict[str, int] | None = None) -> CycleResult:
    evictions = [Eviction("default", name, "n1", "PodLifeTime", "too old") for name in evicted]
    return CycleResult(evictions, [], held_back=held_back or {})


def test_a_periodic_run_prints_a_cycle_only_when_its_report_changes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    reporter = Reporter(dry_run=True, periodic=True)
    young = {"pod age is not older than MinPodAge: 600 seconds": 3}
    for result in (cycle(held_back=young), cycle(held_back=young), cycle("web-1"), cycle()):
        reporter(result)
    assert capsys.readouterr().out.splitlines() == [
        "Cycle 1:",
        "0 pods would be evicted (dry run).",
        "3 pods held back: pod age is not older than MinPodAge: 600 seconds",
        "Cycle 3:",
        "NAMESPACE   POD     NODE   STRATEGY      REASON",
        "default     web-1   n1     PodLifeTime   too old",
        "1 pod would be evicted (dry run).",
        "Cycle 4:",
        "0 pods would be evicted (dry run).",
    ]


def test_a_single_run_prints_its_report_without_a_cycle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Reporter(dry_run=False)(cycle())
    assert capsys.readouterr().out == "0 pods evicted.\n"
