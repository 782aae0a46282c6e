"""Trace replay: each trace format read from its self-made sample (tests/sim/traces/), with its
columns, units and times as its documentation gives them; a trace replayed in a Simulation,
its pods arriving and finishing at the trace's times, shifted and scaled; and `pinnace record`
against `pinnace up`, its recording replayed."""

from __future__ import annotations

import gzip
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.http.conftest import launch, stop
from tests.sim import openb_synthetic
from tests.support import eventually, set_up_then

from pinnace.api import catalog
from pinnace.clock import Randomness
from pinnace.kubelet import behaviour
from pinnace.sim import Simulation
from pinnace.sim.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from pinnace.sim.traces.model import AddNode, RemoveNode, Trace, TracePod
from pinnace.sim.traces.replay import CreatePod, steps

TRACES = Path(__file__).parent / "traces"
OPENB = {"format": "alibaba-gpu-2023", "path": "alibaba-gpu-2023"}
ALIBABA_2018 = {
    "format": "alibaba-2018",
    "path": "alibaba-2018",
    "machineShape": {"memory": "256Gi"},
}
GOOGLE = {
    "format": "google-2019",
    "path": "google-2019",
    "machineShape": {"cpu": "64", "memory": "256Gi"},
}
RECORDING = {"format": "pinnace", "path": "pinnace/recording.jsonl"}
GI = 1024**3
PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
JOBS = catalog.kind("batch", "jobs")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")


def scenario(
    trace: dict[str, Any], *, pools: list[Any] | None = None, base: Path = TRACES
) -> Scenario:
    return parse_scenario(
        {
            "apiVersion": "sim.pinnace.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "replay"},
            "spec": {
                "cluster": {"nodePools": pools or []},
                "workloads": [{"name": "tr", "trace": trace}],
            },
        },
        base=str(base),
    )


def pods_of(trace: dict[str, Any]) -> dict[str, TracePod]:
    return {p.key: p for p in scenario(trace).traces[0].pods}


def arrivals(trace: Trace, seed: int = 1) -> dict[str, CreatePod]:
    return {s.pod.key: s for s in steps(trace, Randomness(seed)) if isinstance(s, CreatePod)}


# --- alibaba-gpu-2023 --------------------------------------------------------------------------


def test_openb_nodes_are_a_pool_with_their_gpus_as_an_extended_resource() -> None:
    nodes = {n.name: n for n in scenario(OPENB).cluster.nodes}
    assert list(nodes) == [f"openb-node-000{i}" for i in range(1, 5)]
    p100 = nodes["openb-node-0002"]
    assert (p100.capacity["cpu"], p100.capacity["memory"]) == ("64000m", "262144Mi")
    assert p100.capacity["nvidia.com/gpu"] == "2"
    assert p100.labels == {"pinnace.dev/node-pool": "tr", "nvidia.com/gpu.product": "P100"}
    cpu_only = nodes["openb-node-0001"]
    assert "nvidia.com/gpu" not in cpu_only.capacity
    assert "nvidia.com/gpu.product" not in cpu_only.labels
    assert [n.index for n in nodes.values()] == [1, 2, 3, 4]


def test_openb_pods_keep_their_requests_times_and_outcome() -> None:
    pods = pods_of(OPENB)
    assert [p.key for p in pods.values()] == [f"openb-pod-000{i}" for i in range(8)]
    sharing = pods["openb-pod-0001"]
    assert sharing.requests == {"cpu": "6000m", "memory": "12288Mi", "nvidia.com/gpu": "1"}
    assert sharing.limits == {"nvidia.com/gpu": "1"}
    assert (sharing.created, sharing.started, sharing.run) == (60, 90, 570)  # deleted at 660
    assert (sharing.exit_code, sharing.deleted, sharing.number) == (0, None, 2)
    constrained = pods["openb-pod-0004"]
    assert constrained.node_affinity == ("nvidia.com/gpu.product", ("V100M16", "V100M32"))
    assert constrained.limits == {"nvidia.com/gpu": "1", "cpu": "16000m", "memory": "32768Mi"}
    failed = pods["openb-pod-0005"]
    assert (failed.run, failed.exit_code) == (60, 1)
    never_scheduled = pods["openb-pod-0006"]
    assert (never_scheduled.started, never_scheduled.run, never_scheduled.deleted) == (
        None,
        None,
        1300,
    )


