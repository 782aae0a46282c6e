"""`pinnace up --etcd-servers`: the cluster kept in a real etcd, driven by kubectl, and still
there when pinnace up starts again on the same etcd; two `pinnace apiserver`s on one etcd."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.etcd import EtcdServer
from tests.http.conftest import KUBECTL, Cluster, launch, stop

from pinnace.cli.main import main


def test_kubectl_creates_lists_watches_and_deletes_through_etcd_across_a_restart(
    tmp_path: Path,
) -> None:
    with EtcdServer() as etcd:
        storage = ("--data-dir", str(tmp_path / "data"), "--etcd-servers", etcd.url)
        flags = ("--no-scheduler", "--nodes", "0")
        cluster = launch(tmp_path, *storage, flags=flags)
        try:
            cluster.ok("create", "namespace", "shop")
            cluster.ok("create", "configmap", "a", "-n", "shop", "--from-literal=k=1")
            listed = json.loads(cluster.ok("get", "--raw", "/api/v1/namespaces/shop/configmaps"))
            assert "a" in [item["metadata"]["name"] for item in listed["items"]]
            watch = _watch(cluster, "shop", listed["metadata"]["resourceVersion"])
            cluster.ok("create", "configmap", "b", "-n", "shop", "--from-literal=k=2")
            cluster.ok("delete", "configmap", "a", "-n", "shop")
            assert watch.stdout is not None
            seen: list[tuple[str, str]] = []
            while len(seen) < 2:  # the namespace's kube-root-ca.crt may come too
                event = json.loads(watch.stdout.readline())
                if event["object"]["metadata"]["name"] in ("a", "b"):
                    seen.append((event["type"], event["object"]["metadata"]["name"]))
            watch.kill()
            watch.wait()
            assert seen == [
                ("ADDED", "b"),
                ("DELETED", "a"),
            ]
            # Where kube-apiserver keeps them, without their resourceVersion.
            assert _etcdctl(etcd, "get", "--prefix", "--keys-only", "/registry/configmaps/shop/")
            value = _etcdctl(etcd, "get", "--print-value-only", "/registry/namespaces/shop")
            kept = json.loads(value)
            assert kept["metadata"]["name"] == "shop"
            assert "resourceVersion" not in kept["metadata"]
            b = json.loads(cluster.ok("get", "configmap", "b", "-n", "shop", "-o", "json"))
        finally:
            stop(cluster)

        again = launch(tmp_path, *storage, flags=flags)
        try:
            after = json.loads(again.ok("get", "configmap", "b", "-n", "shop", "-o", "json"))
            assert after == b
            names = again.ok("get", "configmaps", "-n", "shop", "-o", "name").split()
            assert "configmap/a" not in names and "configmap/b" in names
            again.ok("delete", "namespace", "shop", "--wait=false")
        finally:
            stop(again)


def test_a_read_ahead_of_the_servers_copy_of_etcd_waits_3s_then_answers_504(
    tmp_path: Path,
) -> None:
    """A GET or LIST at a resourceVersion etcd has not reached: as kube-apiserver's watch cache,
    the server waits 3 s for its copy, then answers storage.NewTooLargeResourceVersionError,
    every field of it, and Retry-After."""
    with EtcdServer() as etcd:
        storage = ("--data-dir", str(tmp_path / "data"), "--etcd-servers", etcd.url)
        cluster = launch(tmp_path, *storage, flags=("--no-scheduler", "--nodes", "0"))
        try:
            cluster.ok("create", "configmap", "a", "--from-literal=k=1")
            current = json.loads(cluster.ok("get", "--raw", CONFIGMAPS))["metadata"]
            ahead = int(current["resourceVersion"]) + 1000
            for path in (CONFIGMAPS, f"{CONFIGMAPS}/a"):
                started = time.monotonic()
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(f"{cluster.url}{path}?resourceVersion={ahead}")
                assert time.monotonic() - started >= 3.0
                assert refused.value.code == 504
                assert refused.value.headers["Retry-After"] == "1"
                status = json.loads(refused.value.read())
                assert status["message"].startswith(
                    f"Timeout: Too large resource version: {ahead}, current: "
                )
                del status["message"]
                assert status == {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "reason": "Timeout",
                    "details": {
                        "causes": [
                            {"reason": "ResourceVersionTooLarge",
                             "message": "Too large resource version"}
                        ],
                        "retryAfterSeconds": 1,
                    },
                    "code": 504,
                }  # fmt: skip
        finally:
            stop(cluster)


def _watch(cluster: Cluster, namespace: str, version: str) -> subprocess.Popen[str]:
    """kubectl's raw watch of the namespace's ConfigMaps from `version`, one event a line."""
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion={version}"
    return subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "get", "--raw", path],
        stdout=subprocess.PIPE,
        text=True,
        cwd=cluster.workdir,
        env={**os.environ, "KUBECACHEDIR": str(cluster.workdir / "cache")},
    )


def _etcdctl(etcd: EtcdServer, *args: str) -> str:
    done = subprocess.run(
        ["etcdctl", "--endpoints", etcd.url, *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_etcd_that_cannot_be_used_stops_pinnace_up_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    data = ("--port", "0", "--data-dir", str(tmp_path / "data"))
    assert main(["up", *data, "--etcd-servers", closed]) == 1
    refused = capsys.readouterr().err
    assert refused.startswith(f"pinnace up: cannot reach etcd at {closed}: etcdserver: ")
    assert len(refused.splitlines()) == 1
    assert main(["up", *data, "--etcd-servers", "https://10.0.0.1:2379"]) == 1
    assert capsys.readouterr().err == (
        "pinnace up: --etcd-servers: https://10.0.0.1:2379: only http:// etcd client URLs are "
        "supported\n"
    )
    assert main(["up", "--in-memory", "--etcd-servers", closed]) == 1
    assert capsys.readouterr().err == (
        "pinnace up: --etcd-servers and --in-memory exclude each other\n"
    )


def test_two_api_servers_on_one_etcd_serve_one_cluster_when_one_is_killed(
    tmp_path: Path,
) -> None:
    """Writers and watchers spread over two API servers sharing etcd and the cluster CA (as
    kubeadm's control-plane nodes share /etc/kubernetes/pki); one server is killed -9
    mid-run. A consistent GET on the other server returns each acknowledged create at once,
    nothing acknowledged is lost, and the watches of the killed server resume on the other
    from their last resourceVersion with nothing missed or repeated."""
    with EtcdServer() as etcd:
        first = _api_server(tmp_path / "a", etcd)
        try:
            shared = tmp_path / "b" / "data" / "pki"
            shared.mkdir(parents=True)
            for name in ("ca.crt", "ca.key", "sa.key", "sa.pub"):
                shutil.copy(tmp_path / "a" / "data" / "pki" / name, shared / name)
            second = _api_server(tmp_path / "b", etcd)
        except BaseException:
            first.process.kill()
            raise
        try:
            _run_across_a_kill(_Api(tmp_path / "a" / "data" / "pki"), first, second)
        finally:
            first.process.kill()
            first.process.wait()
            stop(second)


def _api_server(workdir: Path, etcd: EtcdServer) -> Cluster:
    workdir.mkdir(exist_ok=True)
    storage = ("--data-dir", str(workdir / "data"), "--etcd-servers", etcd.url)
    return launch(workdir, *storage, flags=("--tls",), command="apiserver")


class _Api:
    """Requests with the first server's admin credentials, to either server."""

    def __init__(self, pki: Path) -> None:
        self.tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def call(self, url: str, method: str = "GET", body: object = None, timeout: float = 10) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout, context=self.tls) as response:
            return json.loads(response.read())

    def watch(self, url: str, version: str) -> Any:
        query = urllib.parse.urlencode({"watch": "1", "resourceVersion": version})
        return urllib.request.urlopen(f"{url}?{query}", timeout=1, context=self.tls)


