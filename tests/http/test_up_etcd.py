"""`pinnace up --etcd-servers`: the cluster kept in a real etcd, driven by kubectl, and still
there when pinnace up starts again on the same etcd."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

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
