"""The endpoints of `pinnace scheduler` and `pinnace controller-manager` processes on their
--secure-port, over HTTPS with a self-signed certificate, as kube-scheduler (10259: /healthz,
/livez, /readyz, /metrics) and kube-controller-manager (10257: /healthz) serve them to an
unauthenticated caller: what --authorization-always-allow-paths allows, 403 for the rest."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from tests.http.conftest import Process, launch, stop
from tests.support import eventually

from pinnace.api.core.componentstatus import ComponentHealth
from pinnace.apiserver.component_checks import probe_healthz

UNVERIFIED = ssl._create_unverified_context()
KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of GET `path`."""
    url = f"https://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, context=UNVERIFIED, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def forbidden(port: int, path: str) -> str:
    """The 403 an anonymous GET of `path` is answered with, from "cannot" on; its Status
    otherwise as kube-apiserver's responsewriters.Forbidden writes it."""
    code, content_type, text = get(port, path)
    status = json.loads(text)
    assert (code, content_type) == (403, "application/json")
    prefix = 'forbidden: User "system:anonymous" '
    assert status["message"].startswith(prefix)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": status["message"],
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    return str(status["message"]).removeprefix(prefix)


def serving(port: int, path: str) -> bool:
    """Whether `path` answers 200 (the process may not listen yet)."""
    try:
        return get(port, path)[0] == 200
    except urllib.error.URLError:
        return False


def test_a_scheduler_and_a_controller_manager_serve_their_health_checks(
    tmp_path: Path, processes: list[Process]
) -> None:
    cluster = launch(tmp_path, flags=("--no-scheduler", "--no-controllers"))
    try:
        kubeconfig = ("--kubeconfig", str(cluster.kubeconfig), "--bind-address=127.0.0.1")
        scheduler_port, manager_port = free_port(), free_port()
        scheduler = Process(
            tmp_path,
            "scheduler",
            "scheduler",
            *kubeconfig,
            f"--secure-port={scheduler_port}",
            "--authorization-always-allow-paths=/healthz*,/readyz,/livez,/metrics",
        )
        processes.append(scheduler)
        manager = Process(
            tmp_path,
            "controller-manager",
            "controller-manager",
            *kubeconfig,
            f"--secure-port={manager_port}",
            "--leader-elect=false",
        )
        processes.append(manager)

        eventually(lambda: serving(scheduler_port, "/readyz"), timeout=60)
        assert get(scheduler_port, "/healthz") == (200, "text/plain; charset=utf-8", "ok")
        assert get(scheduler_port, "/livez?verbose")[2] == "[+]ping ok\nlivez check passed\n"
        assert get(scheduler_port, "/readyz?verbose")[2] == (
            "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
        )
        assert get(scheduler_port, "/healthz/leaderElection")[2] == "ok"  # /healthz*
        assert forbidden(scheduler_port, "/livez/ping") == 'cannot get path "/livez/ping"'
        code, content_type, text = get(scheduler_port, "/metrics")
        assert (code, content_type) == (200, "text/plain; version=0.0.4; charset=utf-8")
        assert "# TYPE scheduler_pending_pods gauge" in text
        assert forbidden(scheduler_port, "/configz") == 'cannot get path "/configz"'

        eventually(lambda: serving(manager_port, "/healthz"), timeout=60)
        assert get(manager_port, "/healthz?verbose")[2] == "[+]ping ok\nhealthz check passed\n"
        # What kube-apiserver's ComponentStatus check of a component it does not run reads.
        probed = asyncio.run(probe_healthz("controller-manager", manager_port))
        assert probed == ComponentHealth("controller-manager", "True", "ok")
        # kube-controller-manager's only path open to anyone is /healthz.
        for path in ("/healthz/ping", "/readyz", "/metrics", "/configz"):
            assert forbidden(manager_port, path) == f"cannot get path {json.dumps(path)}"

        assert scheduler.terminate() == 0 and manager.terminate() == 0
    finally:
        stop(cluster)


