"""What commands exec'd in a container of a running pod write, on the virtual clock: it stays
in the container's writable layer for the next exec until the container restarts, and
`tar xf -` (`kubectl cp` into the pod) unpacks into it."""

from __future__ import annotations

import gc
import io
import tarfile
from typing import Any

from tests.kubelet.conftest import PODS, Node, pod
from tests.kubelet.test_exec import Terminal

from pinnace.api.options import DeleteOptions
from pinnace.api.streams import STDERR, StreamOptions
from pinnace.kubelet.worker import PodWorker


def exec_(node: Node, name: str, *argv: str, stdin: bytes = b"") -> tuple[int, Terminal]:
    """Run `argv` in container `app` of pod `name`, as pods/exec does."""
    session = node.agent.exec(node.get_pod(name), StreamOptions("app", argv, stdin=bool(stdin)))
    terminal = Terminal(node.agent.clock, [stdin] if stdin else [])
    return node.run(session(terminal)), terminal


def restarting(name: str, seconds: int) -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0]["command"] = ["sh", "-c", f"sleep {seconds}; exit 1"]
    return body


def test_what_an_exec_writes_stays_for_the_next_until_the_container_restarts(
    node: Node,
) -> None:
    node.create_pod(restarting("web", 60))
    node.settle(5)
    assert exec_(node, "web", "sh", "-c", "echo hi > /tmp/x")[0] == 0
    code, out = exec_(node, "web", "cat", "/tmp/x")
    assert (code, out.text()) == (0, "hi\n")
    node.settle(60)  # it exits and restarts with a new writable layer
    assert node.get_pod("web")["status"]["containerStatuses"][0]["restartCount"] == 1
    code, out = exec_(node, "web", "cat", "/tmp/x")
    assert (code, out.text(STDERR)) == (1, "cat: can't open '/tmp/x': No such file or directory\n")


def test_tar_xf_on_stdin_unpacks_into_the_container_for_cat_and_tar_cf(node: Node) -> None:
    node.create_pod(restarting("web", 600))
    node.settle(5)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("notes.txt")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"hello\n"))
    code, _ = exec_(node, "web", "tar", "-xmf", "-", "-C", "/srv", stdin=buffer.getvalue())
    assert code == 0
    assert exec_(node, "web", "cat", "/srv/notes.txt")[1].text() == "hello\n"


def test_a_deleted_pods_worker_goes_with_it_though_an_exec_read_its_subpath_files(
    node: Node,
) -> None:
    """A running container keeps its subPath files for the commands exec'd in it; what brings
    them up to date must not hold the pod's worker, or the two would hold each other, and a
    node would keep the worker of every pod it ever ran until the cyclic collector runs."""
    body = restarting("web", 600)
    body["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    body["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "scratch", "mountPath": "/data", "subPath": "data"}
    ]
    uid = node.create_pod(body)["metadata"]["uid"]
    node.settle(5)
    assert exec_(node, "web", "sh", "-c", "echo hi > /data/x")[0] == 0
    assert exec_(node, "web", "cat", "/data/x")[1].text() == "hi\n"
    gc.collect()  # what earlier tests left
    gc.disable()
    try:
        node.run(node.client.delete(PODS, "default", "web", DeleteOptions(grace_period_seconds=0)))
        node.settle(5)
        assert uid not in node.agent.workers
        assert not [o for o in gc.get_objects() if isinstance(o, PodWorker) and o.uid == uid]
    finally:
        gc.enable()