def test_openb_gpu_milli_asks_for_a_share_of_the_gpus() -> None:
    trace = scenario({**OPENB, "gpu": "milli"})
    p100 = next(n for n in trace.cluster.nodes if n.name == "openb-node-0002")
    assert p100.capacity["alibabacloud.com/gpu-milli"] == "2000"
    pods = {p.key: p for p in trace.traces[0].pods}
    assert pods["openb-pod-0001"].requests["alibabacloud.com/gpu-milli"] == "460"
    assert pods["openb-pod-0002"].requests["alibabacloud.com/gpu-milli"] == "8000"


def test_a_filter_keeps_the_records_every_condition_matches() -> None:
    kept = pods_of({**OPENB, "filter": {"qos": ["LS", "Guaranteed"], "num_gpu": {"min": 1}}})
    assert list(kept) == ["openb-pod-0000", "openb-pod-0004"]
    assert list(pods_of({**OPENB, "filter": {"pod_phase": "Failed"}})) == ["openb-pod-0005"]


# --- alibaba-2018 ------------------------------------------------------------------------------


def test_alibaba_2018_machines_are_nodes_of_their_first_valid_line() -> None:
    nodes = {n.name: n for n in scenario(ALIBABA_2018).cluster.nodes}
    assert list(nodes) == ["m-1", "m-2", "m-3"]
    assert nodes["m-2"].capacity["cpu"] == "64000m"
    assert nodes["m-2"].capacity["memory"] == str(128 * GI)  # mem_size 50 of 256Gi
    assert nodes["m-2"].labels["topology.kubernetes.io/zone"] == "2"
    # m_3's first line has the trace's invalid values (-1, 101): its second line counts.
    assert (nodes["m-3"].capacity["cpu"], nodes["m-3"].capacity["memory"]) == (
        "32000m",
        str(64 * GI),
    )


def test_alibaba_2018_reads_the_columns_in_schema_txt_order() -> None:
    """schema.txt, not trace_2018.md: container_meta has time_stamp third and app_du fourth;
    batch_task and batch_instance have job_name third and task_type fourth. Read in the
    markdown's order, c_1 would be created at "app_1" and no instance would find its task."""
    pods = pods_of(ALIBABA_2018)
    container = pods["c_1"]
    assert container.created == 0  # its earliest line's time_stamp (the file lists 120 first)
    assert container.labels == {"sim.pinnace.dev/deploy-unit": "app_1"}
    memory = round(256 * GI * 3.13 / 100)
    assert container.requests == {"cpu": "4000m", "memory": str(memory)}  # 400: four cores
    assert container.limits == {"cpu": "8000m"}
    assert (container.run, container.deleted) == (None, None)  # a service runs on
    first = pods["j_1/M1/ins_1"]
    assert first.requests == {"cpu": "1500m", "memory": str(round(256 * GI * 0.78 / 100))}
    assert first.annotations == {
        behaviour.CPU: "1200m",
        behaviour.MEMORY: str(round(256 * GI * 0.5 / 100)),
    }
    assert (first.created, first.run, first.exit_code) == (100, 200, 0)
    failed = pods["j_2/task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw==/ins_4"]
    assert (failed.requests["cpu"], failed.run, failed.exit_code) == ("2000m", 50, 1)
    cancelled = pods["j_1/R2_1/ins_5"]
    assert (cancelled.run, cancelled.deleted) == (None, 700)
    unfinished = pods["j_9/M9/ins_6"]  # end_time 0: past the trace; its task is not listed
    assert (unfinished.run, unfinished.deleted, unfinished.requests) == (None, None, {})