WRITERS, WATCHERS, CREATES = 4, 4, 40
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _run_across_a_kill(api: _Api, first: Cluster, second: Cluster) -> None:
    servers = [first.url, second.url]
    start = api.call(second.url + CONFIGMAPS)["metadata"]["resourceVersion"]
    acknowledged: list[str] = []
    expected: set[str] = set()
    watched: list[list[tuple[int, str]]] = [[] for _ in range(WATCHERS)]
    halfway, done = threading.Barrier(WRITERS + 1), threading.Event()
    failures: list[str] = []

    def write(writer: int) -> None:
        for n in range(CREATES):
            if n == CREATES // 2:
                halfway.wait(timeout=30)  # the first server dies here
            name = f"w{writer}-{n}"
            for attempt, url in enumerate((servers[(writer + n) % 2], second.url)):
                try:
                    api.call(url + CONFIGMAPS, "POST", {"metadata": {"name": name}})
                except urllib.error.HTTPError as e:
                    if e.code != 409 or attempt == 0:
                        failures.append(f"create {name}: {e.code}")
                    break  # 409: the killed server committed it without answering
                except (urllib.error.URLError, ConnectionError):
                    continue  # the killed server's: not acknowledged; the other takes it
                acknowledged.append(name)
                # A consistent read on the other server has it at once.
                other = servers[(writer + n + 1) % 2] if n < CREATES // 2 else second.url
                try:
                    api.call(f"{other}{CONFIGMAPS}/{name}")
                except urllib.error.HTTPError as e:
                    failures.append(f"get {name} from {other}: {e.code}")
                break

    def follow(watcher: int) -> None:
        url, version = servers[watcher % 2], start
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not done.is_set() or not expected <= {name for _, name in watched[watcher]}
        ):
            try:
                with api.watch(url + CONFIGMAPS, version) as stream:
                    for line in stream:
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            failures.append(f"watch from {version}: {event}")
                            return
                        version = event["object"]["metadata"]["resourceVersion"]
                        watched[watcher].append((int(version), event["object"]["metadata"]["name"]))
            except (urllib.error.URLError, OSError):
                if url == first.url and first.process.poll() is not None:
                    url = second.url  # resume on the other, from the last resourceVersion

    threads = [threading.Thread(target=write, args=(w,), daemon=True) for w in range(WRITERS)]
    threads += [threading.Thread(target=follow, args=(w,), daemon=True) for w in range(WATCHERS)]
    for thread in threads:
        thread.start()
    halfway.wait(timeout=30)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    for thread in threads[:WRITERS]:
        thread.join(timeout=60)
    listed = api.call(second.url + CONFIGMAPS)["items"]
    expected.update(name for item in listed if (name := item["metadata"]["name"])[0] == "w")
    done.set()
    for thread in threads[WRITERS:]:
        thread.join(timeout=60)
    assert not failures
    assert set(acknowledged) <= expected
    names = sorted(expected)
    for events in watched:
        versions = [version for version, _ in events]
        assert versions == sorted(set(versions))  # never backwards, never repeated
        assert sorted(name for _, name in events) == names  # nothing missed


