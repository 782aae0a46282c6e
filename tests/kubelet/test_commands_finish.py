"""Workloads of the Kubernetes documentation whose commands must finish (or must not), on the
virtual clock with the whole control plane: the pi Job, indexed Jobs (the `rev` example with
its input from an init container, and one running a program the model does not know), and a
Deployment whose server the model does not know, which keeps running."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.options import LogOptions
from pinnace.cluster import ClusterOptions
from pinnace.kubelet.behaviour import (
    BehaviourError,
    container_argv,
    container_behaviour,
    context_free_behaviour,
    reads_context,
)
from pinnace.kubelet.config import node_configs
from pinnace.kubelet.shell import ShellContext

PODS = catalog.kind("", "pods")
EVENTS = catalog.kind("", "events")
JOBS = catalog.kind("batch", "jobs")
DEPLOYMENTS = catalog.kind("apps", "deployments")
SERVICES = catalog.kind("", "services")


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=1))
    yield c
    c.close()


def job(name: str, spec: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never", **spec}}, **more},
    }


def complete(cluster: SimulatedCluster, name: str) -> bool:
    found = cluster.run(cluster.client.get(JOBS, "default", name))
    conditions = (found.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


def read_log(cluster: SimulatedCluster, pod: dict[str, Any]) -> list[str]:
    """What `kubectl logs` shows of the pod's first container."""

    async def read() -> str:
        container = pod["spec"]["containers"][0]["name"]
        chunks = cluster.plane.nodes.read_log(pod, container, LogOptions())
        return "".join([chunk async for chunk in chunks])

    return cluster.run(read()).splitlines()


def logs(cluster: SimulatedCluster, job_name: str) -> list[str]:
    """The lines the Job's pods printed."""
    pods = cluster.run(cluster.client.list(PODS, "default"))["items"]
    return [
        line
        for pod in pods
        if (pod["metadata"].get("labels") or {}).get("job-name") == job_name
        for line in read_log(cluster, pod)
    ]


def test_the_pi_job_completes_and_prints_pi(cluster: SimulatedCluster) -> None:
    pi = {
        "name": "pi",
        "image": "perl:5.34.0",
        "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
    }
    cluster.run(cluster.client.create(JOBS, "default", job("pi", {"containers": [pi]})))
    cluster.wait(30)
    assert complete(cluster, "pi")
    [digits] = logs(cluster, "pi")
    assert digits.startswith("3.14159265358979323846") and len(digits) == 2001


def test_the_indexed_job_reverses_what_its_init_container_wrote(cluster: SimulatedCluster) -> None:
    mount = [{"mountPath": "/input", "name": "input"}]
    script = "items=(foo bar baz qux xyz)\necho ${items[$JOB_COMPLETION_INDEX]} > /input/data.txt\n"
    spec = {
        "initContainers": [
            {
                "name": "input",
                "image": "docker.io/library/bash",
                "command": ["bash", "-c", script],
                "volumeMounts": mount,
            }
        ],
        "containers": [
            {
                "name": "worker",
                "image": "docker.io/library/busybox",
                "command": ["rev", "/input/data.txt"],
                "volumeMounts": mount,
            }
        ],
        "volumes": [{"name": "input", "emptyDir": {}}],
    }
    body = job("indexed-job", spec, completions=5, parallelism=3, completionMode="Indexed")
    cluster.run(cluster.client.create(JOBS, "default", body))
    cluster.wait(30)
    assert complete(cluster, "indexed-job")
    assert sorted(logs(cluster, "indexed-job")) == sorted(["oof", "rab", "zab", "xuq", "zyx"])


def test_an_indexed_job_of_an_unknown_program_completes(cluster: SimulatedCluster) -> None:
    worker = {"name": "worker", "image": "example.com/worker:1", "command": ["python3", "work.py"]}
    body = job("work", {"containers": [worker]}, completions=3, completionMode="Indexed")
    cluster.run(cluster.client.create(JOBS, "default", body))
    cluster.wait(60)
    assert complete(cluster, "work")
    events = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    said = {e["message"] for e in events if e["reason"] == "CommandNotModelled"}
    assert said == {'Pinnace does not model "python3 work.py": it runs 10s, then exits 0'}


