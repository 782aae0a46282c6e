"""The scheduler inside `pinnace up`, driven by real kubectl: Nodes and pods applied from
manifests are placed, `kubectl get events` shows Scheduled, a pod too big for every node shows
FailedScheduling with kube-scheduler's message, and `pinnace scheduler explain` tells why."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

NODES = """\
apiVersion: v1
kind: Node
metadata:
  name: worker-{i}
  labels: {{kubernetes.io/hostname: worker-{i}}}
status:
  capacity: {{cpu: "2", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {{cpu: "{cpu}"}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # The module's Nodes are bare objects with no kubelet behind them: without long grace
    # periods the node lifecycle controller taints them unreachable (NoSchedule) 60 s after
    # they are made, as v1.32's does, and a slow machine reaches the later tests past that.
    grace = ("--node-startup-grace-period", "1h", "--node-monitor-grace-period", "1h")
    running = launch(tmp_path_factory.mktemp("pinnace-up-scheduler"), flags=grace)
    yield running
    stop(running)


def events_of(cluster: Cluster, pod: str) -> list[tuple[str, str, str]]:
    listed = json.loads(
        cluster.ok("get", "events", "--field-selector", f"involvedObject.name={pod}", "-o", "json")
    )
    return [(e["type"], e["reason"], e["message"]) for e in listed["items"]]


def test_applied_pods_are_scheduled_and_the_big_one_is_not(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin="---\n".join(NODES.format(i=i) for i in (1, 2)))
    pods = "---\n".join(POD.format(name=f"web-{i}", cpu="500m") for i in range(3))
    cluster.ok("apply", "-f", "-", stdin=pods + "---\n" + POD.format(name="huge", cpu="3"))
    for i in range(3):
        node = eventually(
            lambda i=i: cluster.ok("get", "pod", f"web-{i}", "-o", "jsonpath={.spec.nodeName}")
        )
        assert node in ("worker-1", "worker-2")
        assert eventually(lambda i=i, node=node: events_of(cluster, f"web-{i}")) == [
            ("Normal", "Scheduled", f"Successfully assigned default/web-{i} to {node}")
        ]
    table = cluster.ok("get", "events", "--field-selector", "reason=Scheduled")
    assert "Successfully assigned default/web-0 to worker-" in table

    # No lower-priority victim frees enough cpu (v1.32's message, with its double full stop).
    message = (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.."
    )
    assert eventually(lambda: events_of(cluster, "huge")) == [
        ("Warning", "FailedScheduling", message)
    ]
    condition = cluster.ok(
        "get", "pod", "huge", "-o", 'jsonpath={.status.conditions[?(@.type=="PodScheduled")]}'
    )
    assert json.loads(condition)["reason"] == "Unschedulable"
    assert json.loads(condition)["message"] == message
    assert cluster.ok("get", "pod", "huge", "-o", "jsonpath={.spec.nodeName}") == ""


def explain(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """`pinnace scheduler explain ARGS` against the cluster: exit code, stdout, stderr."""
    code = main(["scheduler", "explain", *args, "--kubeconfig", str(cluster.kubeconfig)])
    out, err = capsys.readouterr()
    return code, out, err


def test_histogram_bounds_are_written_as_kubernetes_writes_them(cluster: Cluster) -> None:
    """`le="1"`, as the Go client writes it (not Python's `le="1.0"`), so a selector copied
    from a Kubernetes dashboard matches."""
    apiserver = cluster.ok("get", "--raw", "/metrics")
    assert 'le="1"' in apiserver
    assert 'le="60"' in apiserver
    scheduler = cluster.ok("get", "--raw", "/metrics/scheduler")
    assert 'scheduler_preemption_victims_bucket{le="1"} ' in scheduler
    assert 'scheduler_preemption_victims_bucket{le="64"} ' in scheduler
    assert 'le="1.0"' not in apiserver + scheduler


def test_pinnace_scheduler_explain_tells_why(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.ok("apply", "-f", "-", stdin="---\n".join(NODES.format(i=i) for i in (1, 2)))
    cluster.ok("apply", "-f", "-", stdin=POD.format(name="huge", cpu="3"))
    code, out, err = explain(cluster, capsys, "huge")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Pod default/huge (scheduler default-scheduler)"
    assert lines[1] == "Configuration: the cluster's scheduler's (kube-scheduler's defaults)"
    rows = {line.split()[0]: line for line in lines[lines.index("FILTER") + 2 :][:2]}
    assert set(rows) == {"worker-1", "worker-2"}
    header = lines[lines.index("FILTER") + 1].split()
    fit = header.index("NodeResourcesFit")
    assert all(row.split()[fit : fit + 2] == ["Insufficient", "cpu"] for row in rows.values())
    # The message FailedScheduling gives, preemption's dry run included.
    assert lines[-1] == (
        "Unschedulable: 0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod.."
    )

    cluster.ok("apply", "-f", "-", stdin=POD.format(name="small", cpu="100m"))
    node = eventually(lambda: cluster.ok("get", "pod", "small", "-o", "jsonpath={.spec.nodeName}"))
    data = json.loads(explain(cluster, capsys, "small", "-o", "json")[1])
    assert data["pod"] == "default/small" and data["boundTo"] == node
    assert node in data["best"]
    assert all(n["feasible"] for n in data["nodes"])

    assert explain(cluster, capsys, "nowhere") == (
        1,
        "",
        'Error from server (NotFound): pods "nowhere" not found\n',
    )
    other = POD.format(name="elsewhere", cpu="100m").replace(
        "spec:\n", "spec:\n  schedulerName: mine\n"
    )
    cluster.ok("apply", "-f", "-", stdin=other)
    assert explain(cluster, capsys, "elsewhere") == (
        1,
        "",
        'Error from server (BadRequest): no profile serves schedulerName "mine" (profiles: '
        "default-scheduler)\n",
    )


def test_pinnace_up_without_the_scheduler_leaves_pods_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    running = launch(tmp_path, flags=("--no-scheduler",))
    try:
        running.ok("apply", "-f", "-", stdin=NODES.format(i=1))
        running.ok("apply", "-f", "-", stdin=POD.format(name="idle", cpu="100m"))
        # No scheduler to ask: explain says what it explains with instead. (That the pod
        # stays pending is tests/test_cluster.py's, on the virtual clock.)
        code, out, err = explain(running, capsys, "idle")
        assert code == 0, err
        assert out.splitlines()[1] == (
            "Configuration: kube-scheduler's defaults (the server does not say what its "
            "scheduler runs)"
        )
    finally:
        stop(running)


def test_a_bad_scheduler_config_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NoSuchPlugin\n"
    )
    code = main(["up", "--in-memory", "--port", "0", "--scheduler-config", str(config)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.startswith(
        "pinnace up: --scheduler-config: profiles[0].plugins.score.enabled[0].name: "
        'Invalid value: "NoSuchPlugin": no such plugin'
    )


BAD_ARGS = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated, resourcez: [{name: cpu, weight: 1}]}
"""


@pytest.mark.parametrize(
    "command", [("scheduler", "--config"), ("up", "--in-memory", "--scheduler-config")]
)
def test_unknown_plugin_args_are_refused_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """As kube-scheduler decodes an in-tree plugin's args: strictly, naming the field."""
    config = tmp_path / "scheduler.yaml"
    config.write_text(BAD_ARGS)
    done = subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", *command, str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    flag = command[-1]
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"pinnace {command[0]}: {flag}: strict decoding error: decoding "
        ".profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin "
        'NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.resourcez"\n'
    )


CUSTOM_PLUGIN = """
from pinnace.scheduler import NodePlugin, Status
from pinnace.scheduler.framework import unschedulable


class Quarantine(NodePlugin):
    name = "Quarantine"

    def filter_node(self, state, pod, node):
        if "quarantine" in node.labels:
            return unschedulable("node(s) are in quarantine")
        return Status()
"""


def test_a_python_plugin_beside_the_config_file_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lab_plugins.py").write_text(CUSTOM_PLUGIN)
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n"
        "      - name: lab_plugins:Quarantine\n"
    )
    running = launch(tmp_path, flags=("--scheduler-config", str(config)))
    try:
        running.ok("apply", "-f", "-", stdin="---\n".join(NODES.format(i=i) for i in (1, 2)))
        running.ok("label", "node", "worker-1", "quarantine=yes")
        running.ok("label", "node", "worker-2", "quarantine=yes")
        running.ok("apply", "-f", "-", stdin=POD.format(name="careful", cpu="100m"))
        assert eventually(lambda: events_of(running, "careful")) == [
            (
                "Warning",
                "FailedScheduling",
                "0/2 nodes are available: 2 node(s) are in quarantine. preemption: 0/2 nodes are "
                "available: 2 No preemption victims found for incoming pod..",
            )
        ]
        running.ok("label", "node", "worker-2", "quarantine-")
        node = eventually(
            lambda: running.ok("get", "pod", "careful", "-o", "jsonpath={.spec.nodeName}")
        )
        assert node == "worker-2"

        # explain runs what the cluster's scheduler runs: the plugin, found beside its file
        # (this process is elsewhere), rejects worker-1 as the scheduler did.
        code, out, err = explain(running, capsys, "careful")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[1] == f"Configuration: the cluster's scheduler's ({config})"
        header = lines[lines.index("FILTER") + 1].split()
        row = next(line for line in lines if line.startswith("worker-1 "))
        assert "Quarantine" in header and row.endswith("node(s) are in quarantine")
        assert lines[-1] == "Selected: worker-2"

        # Another configuration is a what-if, and says so.
        defaults = tmp_path / "defaults.yaml"
        defaults.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        )
        code, out, err = explain(running, capsys, "careful", "--scheduler-config", str(defaults))
        assert code == 0, err
        assert out.splitlines()[1] == (
            f"Configuration: {defaults} (--scheduler-config; the cluster's scheduler may run "
            "another)"
        )
        assert "Quarantine" not in out
    finally:
        stop(running)


SELECTIVE = """\
apiVersion: v1
kind: Pod
metadata:
  name: picky
spec:
  nodeSelector: {disk: ssd}
  containers:
  - {name: app, image: nginx:1.27}
"""


PINNED = """\
apiVersion: v1
kind: Pod
metadata:
  name: probe-{i}
spec:
  nodeSelector: {{kubernetes.io/hostname: worker-{i}}}
  containers:
  - {{name: app, image: nginx:1.27}}
"""


def add_nodes_the_scheduler_has_seen(cluster: Cluster) -> None:
    """Two Nodes, and a pod pinned to each bound: so a pod made next is not tried while the
    scheduler's informer has yet to deliver them (a busy machine can delay it past kubectl's
    next call), which would add a FailedScheduling Event these tests do not expect."""
    cluster.ok("apply", "-f", "-", stdin="---\n".join(NODES.format(i=i) for i in (1, 2)))
    cluster.ok("apply", "-f", "-", stdin="---\n".join(PINNED.format(i=i) for i in (1, 2)))
    for i in (1, 2):
        assert eventually(
            lambda i=i: cluster.ok("get", "pod", f"probe-{i}", "-o", "jsonpath={.spec.nodeName}")
        )


def test_the_schedulers_events_are_events_k8s_io_v1(cluster: Cluster) -> None:
    """What v1.32's scheduler writes through its events library, as kubectl (core/v1) and the
    Python client's EventsV1Api read it."""
    add_nodes_the_scheduler_has_seen(cluster)
    cluster.ok("apply", "-f", "-", stdin=POD.format(name="tiny", cpu="10m"))
    assert eventually(lambda: events_of(cluster, "tiny"))
    node = cluster.ok("get", "pod", "tiny", "-o", "jsonpath={.spec.nodeName}")
    instance = f"default-scheduler-{socket.gethostname()}"

    listed = cluster.ok(
        "get", "events", "--field-selector", "involvedObject.name=tiny", "-o", "yaml"
    )
    [event] = yaml.safe_load(listed)["items"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"])
    assert (event["reportingComponent"], event["reportingInstance"]) == (
        "default-scheduler",
        instance,
    )
    assert (event["action"], event["reason"], event["type"]) == ("Binding", "Scheduled", "Normal")
    assert event["message"] == f"Successfully assigned default/tiny to {node}"
    assert event["source"] == {}
    for absent in ("firstTimestamp", "lastTimestamp", "count", "series", "related"):
        assert event.get(absent) is None, absent

    described = cluster.ok("describe", "pod", "tiny")
    lines = described.partition("\nEvents:\n")[2].splitlines()
    assert any(
        re.fullmatch(
            rf"\s+Normal\s+Scheduled\s+\S+\s+default-scheduler\s+"
            rf"Successfully assigned default/tiny to {node}",
            line,
        )
        for line in lines
    ), described

    events_v1 = client.EventsV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    [seen] = events_v1.list_namespaced_event("default", field_selector="regarding.name=tiny").items
    assert (seen.reporting_controller, seen.reporting_instance, seen.action, seen.note) == (
        "default-scheduler",
        instance,
        "Binding",
        f"Successfully assigned default/tiny to {node}",
    )
    assert (seen.regarding.kind, seen.regarding.name) == ("Pod", "tiny")
    assert seen.series is None and seen.deprecated_count is None
    assert seen.deprecated_source.component is None


def test_a_failure_repeated_on_the_same_pod_version_is_a_series(cluster: Cluster) -> None:
    """Each node label change sends the pod back to be tried (NodeAffinity registers it); the
    first failure writes the PodScheduled condition, so the second is about a new version of
    the pod (a new Event); the third, with the same message, repeats the second: its series."""
    add_nodes_the_scheduler_has_seen(cluster)
    cluster.ok("apply", "-f", "-", stdin=SELECTIVE)
    assert eventually(lambda: events_of(cluster, "picky"))
    v1 = client.EventsV1Api(config.new_client_from_config(str(cluster.kubeconfig)))

    def failures() -> list[Any]:
        selector = "regarding.name=picky,reason=FailedScheduling"
        items = v1.list_namespaced_event("default", field_selector=selector).items
        return sorted(items, key=lambda e: e.event_time)

    cluster.ok("label", "node", "worker-1", "tier=one", "--overwrite")
    assert eventually(lambda: len(failures()) == 2)
    cluster.ok("label", "node", "worker-1", "tier=two", "--overwrite")
    assert eventually(lambda: failures()[1].series is not None)
    first, second = failures()
    assert first.series is None
    assert second.series.count == 2
    assert second.series.last_observed_time > second.event_time
    assert second.note.startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node")
    described = cluster.ok("describe", "pod", "picky")
    assert re.search(
        r"Warning\s+FailedScheduling\s+\S+ \(x2 over \S+\)\s+default-scheduler", described
    )


QUEUED = """\
apiVersion: v1
kind: Pod
metadata:
  name: queued-{i}
  labels: {{app: queued}}
spec:
  nodeSelector: {{pool: queued}}
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {{cpu: 1500m}}
"""


def bound_to_queued_pool(cluster: Cluster) -> list[str]:
    listing = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=queued",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{'\\n'}{end}",
    )
    return sorted(line.split()[0] for line in listing.splitlines() if len(line.split()) == 2)


def test_pods_of_one_shape_waiting_for_room_each_get_it_as_it_frees(cluster: Cluster) -> None:
    """Three pods of one shape, room for one: the other two fail alike (the second as the
    first did, which the scheduler remembers while nothing changes). Each pod deleted makes
    room for the next, until all have had the node."""
    node = NODES.format(i="q").replace("worker-q}", "worker-q, pool: queued}")
    cluster.ok("apply", "-f", "-", stdin=node)
    cluster.ok("apply", "-f", "-", stdin="---\n".join(QUEUED.format(i=i) for i in range(3)))
    had_the_node: list[str] = []
    for _ in range(3):
        [running] = eventually(
            lambda: [p for p in bound_to_queued_pool(cluster) if p not in had_the_node] or None
        )
        assert cluster.ok("get", "pod", running, "-o", "jsonpath={.spec.nodeName}") == "worker-q"
        waiting = [f"queued-{i}" for i in range(3) if f"queued-{i}" not in [*had_the_node, running]]
        for pod in waiting:
            failed = eventually(
                lambda pod=pod: [e for e in events_of(cluster, pod) if e[1] == "FailedScheduling"]
            )
            assert "1 Insufficient cpu" in failed[0][2]
        had_the_node.append(running)
        cluster.ok("delete", "pod", running, "--grace-period=0", "--force")
    assert sorted(had_the_node) == ["queued-0", "queued-1", "queued-2"]