def test_alibaba_2018_include_and_a_filter_on_one_table() -> None:
    batch = pods_of({**ALIBABA_2018, "include": ["batch"]})
    assert "c_1" not in batch and len(batch) == 6
    # task_type is a column of batch instances: containers are kept whatever it says.
    typed = pods_of({**ALIBABA_2018, "filter": {"task_type": 12}})
    assert list(typed) == ["c_1", "j_2/task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw==/ins_4", "c_2"]


# --- google-2019 -------------------------------------------------------------------------------


def test_google_machines_scale_by_the_machine_shape_and_come_and_go() -> None:
    read = scenario(GOOGLE)
    nodes = {n.name: n for n in read.cluster.nodes}
    assert list(nodes) == ["m-1001", "m-1002"]
    # cpus 0.5 and memory 0.5 of 64 cores and 256Gi; the UPDATE at 600 s does not resize it.
    assert (nodes["m-1001"].capacity["cpu"], nodes["m-1001"].capacity["memory"]) == (
        "32000m",
        str(128 * GI),
    )
    events = [
        (type(e).__name__, e.at, e.config.name if isinstance(e, AddNode) else e.name)
        for e in read.traces[0].node_events
    ]
    # m-1003's REMOVE at 2^63 - 1 is after the trace.
    assert events == [
        ("AddNode", 1200, "m-1003"),
        ("RemoveNode", 1800, "m-1002"),
        ("AddNode", 2400, "m-1002"),
    ]


def test_google_instances_from_their_events_in_any_order() -> None:
    pods = pods_of(GOOGLE)
    finished = pods["100/0"]
    assert finished.requests == {"cpu": "1280m", "memory": str(round(0.01 * 256 * GI))}
    assert (finished.created, finished.started, finished.run, finished.exit_code) == (
        600,
        605,
        300,
        0,
    )
    assert finished.priority_class == "borg-production"
    assert finished.labels == {"sim.pinnace.dev/scheduling-class": "2"}
    assert (pods["100/1"].run, pods["100/1"].exit_code) == (90, 1)
    before = pods["200/0"]  # time 0: before the trace's window
    assert (before.created, before.run, before.deleted, before.priority_class) == (
        0,
        None,
        None,
        "borg-free",
    )
    killed = pods["300/0"]  # never scheduled
    assert (killed.run, killed.deleted, killed.priority_class) == (
        None,
        1100,
        "borg-best-effort-batch",
    )
    evicted = pods["300/1"]  # evicted at 1200, scheduled again at 1250, finished at 1500
    assert (evicted.started, evicted.run) == (1010, 490)
    assert evicted.requests["cpu"] == "2560m"  # the request it was last placed with
    alloc = pods["400/0"]  # its KILL is after the trace
    assert (alloc.run, alloc.deleted, alloc.priority_class) == (None, None, "borg-monitoring")
    assert list(pods_of({**GOOGLE, "filter": {"collection_type": 0, "end": "FINISH"}})) == [
        "100/0",
        "300/1",
    ]


def test_google_exports_in_gzip_shards_read_the_same(tmp_path: Path) -> None:
    lines = (TRACES / "google-2019/instance_events-000000000000.json").read_bytes().splitlines(True)
    for i, shard in enumerate((lines[:7], lines[7:])):
        with gzip.open(tmp_path / f"instance_events-00000000000{i}.json.gz", "wb") as f:
            f.writelines(shard)
    shutil.copy(TRACES / "google-2019/machine_events-000000000000.json", tmp_path)
    sharded = {p.key: p for p in scenario({**GOOGLE, "path": str(tmp_path)}).traces[0].pods}
    assert sharded == pods_of(GOOGLE)


# --- pinnace recordings ------------------------------------------------------------------------