def test_an_unknown_program_with_its_run_time_annotated_is_not_said_to_be_guessed(
    cluster: SimulatedCluster,
) -> None:
    worker = {"name": "worker", "image": "example.com/worker:1", "command": ["python3", "work.py"]}
    body = job("timed", {"containers": [worker]}, completions=1)
    body["spec"]["template"]["metadata"] = {"annotations": {"sim.pinnace.dev/run-seconds": "30"}}
    cluster.run(cluster.client.create(JOBS, "default", body))
    cluster.wait(20)
    assert not complete(cluster, "timed")  # the annotation's 30 s, not the unknown program's 10
    cluster.wait(20)
    assert complete(cluster, "timed")
    events = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert [e for e in events if e["reason"] == "CommandNotModelled"] == []


def test_a_deployment_of_an_unknown_server_keeps_running(cluster: SimulatedCluster) -> None:
    labels = {"app": "api"}
    server = {"name": "api", "image": "example.com/api:2", "command": ["/usr/bin/api-server"]}
    body = {
        "metadata": {"name": "api"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [server]}},
        },
    }
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
    cluster.wait(600)
    [pod] = cluster.run(cluster.client.list(PODS, "default"))["items"]
    [status] = pod["status"]["containerStatuses"]
    assert pod["status"]["phase"] == "Running" and status["restartCount"] == 0
    assert "running" in status["state"]


def test_an_annotation_gives_an_unknown_program_its_outcome(cluster: SimulatedCluster) -> None:
    pod = {
        "metadata": {
            "name": "batch",
            "annotations": {
                "sim.pinnace.dev/unknown-run-seconds": "5",
                "sim.pinnace.dev/unknown-exit-code": "3",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "example.com/c", "command": ["crunch"]}],
        },
    }
    cluster.run(cluster.client.create(PODS, "default", pod))
    cluster.wait(10)
    found = cluster.run(cluster.client.get(PODS, "default", "batch"))
    [status] = found["status"]["containerStatuses"]
    assert found["status"]["phase"] == "Failed"
    assert status["state"]["terminated"]["exitCode"] == 3


def test_wget_reaches_a_service_with_ready_endpoints(cluster: SimulatedCluster) -> None:
    labels = {"app": "web"}
    web = {
        "metadata": {"name": "web", "labels": labels},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": labels, "ports": [{"port": 80}]},
    }
    empty = {
        "metadata": {"name": "nobody"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]},
    }
    for kind, body in ((PODS, web), (SERVICES, service), (SERVICES, empty)):
        cluster.run(cluster.client.create(kind, "default", body))
    cluster.wait(5)
    script = "wget -qO- http://web | head -n 4 | tail -n 1; wget -qO- http://nobody.default.svc"
    client = {
        "metadata": {"name": "client"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", script]}],
        },
    }
    cluster.run(cluster.client.create(PODS, "default", client))
    cluster.wait(5)
    found = cluster.run(cluster.client.get(PODS, "default", "client"))
    nobody = cluster.run(cluster.client.get(SERVICES, "default", "nobody"))["spec"]["clusterIP"]
    assert found["status"]["phase"] == "Failed"
    assert read_log(cluster, found) == [
        "<title>Welcome to nginx!</title>",
        f"wget: can't connect to remote host ({nobody}): Connection refused",
    ]


def test_a_bad_unknown_outcome_annotation_is_refused_naming_it() -> None:
    body = {
        "metadata": {"annotations": {"sim.pinnace.dev/unknown-run-seconds.c": "soon"}},
        "spec": {"containers": [{"name": "c", "image": "x", "command": ["crunch"]}]},
    }
    with pytest.raises(BehaviourError) as refused:
        container_behaviour(body, "c")
    assert str(refused.value) == (
        'annotation sim.pinnace.dev/unknown-run-seconds.c: invalid value "soon": '
        'must be a non-negative number of seconds or "forever"'
    )


