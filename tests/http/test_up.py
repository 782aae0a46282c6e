"""`pinnace up` itself: its kubeconfig, a store that outlives a restart and a kill -9, its
default data directory, and the mistakes a start can meet (a busy port, a data directory in
use)."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.http.conftest import launch, stop
from tests.support import eventually, set_up_then


def test_sqlite_store_keeps_objects_across_restarts(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    first = launch(tmp_path, *data)
    config = yaml.safe_load(first.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == first.url
    assert config["current-context"] == "pinnace"
    first.ok("create", "configmap", "kept", "--from-literal=a=b")
    stop(first)
    assert (tmp_path / "data" / "pinnace.db").exists()
    second = launch(tmp_path, *data)
    try:
        assert second.ok("get", "configmap", "kept", "-o", "jsonpath={.data.a}") == "b"
        names = second.ok("get", "ns", "-o", "name").split()
        assert names.count("namespace/default") == 1
    finally:
        stop(second)


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    first = launch(tmp_path, *data)
    for i in range(20):
        first.ok("create", "configmap", f"c{i}", f"--from-literal=n={i}")
    first.ok("label", "configmap", "c19", "last=yes")
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=20)
    second = launch(tmp_path, *data)
    try:
        names = second.ok("get", "configmaps", "-o", "name").split()
        assert {f"configmap/c{i}" for i in range(20)} <= set(names)
        assert second.ok("get", "cm", "c19", "-o", "jsonpath={.metadata.labels.last}") == "yes"
    finally:
        stop(second)


def test_state_and_kubeconfig_live_in_home_dot_pinnace_by_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", "from pinnace.cli import up; print(up.UpOptions().kubeconfig)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.stdout.strip() == str(home / ".pinnace" / "kubeconfig")
    help_text = subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", "up", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    ).stdout
    assert "(default ~/.pinnace)" in " ".join(help_text.split())


def up(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pinnace up ARGS` with HOME at `home`, for a start expected to fail at once."""
    return subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", "up", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home)},
    )


def test_a_busy_port_is_one_line_naming_it_and_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = up(tmp_path, "--in-memory", "--port", str(port))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"pinnace up: 127.0.0.1:{port} is already in use (by another pinnace up?): give "
        "another --port, or --port 0 for a free one\n"
    )


def test_a_data_dir_in_use_is_one_line_naming_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = launch(tmp_path, "--data-dir", str(data))
    try:
        done = up(tmp_path, "--port", "0", "--data-dir", str(data))
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            f"pinnace up: the data directory {data} is in use by another pinnace up: stop that "
            "one, or give another --data-dir (or --in-memory)\n"
        )
        first.ok("get", "namespace", "default")  # the first one is untouched
    finally:
        stop(first)


@pytest.mark.parametrize("kib", [8, 32])
def test_a_full_disk_is_one_line_naming_the_store_and_what_sqlite_said(
    tmp_path: Path, kib: int
) -> None:
    # A limit on the size of the files it writes (RLIMIT_FSIZE) is a full disk without root:
    # at 8 KiB the store cannot even be set up, at 32 KiB its first objects cannot be written.
    data = tmp_path / "data"
    up = [sys.executable, "-m", "pinnace.cli.main", "up", "--port", "0", "--data-dir", str(data)]
    done = subprocess.run(
        set_up_then(up, limits={"RLIMIT_FSIZE": (kib * 1024, kib * 1024)}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"pinnace up: cannot write to the store in {data}: sqlite: disk I/O error"
    )


def test_a_disk_that_fills_up_is_relayed_to_kubectl_and_fails_readiness(tmp_path: Path) -> None:
    data = tmp_path / "data"

    # Room for what a start writes (the bootstrap RBAC policy is most of its 0.9 MB), not for a
    # ConfigMap of 1 MB more.
    small_disk = {"RLIMIT_FSIZE": (1536 * 1024, resource.RLIM_INFINITY)}
    cluster = launch(tmp_path, "--data-dir", str(data), limits=small_disk)
    try:
        manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}}
        manifest["data"] = {"a": "x" * 1_000_000}
        big = cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(manifest))
        assert big.returncode == 1
        refused = 'Error from server: error when creating "STDIN": sqlite: disk I/O error\n'
        assert big.stderr == refused
        ready = cluster.kubectl("get", "--raw", "/readyz")
        assert "[-]etcd failed: reason withheld" in ready.stderr + ready.stdout
        assert cluster.ok("get", "namespace", "default")  # reads go on
    finally:
        stop(cluster)  # no traceback in its log
    log = (tmp_path / "server.log").read_text()
    assert log.count("writes not committed: sqlite: disk I/O error") == 1