def test_a_recording_replays_what_users_made_and_leaves_the_rest_to_controllers() -> None:
    read = scenario(RECORDING)
    assert [n.name for n in read.cluster.nodes] == ["rec-1", "rec-2"]
    trace = read.traces[0]
    joined = trace.node_events[0]
    assert isinstance(joined, AddNode) and (joined.at, joined.config.name) == (30, "rec-3")
    assert joined.config.taints == ()  # the lifecycle's not-ready taint is not the node's own
    assert trace.node_events[1] == RemoveNode(50, "rec-2")
    changes = [(c.at, c.kind, c.name, c.obj is None) for c in trace.changes]
    assert changes == [
        (0, "Namespace", "default", False),
        (0, "Deployment", "web", False),
        (0, "StatefulSet", "db", False),  # its pod db-0 is its controller's to make
        (5, "Pod", "solo", False),
        (8, "Pod", "sleeper", False),
        (20, "Deployment", "web", False),  # replicas 2 -> 3; the status change at 10 is not
        (40, "Pod", "sleeper", True),  # its deletion began at 40
        (60, "Job", "batch", False),
    ]
    by = {(c.at, c.name): c.obj for c in trace.changes}
    web = by[(0, "web")]
    assert web is not None and "status" not in web and "uid" not in web["metadata"]
    assert "annotations" not in web["metadata"]  # the revision is the controller's to give
    assert by[(20, "web")]["spec"]["replicas"] == 3  # type: ignore[index]
    solo = by[(5, "solo")]
    assert solo is not None and "priority" not in solo["spec"]  # admission gives it again
    assert "nodeName" not in solo["spec"]  # the simulation's scheduler places it
    assert solo["metadata"]["annotations"] == {
        behaviour.RUN_SECONDS: "10",  # Running at 6, Failed at 16
        behaviour.EXIT_CODE: "3",
    }
    job = by[(60, "batch")]
    assert job is not None and "selector" not in job["spec"]
    assert job["spec"]["template"]["metadata"]["labels"] == {"team": "a"}


# --- options and errors ------------------------------------------------------------------------


def test_time_scale_and_shift_map_the_trace_onto_the_simulated_clock() -> None:
    trace = scenario({**OPENB, "timeScale": 0.5, "timeShift": "30s"}).traces[0]
    created = arrivals(trace)
    sharing = created["openb-pod-0001"]
    assert (sharing.at, sharing.run, sharing.deleted) == (60, 285, None)
    assert (created["openb-pod-0006"].at, created["openb-pod-0006"].deleted) == (530, 680)


def test_a_negative_shift_starts_mid_trace_with_what_is_alive_then() -> None:
    trace = scenario({**OPENB, "timeShift": "-1000s"}).traces[0]
    created = arrivals(trace)
    assert "openb-pod-0001" not in created  # over at 660
    assert (created["openb-pod-0000"].at, created["openb-pod-0000"].run) == (0, 2600)
    assert (created["openb-pod-0006"].at, created["openb-pod-0006"].deleted) == (0, 300)
    assert (created["openb-pod-0007"].at, created["openb-pod-0007"].run) == (200, 290)


def test_sampling_follows_the_seed_and_limit_caps_the_pods() -> None:
    trace = scenario({**OPENB, "sample": 0.5}).traces[0]
    first = list(arrivals(trace, seed=1))
    assert list(arrivals(trace, seed=1)) == first
    assert any(list(arrivals(trace, seed=s)) != first for s in range(2, 6))
    assert 0 < len(first) < 8
    assert list(arrivals(scenario({**OPENB, "limit": 3}).traces[0])) == [
        "openb-pod-0000",
        "openb-pod-0001",
        "openb-pod-0002",
    ]


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ({"format": "alibaba-2019", "path": "x"}, 'format: Unsupported value: "alibaba-2019"'),
        (
            {**OPENB, "machineShape": {"memory": "1Gi"}},
            "machineShape: Forbidden: not an option of format alibaba-gpu-2023",
        ),
        ({**OPENB, "filter": {"cpu": 1}}, 'filter: unknown field "cpu"'),
        ({**OPENB, "sample": 0}, "sample: Invalid value: 0: must be greater than 0 and at most 1"),
        ({**OPENB, "path": "nowhere"}, "nowhere: no such directory"),
        ({"format": "google-2019", "path": "google-2019"}, "machineShape: Required value"),
        ({**ALIBABA_2018, "include": ["usage"]}, 'include[0]: Unsupported value: "usage"'),
    ],
)
def test_a_bad_trace_is_refused_naming_the_field(trace: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        scenario(trace)
    assert message in str(refused.value)


def test_a_bad_line_is_refused_naming_the_file_line_and_column(tmp_path: Path) -> None:
    shutil.copytree(TRACES / "alibaba-gpu-2023", tmp_path / "openb")
    pods = tmp_path / "openb/openb_pod_list_default.csv"
    lines = pods.read_text().splitlines()
    lines[2] = lines[2].replace("6000,", "6k,", 1)
    pods.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScenarioError) as refused:
        scenario({**OPENB, "path": "openb"}, base=tmp_path)
    assert f'{pods}:3: column cpu_milli: "6k" is not a number' in str(refused.value)