def test_health_checks_probe_etcd_and_fail_while_it_is_down_as_kube_apiservers_do(
    tmp_path: Path,
) -> None:
    """kube-apiserver's etcd check is on /healthz, /livez and /readyz (etcd-readiness on
    /readyz too): a read of etcd that waits 2 s, so an idle server finds etcd gone, and finds
    it back once it answers again."""
    with EtcdServer() as etcd:
        storage = ("--data-dir", str(tmp_path / "data"), "--etcd-servers", etcd.url)
        cluster = launch(tmp_path, *storage, command="apiserver")
        try:
            assert cluster.ok("get", "--raw", "/readyz?verbose") == (
                "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n"
                "[+]poststarthook/bootstrap-controller ok\n[+]shutdown ok\nreadyz check passed\n"
            )
            etcd.stop()
            time.sleep(1)  # past the probes' rate limit (one a second; the others get its answer)
            for endpoint in ("/healthz", "/livez"):
                down = cluster.kubectl("get", "--raw", f"{endpoint}?verbose")
                assert down.returncode == 1
                assert "[-]etcd failed: reason withheld\\n" in down.stderr
            down = cluster.kubectl("get", "--raw", "/readyz?exclude=etcd&exclude=nope")
            assert down.stderr == (
                'Error from server (InternalError): an error on the server ("[+]ping ok\\n'
                "[+]log ok\\n[+]etcd excluded: ok\\n[-]etcd-readiness failed: reason withheld\\n"
                "[+]informer-sync ok\\n[+]poststarthook/bootstrap-controller ok\\n"
                "[+]shutdown ok\\nwarn: some health checks cannot be excluded: no matches for "
                '\\"nope\\"\\nreadyz check failed") has prevented the request from succeeding\n'
            )
            time.sleep(1)  # this probe waits for etcd
            check = urllib.request.Request(f"{cluster.url}/livez/etcd")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(check, timeout=30)
            assert refused.value.code == 500
            assert refused.value.read() == (
                b"internal server error: error getting data from etcd: context deadline exceeded\n"
            )
            etcd.start()
            deadline = time.monotonic() + 120  # gRPC's reconnection backoff
            while cluster.kubectl("get", "--raw", "/readyz").returncode != 0:
                assert time.monotonic() < deadline, "/readyz did not pass once etcd was back"
                time.sleep(1)
            assert cluster.ok("get", "--raw", "/livez") == "ok"
        finally:
            stop(cluster)