def test_in_memory_keeps_its_kubeconfig_for_the_run_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with open(tmp_path / "server.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "pinnace.cli.main", "up", "--in-memory", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "HOME": str(home)},
        )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        if line == "Ready.\n":
            break
        lines.append(line)
    try:
        assert lines[-2] == (
            "This run's kubeconfig is removed when it stops (--kubeconfig FILE keeps one):\n"
        )
        assert lines[-1].startswith("export KUBECONFIG=")
        kubeconfig = Path(lines[-1].removeprefix("export KUBECONFIG=").strip())
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server in lines[0]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    assert not kubeconfig.exists()
    assert not (home / ".pinnace").exists(), "nothing is left in the user's home"


EVENT = """
apiVersion: v1
kind: Event
metadata: {name: short-lived, namespace: default}
involvedObject: {kind: Pod, namespace: default, name: web}
reason: Testing
message: expires soon
type: Normal
"""


def test_events_expire_after_the_event_ttl(tmp_path: Path) -> None:
    cluster = launch(tmp_path, flags=("--event-ttl", "2s", "--no-scheduler"))
    try:
        cluster.ok("create", "-f", "-", stdin=EVENT)
        cluster.ok("create", "configmap", "stays")
        assert cluster.ok("get", "events", "-o", "name").split() == ["event/short-lived"]
        eventually(lambda: cluster.ok("get", "events", "-o", "name") == "", interval=0.5)
        assert cluster.ok("get", "configmap", "stays", "-o", "name").split() == ["configmap/stays"]
    finally:
        stop(cluster)


def test_a_bad_event_ttl_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", "up", "--in-memory", "--event-ttl", "soon"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--event-ttl: must be a positive duration such as 40s, not 'soon'" in done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_with_open_watches_logs_nothing(tmp_path: Path) -> None:
    cluster = launch(tmp_path)
    host, port = cluster.url.removeprefix("http://").rsplit(":", 1)
    watches = []
    try:
        for path in ("/api/v1/configmaps", "/api/v1/pods", "/api/v1/namespaces/default/events"):
            conn = socket.create_connection((host, int(port)), timeout=20)
            conn.sendall(f"GET {path}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert conn.recv(65536).startswith(b"HTTP/1.1 200 ")  # the watch is open
            watches.append(conn)
        cluster.process.send_signal(signal.SIGINT)
        assert cluster.process.wait(timeout=20) == 0
        for conn in watches:  # each watch ends as a chunked stream ends
            assert b"".join(iter(lambda: conn.recv(65536), b"")).endswith(b"0\r\n\r\n")  # noqa: B023
    finally:
        for conn in watches:
            conn.close()
    assert "Pinnace stopped.\n" in list(iter(lambda: cluster.output.get(timeout=5), None))
    assert (tmp_path / "server.log").read_text() == ""


def test_a_kubeconfig_already_there_is_made_private_when_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubeconfig may hold the admin's client key: one left readable by an earlier run
    (or made by hand) is not rewritten so."""
    from pinnace.cli import up

    path = tmp_path / "kubeconfig"
    path.write_text("old")
    path.chmod(0o644)
    up._announce(up.UpOptions(kubeconfig=str(path)), "http://127.0.0.1:1", path, None)
    capsys.readouterr()
    assert path.stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(path.read_text())["kind"] == "Config"