def test_a_trace_node_may_not_take_a_name_the_cluster_has() -> None:
    with pytest.raises(ScenarioError, match="node rec-1 of trace tr: the cluster has one so named"):
        scenario(RECORDING, pools=[{"name": "rec", "count": 1}])


# --- replayed in a simulation ------------------------------------------------------------------


def simulate(trace: dict[str, Any], seconds: float) -> Simulation:
    sim = Simulation(scenario(trace), seed=1)
    sim.advance(seconds)
    return sim


def test_openb_replayed_pods_arrive_and_finish_at_the_trace_times_scaled() -> None:
    with simulate({**OPENB, "timeScale": 0.1, "timeShift": "10s"}, 500) as sim:
        pods = {r.name: r for r in sim.observer.pods.values()}
        assert sorted(pods) == [f"tr-{n}" for n in range(1, 9)]
        sharing = pods["tr-2"]  # created at 60 s, ran 570 s
        assert (sharing.created, sharing.scheduled, sharing.finished) == (16, 16, 73)
        assert sharing.phase == "Succeeded"
        assert (pods["tr-6"].phase, pods["tr-6"].finished) == ("Failed", 106)  # 900 + 60
        assert pods["tr-7"].deleted == 140  # never scheduled in the trace: deleted at 1300
        assert pods["tr-5"].node == "openb-node-0003"  # the one V100M32
        pod = sim.run_coroutine(sim.client.get(PODS, "default", "tr-2"))
        assert pod["metadata"]["annotations"]["sim.pinnace.dev/trace-id"] == "openb-pod-0001"
        assert pod["metadata"]["labels"] == {"sim.pinnace.dev/trace": "tr"}
        assert sim.refused["tr"] == 0


def test_google_replay_brings_machines_and_priority_classes() -> None:
    with simulate({**GOOGLE, "timeScale": 0.1}, 150) as sim:
        nodes = lambda: {c.name for c in sim.plane.nodes.configs()}  # noqa: E731
        assert nodes() == {"m-1001", "m-1002", "m-1003"}  # m-1003 joined at 120
        sim.advance(200)
        assert nodes() == {"m-1001", "m-1003"}  # m-1002 left at 180
        sim.advance(300)
        assert nodes() == {"m-1001", "m-1002", "m-1003"}  # and came back at 240
        classes = sim.run_coroutine(sim.client.list(PRIORITY_CLASSES))["items"]
        assert {"borg-free", "borg-production"} <= {c["metadata"]["name"] for c in classes}
        production = sim.run_coroutine(sim.client.get(PODS, "default", "tr-1"))
        assert production["spec"]["priority"] == 120
        pods = {r.name: r for r in sim.observer.pods.values()}
        assert pods["tr-4"].deleted == 110  # 300/0, KILLed at 1100 before it was placed