def test_a_port_already_taken_is_refused_at_start(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = Process(
            tmp_path,
            "scheduler",
            "scheduler",
            "--kubeconfig",
            str(kubeconfig),
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
        )
        assert process.popen.wait(timeout=60) == 1
    assert "failed to listen on 127.0.0.1:" in process.log.read_text()


SCHEDULER_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaseDuration: 1m, resourceNamespace: scheduling}
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf, qps: 20}
profiles:
- schedulerName: packer
  plugins:
    multiPoint:
      disabled: [{name: ImageLocality}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu}]}}
"""


def test_a_scheduler_shows_its_defaulted_configuration_at_configz(
    tmp_path: Path, processes: list[Process]
) -> None:
    # kube-scheduler v1.32's /configz: the defaulted configuration, converted to its internal
    # type (Go field names), under "componentconfig"; a leader election flag overrides the
    # file's.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    config = tmp_path / "scheduler.yaml"
    config.write_text(SCHEDULER_CONFIG)
    port = free_port()
    scheduler = Process(
        tmp_path,
        "scheduler",
        "scheduler",
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        "--leader-elect-renew-deadline=20s",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--authorization-always-allow-paths=/configz",
    )
    processes.append(scheduler)
    eventually(lambda: serving(port, "/configz"), timeout=60)
    code, content_type, text = get(port, "/configz")
    assert (code, content_type) == (200, "application/json")
    shown = json.loads(text)["componentconfig"]
    assert shown["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert shown["Parallelism"] == 16 and shown["PercentageOfNodesToScore"] == 0
    assert shown["LeaderElection"] == {
        "LeaderElect": True,
        "LeaseDuration": "1m0s",
        "RenewDeadline": "20s",
        "RetryPeriod": "2s",
        "ResourceLock": "leases",
        "ResourceName": "kube-scheduler",
        "ResourceNamespace": "scheduling",
    }
    assert shown["ClientConnection"] == {
        "Kubeconfig": "/etc/kubernetes/scheduler.conf",
        "AcceptContentTypes": "",
        "ContentType": "application/vnd.kubernetes.protobuf",
        "QPS": 20,
        "Burst": 100,
    }
    assert (shown["PodInitialBackoffSeconds"], shown["PodMaxBackoffSeconds"]) == (1, 10)
    assert shown["Extenders"] is None and shown["DelayCacheUntilActive"] is False
    [profile] = shown["Profiles"]
    assert profile["SchedulerName"] == "packer"
    multi_point = profile["Plugins"]["MultiPoint"]
    assert multi_point["Disabled"] == [{"Name": "ImageLocality", "Weight": 0}]
    enabled = [(p["Name"], p["Weight"]) for p in multi_point["Enabled"]]
    assert enabled[:8] == [
        ("SchedulingGates", 0),
        ("PrioritySort", 0),
        ("NodeUnschedulable", 0),
        ("NodeName", 0),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", 0),
        ("NodeResourcesFit", 5),
    ]
    assert ("ImageLocality", 1) not in enabled and enabled[-1] == ("DefaultBinder", 0)
    assert profile["Plugins"]["Score"] == {"Enabled": None, "Disabled": None}
    configs = {c["Name"]: c["Args"] for c in profile["PluginConfig"]}
    assert list(configs) == [
        "NodeResourcesFit",
        "DefaultPreemption",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "PodTopologySpread",
        "VolumeBinding",
    ]
    assert configs["NodeResourcesFit"]["ScoringStrategy"] == {
        "Type": "MostAllocated",
        "Resources": [{"Name": "cpu", "Weight": 1}],
        "RequestedToCapacityRatio": None,
    }
    assert configs["VolumeBinding"] == {"BindTimeoutSeconds": 600, "Shape": None}
    assert scheduler.terminate() == 0
