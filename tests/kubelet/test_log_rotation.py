"""Container logs as CRI log files rotated by the kubelet's containerLogMaxSize and
containerLogMaxFiles, on the virtual clock: `kubectl logs` reads the current file only, the
files on disk count against the container's ephemeral storage (and its limit), and a chatty
container holds no more than its current file."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from tests.kubelet.conftest import CONFIG, Node, pod

from pinnace.api.options import LogOptions
from pinnace.kubelet.runtime import CRI_LOG_PREFIX_BYTES, cri_log_bytes

CHATTY = 'i=0; while true; do echo "line $i of a chatty container"; i=$((i+1)); sleep 0.05; done'
MAX_SIZE = 4096


def chatty(name: str, **limits: str) -> dict[str, Any]:
    body = pod(name, node="node-1")
    container = body["spec"]["containers"][0]
    container.update(image="busybox", command=["sh", "-c", CHATTY])
    if limits:
        container["resources"] = {"limits": limits}
    return body


@pytest.fixture
def node() -> Iterator[Node]:
    config = dataclasses.replace(CONFIG, container_log_max_size=MAX_SIZE, container_log_max_files=3)
    n = Node(config)
    yield n
    n.close()


def kubectl_logs(node: Node, name: str) -> list[str]:
    found = node.get_pod(name)

    async def read() -> str:
        return "".join([c async for c in node.agent.read_log(found, "app", LogOptions())])

    return node.run(read()).splitlines()


def test_kubectl_logs_reads_the_current_file_and_the_rotated_ones_count_on_disk(
    node: Node,
) -> None:
    node.create_pod(chatty("talker"))
    node.settle(30)  # ~600 lines of ~50 bytes: rotated several times
    lines = kubectl_logs(node, "talker")
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert numbers[0] > 0 and numbers[-1] > 500
    current = sum(cri_log_bytes(line) for line in lines)
    assert current <= MAX_SIZE + CRI_LOG_PREFIX_BYTES + 40
    [stats] = node.agent.runtime.list_container_stats().values()
    # the current file and the two newest rotated ones, each just above the maximum
    assert 2 * MAX_SIZE + current < stats.logs_used_bytes <= 3 * (MAX_SIZE + 100)


def test_rotation_keeps_a_chatty_container_within_its_ephemeral_storage_limit(
    node: Node,
) -> None:
    node.create_pod(chatty("kept", **{"ephemeral-storage": "20Ki"}))
    node.settle(60)
    assert node.get_pod("kept")["status"]["phase"] == "Running"


def test_without_room_in_its_limit_a_chatty_container_is_evicted(node: Node) -> None:
    node.create_pod(chatty("evicted", **{"ephemeral-storage": "6Ki"}))
    node.settle(60)
    status = node.get_pod("evicted")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert status["message"] == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 6Ki. "
    )


def test_a_followed_log_reads_on_across_a_rotation(node: Node) -> None:
    node.create_pod(chatty("followed"))
    node.settle(2)
    found = node.get_pod("followed")
    chunks: list[str] = []

    async def follow() -> None:
        async for chunk in node.agent.read_log(found, "app", LogOptions(follow=True)):
            chunks.append(chunk)

    task = node.loop.create_task(follow())
    node.settle(20)  # ~400 lines: rotated twice or more
    task.cancel()
    numbers = [int(line.split()[1]) for line in "".join(chunks).splitlines()]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert len(numbers) > 300