def test_a_recording_replayed_makes_and_changes_objects_at_their_times() -> None:
    with simulate(RECORDING, 25) as sim:
        web = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
        assert web["spec"]["replicas"] == 3  # scaled at 20
        pods = {r.name: r for r in sim.observer.pods.values()}
        assert (pods["solo"].created, pods["solo"].phase, pods["solo"].finished) == (
            5,
            "Failed",
            15,
        )
        assert {r.owner_kind for r in pods.values() if r.name.startswith("web-")} == {"ReplicaSet"}
        assert len([r for r in pods.values() if r.name.startswith("web-")]) == 3
        sim.advance(70)
        pods = {r.name: r for r in sim.observer.pods.values()}
        assert pods["sleeper"].deleted == 40
        assert {c.name for c in sim.plane.nodes.configs()} == {"rec-1", "rec-3"}
        job = sim.run_coroutine(sim.client.get(JOBS, "default", "batch"))
        assert job["status"].get("succeeded") == 1  # created at 60, its pod runs 5 s


def test_the_synthetic_openb_trace_for_the_benchmark_reads_as_a_trace(tmp_path: Path) -> None:
    openb_synthetic.write(tmp_path, nodes=40, pods=300, seed=3)
    read = load_scenario(tmp_path / "scenario.yaml")
    assert (len(read.cluster.nodes), len(read.traces[0].pods)) == (40, 300)
    assert read.until == openb_synthetic.END


# --- pinnace record against pinnace up -------------------------------------------------------


def test_pinnace_record_against_pinnace_up_then_replayed(tmp_path: Path) -> None:
    cluster = launch(tmp_path, flags=("--nodes", "2"))
    out = tmp_path / "trace.jsonl"
    record = ["record", "--out", str(out), "--kubeconfig", str(cluster.kubeconfig)]
    recorder = subprocess.Popen(
        # Ctrl-C in a terminal: a process started while another thread of this one is in C's
        # system() inherits SIGINT ignored, and would record on after the interrupt below.
        set_up_then([sys.executable, "-m", "pinnace.cli.main", *record], default_sigint=True),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        eventually(lambda: '"kind":"Node"' in _text(out))
        cluster.ok("create", "deployment", "web", "--image=nginx", "--replicas=2")
        eventually(lambda: _seen(out, "Deployment", "web"))
        cluster.ok("scale", "deployment", "web", "--replicas=3")
        # nginx stops on SIGTERM at once (a `sleep` would wait out its 30 s grace period).
        cluster.ok("run", "solo", "--image=nginx", "--restart=Never")
        eventually(lambda: _seen(out, "Pod", "solo"))
        cluster.ok("delete", "pod", "solo", "--wait=false")
        eventually(lambda: _seen(out, "Pod", "solo", "DELETED"))
    finally:
        recorder.send_signal(signal.SIGINT)
        try:
            printed, errors = recorder.communicate(timeout=30)
        finally:  # a recorder that outlived the interrupt leaves no process behind either
            recorder.kill()
            stop(cluster)
    assert recorder.returncode == 0, errors
    assert printed.startswith("Recorded ")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["kind"] == "Recording" and lines[0]["server"] == cluster.url
    scaled = next(
        line["t"]
        for line in lines[1:]
        if line["object"]["kind"] == "Deployment" and line["object"]["spec"]["replicas"] == 3
    )
    solo = [line for line in lines[1:] if line["object"]["metadata"]["name"] == "solo"]
    deleting = next(
        line["t"] for line in solo if line["object"]["metadata"].get("deletionTimestamp")
    )

    with simulate({"format": "pinnace", "path": str(out)}, scaled + 30) as sim:
        assert {c.name for c in sim.plane.nodes.configs()} == {"pinnace-node-1", "pinnace-node-2"}
        web = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
        assert web["spec"]["replicas"] == 3
        pods = {r.name: r for r in sim.observer.pods.values()}
        assert len([r for r in pods.values() if r.owner_kind == "ReplicaSet"]) == 3
        assert pods["solo"].created == pytest.approx(solo[0]["t"], abs=1e-3)
        assert pods["solo"].deleted == pytest.approx(deleting, abs=1e-3)


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _seen(path: Path, kind: str, name: str, change: str = "") -> bool:
    for line in _text(path).splitlines()[1:]:
        event = json.loads(line)
        obj = event["object"]
        if (
            obj["kind"] == kind
            and obj["metadata"]["name"] == name
            and change in ("", event["type"])
        ):
            return True
    return False