@pytest.mark.parametrize(
    "container",
    [
        {"image": "registry.k8s.io/pause:3.10"},
        {"image": "nginx:1.27"},
        {"image": "busybox", "command": ["/usr/sbin/nginx", "-g", "daemon off;"]},
    ],
    ids=["pause", "nginx-image", "nginx-command"],
)
def test_a_server_runs_alike_whatever_its_container_sees(container: dict[str, Any]) -> None:
    # Its model is worked out once for all the pods of a shape, without their contexts.
    pod = {"metadata": {}, "spec": {"containers": [{"name": "c", **container}]}}
    argv = container_argv(pod, "c")
    assert not reads_context(argv)
    seen = ShellContext(environment={"HOME": "/root", "PORT": "80"}, hostname="p")
    assert context_free_behaviour(pod, "c") == container_behaviour(pod, "c", seen)


@pytest.mark.parametrize(
    "container",
    [
        {"image": "busybox"},
        {"image": "alpine:3.20"},
        {"image": "busybox", "command": ["/bin/sh", "-i"], "args": []},
        {"image": "bash", "command": ["bash", "-l"]},
    ],
    ids=["busybox", "alpine", "sh-i", "bash-l"],
)
def test_a_shell_without_a_script_reads_only_its_stdin(container: dict[str, Any]) -> None:
    # It reads nothing and exits at once, whatever its context, unless its stdin is open.
    pod = {"metadata": {}, "spec": {"containers": [{"name": "c", **container}]}}
    argv = container_argv(pod, "c")
    assert not reads_context(argv, stdin_open=False)
    assert reads_context(argv, stdin_open=True)
    seen = ShellContext(environment={"HOME": "/root", "ENV": "/etc/profile"}, hostname="p")
    assert context_free_behaviour(pod, "c") == container_behaviour(pod, "c", seen)
    waiting = container_behaviour(pod, "c", ShellContext(stdin_open=True))
    assert waiting != context_free_behaviour(pod, "c")


def test_what_may_read_its_context_is_modelled_in_it() -> None:
    assert reads_context(["sh", "-c", "nginx"])
    assert reads_context(["sh", "-c"], stdin_open=False)
    assert reads_context(["sh", "/script.sh"], stdin_open=False)
    assert reads_context(["sh", "-c", "$(SCRIPT)"], stdin_open=False)
    assert reads_context(["nginx", "-c", "$(CONF)"])
    assert reads_context(["cat", "/etc/hostname"])
    assert not reads_context([])


DRAWN_VALUES = {
    "sim.pinnace.dev/run-seconds": ["30", "1.5", "forever", "-2"],
    "sim.pinnace.dev/cpu": ["250m", "2", "ramp 100m 1 60s", "lots"],
    "sim.pinnace.dev/memory": ["268435456", "128Mi", "periodic 10Mi 1Gi 40s", "-5"],
    "sim.pinnace.dev/memory.c": ["64Mi"],
    "sim.pinnace.dev/pids": ["12"],
    "sim.pinnace.dev/exit-code": ["3", "x"],
    "sim.pinnace.dev/stop-seconds": ["5"],
}


@pytest.mark.parametrize("seed", range(40))
def test_a_shapes_model_with_each_pods_drawn_values_is_the_pods_own(seed: int) -> None:
    """The model is worked out once for the pods of a shape but for the values a workload
    generator draws for each (run time, usage), then those applied: the same model, or the
    same error, as working out each pod's on its own."""
    import random

    rng = random.Random(seed)
    annotations = {
        name: rng.choice(values) for name, values in DRAWN_VALUES.items() if rng.random() < 0.5
    }
    command = rng.choice([{}, {"command": ["sleep", "20"]}, {"command": ["/pause"]}])
    container = {"name": "c", "image": rng.choice(["app:1", "nginx:1.27"]), **command}
    pod = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": rng.choice(["Never", "Always"]), "containers": [container]},
    }

    def model(work: Any) -> Any:
        try:
            return work()
        except BehaviourError as e:
            return str(e)

    alone = model(lambda: container_behaviour(pod, "c"))
    for _ in range(2):  # worked out, then remembered
        assert model(lambda: context_free_behaviour(pod, "c")) == alone
