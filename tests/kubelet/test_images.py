"""Image pulls as the kubelet's image manager makes them (pinnace.kubelet.image_service), on the
virtual clock: pull time from size over bandwidth, serialised or parallel pulls, pull policies,
a registry without the tag and the pull back-off."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest
from tests.kubelet.conftest import CONFIG, EVENTS, NODES, PODS, Node, pod

from pinnace.client import PatchType
from pinnace.kubelet.image_service import ImageService, image_size, pull_duration

MB = 1_000_000
NGINX = 72 * MB
"""nginx's size in the table of known images."""


@pytest.fixture
def slow() -> Any:
    """A node pulling at 10 MB/s: nginx takes 0.1 s (its manifest) + 7.2 s."""
    n = Node(replace(CONFIG, image_pull_bandwidth=10 * MB))
    yield n
    n.close()


def _pod(name: str, image: str, policy: str = "") -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0]["image"] = image
    if policy:
        body["spec"]["containers"][0]["imagePullPolicy"] = policy
    return body


def _waiting(node: Node, name: str) -> dict[str, Any]:
    status = node.get_pod(name)["status"]["containerStatuses"][0]
    return status["state"].get("waiting") or {}


def _messages(node: Node, name: str, reason: str) -> list[str]:
    items = node.run(node.client.list(EVENTS, "default"))["items"]
    return [
        e["message"] for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def test_a_pull_takes_the_image_size_over_the_bandwidth(slow: Node) -> None:
    slow.create_pod(_pod("web", "nginx:1.26"))
    slow.settle(6)
    assert _waiting(slow, "web")["reason"] == "ContainerCreating"
    assert _messages(slow, "web", "Pulling") == ['Pulling image "nginx:1.26"']
    slow.settle(2)
    assert slow.get_pod("web")["status"]["phase"] == "Running"
    assert _messages(slow, "web", "Pulled") == [
        'Successfully pulled image "nginx:1.26" in 7.3s (7.3s including waiting). '
        f"Image size: {NGINX} bytes."
    ]

    slow.create_pod(_pod("again", "nginx:1.26"))
    slow.settle(1)
    assert slow.get_pod("again")["status"]["phase"] == "Running"
    assert _messages(slow, "again", "Pulled") == [
        'Container image "nginx:1.26" already present on machine'
    ]
    slow.settle(10)  # the next node status
    images = slow.run(slow.client.get(NODES, "", "node-1"))["status"]["images"]
    pulled = next(i for i in images if "docker.io/library/nginx:1.26" in i["names"])
    assert pulled["sizeBytes"] == NGINX


def test_an_image_changed_during_its_pull_is_pulled_before_the_container_starts(
    slow: Node,
) -> None:
    slow.create_pod(_pod("web", "nginx:1.26"))
    slow.settle(3)
    step = {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.27"}
    slow.run(slow.client.patch(PODS, "default", "web", [step], PatchType.JSON))
    slow.settle(6)  # nginx:1.26 is in at 7.3 s; nginx:1.27 is not
    assert _waiting(slow, "web")["reason"] == "ContainerCreating"
    assert _messages(slow, "web", "Pulling") == [
        'Pulling image "nginx:1.26"',
        'Pulling image "nginx:1.27"',
    ]
    slow.settle(8)
    status = slow.get_pod("web")["status"]
    assert status["phase"] == "Running"
    assert status["containerStatuses"][0]["image"] == "docker.io/library/nginx:1.27"
    assert [m.split(" in ")[0] for m in _messages(slow, "web", "Pulled")] == [
        'Successfully pulled image "nginx:1.26"',
        'Successfully pulled image "nginx:1.27"',
    ]


def test_serialised_pulls_wait_for_each_other_and_parallel_ones_do_not() -> None:
    for serialize, waited in ((True, "14.6s"), (False, "7.3s")):
        node = Node(replace(CONFIG, image_pull_bandwidth=10 * MB, serialize_image_pulls=serialize))
        try:
            node.create_pod(_pod("first", "nginx:1.26"))
            node.create_pod(_pod("second", "nginx:1.25"))
            node.settle(16)
            assert _messages(node, "second", "Pulled") == [
                f'Successfully pulled image "nginx:1.25" in 7.3s ({waited} including waiting). '
                f"Image size: {NGINX} bytes."
            ]
        finally:
            node.close()


def test_max_parallel_image_pulls_bounds_the_pulls_at_once() -> None:
    config = replace(
        CONFIG,
        image_pull_bandwidth=10 * MB,
        serialize_image_pulls=False,
        max_parallel_image_pulls=2,
    )
    node = Node(config)
    try:
        for i, tag in enumerate(("1.26", "1.25", "1.24")):
            node.create_pod(_pod(f"p{i}", f"nginx:{tag}"))
        node.settle(16)
        assert "(14.6s including waiting)" in _messages(node, "p2", "Pulled")[0]
    finally:
        node.close()


def test_always_checks_the_manifest_of_an_image_present(slow: Node) -> None:
    slow.create_pod(_pod("first", "nginx:1.26"))
    slow.settle(8)
    slow.create_pod(_pod("web", "nginx:1.26", policy="Always"))
    slow.settle()
    assert slow.get_pod("web")["status"]["phase"] == "Running"
    assert _messages(slow, "web", "Pulled") == [
        'Successfully pulled image "nginx:1.26" in 100ms (100ms including waiting). '
        f"Image size: {NGINX} bytes."
    ]


def test_never_does_not_pull_an_image_that_is_not_present(node: Node) -> None:
    node.create_pod(_pod("web", "nginx:1.26", policy="Never"))
    node.settle()
    message = 'Container image "nginx:1.26" is not present with pull policy of Never'
    assert _waiting(node, "web") == {"reason": "ErrImageNeverPull", "message": message}
    assert node.get_pod("web")["status"]["phase"] == "Pending"
    assert _messages(node, "web", "ErrImageNeverPull") == [message]
    assert _messages(node, "web", "Failed") == ["Error: ErrImageNeverPull"]


def test_a_missing_tag_backs_off_doubling_to_five_minutes(
    slow: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = slow
    failures: list[float] = []
    failed = ImageService.failed

    def record(service: ImageService, key: str) -> None:
        failures.append(node.agent.clock.now())
        failed(service, key)

    # On the class: an ImageService has slots.
    monkeypatch.setattr(ImageService, "failed", record)
    node.create_pod(_pod("web", "nginx:1.161"))
    node.settle(0.5)
    ref = "docker.io/library/nginx:1.161"
    error = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )
    assert _waiting(node, "web") == {"reason": "ErrImagePull", "message": error}
    node.settle(2)
    assert _waiting(node, "web") == {
        "reason": "ImagePullBackOff",
        "message": 'Back-off pulling image "nginx:1.161"',
    }
    assert node.get_pod("web")["status"]["phase"] == "Pending"
    assert _messages(node, "web", "BackOff") == ['Back-off pulling image "nginx:1.161"']
    assert sorted(_messages(node, "web", "Failed")) == [
        "Error: ErrImagePull",
        "Error: ImagePullBackOff",
        f'Failed to pull image "nginx:1.161": {error}',
    ]
    node.settle(1300)
    gaps = [round(b - a) for a, b in pairwise(failures)]
    assert gaps == [10, 20, 40, 80, 160, 300, 300, 300]


def test_pull_durations_print_as_go_durations() -> None:
    assert [pull_duration(s) for s in (0.0, 0.3125, 1.2, 7.3, 123.5)] == [
        "0s",
        "312ms",
        "1.2s",
        "7.3s",
        "2m3.5s",
    ]


def test_without_a_bandwidth_a_pull_takes_no_time(node: Node) -> None:
    node.create_pod(_pod("web", "nginx:1.26"))
    node.settle()
    assert node.get_pod("web")["status"]["phase"] == "Running"
    assert _messages(node, "web", "Pulling") == ['Pulling image "nginx:1.26"']
    assert _messages(node, "web", "Pulled") == [
        f'Successfully pulled image "nginx:1.26" in 0s (0s including waiting). '
        f"Image size: {NGINX} bytes."
    ]


def test_a_repository_size_holds_for_its_images_by_digest_on_a_registry_with_a_port() -> None:
    sizes = {"localhost:5000/app": 123}
    assert image_size("localhost:5000/app:v1", sizes) == 123
    assert image_size("localhost:5000/app@sha256:abc", sizes) == 123
